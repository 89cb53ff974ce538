//! Run events (SEMANTICS §6): one envelope (`seq`, `run`, `ts`, `type`) around a typed payload — data only. How they
//! are numbered, logged and delivered is `log.rs`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::result::NodeResult;
pub use crate::result::{ToolRequest, Usage};

/// One event as observers and the run log see it.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// Increases by one per event of a run, from 1.
    #[cfg_attr(feature = "specta", specta(type = u32))]
    pub seq: u64,
    /// The run id.
    pub run: String,
    /// RFC 3339 timestamp with milliseconds.
    pub ts: String,
    #[serde(flatten)]
    pub kind: EventKind,
}

#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum EventKind {
    #[serde(rename = "workflow:start")]
    WorkflowStart {
        workflow: String,
        #[cfg_attr(feature = "specta", specta(type = specta_typescript::Any))]
        input: Value,
    },
    #[serde(rename = "node:enter")]
    NodeEnter { node: String, iteration: u32, instruction: String },
    #[serde(rename = "node:progress")]
    NodeProgress { node: String, message: String },
    #[serde(rename = "tool:call", rename_all = "camelCase")]
    ToolCall {
        node: String,
        tool: String,
        #[cfg_attr(feature = "specta", specta(type = specta_typescript::Any))]
        input: Value,
        call_id: String,
    },
    #[serde(rename = "tool:result", rename_all = "camelCase")]
    ToolResult {
        node: String,
        tool: String,
        #[cfg_attr(feature = "specta", specta(type = specta_typescript::Any))]
        output: Value,
        call_id: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    #[serde(rename = "node:exit", rename_all = "camelCase")]
    NodeExit {
        node: String,
        iteration: u32,
        result: NodeResult,
        #[cfg_attr(feature = "specta", specta(type = u32))]
        duration_ms: u64,
        #[serde(skip_serializing_if = "Option::is_none")]
        usage: Option<Usage>,
    },
    #[serde(rename = "node:skipped")]
    NodeSkipped { node: String },
    #[serde(rename = "node:warning")]
    NodeWarning { node: String, message: String },
    /// A routing decision after `from`: the edge followed to `to` (or `(end)`), and why.
    #[serde(rename = "route")]
    Route {
        from: String,
        to: String,
        reason: String,
        /// Tokens the model used to choose, on the first `route` event of a model's decision (where the provider
        /// reports them): they belong to the `from` node, whose `node:exit` came before the model was asked.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Usage>,
    },
    /// The model is being asked which of `node`'s natural-language `when` edges to follow; `route` events follow
    /// with its answer. `choices` are the nodes it may lead to, in edge order (edges with no `when` included: the
    /// model may answer "none of the above").
    #[serde(rename = "route:choosing")]
    RouteChoosing { node: String, choices: Vec<String> },
    /// An approval node was reached, or an agent asks to call a tool (`tool`) that needs approval: what waits, in
    /// the one shape results and the app show it too.
    #[serde(rename = "approval:requested")]
    ApprovalRequested(crate::result::PendingApproval),
    /// A pending approval was decided (or timed out), by `by` when a server knows who (the token's name); none in
    /// a run decided on this machine, and in logs written before it was kept.
    #[serde(rename = "approval:received")]
    ApprovalReceived {
        node: String,
        decision: crate::result::Verdict,
        note: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<String>,
    },
    #[serde(rename = "workflow:paused")]
    WorkflowPaused { pending: Vec<String> },
    #[serde(rename = "workflow:resumed")]
    WorkflowResumed {},
    /// The run was taken over after its worker stopped answering: `from` held it (its lease ran out while it ran),
    /// `by` took it over and goes on with it (the nodes that were in flight run again there).
    #[serde(rename = "workflow:taken-over")]
    WorkflowTakenOver {
        from: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<String>,
    },
    /// AgentFlow's log entries (docs/runs.md): `step_start`, `start_prompt`, `logic_check`, `wait_input`,
    /// `input_received`, `llm_response`, `llm_error`, `error`, and `subagent_call_start` / `_end` / `_error`.
    #[serde(rename = "log", rename_all = "camelCase")]
    Log {
        #[serde(skip_serializing_if = "Option::is_none")]
        node: Option<String>,
        log_type: String,
        #[cfg_attr(feature = "specta", specta(type = specta_typescript::Any))]
        content: Value,
    },
    #[serde(rename = "workflow:end")]
    WorkflowEnd {
        status: crate::result::RunStatus,
        results: indexmap::IndexMap<String, NodeResult>,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// Who cancelled it, when someone did through a server (the token's name); none otherwise, and in logs
        /// written before it was kept.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<String>,
    },
}

/// How every front end says that a run was taken over (`workflow:taken-over`).
pub const TAKEN_OVER: &str = "taken over after its worker stopped answering";

/// "taken over after its worker stopped answering (vm:4121; now vm:4188)": a takeover, its holders named.
pub fn taken_over_said(from: &str, by: Option<&str>) -> String {
    match by {
        Some(by) => format!("{TAKEN_OVER} ({from}; now {by})"),
        None => format!("{TAKEN_OVER} ({from})"),
    }
}

impl EventKind {
    pub fn type_name(&self) -> &'static str {
        match self {
            EventKind::WorkflowStart { .. } => "workflow:start",
            EventKind::NodeEnter { .. } => "node:enter",
            EventKind::NodeProgress { .. } => "node:progress",
            EventKind::ToolCall { .. } => "tool:call",
            EventKind::ToolResult { .. } => "tool:result",
            EventKind::NodeExit { .. } => "node:exit",
            EventKind::NodeSkipped { .. } => "node:skipped",
            EventKind::NodeWarning { .. } => "node:warning",
            EventKind::Route { .. } => "route",
            EventKind::RouteChoosing { .. } => "route:choosing",
            EventKind::ApprovalRequested { .. } => "approval:requested",
            EventKind::ApprovalReceived { .. } => "approval:received",
            EventKind::WorkflowPaused { .. } => "workflow:paused",
            EventKind::WorkflowResumed { .. } => "workflow:resumed",
            EventKind::WorkflowTakenOver { .. } => "workflow:taken-over",
            EventKind::Log { .. } => "log",
            EventKind::WorkflowEnd { .. } => "workflow:end",
        }
    }

    pub(crate) fn log(node: Option<&str>, log_type: &str, content: impl Into<Value>) -> EventKind {
        EventKind::Log { node: node.map(str::to_string), log_type: log_type.to_string(), content: content.into() }
    }
}

/// An event's payload as a replay must tell it again: a node's duration is measured anew; what a pending approval
/// derives from what it holds is left out.
pub fn comparable(kind: &EventKind) -> EventKind {
    let mut kind = kind.clone();
    match &mut kind {
        EventKind::NodeExit { duration_ms, .. } => *duration_ms = 0,
        // Derived from its tool request (which is compared), and not kept in logs written before it was.
        EventKind::ApprovalRequested(p) => p.child = None,
        _ => {}
    }
    kind
}

impl EventKind {
    /// Whether a node task can emit it (streamed text, tool calls and results, warnings, logs), rather than only
    /// the run's state: such events may fall anywhere between the state's.
    pub fn is_task_event(&self) -> bool {
        matches!(
            self,
            EventKind::NodeProgress { .. }
                | EventKind::ToolCall { .. }
                | EventKind::ToolResult { .. }
                | EventKind::NodeWarning { .. }
                | EventKind::Log { .. }
        )
    }
}

/// Where a replay first told a different story from the recording: the position, and what each side had there.
#[derive(Debug, Clone, PartialEq)]
pub struct Divergence {
    /// 0-based position in the event list.
    pub at: usize,
    pub recorded: Option<Event>,
    pub replayed: Option<Event>,
}

/// Compares a recorded run's events with those its replay produced, leaving out what a replay does not reproduce
/// (how long quick nodes took, timestamps): `None` when they tell the same story.
pub fn first_divergence(recorded: &[Event], replayed: &[Event]) -> Option<Divergence> {
    let normalized = |e: &Event| (e.seq, comparable(&e.kind));
    let same = |a: Option<&Event>, b: Option<&Event>| match (a, b) {
        (Some(a), Some(b)) => normalized(a) == normalized(b),
        _ => false,
    };
    (0..recorded.len().max(replayed.len())).find(|&i| !same(recorded.get(i), replayed.get(i))).map(|at| Divergence {
        at,
        recorded: recorded.get(at).cloned(),
        replayed: replayed.get(at).cloned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seq: u64, ts: &str, kind: EventKind) -> Event {
        Event { seq, run: "r".into(), ts: ts.into(), kind }
    }

    #[test]
    fn a_replay_diverges_where_the_story_differs_not_where_only_the_clock_does() {
        let warn = |m: &str| EventKind::NodeWarning { node: "a".into(), message: m.into() };
        let exit = |ms: u64| EventKind::NodeExit {
            node: "a".into(),
            iteration: 1,
            result: NodeResult::success(Value::Null, Vec::new()),
            duration_ms: ms,
            usage: None,
        };
        let recorded = [at(1, "t1", warn("x")), at(2, "t2", exit(12))];
        let same = [at(1, "later", warn("x")), at(2, "later", exit(0))];
        assert_eq!(first_divergence(&recorded, &same), None, "timestamps and durations are not the story");
        let other = [at(1, "t1", warn("x")), at(2, "t2", warn("y"))];
        let d = first_divergence(&recorded, &other).unwrap();
        assert_eq!((d.at, d.replayed.map(|e| e.seq)), (1, Some(2)));
        let shorter = &recorded[..1];
        let d = first_divergence(&recorded, shorter).unwrap();
        assert_eq!((d.at, d.replayed), (1, None), "a replay that stops early diverges where it stopped");
    }

    #[test]
    fn an_approval_received_or_a_run_ended_before_who_was_kept_still_reads_and_one_decided_here_is_written_as_before() {
        let old = r#"{"seq":3,"run":"r","ts":"t","type":"approval:received","node":"review","decision":"approve","note":"ok"}"#;
        let event: Event = serde_json::from_str(old).unwrap();
        let EventKind::ApprovalReceived { ref by, ref note, .. } = event.kind else { panic!("{event:?}") };
        assert_eq!((by.as_deref(), note.as_str()), (None, "ok"));
        assert_eq!(serde_json::to_string(&event).unwrap(), old, "a decision made on this machine names no one");
        let decided = r#"{"seq":3,"run":"r","ts":"t","type":"approval:received","node":"review","decision":"reject","note":"","by":"bob"}"#;
        let event: Event = serde_json::from_str(decided).unwrap();
        assert!(matches!(event.kind, EventKind::ApprovalReceived { by: Some(ref b), .. } if b == "bob"));
        assert_eq!(serde_json::to_string(&event).unwrap(), decided);

        let ended = r#"{"seq":4,"run":"r","ts":"t","type":"workflow:end","status":"cancelled","results":{},"error":"cancelled"}"#;
        let event: Event = serde_json::from_str(ended).unwrap();
        assert!(matches!(event.kind, EventKind::WorkflowEnd { by: None, .. }));
        assert_eq!(serde_json::to_string(&event).unwrap(), ended);

        let cancelled: crate::record::Recorded = serde_json::from_str(r#"{"seq":4,"input":"cancelled"}"#).unwrap();
        assert_eq!(cancelled.input, crate::record::Input::Cancelled { by: None });
        assert_eq!(serde_json::to_string(&cancelled).unwrap(), r#"{"seq":4,"input":"cancelled"}"#);
        let old: crate::result::Decision = serde_json::from_str(r#"{"decision":"approve","note":""}"#).unwrap();
        assert_eq!(old.by, None);
    }
}
