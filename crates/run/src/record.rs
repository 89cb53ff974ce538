//! A run's inputs: everything from outside the scheduler that changed its state — a node task finished, the model
//! chose a route, a person (or a script) decided an approval, an approval's timer fired, an agent asked to call a
//! tool that needs approval, the run went on in a new process, the run was cancelled.
//! Everything else the scheduler does follows from the workflow, the run options and these inputs, in order. So the
//! run log keeps the inputs beside the events, and a run is rebuilt by applying its recorded inputs again: that is
//! how a run continues after its process died (`resume`), how it is played again without a model call (`replay`),
//! and how a run reuses another's results (`--reuse … --from`).
//!
//! Each input carries the sequence number the run's next event had when it was applied (`seq`). Node tasks emit
//! events of their own (streamed text, tool calls) between the scheduler's; a rebuild, which runs no task, jumps its
//! event numbering to `seq` before applying the input, so the events it derives get the numbers they had.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::events::Event;
use crate::result::{Decision, RouteAnswer, ToolCall, Usage};

/// One input, as the run log keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "input", rename_all = "camelCase")]
pub enum Input {
    /// An agent or script node's task ended.
    #[serde(rename_all = "camelCase")]
    NodeDone {
        node: String,
        iteration: u32,
        /// The node's data, or why it failed.
        data: Result<Value, String>,
        /// The failure's stable code, when it has one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        code: Option<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Usage>,
        duration_ms: u64,
        /// How many model calls the node had made in this run when it ended (scripted answers are counted by call).
        model_calls: u32,
    },
    /// The model answered a routing question (or the call failed).
    Routed { node: String, answer: Result<RouteAnswer, String> },
    /// An approval was decided. `immediate`: by the script, the moment the approval was reached.
    Decided { node: String, decision: Decision, immediate: bool },
    /// A pending approval's timeout passed.
    TimedOut { node: String },
    /// An agent's task asked to call a tool that needs approval (`tools.approval`).
    ToolAsked { node: String, tool: String, arguments: Value },
    /// The run went on in a new process: the tasks that were running start again, so tool calls they were waiting
    /// on no longer have a task (until a task asks for the same call again).
    Continued,
    /// The run went on in this process after the one that held it stopped answering (its lease ran out while the
    /// run was running): `from` held it, `by` took it over (none when the taker has no name).
    #[serde(rename_all = "camelCase")]
    TakenOver {
        from: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<String>,
    },
    /// The run was cancelled, by `by` when a server knows who (the token's name; none in logs written before it was
    /// kept).
    Cancelled {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<String>,
    },
    /// Something that happened inside a running node task (a model turn, a tool call's result): it changes nothing
    /// the scheduler knows, but a rebuilt task is fed it instead of asking again (`crate::journal`).
    Journaled(Box<crate::journal::Entry>),
}

/// An input and the number the run's next event had when it was applied (and, for a journal entry, when).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recorded {
    pub seq: u64,
    /// When it was kept (RFC 3339, in milliseconds, as events' `ts`): kept for journal entries, so that a person sees
    /// when each model turn and tool call ended. None for other inputs, and in logs written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ts: Option<String>,
    #[serde(flatten)]
    pub input: Input,
}

impl Input {
    /// The node an input concerns.
    pub fn node(&self) -> Option<&str> {
        match self {
            Input::NodeDone { node, .. }
            | Input::Routed { node, .. }
            | Input::Decided { node, .. }
            | Input::TimedOut { node }
            | Input::ToolAsked { node, .. } => Some(node),
            Input::Journaled(entry) => Some(&entry.node),
            Input::Continued | Input::TakenOver { .. } | Input::Cancelled { .. } => None,
        }
    }
}

/// An entry of a run's journal as its log keeps it. `seq`: the number the run's next event had when it was kept
/// (where it falls among the events); `ts`: when it was kept (RFC 3339); `ms`: how long it took — from what came
/// before it in its conversation (the node's start, the turn that asked for a tool call, the tool results a turn
/// read) to when it was kept. None of them for a fork's turns taken from the run it forked; no `ts` nor `ms` in logs
/// written before times were kept.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Journaled {
    #[serde(flatten)]
    pub entry: crate::journal::Entry,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ts: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ms: Option<u64>,
}

/// A recorded run to rebuild: its inputs in the order they were applied, and its events (which a replay shows again
/// where the scheduler does not derive them: what node tasks emitted).
#[derive(Debug, Clone, Default)]
pub struct Recording {
    pub inputs: Vec<Recorded>,
    pub events: Vec<Event>,
}

/// How many times `node`'s approval was settled (decided, or timed out) in these inputs: the round a decision sent
/// now is for. A decision kept for a worker names its round, so that the same decision sent twice, or kept after
/// its worker died having applied it, is applied once.
pub fn settled(inputs: &[Recorded], node: &str) -> u32 {
    inputs.iter().filter(|r| r.input.settled_node() == Some(node)).count() as u32
}

impl Input {
    /// The node whose approval this input settles (a decision, or a timeout), if any.
    pub fn settled_node(&self) -> Option<&str> {
        match self {
            Input::Decided { node, .. } | Input::TimedOut { node } => Some(node),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::{Entry, What};

    #[test]
    fn a_journal_entry_keeps_when_it_was_written_and_a_log_written_before_that_still_reads() {
        let entry = Entry { node: "a".into(), iteration: 1, at: "t0".into(), what: What::Said { text: "hi".into() } };
        let kept = Recorded {
            seq: 4,
            ts: Some("2026-11-28T19:00:01.250Z".into()),
            input: Input::Journaled(Box::new(entry.clone())),
        };
        let text = serde_json::to_string(&kept).unwrap();
        assert!(text.contains("\"ts\":\"2026-11-28T19:00:01.250Z\""), "{text}");
        assert_eq!(serde_json::from_str::<Recorded>(&text).unwrap(), kept);
        // As an older log keeps it: no time.
        let old = r#"{"seq":4,"input":"journaled","node":"a","iteration":1,"at":"t0","kind":"said","text":"hi"}"#;
        let read: Recorded = serde_json::from_str(old).unwrap();
        assert_eq!(read, Recorded { seq: 4, ts: None, input: Input::Journaled(Box::new(entry)) });
        // Other inputs are written as before.
        let done = Recorded { seq: 2, ts: None, input: Input::Cancelled { by: None } };
        assert_eq!(serde_json::to_string(&done).unwrap(), r#"{"seq":2,"input":"cancelled"}"#);
    }
}
