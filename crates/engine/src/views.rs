//! What the app's commands return, whichever shell answers them: the desktop shell over its own store, or the
//! server over PostgreSQL (`POST /api/commands/NAME`). One definition of each, so the generated TypeScript client
//! reads the same shapes from both transports.
//!
//! Invariant: these are views built from the document model and the run store; nothing here runs or writes.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::events::Event;
use crate::format::{Format, Loaded};
use crate::journal::{Entry, What};
use crate::record::Journaled;
use crate::store::{Origin, RunRow, StoredRun, StoredStatus};
use crate::Workflow;

/// A document as the window receives it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct Opened {
    pub workflow: Workflow,
    /// The format it was read as: switchyard, agentflow, sweny, …
    pub format: String,
    /// What an importer approximated.
    pub notes: Vec<String>,
    pub path: Option<String>,
}

impl Opened {
    /// A document read from `path` (none: pasted text).
    pub fn loaded(loaded: Loaded, path: Option<String>) -> Opened {
        Opened { workflow: loaded.workflow, format: loaded.format.name().into(), notes: loaded.notes, path }
    }

    /// The document a stored run started with (not the file as it is now), and the file it names.
    pub fn stored(stored: &StoredRun) -> Opened {
        let (path, format) = match &stored.row.workflow_ref {
            Some(r) => match r.rsplit_once('#') {
                Some((p, f)) if Format::from_name(f).is_some() => (Some(p.to_string()), f.to_string()),
                _ => (Some(r.clone()), "switchyard".to_string()),
            },
            None => (None, "switchyard".to_string()),
        };
        Opened { workflow: stored.workflow.clone(), format, notes: Vec::new(), path }
    }
}

/// A stored run as the window shows it: the document it ran and its events.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct OpenedRun {
    pub document: Opened,
    pub events: Vec<Event>,
    pub row: RunRow,
}

impl OpenedRun {
    pub fn new(stored: StoredRun) -> OpenedRun {
        OpenedRun { document: Opened::stored(&stored), events: stored.recording.events, row: stored.row }
    }
}

/// A run in History.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct RunSummary {
    #[serde(flatten)]
    pub row: RunRow,
    /// The window that lists it runs it now (a server's runs are run by its workers: never).
    pub live: bool,
    /// The server it is on (`HOST:PORT`), when the desktop app lists a server's runs beside its own; none for the
    /// runs of the store the shell itself reads.
    #[serde(default)]
    pub server: Option<String>,
}

/// A run as `switchyard runs --json` and a server's `GET /api/runs` list it: one shape for both.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListedRun {
    pub id: String,
    /// The file it was run from (`path`, or `path#format` when its format was forced), else the workflow's name.
    pub workflow: String,
    /// The workflow's name.
    pub name: String,
    pub status: StoredStatus,
    /// RFC 3339.
    pub started: String,
    pub duration_ms: u64,
    /// Approvals it waits for.
    pub pending: Vec<String>,
    pub tokens: u64,
    /// US dollars, rounded (`usage::round`), at the prices the run kept (else, for a run recorded before runs kept
    /// prices, the viewer's settings: `priced` says which); none when a model that used tokens has no price.
    pub cost: Option<f64>,
    /// The cost as every front end writes it (`usage::dollars`: `$0.00003`); none when the cost is.
    pub cost_text: Option<String>,
    /// `kept` (the run's own prices) or `current` (the viewer's settings now: a run recorded before runs kept prices).
    pub priced: Option<crate::usage::Priced>,
    /// The evaluation it was a case of, if any.
    pub eval: Option<String>,
    /// How it was started and by whom (`via`: local, api, webhook, schedule, mcp; `by`: a token's, webhook's or
    /// schedule's name).
    pub origin: Origin,
    /// Who asked that it be cancelled (a token's name), when someone did through a server.
    pub cancelled_by: Option<String>,
    /// The version of the served workflow it was started from (a server's runs); none for a file of its own.
    pub version: Option<i32>,
    /// The queue it waits in, or waited in, for a worker (a server's runs); none for a run of a store of its own.
    pub queue: Option<String>,
    /// While it is `ready`: how many runs of its queue a worker takes before it.
    pub ahead: Option<u64>,
    /// While it is `ready`: "waiting for a worker (N ahead)", as every front end says it.
    pub waiting: Option<String>,
    /// The run it is a child run of and the node there that ran it (docs/subworkflows.md); none for a run on its own.
    pub parent: Option<crate::store::RunParent>,
}

impl From<RunRow> for ListedRun {
    fn from(row: RunRow) -> ListedRun {
        ListedRun {
            parent: row.parent,
            waiting: row.waiting,
            queue: row.queue,
            ahead: row.ahead,
            workflow: row.workflow_ref.unwrap_or_else(|| row.workflow.clone()),
            name: row.workflow,
            id: row.id,
            status: row.status,
            started: row.started,
            duration_ms: row.duration_ms,
            pending: row.pending,
            tokens: row.tokens,
            cost: row.cost,
            cost_text: row.cost_text,
            priced: row.priced,
            eval: row.eval,
            origin: row.origin,
            cancelled_by: row.cancelled_by,
            version: row.version,
        }
    }
}

/// A decision a run's log keeps (`approval:received`): on which node, what, who made it (when a server knows) and
/// when. `switchyard show` lists them; the window reads the same events.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Decided {
    pub node: String,
    pub decision: crate::result::Verdict,
    pub note: String,
    pub by: Option<String>,
    /// RFC 3339, the event's time.
    pub at: String,
}

/// A child run of a run (a `workflow` node's, or an agent's workflow tool call's, docs/subworkflows.md) and where it is now: what `switchyard show --json`
/// and `GET /api/runs/ID` list as `children`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Child {
    pub id: String,
    pub node: String,
    pub iteration: u32,
    /// Its `for_each` item, if it is one.
    pub item: Option<usize>,
    /// The agent's tool call that made it (a workflow offered as a tool): where in the conversation it is (`c0`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call: Option<String>,
    pub status: StoredStatus,
}

impl Child {
    pub fn new(child: crate::store::ChildRun, status: StoredStatus) -> Child {
        let link = child.link;
        Child { id: child.id, node: link.node, iteration: link.iteration, item: link.item, call: link.call, status }
    }
}

/// The decisions of a run, in the order its log has them.
pub fn decisions(events: &[Event]) -> Vec<Decided> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            crate::events::EventKind::ApprovalReceived { node, decision, note, by } => Some(Decided {
                node: node.clone(),
                decision: *decision,
                note: note.clone(),
                by: by.clone(),
                at: e.ts.clone(),
            }),
            _ => None,
        })
        .collect()
}

/// Each time the run was taken over after its worker stopped answering: when (RFC 3339, the event's time) and how
/// `show` says it ("taken over after its worker stopped answering (vm:4121; now vm:4188)").
pub fn takeovers(events: &[Event]) -> Vec<(String, String)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            crate::events::EventKind::WorkflowTakenOver { from, by } => {
                Some((e.ts.clone(), crate::events::taken_over_said(from, by.as_deref())))
            }
            _ => None,
        })
        .collect()
}

/// A run that goes on, and the document it goes on with.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct Resumed {
    pub run_id: String,
    pub document: Opened,
}

/// What the window opens when it starts: a file, and the answers file beside it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct Startup {
    pub path: String,
    /// The example's answers file, so it runs offline with no account (none on a server: its runs take the
    /// server's).
    pub answers_path: Option<String>,
}

/// One thing an agent did inside a node, as the Last run tab lists it: a model turn, a tool call, or the answer a
/// person gave a fork of the run. `at` is where in the node's execution it happened (`t2`, `c1`, `i3.t0`,
/// `c1/reviewer.t0`: the journal's places), `iteration` the node's iteration. A turn and a tool call kept in this
/// run's log also say where they fall among the run's events (`seq`: the number the next event had), when they
/// ended (`ts`, RFC 3339) and how long they took (`ms`: since what came before them in the conversation, or the
/// node's start); a fork's turns taken from the run it forked have none of these, older logs no `ts` nor `ms`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum TurnView {
    /// A model turn: its number in the conversation (from 1, as `--fork … --at NODE#TURN` counts), what the model
    /// said, the tool calls it asked for, and its tokens (input + output) when the provider reported them.
    Turn {
        iteration: u32,
        at: String,
        number: u32,
        text: String,
        calls: Vec<AskedCall>,
        #[cfg_attr(feature = "specta", specta(type = Option<u32>))]
        tokens: Option<u64>,
        #[cfg_attr(feature = "specta", specta(type = Option<u32>))]
        seq: Option<u64>,
        ts: Option<String>,
        #[cfg_attr(feature = "specta", specta(type = Option<u32>))]
        ms: Option<u64>,
    },
    /// A tool call and what it returned, or its error (which went back to the model as the tool's result).
    Tool {
        iteration: u32,
        at: String,
        tool: String,
        #[cfg_attr(feature = "specta", specta(type = specta_typescript::Any))]
        arguments: Value,
        #[cfg_attr(feature = "specta", specta(type = Option<specta_typescript::Any>))]
        output: Option<Value>,
        error: Option<String>,
        #[cfg_attr(feature = "specta", specta(type = Option<u32>))]
        seq: Option<u64>,
        ts: Option<String>,
        #[cfg_attr(feature = "specta", specta(type = Option<u32>))]
        ms: Option<u64>,
    },
    /// The answer given for a fork of the run (`--fork … --answer`): the agent's answer, ending its conversation.
    Said { iteration: u32, at: String, text: String },
}

/// A tool call a model turn asked for: the tool's name and its arguments (as JSON when they parse, else the text).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct AskedCall {
    pub name: String,
    #[cfg_attr(feature = "specta", specta(type = specta_typescript::Any))]
    pub arguments: Value,
}

/// What a model turn said, read from its journaled answer in either provider's shape: OpenAI-compatible
/// `{text, calls: [{id, name, arguments}], usage?}` or Anthropic `{blocks: [{text} | {tool: {id, name, json}}],
/// stop_reason, usage}`. Returns the text, the tool calls asked for, and the tokens (input + output) when reported.
pub fn turn_said(answer: &Value) -> (String, Vec<AskedCall>, Option<u64>) {
    let arguments = |text: Option<&str>| {
        let text = text.unwrap_or_default();
        serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_string()))
    };
    let mut text = String::new();
    let mut calls = Vec::new();
    if let Some(t) = answer.as_str() {
        text.push_str(t);
    }
    if let Some(t) = answer.get("text").and_then(Value::as_str) {
        text.push_str(t);
    }
    for call in answer.get("calls").and_then(Value::as_array).into_iter().flatten() {
        let name = call.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
        calls.push(AskedCall { name, arguments: arguments(call.get("arguments").and_then(Value::as_str)) });
    }
    for block in answer.get("blocks").and_then(Value::as_array).into_iter().flatten() {
        if let Some(t) = block.get("text").and_then(Value::as_str) {
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(t);
        } else if let Some(tool) = block.get("tool") {
            let name = tool.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
            calls.push(AskedCall { name, arguments: arguments(tool.get("json").and_then(Value::as_str)) });
        }
    }
    let count = |u: &Value, camel: &str, snake: &str| u.get(camel).or_else(|| u.get(snake)).and_then(Value::as_u64);
    let tokens = answer.get("usage").filter(|u| u.is_object()).and_then(|u| {
        let (input, output) = (count(u, "inputTokens", "input_tokens"), count(u, "outputTokens", "output_tokens"));
        (input.is_some() || output.is_some()).then(|| input.unwrap_or(0).saturating_add(output.unwrap_or(0)))
    });
    (text, calls, tokens)
}

/// Each agent's turns and tool calls, by node id, in order (from `session::turns`).
pub fn turn_views(turns: BTreeMap<String, Vec<Journaled>>) -> BTreeMap<String, Vec<TurnView>> {
    turns.into_iter().map(|(node, entries)| (node, entries.into_iter().filter_map(TurnView::of).collect())).collect()
}

impl TurnView {
    /// An entry of the journal as the window shows it (none for what it does not list: a whole model call kept for
    /// evaluations).
    pub fn of(kept: Journaled) -> Option<TurnView> {
        let Journaled { entry: Entry { iteration, at, what, .. }, seq, ts, ms } = kept;
        Some(match what {
            What::Turn { answer, .. } => {
                let (text, calls, tokens) = turn_said(&answer);
                TurnView::Turn { iteration, number: turn_number(&at), at, text, calls, tokens, seq, ts, ms }
            }
            What::Tool { tool, arguments, output } => {
                let (output, error) = match output {
                    Ok(v) => (Some(v), None),
                    Err(e) => (None, Some(e)),
                };
                TurnView::Tool { iteration, at, tool, arguments, output, error, seq, ts, ms }
            }
            What::Said { text } => TurnView::Said { iteration, at, text },
            What::Asked { .. } => return None,
        })
    }
}

/// A turn's number in its conversation, from 1: `t2` (or `i3.t2`, `c1/reviewer.t2`) is turn 3.
fn turn_number(at: &str) -> u32 {
    let last = at.rsplit(['/', '.']).next().unwrap_or(at);
    last.strip_prefix('t').and_then(|n| n.parse::<u32>().ok()).map_or(0, |n| n.saturating_add(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_openai_turn_gives_its_text_its_tool_calls_and_its_tokens() {
        let answer = json!({
            "text": "Looking it up.",
            "calls": [{"id": "call_1", "name": "s__search", "arguments": "{\"q\":\"disk full\"}"}],
            "usage": {"inputTokens": 100, "outputTokens": 20}
        });
        let (text, calls, tokens) = turn_said(&answer);
        assert_eq!(text, "Looking it up.");
        assert_eq!(calls, [AskedCall { name: "s__search".into(), arguments: json!({"q": "disk full"}) }]);
        assert_eq!(tokens, Some(120));
    }

    #[test]
    fn an_openai_turn_with_no_usage_has_no_token_count() {
        let (text, calls, tokens) = turn_said(&json!({"text": "done", "calls": []}));
        assert_eq!((text.as_str(), calls.len(), tokens), ("done", 0, None));
    }

    #[test]
    fn an_anthropic_turn_gives_its_text_blocks_its_tool_blocks_and_its_tokens() {
        let answer = json!({
            "blocks": [
                {"text": "First,"},
                {"text": "a search."},
                {"tool": {"id": "toolu_1", "name": "s__search", "json": "{\"q\":\"disk\"}"}},
                {"tool": {"id": "toolu_2", "name": "s__raw", "json": "not json"}}
            ],
            "stop_reason": "tool_use",
            "usage": {"inputTokens": 50, "outputTokens": 7, "cachedInputTokens": 10}
        });
        let (text, calls, tokens) = turn_said(&answer);
        assert_eq!(text, "First,\na search.");
        assert_eq!(
            calls,
            [
                AskedCall { name: "s__search".into(), arguments: json!({"q": "disk"}) },
                AskedCall { name: "s__raw".into(), arguments: json!("not json") },
            ]
        );
        assert_eq!(tokens, Some(57));
    }

    #[test]
    fn journal_entries_become_numbered_turns_tool_results_and_errors_and_evaluation_calls_are_left_out() {
        let entry = |at: &str, what: What| Journaled {
            entry: Entry { node: "triage".into(), iteration: 1, at: at.into(), what },
            seq: None,
            ts: None,
            ms: None,
        };
        let turns = BTreeMap::from([(
            "triage".to_string(),
            vec![
                entry("t0", What::Turn { asked: "d".into(), answer: json!({"text": "hi", "calls": []}) }),
                entry(
                    "c0",
                    What::Tool { tool: "s__add".into(), arguments: json!({"a": 1}), output: Err("no such".into()) },
                ),
                entry("i2.t1", What::Turn { asked: "d".into(), answer: json!({"text": "again"}) }),
                entry("t2", What::Said { text: "edited".into() }),
                entry(
                    "t3",
                    What::Asked {
                        key: "k".into(),
                        call: crate::journal::Call {
                            node: "triage".into(),
                            data: None,
                            text: Some("hi".into()),
                            choice: None,
                            usage: None,
                            definition: None,
                        },
                    },
                ),
            ],
        )]);
        let views = turn_views(turns);
        let shown = &views["triage"];
        assert_eq!(shown.len(), 4);
        assert!(matches!(&shown[0], TurnView::Turn { number: 1, text, .. } if text == "hi"));
        assert!(matches!(&shown[1], TurnView::Tool { output: None, error: Some(e), .. } if e == "no such"));
        assert!(matches!(&shown[2], TurnView::Turn { number: 2, .. }));
        assert!(matches!(&shown[3], TurnView::Said { text, .. } if text == "edited"));
        assert_eq!(turn_number("c1/reviewer.t4"), 5);
    }

    #[test]
    fn a_turn_and_a_tool_call_say_where_they_fall_among_the_events_when_they_ended_and_how_long_they_took() {
        let kept = |at: &str, what: What, seq: u64, ms: u64| Journaled {
            entry: Entry { node: "review".into(), iteration: 1, at: at.into(), what },
            seq: Some(seq),
            ts: Some(format!("2026-11-28T19:00:0{seq}.000Z")),
            ms: Some(ms),
        };
        let turns = BTreeMap::from([(
            "review".to_string(),
            vec![
                kept("t0", What::Turn { asked: "d".into(), answer: json!({"text": "", "calls": []}) }, 3, 1400),
                kept(
                    "c0",
                    What::Tool { tool: "s__add".into(), arguments: json!({"a": 2}), output: Ok(json!(5)) },
                    4,
                    20,
                ),
            ],
        )]);
        let shown = &turn_views(turns)["review"];
        assert!(
            matches!(&shown[0], TurnView::Turn { seq: Some(3), ts: Some(ts), ms: Some(1400), .. } if ts == "2026-11-28T19:00:03.000Z"),
            "{shown:?}"
        );
        assert!(matches!(&shown[1], TurnView::Tool { seq: Some(4), ms: Some(20), .. }), "{shown:?}");
        // As the window reads it.
        let json = serde_json::to_value(&shown[0]).unwrap();
        assert_eq!(
            (&json["seq"], &json["ts"], &json["ms"]),
            (&json!(3), &json!("2026-11-28T19:00:03.000Z"), &json!(1400))
        );
    }
}
