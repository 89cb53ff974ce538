//! What a case cost, from the price table in the settings (`prices`, US dollars per million tokens by
//! `provider/model`) and the tokens its nodes and routing calls reported (`crate::usage`). Unknown when a model that
//! used tokens has no price.

use std::collections::BTreeMap;

use crate::document::Workflow;
use crate::events::Event;
use crate::session::Price;

/// The cost of a run's model calls, in US dollars, and the first model that used tokens without a price.
pub fn cost(
    events: &[Event],
    workflow: &Workflow,
    default_model: Option<&str>,
    prices: &BTreeMap<String, Price>,
) -> Result<f64, crate::usage::Unpriced> {
    let used = crate::usage::by_model(events, |node| {
        workflow.nodes.iter().find(|n| n.id == node).and_then(|n| n.model.clone()).or(default_model.map(str::to_string))
    });
    crate::usage::cost(&used, prices)
}
