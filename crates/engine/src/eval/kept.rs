//! Evaluations kept in the run store, beside their cases' runs: each evaluation's report under an id, so that a
//! later evaluation of the same file compares with it (`--baseline EVAL_ID` or `--baseline last`, the app's compare
//! view). Reports are kept as the JSON `--json` prints, the same shape a baseline file has.

use std::path::Path;

use serde_json::Value;

use super::file::Suite;
use super::report::Report;
use super::runner::{CaseReport, Options};
use crate::format::LoadError;
use crate::store::{RunStore, StoreError, StoredEval};

/// The key an evaluation file is kept under: its absolute path, so the same file found from two folders is one.
pub fn file_key(path: &Path) -> String {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf()).display().to_string()
}

/// A new evaluation's id.
pub fn new_id() -> String {
    format!("eval-{}", crate::run::new_run_id())
}

/// Keeps a finished evaluation's report under its id.
pub fn keep(store: &RunStore, suite_path: &Path, report: &Report) -> Result<(), StoreError> {
    let Some(id) = &report.id else { return Ok(()) };
    store.save_eval(&StoredEval {
        id: id.clone(),
        file: file_key(suite_path),
        workflow: report.workflow.clone(),
        started: report.started.clone(),
        report: serde_json::to_string(report).expect("a report is JSON"),
    })
}

/// What this file's earlier evaluations found: each case as the most recent evaluation that ran it left it (an
/// evaluation of one case does not hide the others'), as one report; named by that evaluation's id when one held
/// them all. None when the file was never evaluated here.
pub fn last(store: &RunStore, suite_path: &Path) -> Result<Option<(String, Value)>, StoreError> {
    let mut cases: Vec<Value> = Vec::new();
    let mut from: Vec<String> = Vec::new();
    for kept in store.evals(&file_key(suite_path))? {
        let Ok(report) = serde_json::from_str::<Value>(&kept.report) else { continue };
        let mut took = false;
        for case in report["cases"].as_array().into_iter().flatten() {
            if !cases.iter().any(|c| c["id"] == case["id"]) {
                cases.push(case.clone());
                took = true;
            }
        }
        if took {
            from.push(kept.id);
        }
    }
    Ok(match from.as_slice() {
        [] => None,
        [one] => Some((one.clone(), serde_json::json!({ "cases": cases }))),
        [newest, ..] => Some((
            format!("{newest} and {} earlier evaluations", from.len() - 1),
            serde_json::json!({ "cases": cases }),
        )),
    })
}

/// The newest evaluation of this file, with the cases it did not run as the earlier evaluations left them: what a
/// window shows before anything runs. None when the file was never evaluated here.
pub fn latest(store: &RunStore, suite_path: &Path) -> Result<Option<Report>, StoreError> {
    let kept = store.evals(&file_key(suite_path))?;
    let Some(mut report) =
        kept.first().and_then(|e| serde_json::from_str::<Report>(&e.report).ok()).map(Report::with_cost_text)
    else {
        return Ok(None);
    };
    if let Some((_, earlier)) = last(store, suite_path)? {
        for case in earlier["cases"].as_array().into_iter().flatten() {
            if !report.cases.iter().any(|c| case["id"] == c.id.as_str()) {
                report.cases.extend(serde_json::from_value(case.clone()).ok());
            }
        }
    }
    Ok(Some(report.with_cost_text()))
}

/// One kept evaluation's report.
pub fn report(store: &RunStore, id: &str) -> Result<Value, StoreError> {
    let kept = store.eval(id)?;
    serde_json::from_str(&kept.report).map_err(|e| StoreError::Query {
        path: store.path().to_path_buf(),
        detail: format!("evaluation `{id}` has an unreadable report ({e})"),
    })
}

/// Runs the suite and makes its report: started now, compared with `baseline` when given, and kept in the store
/// (with its cases' runs) when `options.store` is set. What `switchyard eval` and the app's Evals tab both call.
pub async fn evaluate(
    suite: &Suite,
    options: &Options,
    baseline: Option<(String, Value)>,
    done: impl Fn(&CaseReport),
) -> Result<Report, LoadError> {
    let started = super::report::now();
    let (cases, calls) = super::runner::run(suite, options, done).await?;
    let mut report = Report::new(suite.path.display().to_string(), suite.file.workflow.clone(), cases, calls);
    report.started = started;
    if let Some((name, value)) = &baseline {
        report.comparison = Some(super::compare::compare(&report, value, name));
    }
    if let Some((store, id)) = &options.store {
        report.id = Some(id.clone());
        keep(store, &suite.path, &report)
            .map_err(|e| LoadError::new(e.to_string()).with_code(e.code()).at_file(store.path()))?;
    }
    Ok(report)
}
