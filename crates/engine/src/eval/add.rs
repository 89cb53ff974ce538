//! Adding a recorded run to an evaluation file as a case (`switchyard eval add`, History's "Save as test case"): the
//! one place that decides which file, which id, and how the case is written. The shells load the run through the
//! session (`session::case_source`) and hand it here.

use std::path::{Path, PathBuf};

use super::file::Suite;
use super::from_run::{case_from_run, case_yaml, FromRun};
use crate::session::CaseSource;

/// Where the case went.
#[derive(Debug, Clone, PartialEq)]
pub struct Added {
    pub path: PathBuf,
    pub case_id: String,
    pub expectations: usize,
    /// The model calls the case keeps, in the evaluation file's record (`NAME.evals.calls.json`), when the run was
    /// made on a model; 0 for a run made on an answers file (its answers are in the case).
    pub recorded_calls: usize,
}

/// Why a run could not be added, with its code (docs/errors.md).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct AddError {
    pub code: &'static str,
    pub message: String,
}

fn refuse(code: &'static str, message: String) -> AddError {
    AddError { code, message }
}

/// Adds the run as a case to `to`, else to `NAME.evals.yaml` beside the run's workflow file (created when missing),
/// with the id `id`, else `run-<its first 8 characters>` (`-2`, `-3`, … when taken). Appending keeps the file's
/// comments; it needs `cases:` to be the file's last entry, which is checked before anything is written.
pub fn add_case(run: &CaseSource, to: Option<PathBuf>, id: Option<String>) -> Result<Added, AddError> {
    let run_id = run.run_id.as_str();
    if !run.ended {
        return Err(refuse("RUN_NOT_ENDED", format!("run {run_id} has not ended; resume it to let it end first")));
    }
    let no_file = || {
        refuse(
            "NO_WORKFLOW_FILE",
            format!("run {run_id} was not run from a file: name the evaluation file to add it to"),
        )
    };
    let path = match (to, &run.workflow_file) {
        (Some(to), _) => to,
        (None, Some(w)) => Suite::beside(w),
        (None, None) => return Err(no_file()),
    };
    let existing = if path.exists() {
        Some(Suite::load(&path).map_err(|e| refuse("INVALID_EVALS", e.to_string()))?)
    } else {
        None
    };
    let taken = |candidate: &str| existing.as_ref().is_some_and(|s| s.file.cases.iter().any(|c| c.id == candidate));
    let base = id.unwrap_or_else(|| format!("run-{}", run_id.chars().take(8).collect::<String>()));
    let case_id = (1..).map(|n| if n == 1 { base.clone() } else { format!("{base}-{n}") }).find(|c| !taken(c)).unwrap();
    let FromRun { case, calls } =
        case_from_run(case_id.clone(), &run.workflow, &run.options, &run.recording, &run.result);
    let block = case_yaml(&case);
    let text = match &existing {
        None => {
            let workflow = match &run.workflow_file {
                Some(w) if same_dir(w, &path) => w.file_name().unwrap_or_default().to_string_lossy().into_owned(),
                Some(w) => std::fs::canonicalize(w).unwrap_or_else(|_| w.clone()).display().to_string(),
                None => return Err(no_file()),
            };
            format!("# Test cases for {workflow} (docs/evals.md).\nworkflow: {workflow}\ncases:\n{block}")
        }
        Some(_) => {
            let mut text = std::fs::read_to_string(&path).unwrap_or_default();
            if !text.ends_with('\n') {
                text.push('\n');
            }
            text + &block
        }
    };
    let appended = Suite::parse(&text, &path).ok().filter(|s| s.file.cases.last().is_some_and(|c| c.id == case_id));
    if appended.is_none() {
        return Err(refuse(
            "EVALS_NOT_APPENDABLE",
            format!(
                "cannot add to {}: `cases:` is not its last entry. Add this case under `cases:` by hand:\n{block}",
                path.display()
            ),
        ));
    }
    // The calls first: a case whose calls were not kept would ask the models again.
    let recorded_calls = calls.len();
    if !calls.is_empty() {
        let record = super::file::calls_path(&path);
        let kept = crate::recorded::Calls::open(&record).map_err(|e| refuse(e.code(), e.to_string()))?;
        kept.add(calls);
        kept.save(false).map_err(|e| refuse(e.code(), e.to_string()))?;
    }
    std::fs::write(&path, text)
        .map_err(|e| refuse("EVALS_UNWRITABLE", format!("cannot write {}: {e}", path.display())))?;
    Ok(Added { path, case_id, expectations: case.expect.len(), recorded_calls })
}

fn same_dir(a: &Path, b: &Path) -> bool {
    let dir = |p: &Path| {
        let parent = p.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        std::fs::canonicalize(parent).ok()
    };
    dir(a).is_some() && dir(a) == dir(b)
}
