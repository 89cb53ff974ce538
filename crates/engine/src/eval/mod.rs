//! Evaluations (docs/evals.md): a workflow's test cases in `NAME.evals.yaml`, run through the session as any run
//! is, each expectation checked against the run's result and events, and reported for a person (a live table, a
//! Markdown summary) and for CI (JSON, JUnit XML). Knows nothing of terminals or windows; runs only through
//! `session`.

pub mod add;
pub mod assertion;
pub mod check;
mod collect;
pub mod compare;
pub mod cost;
pub mod file;
pub mod from_run;
pub mod judge;
pub mod kept;
pub mod report;
pub mod runner;

pub use add::{add_case, AddError, Added};
pub use check::Failure;
pub use compare::{compare, Change, Comparison, NodeChange, NodeVerdict};
pub use file::{calls_path, schema_json, Case, Check, EvalFile, Expectation, Suite};
pub use from_run::{case_from_run, case_yaml, FromRun};
pub use report::Report;
pub use runner::{run, Attempt, CaseReport, Options, Verdict};
