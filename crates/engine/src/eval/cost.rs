//! What a case cost, from the price table in the settings (`prices`, US dollars per million tokens by
//! `provider/model`) and the tokens its nodes and routing calls reported. Unknown when a model that used tokens has
//! no price.

use std::collections::BTreeMap;

use crate::document::Workflow;
use crate::events::{Event, EventKind};
use crate::result::Usage;
use crate::session::Price;

/// The cost of a run's model calls, in US dollars, and the first model that used tokens without a price.
pub fn cost(
    events: &[Event],
    workflow: &Workflow,
    default_model: Option<&str>,
    prices: &BTreeMap<String, Price>,
) -> Result<f64, String> {
    let model_of = |node: &str| {
        workflow.nodes.iter().find(|n| n.id == node).and_then(|n| n.model.clone()).or(default_model.map(str::to_string))
    };
    let mut total = 0.0;
    for e in events {
        let (node, usage): (&str, &Usage) = match &e.kind {
            EventKind::NodeExit { node, usage: Some(u), .. } => (node, u),
            EventKind::Route { from, usage: Some(u), .. } => (from, u),
            _ => continue,
        };
        if usage.input_tokens + usage.output_tokens == 0 {
            continue;
        }
        let model = model_of(node).unwrap_or_default();
        match prices.get(&model) {
            Some(price) => total += price.cost(usage),
            None => return Err(model),
        }
    }
    Ok(total)
}
