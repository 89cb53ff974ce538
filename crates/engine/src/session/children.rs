//! Child runs (docs/subworkflows.md): how a session runs the child workflow of a run's `workflow` node — as a run of
//! its own, through the same `drive` every run goes through, kept in the parent's store.
//!
//! - A child run's id is made from its link (the parent run, node, iteration and `for_each` item), and the link is
//!   kept with it (`RunOptions::parent`): a parent whose process died while the child ran finds the same child run
//!   again and takes it up where it stopped (an ended one gives its output at once), rather than starting another.
//! - A new child run reads its file (relative to the parent's), checks it as a run of its own (validation, its
//!   `input_schema`) and keeps the document it started with: a file changed later does not change a recorded run.
//! - Its answers are the parent's answers' section for the node (`workflows: {NODE: …}`); its code steps run with
//!   `--allow-code` (given for the whole run) or when the child's own file is trusted, never on the parent's trust.
//! - An agent's workflow tool (`tools.workflows`) is a child the same way: its link names the tool call too, and the
//!   model's arguments are its input as the workflow served as a tool takes them (`WorkflowTool::input`).
//! - When it pauses, its first pending approval is asked of the parent (`ChildIo::decide`), and the child is taken
//!   up again with the decision; when the parent is cancelled, the child is.

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{json, Value};

use super::{
    begin, check_input, code_for, off_runtime, shown, validation_options, Checking, Drive, Held, Prepared, Resuming,
    Sinks, WorkflowRef,
};
use crate::answers::{Answers, AnswersModel};
use crate::code::consent::TrustStore;
use crate::events::{Event, ToolRequest};
use crate::log::{LogError, Observer};
use crate::mcp::McpSessions;
use crate::model::Model;
use crate::result::{PendingApproval, RunStatus};
use crate::run::{self, ChildCall, ChildFailed, ChildIo, ChildTool, Children, RunOptions};
use crate::store::{Store, StoreError};
use crate::validate::{self, workflows::MAX_DEPTH};
use crate::workflow_tool::WorkflowTool;
use crate::Workflow;

/// Runs the children of one run's `workflow` nodes.
pub(super) struct SessionChildren {
    /// The parent's store: children are kept beside it. None: nowhere (a child that pauses cannot go on).
    pub store: Option<Arc<dyn Store>>,
    /// The parent's file: children are found relative to it.
    pub file: Option<PathBuf>,
    /// The parent's answers (an offline run): each child is answered from its node's section.
    pub answers: Option<Arc<Answers>>,
    pub model: Arc<dyn Model>,
    /// The model the parent's agents default to, for children whose workflow names none.
    pub default_model: ChildModel,
    pub mcp: Arc<McpSessions>,
    /// `--allow-code`: given for the run and its children.
    pub allow_code: bool,
    /// How deep the parent is (a run started by a person is 1).
    pub depth: usize,
}

/// The default model a parent run passes on to its children: a child's agents that name no model use their
/// workflow's default model, and when it names none, the parent run's (its `--model`, its workflow's, or the
/// settings' default). A `--model` given for the parent overrides its children's defaults too, at every depth.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct ChildModel {
    /// The parent run's default model, if it has one.
    name: Option<String>,
    /// Given for the run (`RunOptions::model_given`), not found as a default.
    given: bool,
}

impl ChildModel {
    /// What a run of `workflow` started with `options` passes on.
    pub(super) fn of(workflow: &Workflow, options: &RunOptions) -> ChildModel {
        let name = options.model.clone().or_else(|| workflow.defaults.model.clone());
        ChildModel { name, given: options.model_given && options.model.is_some() }
    }

    /// A child run of `child`'s `RunOptions::model` and `model_given`.
    fn for_run(&self, child: &Workflow) -> (Option<String>, bool) {
        match (self.given, &child.defaults.model) {
            (true, _) => (self.name.clone(), true),
            (false, Some(_)) => (None, false),
            (false, None) => (self.name.clone(), false),
        }
    }
}

/// A child run's id: made from its link, so the same call finds the same child run.
pub fn child_run_id(link: &run::ParentLink) -> String {
    let mut made_of = json!(["child", link.run, link.node, link.iteration, link.item]);
    // A workflow tool's child: the tool call too (a `workflow` node's children keep the ids they always had).
    if let Some(call) = &link.call {
        made_of.as_array_mut().expect("an array").push(json!(call));
    }
    let d = crate::journal::digest(&made_of);
    format!("{}-{}-{}-{}-{}", &d[0..8], &d[8..12], &d[12..16], &d[16..20], &d[20..32])
}

fn failed(message: impl Into<String>, code: &'static str) -> ChildFailed {
    ChildFailed::new(message, Some(code))
}

fn store_failed(e: impl Into<super::SessionError>) -> ChildFailed {
    let e: super::SessionError = e.into();
    ChildFailed::new(e.to_string(), Some(e.code()))
}

impl SessionChildren {
    /// The children of a child run (one level deeper, found relative to its file, answered from its section).
    fn for_child(
        &self,
        file: Option<PathBuf>,
        answers: Option<Arc<Answers>>,
        model: Arc<dyn Model>,
        default_model: ChildModel,
    ) -> SessionChildren {
        SessionChildren {
            store: self.store.clone(),
            file,
            answers,
            model,
            default_model,
            mcp: self.mcp.clone(),
            allow_code: self.allow_code,
            depth: self.depth + 1,
        }
    }

    /// The answers and model of the child of `node`: its section of the parent's answers (none: answered by nothing,
    /// as an unscripted node of an offline run), or the parent's model.
    fn answered(&self, node: &str) -> (Option<Arc<Answers>>, Arc<dyn Model>) {
        match &self.answers {
            Some(answers) => {
                let own = Arc::new(answers.workflows.get(node).cloned().unwrap_or_default());
                (Some(own.clone()), Arc::new(AnswersModel::new(own)))
            }
            None => (None, self.model.clone()),
        }
    }

    /// A new child run, ready to drive: its file read and checked as a run of its own.
    async fn prepare(&self, call: &ChildCall, id: &str) -> Result<(Prepared, Option<Held>), ChildFailed> {
        let Some(parent) = self.file.as_deref() else {
            return Err(failed(
                format!(
                    "`{}` is found relative to the workflow's file, and this run's workflow has none: save it first",
                    call.workflow
                ),
                "CHILD_NOT_CHECKED",
            ));
        };
        let path = validate::workflows::child_path(parent, &call.workflow);
        let loaded = crate::format::load_file(&path, None).map_err(|e| {
            let code = if path.exists() { "CHILD_UNREADABLE" } else { "CHILD_MISSING" };
            failed(format!("the child workflow `{}` cannot be run: {e}", call.workflow), code)
        })?;
        let workflow_ref = WorkflowRef::new(&path, None);
        let (answers, model) = self.answered(&call.node);
        let options = validation_options(Checking {
            purpose: validate::Purpose::Run,
            scripted: true,
            format: Some(loaded.format),
            file: Some(&workflow_ref.path),
            ..Default::default()
        });
        let report = validate::validate(&loaded.workflow, &options);
        if let Some(first) = report.errors.first() {
            let at = first.node.as_deref().map(|n| format!(" › `{n}`")).unwrap_or_default();
            return Err(failed(format!("{}{at}: {} [{}]", call.workflow, first.message, first.code), "CHILD_INVALID"));
        }
        let workflow = loaded.workflow;
        let (child_model, model_given) = self.default_model.for_run(&workflow);
        // Costed as its parent is: this process's prices for the models it can use.
        let prices = super::kept_prices(&workflow, child_model.as_deref());
        // A workflow tool's call gives the model's arguments: the run's input as the workflow served as a tool
        // takes them (its `input_schema`'s object, or the `message`).
        let input = match (&call.call, &call.input) {
            (None, input) => Some(input.clone()),
            (Some(_), Value::Object(arguments)) => WorkflowTool::new(&workflow).input(arguments.clone()),
            (Some(_), other) => Some(other.clone()),
        };
        check_input(&workflow, input.as_ref()).map_err(|e| {
            failed(format!("the input given to `{}` does not fit it: {e}", call.workflow), "CHILD_INPUT_MISMATCH")
        })?;
        let (code, consent) =
            code_for(&workflow, Some(&workflow_ref), self.allow_code, &TrustStore::default_location())
                .map_err(store_failed)?;
        let prepared = Prepared {
            workflow: Arc::new(workflow),
            options: RunOptions {
                input,
                run_id: Some(id.to_string()),
                prices: Some(prices),
                model: child_model,
                model_given,
                parent: Some(call.link()),
                ..RunOptions::default()
            },
            answers,
            model,
            workflow_ref: Some(workflow_ref),
            answers_path: None,
            report,
            warnings: Vec::new(),
            reused: 0,
            code,
            consent,
            mcp: self.mcp.clone(),
            discovered: None,
            eval: None,
            allow_code: self.allow_code,
        };
        let held = match &self.store {
            Some(store) => {
                let store = store.clone();
                let (prepared, held) = off_runtime(move || {
                    let held = begin(store, &prepared);
                    (prepared, held)
                })
                .await;
                return Ok((prepared, Some(held.map_err(store_failed)?)));
            }
            None => None,
        };
        Ok((prepared, held))
    }

    /// A stored child run, opened to go on (claimed here), with `decisions`.
    async fn reopen(&self, call: &ChildCall, id: &str) -> Result<Resuming, ChildFailed> {
        let store = self.store.clone().expect("a stored child has a store");
        let (answers, model) = self.answered(&call.node);
        let id_owned = id.to_string();
        let opened = off_runtime(move || -> Result<(crate::store::StoredRun, Held), StoreError> {
            let claim = store.claim(&id_owned)?;
            let stored = store.load(&id_owned)?;
            Ok((stored, Held::new(store, claim)))
        })
        .await
        .map_err(store_failed)?;
        let (stored, held) = opened;
        let workflow_ref = stored.row.workflow_ref.as_deref().map(WorkflowRef::parse);
        let (code, _) =
            code_for(&stored.workflow, workflow_ref.as_ref(), self.allow_code, &TrustStore::default_location())
                .map_err(store_failed)?;
        Ok(Resuming {
            stored,
            held,
            answers,
            model,
            code,
            mcp: self.mcp.clone(),
            note: None,
            allow_code: self.allow_code,
        })
    }

    /// The parent's decision on what the paused child waits for; when the parent is cancelled meanwhile, the child
    /// is cancelled (taken up and ended so) and there is none.
    async fn decide(
        &self,
        call: &ChildCall,
        id: &str,
        pending: &PendingApproval,
        deadline_ms: Option<i64>,
        io: &Arc<dyn ChildIo>,
    ) -> Result<run::Decision, ChildFailed> {
        tokio::select! {
            biased;
            _ = io.cancelled() => {
                let going = super::Going::Stored(self.reopen(call, id).await?);
                let request = Drive { run: going, until: run::Until::Pause, decisions: Vec::new(), store_requests: false };
                let sinks = Sinks { log: None, observers: vec![Arc::new(Forward(io.clone()))] };
                let driving = super::drive_with(request, sinks, None).await.map_err(store_failed)?;
                driving.controller().cancel();
                driving.finish().await;
                Err(ChildFailed::new("cancelled", None))
            }
            decision = io.decide(asking(id, pending, deadline_ms)) => Ok(decision),
        }
    }

    /// The children of the child run `going` drives.
    fn children_of(&self, going: &super::Going) -> Arc<dyn Children> {
        let (file, answers, model, default_model) = match going {
            super::Going::Fresh(p, _) => (
                p.workflow_ref.as_ref().map(|r| r.path.clone()),
                p.answers.clone(),
                p.model.clone(),
                ChildModel::of(&p.workflow, &p.options),
            ),
            super::Going::Stored(r) => (
                r.stored.row.workflow_ref.as_deref().map(|w| WorkflowRef::parse(w).path),
                r.answers.clone(),
                r.model.clone(),
                ChildModel::of(&r.stored.workflow, &r.stored.options),
            ),
        };
        Arc::new(self.for_child(file, answers, model, default_model))
    }
}

/// Carries a child's events into its parent's stream.
struct Forward(Arc<dyn ChildIo>);

impl Observer for Forward {
    fn on_event(&self, event: &Event) -> Result<(), LogError> {
        self.0.event(event);
        Ok(())
    }
}

/// How the parent asks for a decision the child waits for: the child's node by its path inside the child, with what
/// it asks, what reached it, and when it times out (`deadlineMs`: the parent's copy times out then too, and the
/// child takes the timeout as it would alone).
fn asking(id: &str, pending: &PendingApproval, deadline_ms: Option<i64>) -> ToolRequest {
    let mut input = json!({
        "childRun": id,
        "message": pending.message,
        "previousOutput": pending.previous_output,
    });
    if let Some(deadline) = deadline_ms {
        input["deadlineMs"] = json!(deadline);
    }
    ToolRequest { tool: pending.path(), input }
}

#[async_trait]
impl Children for SessionChildren {
    async fn tool(&self, workflow: &str) -> Result<ChildTool, ChildFailed> {
        let Some(parent) = self.file.as_deref() else {
            return Err(failed(
                format!("`{workflow}` is found relative to the workflow's file, and this run's workflow has none"),
                "CHILD_NOT_CHECKED",
            ));
        };
        let path = validate::workflows::child_path(parent, workflow);
        let loaded = off_runtime(move || {
            let found = crate::format::load_file(&path, None);
            (found, path.exists())
        })
        .await;
        match loaded {
            (Ok(loaded), _) => Ok(WorkflowTool::new(&loaded.workflow).for_a_model()),
            (Err(e), exists) => Err(failed(
                format!("the workflow tool `{workflow}` cannot be read: {e}"),
                if exists { "CHILD_UNREADABLE" } else { "CHILD_MISSING" },
            )),
        }
    }

    async fn run(&self, call: ChildCall, io: Arc<dyn ChildIo>) -> Result<Value, ChildFailed> {
        if self.depth >= MAX_DEPTH {
            return Err(failed(
                format!(
                    "`{}` would be {} runs deep; children nest at most {MAX_DEPTH} deep",
                    call.workflow,
                    self.depth + 1
                ),
                "CHILD_TOO_DEEP",
            ));
        }
        let id = child_run_id(&call.link());
        // Taken up where it is when this call made it before (its parent's process died, or it paused).
        let existing = match &self.store {
            None => None,
            Some(store) => {
                let (store, id) = (store.clone(), id.clone());
                match off_runtime(move || store.load(&id)).await {
                    Ok(stored) => Some(stored),
                    // Not made yet (PostgreSQL says so in its own words).
                    Err(e) if e.is_no_such_run() => None,
                    Err(e) => return Err(store_failed(e)),
                }
            }
        };
        let (mut going, mut decisions) = match existing {
            Some(stored) if stored.row.status.ended() => {
                let (_, result) = off_runtime(move || shown(stored)).await.map_err(store_failed)?;
                return ended(&call, &id, &result);
            }
            // Interrupted, or paused: taken up, it pauses again where it waits (an approval whose deadline passed
            // meanwhile times out as it goes on), and what it waits for is asked of the parent.
            Some(_) => (super::Going::Stored(self.reopen(&call, &id).await?), Vec::new()),
            None => {
                let (prepared, held) = self.prepare(&call, &id).await?;
                (super::Going::Fresh(prepared, held), Vec::new())
            }
        };
        loop {
            let children = self.children_of(&going);
            let sinks = Sinks { log: None, observers: vec![Arc::new(Forward(io.clone()))] };
            let request = Drive { run: going, until: run::Until::Pause, decisions, store_requests: false };
            let driving = super::drive_with(request, sinks, Some(children)).await.map_err(store_failed)?;
            let controller = driving.controller();
            let finishing = driving.finish();
            tokio::pin!(finishing);
            let outcome = tokio::select! {
                biased;
                outcome = &mut finishing => outcome,
                _ = io.cancelled() => {
                    controller.cancel();
                    finishing.await
                }
            };
            let result = outcome.result;
            if result.status != RunStatus::Paused {
                return ended(&call, &id, &result);
            }
            if self.store.is_none() {
                return Err(failed(
                    format!("child run {id} waits for a decision, and this run keeps no store to take it up from"),
                    "CHILD_NOT_RUNNABLE",
                ));
            }
            let pending = result.pending.first().cloned().expect("a paused run waits for something");
            let decision = self.decide(&call, &id, &pending, outcome.wake_at_ms, &io).await?;
            decisions = vec![(pending.node.clone(), decision)];
            going = super::Going::Stored(self.reopen(&call, &id).await?);
        }
    }
}

/// What an ended child run gives its node: its output, or why it has none.
fn ended(call: &ChildCall, id: &str, result: &crate::result::RunResult) -> Result<Value, ChildFailed> {
    match result.status {
        RunStatus::Completed => Ok(crate::workflow_tool::output(result)),
        status => Err(failed(
            format!(
                "child run {id} of `{}` {}: {}",
                call.workflow,
                status.as_str(),
                result.error.as_deref().unwrap_or("see the child run for why")
            ),
            "CHILD_FAILED",
        )),
    }
}
