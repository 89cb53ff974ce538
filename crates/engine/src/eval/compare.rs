//! Comparing an evaluation with an earlier one (`switchyard eval FILE --baseline REPORT`): per case, whether it
//! improved, regressed or stayed, which nodes' outputs changed, and tokens and time side by side. A pure function of
//! the two reports; what it gives (`Comparison`) is part of a report, so its types are in `report`.

use std::collections::BTreeMap;

use serde_json::Value;

use super::report::Report;
pub use super::report::{CaseChange, Change, Comparison, NodeChange, NodeVerdict};
use super::runner::Verdict;

/// Compares `report` with `baseline`, an earlier report as `--json` wrote it (`baseline_name` says where it came from).
pub fn compare(report: &Report, baseline: &Value, baseline_name: &str) -> Comparison {
    let earlier: BTreeMap<&str, &Value> =
        baseline["cases"].as_array().into_iter().flatten().filter_map(|c| Some((c["id"].as_str()?, c))).collect();
    let mut cases = Vec::new();
    for case in &report.cases {
        let now = case.shown();
        let before = earlier.get(case.id.as_str());
        let was = before.and_then(|b| b["verdict"].as_str()).map(str::to_string);
        let passed_before = was.as_deref() == Some("passed");
        let passes = case.verdict == Verdict::Passed;
        let change = match (&was, passed_before, passes) {
            (None, _, _) => Change::New,
            (_, true, false) => Change::Regressed,
            (_, false, true) => Change::Improved,
            _ => Change::Unchanged,
        };
        let before_attempt = before.and_then(|b| shown(b));
        let before_outputs: BTreeMap<String, String> =
            before_attempt.and_then(|a| serde_json::from_value(a["outputs"].clone()).ok()).unwrap_or_default();
        let mut changed_nodes: Vec<String> = now
            .outputs
            .iter()
            .filter(|(node, text)| before_outputs.get(*node) != Some(*text))
            .map(|(node, _)| node.clone())
            .collect();
        changed_nodes.extend(before_outputs.keys().filter(|n| !now.outputs.contains_key(*n)).cloned());
        let failed_before: Vec<&str> = before_attempt
            .and_then(|a| a["failures"].as_array())
            .into_iter()
            .flatten()
            .filter_map(|f| f["node"].as_str())
            .collect();
        let failing_now = |node: &str| now.failures.iter().any(|f| f.node.as_deref() == Some(node));
        let mut named: Vec<&String> = now.outputs.keys().collect();
        named.extend(before_outputs.keys().filter(|n| !now.outputs.contains_key(*n)));
        let nodes = named
            .into_iter()
            .map(|node| NodeChange {
                node: node.clone(),
                change: if failing_now(node) && !failed_before.contains(&node.as_str()) {
                    NodeVerdict::Regressed
                } else if changed_nodes.contains(node) {
                    NodeVerdict::Changed
                } else {
                    NodeVerdict::Unchanged
                },
                before: before_outputs.get(node).cloned(),
                after: now.outputs.get(node).cloned(),
            })
            .collect();
        cases.push(CaseChange {
            id: case.id.clone(),
            change,
            before: was,
            after: case.verdict,
            changed_nodes: if before.is_some() { changed_nodes } else { Vec::new() },
            nodes: if before.is_some() { nodes } else { Vec::new() },
            tokens: (before_attempt.and_then(|a| a["tokens"].as_u64()), now.tokens),
            duration_ms: (before_attempt.and_then(|a| a["durationMs"].as_u64()), now.duration_ms),
        });
    }
    let count = |c: Change| cases.iter().filter(|x| x.change == c).count();
    Comparison {
        baseline: baseline_name.to_string(),
        improved: count(Change::Improved),
        regressed: count(Change::Regressed),
        unchanged: count(Change::Unchanged),
        cases,
    }
}

/// The attempt a report showed for a case: the first that failed, else the first (as `CaseReport::shown`).
fn shown(case: &Value) -> Option<&Value> {
    let attempts = case["attempts"].as_array()?;
    attempts.iter().find(|a| a["passed"] == Value::Bool(false)).or(attempts.first())
}
