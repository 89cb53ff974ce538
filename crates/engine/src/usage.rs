//! What a run's model calls used, per `provider/model`, and what that cost at the settings' prices (US dollars per
//! million tokens). One place for both, read by the run store (a run's usage, kept with it), the session (a run's
//! cost) and evaluations (a case's cost and `max_cost`).

use std::collections::BTreeMap;

use crate::events::{Event, EventKind};
use crate::providers::Price;
use crate::result::Usage;

/// The tokens of every model call the events report, summed per model. `model_of` names the model a node used
/// (`None` when it names none and the run had no default: kept under "").
pub fn by_model(events: &[Event], model_of: impl Fn(&str) -> Option<String>) -> BTreeMap<String, Usage> {
    let mut used: BTreeMap<String, Usage> = BTreeMap::new();
    for e in events {
        let (node, usage): (&str, &Usage) = match &e.kind {
            EventKind::NodeExit { node, usage: Some(u), .. } => (node, u),
            EventKind::Route { from, usage: Some(u), .. } => (from, u),
            _ => continue,
        };
        if usage.tokens() == 0 {
            continue;
        }
        used.entry(model_of(node).unwrap_or_default()).or_default().add(usage);
    }
    used
}

/// The tokens in a usage table (at most `u64::MAX`, where a sum that would overflow stays: `result::SATURATED`).
pub fn tokens(used: &BTreeMap<String, Usage>) -> u64 {
    used.values().fold(0u64, |sum, u| sum.saturating_add(u.tokens()))
}

/// A model that used tokens and has no price, so a cost is unknown: `model` is "" for calls made with no model named.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{model} used tokens and has no price under `prices` in the settings")]
pub struct Unpriced {
    pub model: String,
}

/// The cost of a usage table in US dollars, or the first model that used tokens without a price.
pub fn cost(used: &BTreeMap<String, Usage>, prices: &BTreeMap<String, Price>) -> Result<f64, Unpriced> {
    let mut total = 0.0;
    for (model, usage) in used {
        match prices.get(model) {
            Some(price) => total += price.cost(usage),
            None => return Err(Unpriced { model: model.clone() }),
        }
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exit(node: &str, input: u64, output: u64) -> Event {
        let kind = EventKind::NodeExit {
            node: node.into(),
            iteration: 1,
            result: crate::result::NodeResult::success(serde_json::json!({"text": "ok"}), Vec::new()),
            duration_ms: 1,
            usage: Some(Usage { input_tokens: input, output_tokens: output, ..Usage::default() }),
        };
        Event { seq: 1, run: "r".into(), ts: "2026-11-25T00:00:00.000Z".into(), kind }
    }

    #[test]
    fn tokens_are_summed_per_model_and_priced_per_million() {
        let events = [exit("a", 1000, 10), exit("b", 500, 5), exit("a", 1000, 10)];
        let used = by_model(&events, |n| Some(if n == "a" { "p/big" } else { "p/small" }.to_string()));
        assert_eq!(used["p/big"], Usage { input_tokens: 2000, output_tokens: 20, ..Usage::default() });
        assert_eq!(tokens(&used), 2525);
        let prices = BTreeMap::from([
            ("p/big".to_string(), Price { input: 3.0, output: 15.0, cached_input: None }),
            ("p/small".to_string(), Price { input: 1.0, output: 1.0, cached_input: None }),
        ]);
        let usd = cost(&used, &prices).unwrap();
        assert!((usd - (2000.0 * 3.0 + 20.0 * 15.0 + 505.0) / 1e6).abs() < 1e-12, "{usd}");
    }

    #[test]
    fn a_model_without_a_price_is_named_instead_of_a_cost() {
        let used = by_model(&[exit("a", 1, 1)], |_| Some("p/unpriced".into()));
        assert_eq!(cost(&used, &BTreeMap::new()), Err(Unpriced { model: "p/unpriced".into() }));
    }
}
