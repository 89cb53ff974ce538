//! What a run's model calls used, per `provider/model`, and what that cost (US dollars per million tokens). One place
//! for both, read by the run store (a run's usage, kept with it), the session (a run's cost) and evaluations (a case's
//! cost and `max_cost`).
//!
//! Invariants:
//! - A run keeps the prices it is costed with ([`kept_prices`], in its stored options): those of the settings of the
//!   process that started it (the server's, for a served run), for the models it can use. Its cost is computed from
//!   them wherever it is shown, whoever looks; only a run recorded before runs kept prices is priced with the
//!   viewer's settings ([`Priced::Current`]).
//! - Every cost is rounded once, by one rule ([`round`]: to the nearest millionth of a dollar), and written one way
//!   ([`dollars`]); front ends show the text the engine wrote, never a number of their own.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::events::{Event, EventKind};
use crate::result::Usage;
use crate::Workflow;

/// A model's price: US dollars per million tokens.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    pub input: f64,
    pub output: f64,
    /// Input tokens read from the provider's prompt cache; at `input` when not given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_input: Option<f64>,
}

impl Price {
    /// The cost, in US dollars, of this many tokens.
    pub fn cost(&self, usage: &Usage) -> f64 {
        let cached = usage.cached_input_tokens.min(usage.input_tokens);
        let fresh = usage.input_tokens - cached;
        (fresh as f64 * self.input
            + cached as f64 * self.cached_input.unwrap_or(self.input)
            + usage.output_tokens as f64 * self.output)
            / 1_000_000.0
    }
}

/// Which prices a cost was computed with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "lowercase")]
pub enum Priced {
    /// The prices the run kept when it started (the settings of the process that ran it).
    Kept,
    /// The viewer's settings as they are now: the run was recorded before runs kept their prices.
    Current,
}

impl Priced {
    /// What front ends add to a cost priced with the viewer's settings; nothing for kept prices.
    pub fn note(self) -> Option<&'static str> {
        match self {
            Priced::Kept => None,
            Priced::Current => Some("priced with your current settings"),
        }
    }
}

/// A cost in US dollars rounded by the one rule every cost follows: to the nearest millionth of a dollar (a token
/// at $1 per million), halves away from zero. Applied once, to a run's or a report's total.
pub fn round(usd: f64) -> f64 {
    if !usd.is_finite() {
        return usd;
    }
    (usd * 1_000_000.0).round() / 1_000_000.0
}

/// A cost as every front end writes it: rounded ([`round`]), with a dollar sign, at least two decimals and no
/// trailing zeros after them: `$0.00003`, `$0.0012`, `$1.25`, `$12.50`, `$0.00`.
pub fn dollars(usd: f64) -> String {
    let fixed = format!("{:.6}", round(usd));
    let (whole, decimals) = fixed.split_once('.').unwrap_or((&fixed, ""));
    let decimals = decimals.trim_end_matches('0');
    let sign = if whole.starts_with('-') { "-" } else { "" };
    format!("{sign}${}.{decimals:0<2}", whole.trim_start_matches('-'))
}

/// The models a run's usage is counted under ([`by_model`] with the store's `node_models`): each node's model as
/// its copy of the workflow names it, and the run's default (`model`, else the workflow's default) for the nodes
/// that name none.
pub fn models_of(workflow: &Workflow, model: Option<&str>) -> std::collections::BTreeSet<String> {
    let default = model.or(workflow.defaults.model.as_deref()).unwrap_or_default().to_string();
    workflow.nodes.iter().map(|n| n.model.clone().unwrap_or_else(|| default.clone())).chain([default.clone()]).collect()
}

/// What a run keeps of a price table: the prices of the models it can use ([`models_of`]).
pub fn kept_prices(
    workflow: &Workflow,
    model: Option<&str>,
    table: &BTreeMap<String, Price>,
) -> BTreeMap<String, Price> {
    models_of(workflow, model).into_iter().filter_map(|m| table.get(&m).map(|p| (m, *p))).collect()
}

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

/// The cost of a usage table in US dollars, rounded ([`round`]), or the first model that used tokens without a price.
pub fn cost(used: &BTreeMap<String, Usage>, prices: &BTreeMap<String, Price>) -> Result<f64, Unpriced> {
    let mut total = 0.0;
    for (model, usage) in used {
        match prices.get(model) {
            Some(price) => total += price.cost(usage),
            None => return Err(Unpriced { model: model.clone() }),
        }
    }
    Ok(round(total))
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
    fn every_cost_is_rounded_to_the_millionth_of_a_dollar_and_written_with_at_least_two_decimals() {
        assert_eq!(round(0.000240111), 0.00024);
        assert_eq!(round(0.0000125), 0.000013, "a half millionth rounds away from zero");
        assert_eq!(round(0.1 + 0.2), 0.3, "a sum's float noise is rounded away");
        assert_eq!(round(0.0000004), 0.0);
        assert_eq!(dollars(0.000240111), "$0.00024");
        assert_eq!(dollars(0.00003), "$0.00003");
        assert_eq!(dollars(0.0012), "$0.0012");
        assert_eq!(dollars(1.254), "$1.254");
        assert_eq!(dollars(1.25), "$1.25");
        assert_eq!(dollars(12.5), "$12.50");
        assert_eq!(dollars(3.0), "$3.00");
        assert_eq!(dollars(0.0), "$0.00");
        assert_eq!(dollars(0.0000004), "$0.00", "what rounds to nothing is written as nothing");
        assert_eq!(dollars(1234.5678919), "$1234.567892");
        // The number a view carries is the number its text writes.
        for usd in [0.000240111, 0.1 + 0.2, 7.0 / 3.0, 1e-6, 42.0] {
            let rounded = round(usd);
            assert_eq!(dollars(rounded), dollars(usd));
            assert_eq!(dollars(rounded).trim_start_matches('$').parse::<f64>().unwrap(), rounded, "{usd}");
        }
    }

    #[test]
    fn a_run_keeps_the_prices_of_the_models_it_can_use_only() {
        let workflow: Workflow = serde_json::from_value(serde_json::json!({
            "switchyard": 1, "name": "w",
            "nodes": [
                {"id": "start", "type": "start"},
                {"id": "a", "type": "agent", "model": "p/big"},
                {"id": "b", "type": "agent"}
            ],
            "edges": []
        }))
        .unwrap();
        let price = |input: f64| Price { input, output: 1.0, cached_input: None };
        let table = BTreeMap::from([
            ("p/big".to_string(), price(3.0)),
            ("p/small".to_string(), price(1.0)),
            ("p/other".to_string(), price(9.0)),
        ]);
        let kept = kept_prices(&workflow, Some("p/small"), &table);
        assert_eq!(kept.keys().collect::<Vec<_>>(), ["p/big", "p/small"]);
        assert_eq!(kept_prices(&workflow, None, &table).keys().collect::<Vec<_>>(), ["p/big"]);
    }

    #[test]
    fn a_model_without_a_price_is_named_instead_of_a_cost() {
        let used = by_model(&[exit("a", 1, 1)], |_| Some("p/unpriced".into()));
        assert_eq!(cost(&used, &BTreeMap::new()), Err(Unpriced { model: "p/unpriced".into() }));
    }
}
