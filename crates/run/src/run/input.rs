//! Rebuilding a run from its recorded inputs (`crate::record`): how a rebuilt run goes on, and the input a node's
//! outcome records.

use super::node::NodeOutcome;
use crate::record::Input;

/// The input that records a node task's end.
pub(super) fn node_done(node: &str, iteration: u32, outcome: NodeOutcome, duration_ms: u64, calls: u32) -> Input {
    Input::NodeDone {
        node: node.to_string(),
        iteration,
        data: outcome.data,
        code: outcome.code,
        tool_calls: outcome.tool_calls,
        usage: outcome.usage,
        duration_ms,
        model_calls: calls,
    }
}

/// How a rebuilt run goes on once its recorded inputs are applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rebuild {
    /// The recorded events are in the log already: the rebuild emits nothing they hold, then the run goes on for
    /// real (nodes that were running when the recording stopped run again).
    Resume,
    /// Every event is shown again, the recorded ones the scheduler does not derive included, and the run ends where
    /// the recording ends: nothing runs for real.
    Replay,
}
