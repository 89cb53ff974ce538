//! A node's result into the run's `state` (SEMANTICS §2): shallowly, latest wins, unless the workflow declares a
//! merge strategy for a key. Knows nothing of edges or approvals.

use serde_json::Value;

use super::RunState;
use crate::document::{Merge, Node};

impl RunState {
    /// Merges a result into `state`. With strategies declared, a `for_each` node's items are merged one by one, in
    /// item order (OpenExpertise writes accumulate per iteration).
    pub(super) fn merge_state(&mut self, node: &Node, data: &Value) {
        let strategies = &self.workflow.state;
        let items = match (strategies.is_empty(), node.for_each.is_some(), data.get("items").and_then(Value::as_array))
        {
            (false, true, Some(items)) => items.iter().collect(),
            _ => vec![data],
        };
        for item in items {
            let Value::Object(map) = item else { continue };
            for (k, v) in map {
                match strategies.get(k).map(|f| f.merge) {
                    None | Some(Merge::LastWins) => {
                        self.scope.state.insert(k.clone(), v.clone());
                    }
                    Some(Merge::SetOnce) => {
                        if !self.scope.state.contains_key(k) {
                            self.scope.state.insert(k.clone(), v.clone());
                        }
                    }
                    Some(Merge::ArrayAppend) => {
                        let mut list = match self.scope.state.get(k) {
                            Some(Value::Array(existing)) => existing.clone(),
                            Some(other) if !other.is_null() => vec![other.clone()],
                            _ => Vec::new(),
                        };
                        match v {
                            Value::Array(more) => list.extend(more.iter().cloned()),
                            other => list.push(other.clone()),
                        }
                        self.scope.state.insert(k.clone(), Value::Array(list));
                    }
                }
            }
        }
    }
}

/// The text a node passes on as `PREVIOUS_OUTPUT`: its `text` when its data is `{"text": …}`, else its data as JSON.
pub fn output_text(data: &Value) -> String {
    match data {
        Value::Object(o) if o.len() == 1 && o.get("text").is_some_and(Value::is_string) => {
            o["text"].as_str().unwrap().to_string()
        }
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
