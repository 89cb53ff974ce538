//! What the command line prints while a run goes: a readable live log, and the `--events` JSON-lines file.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::Mutex;

use switchyard_engine::events::{Event, EventKind};
use switchyard_engine::log::{LogError, Observer, RunLog};
use switchyard_engine::result::{PendingApproval, Verdict};
use switchyard_engine::NodeStatus;

use crate::out::outln;

/// Writes each event as one JSON line, flushed as it goes so a crash loses nothing already emitted.
pub struct JsonLines(Mutex<BufWriter<File>>);

impl JsonLines {
    pub fn create(path: &Path) -> Result<JsonLines, String> {
        let file = File::create(path).map_err(|e| format!("cannot write events to {}: {e}", path.display()))?;
        Ok(JsonLines(Mutex::new(BufWriter::new(file))))
    }
}

impl RunLog for JsonLines {
    fn append(&self, event: &Event) -> Result<(), LogError> {
        let mut w = self.0.lock().unwrap();
        serde_json::to_writer(&mut *w, event).map_err(|e| LogError(e.to_string()))?;
        w.write_all(b"\n").and_then(|_| w.flush()).map_err(|e| LogError(e.to_string()))
    }
}

/// The human-readable log of a run on stdout.
#[derive(Default)]
pub struct LiveLog;

impl Observer for LiveLog {
    fn on_event(&self, event: &Event) -> Result<(), LogError> {
        let Some(line) = line(event) else { return Ok(()) };
        // Models' answers and code steps' output are shown, never obeyed by the terminal.
        outln!("{}", crate::out::printable_lines(&line));
        Ok(())
    }
}

/// The live log's line for an event, if it has one. A child run's events (a `workflow` node's) are its own lines,
/// under their path: `  │ summarize ✓ write  short`.
fn line(event: &Event) -> Option<String> {
    let line = match &event.kind {
        EventKind::Log { content, log_type, .. } if log_type == switchyard_engine::run::CHILD_EVENT => {
            let inner: Event = serde_json::from_value(content["event"].clone()).ok()?;
            let path = content["path"].as_str().unwrap_or_default();
            return line(&inner).map(|l| format!("  │ {path} {}", l.trim_start()));
        }
        EventKind::WorkflowStart { workflow, .. } => {
            format!("▶ {workflow}  (run {})", event.run)
        }
        EventKind::NodeEnter { node, iteration, .. } if *iteration > 1 => {
            format!("  … {node} (iteration {iteration})")
        }
        EventKind::NodeEnter { node, .. } => format!("  … {node}"),
        EventKind::NodeExit { node, result, duration_ms, .. } => match result.status {
            NodeStatus::Failed => format!("  ✗ {node}  failed: {}", result.error.as_deref().unwrap_or("")),
            _ => format!("  ✓ {node}  {}  ({duration_ms} ms)", preview(&result.data)),
        },
        EventKind::NodeSkipped { node } => format!("  - {node}  skipped"),
        EventKind::NodeWarning { node, message } => format!("  ! {node}: {message}"),
        EventKind::Route { from, to, reason, .. } => format!("    {from} → {to}  [{reason}]"),
        EventKind::RouteChoosing { node, .. } => format!("    {node} choosing a route…"),
        EventKind::ToolCall { node, tool, .. } => format!("    {node} calls {tool}"),
        // What a code step prints, a line each, under its node.
        EventKind::Log { node: Some(node), log_type, content } if log_type == "stdout" || log_type == "stderr" => {
            let text = content.as_str().map_or_else(|| content.to_string(), str::to_string);
            format!("    {node} {} {text}", if log_type == "stderr" { "!" } else { "|" })
        }
        EventKind::ApprovalRequested(p @ PendingApproval { tool: Some(request), .. })
            if switchyard_engine::result::child_waiting(request).is_some() =>
        {
            format!("  ⏸ {} waits for approval: {}", p.path(), p.message)
        }
        EventKind::ApprovalRequested(PendingApproval { node, tool: Some(request), .. }) => {
            format!("  ⏸ {node} waits for approval to call {} with {}", request.tool, request.input)
        }
        EventKind::ApprovalRequested(PendingApproval { node, message, .. }) => {
            format!("  ⏸ {node} waits for approval: {message}")
        }
        EventKind::ApprovalReceived { node, decision, note, by } => {
            let mark = match decision {
                Verdict::Approve => "✓",
                Verdict::Reject => "✗",
                Verdict::Timeout => "·",
            };
            let by = by.as_ref().map(|b| format!(" by {b}")).unwrap_or_default();
            format!("  {mark} {node} {}{by} {note}", decision.said())
        }
        EventKind::WorkflowPaused { pending } => {
            format!("⏸ paused, waiting for: {}", pending.join(", "))
        }
        EventKind::WorkflowResumed {} => "▶ resumed".to_string(),
        EventKind::WorkflowTakenOver { from, by } => {
            format!("↻ {}", switchyard_engine::events::taken_over_said(from, by.as_deref()))
        }
        EventKind::WorkflowEnd { status, error, .. } => match error {
            Some(e) => format!("■ {}: {e}", status.as_str()),
            None => format!("■ {}", status.as_str()),
        },
        _ => return None,
    };
    Some(line)
}

fn preview(data: &serde_json::Value) -> String {
    let text = switchyard_engine::run::output_text(data);
    let one_line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() > 72 {
        format!("{}…", one_line.chars().take(72).collect::<String>())
    } else {
        one_line
    }
}
