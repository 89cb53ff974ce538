//! Running a workflow through the session and collecting what it emitted: how a case, a judge and a code assertion
//! each run, and what a run that could not start says (`CaseError`). Shared by `runner`, `judge` and `assertion`,
//! which use this module and never each other's runs.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::events::Event;
use crate::log::Collector;
use crate::result::RunStatus;
use crate::run::Outcome;
use crate::session::{self, Drive, RunRequest, SessionError, Sinks};
use crate::store::RunStore;
use crate::Workflow;

// Why a case (or its judge, or a code assertion) could not run, with its code (docs/errors.md). A plain comment:
// doc comments become part of the TypeScript bindings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct CaseError {
    pub code: String,
    pub message: String,
}

/// Prepares and runs a workflow through the session, as every case, judge and code assertion runs, kept in `store`
/// when given: its outcome, the events it emitted, and the model its nodes that name none used.
pub(super) async fn run_collecting(
    workflow: Workflow,
    request: RunRequest,
    store: Option<&Arc<RunStore>>,
) -> Result<(Outcome, Vec<Event>, Option<String>), SessionError> {
    let prepared = session::prepare(workflow, request, store.map(Arc::as_ref)).await?;
    let model = prepared.options.model.clone();
    let seen = Collector::default();
    let held = store.map(|store| session::begin(store.clone(), &prepared)).transpose()?;
    let carry = prepared.carry();
    let sinks = Sinks { log: None, observers: vec![Arc::new(seen.clone())] };
    let outcome = session::drive(Drive::fresh(prepared, held), sinks).await?.finish().await;
    // A case's run that paused waits for a decision the case does not give, and none will come: once its result is
    // taken, it is ended, cancelled, so that the store (and History) never lists it as waiting for someone.
    if let (Some(store), RunStatus::Paused) = (store, outcome.result.status) {
        session::end_paused(store.clone(), &outcome.result.run_id, carry).await?;
    }
    Ok((outcome, seen.events(), model))
}

/// Failure codes that mean the case could not run here (docs/errors.md), not that the workflow misbehaved.
pub(super) const SETUP_CODES: [&str; 4] = ["CODE_NEEDS_CONSENT", "NO_MODEL", "UNKNOWN_PROVIDER", "OFFLINE_UNRECORDED"];
