//! Run events (SEMANTICS §6): one envelope (`seq`, `run`, `ts`, `type`) around a typed payload. The emitter numbers
//! them, writes them to the run log first, then hands them to observers; an observer that fails or panics is ignored.

use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::result::{NodeResult, RunStatus};
use crate::run::{Input, Recorded};

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

/// Token counts of one model call, where the provider reports them.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    #[cfg_attr(feature = "specta", specta(type = u32))]
    pub input_tokens: u64,
    #[cfg_attr(feature = "specta", specta(type = u32))]
    pub output_tokens: u64,
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
    #[serde(rename = "route")]
    Route { from: String, to: String, reason: String },
    #[serde(rename = "approval:requested", rename_all = "camelCase")]
    ApprovalRequested { node: String, message: String, previous_output: String },
    #[serde(rename = "approval:received")]
    ApprovalReceived { node: String, decision: String, note: String },
    #[serde(rename = "workflow:paused")]
    WorkflowPaused { pending: Vec<String> },
    #[serde(rename = "workflow:resumed")]
    WorkflowResumed {},
    /// AgentFlow's log entries (seed 002): `step_start`, `start_prompt`, `logic_check`, `wait_input`,
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
    },
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
            EventKind::ApprovalRequested { .. } => "approval:requested",
            EventKind::ApprovalReceived { .. } => "approval:received",
            EventKind::WorkflowPaused { .. } => "workflow:paused",
            EventKind::WorkflowResumed { .. } => "workflow:resumed",
            EventKind::Log { .. } => "log",
            EventKind::WorkflowEnd { .. } => "workflow:end",
        }
    }

    pub(crate) fn log(node: Option<&str>, log_type: &str, content: impl Into<Value>) -> EventKind {
        EventKind::Log { node: node.map(str::to_string), log_type: log_type.to_string(), content: content.into() }
    }
}

/// Something that watches a run. Errors are ignored by the emitter: an observer never stops a run.
pub trait Observer: Send + Sync {
    fn on_event(&self, event: &Event) -> Result<(), String>;
}

impl<F> Observer for F
where
    F: Fn(&Event) -> Result<(), String> + Send + Sync,
{
    fn on_event(&self, event: &Event) -> Result<(), String> {
        self(event)
    }
}

/// Where a run's events are kept durably. Written before observers see an event; a failure here is reported once
/// as a warning on stderr-like channels by the caller, never silently dropped, but does not stop the run.
pub trait RunLog: Send + Sync {
    fn append(&self, event: &Event) -> Result<(), String>;

    /// Keeps an input of the run (see `run::input`), before anything it causes is emitted.
    fn record_input(&self, _run: &str, _input: &Recorded) -> Result<(), String> {
        Ok(())
    }

    /// The run's status changed: it paused (`pending` waits), went on, or ended.
    fn run_status(&self, _run: &str, _status: RunStatus, _pending: &[String]) -> Result<(), String> {
        Ok(())
    }
}

/// A run log in memory: events and inputs (tests, and runs nobody keeps on disk).
#[derive(Default, Clone)]
pub struct MemoryLog {
    pub events: Arc<Mutex<Vec<Event>>>,
    pub inputs: Arc<Mutex<Vec<Recorded>>>,
}

impl MemoryLog {
    /// What a rebuild of this run needs.
    pub fn recording(&self) -> crate::run::Recording {
        crate::run::Recording {
            inputs: self.inputs.lock().unwrap().clone(),
            events: self.events.lock().unwrap().clone(),
        }
    }
}

impl RunLog for MemoryLog {
    fn append(&self, event: &Event) -> Result<(), String> {
        self.events.lock().unwrap().push(event.clone());
        Ok(())
    }

    fn record_input(&self, _run: &str, input: &Recorded) -> Result<(), String> {
        self.inputs.lock().unwrap().push(input.clone());
        Ok(())
    }
}

/// Collects events in memory (tests, the app's run panel).
#[derive(Default, Clone)]
pub struct Collector(pub Arc<Mutex<Vec<Event>>>);

impl Collector {
    pub fn events(&self) -> Vec<Event> {
        self.0.lock().unwrap().clone()
    }
}

impl Observer for Collector {
    fn on_event(&self, event: &Event) -> Result<(), String> {
        self.0.lock().map_err(|_| "poisoned".to_string())?.push(event.clone());
        Ok(())
    }
}

struct EmitterState {
    seq: u64,
    /// Events numbered up to this one are in the log already (a resumed run derives them again): not delivered.
    quiet_through: u64,
    log_error: Option<String>,
}

/// Numbers, timestamps and delivers the events of one run.
#[derive(Clone)]
pub struct Emitter {
    run: Arc<str>,
    state: Arc<Mutex<EmitterState>>,
    log: Option<Arc<dyn RunLog>>,
    observers: Arc<[Arc<dyn Observer>]>,
}

impl Emitter {
    pub fn new(run: &str, first_seq: u64, log: Option<Arc<dyn RunLog>>, observers: Vec<Arc<dyn Observer>>) -> Emitter {
        Emitter {
            run: Arc::from(run),
            state: Arc::new(Mutex::new(EmitterState { seq: first_seq, quiet_through: 0, log_error: None })),
            log,
            observers: observers.into(),
        }
    }

    pub fn run_id(&self) -> &str {
        &self.run
    }

    /// The sequence number the next event will get.
    pub fn next_seq(&self) -> u64 {
        self.state.lock().unwrap().seq + 1
    }

    /// The first run-log write error, if any happened.
    pub fn log_error(&self) -> Option<String> {
        self.state.lock().unwrap().log_error.clone()
    }

    /// Events up to `seq` are not delivered: the log holds them already.
    pub fn quiet_through(&self, seq: u64) {
        self.state.lock().unwrap().quiet_through = seq;
    }

    /// The next event is numbered `seq` at least (numbers taken by events a rebuild does not derive are skipped).
    pub fn skip_to(&self, seq: u64) {
        let mut state = self.state.lock().unwrap();
        state.seq = state.seq.max(seq.saturating_sub(1));
    }

    /// Delivers a recorded event again, as it was (a replay), and numbers on from it.
    pub fn replay(&self, event: Event) {
        let mut state = self.state.lock().unwrap();
        state.seq = state.seq.max(event.seq);
        self.deliver(&mut state, &event);
    }

    /// Writes an input to the run log, numbered with the next event's `seq`, before what it causes is emitted.
    pub fn record(&self, input: Input) {
        let mut state = self.state.lock().unwrap();
        let Some(log) = &self.log else { return };
        let recorded = Recorded { seq: state.seq + 1, input };
        if let Err(e) = log.record_input(&self.run, &recorded) {
            state.log_error.get_or_insert(e);
        }
    }

    /// Tells the run log the run's status.
    pub fn status(&self, status: RunStatus, pending: &[String]) {
        let Some(log) = &self.log else { return };
        if let Err(e) = log.run_status(&self.run, status, pending) {
            self.state.lock().unwrap().log_error.get_or_insert(e);
        }
    }

    fn deliver(&self, state: &mut EmitterState, event: &Event) {
        if let Some(log) = &self.log {
            if let Err(e) = log.append(event) {
                state.log_error.get_or_insert(e);
            }
        }
        for observer in self.observers.iter() {
            let _ = std::panic::catch_unwind(AssertUnwindSafe(|| observer.on_event(event)));
        }
    }

    pub fn emit(&self, kind: EventKind) {
        self.emit_and_return(kind);
    }

    /// Emits an event and hands its payload back, so a large payload (the final results) need not be copied.
    pub fn emit_and_return(&self, kind: EventKind) -> EventKind {
        if self.log.is_none() && self.observers.is_empty() {
            self.state.lock().unwrap().seq += 1;
            return kind;
        }
        // The lock is held while delivering so that every observer sees events in `seq` order.
        let mut state = self.state.lock().unwrap();
        state.seq += 1;
        let event = Event {
            seq: state.seq,
            run: self.run.to_string(),
            ts: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            kind,
        };
        if event.seq > state.quiet_through {
            self.deliver(&mut state, &event);
        }
        event.kind
    }
}
