//! The journal: what happens inside a node task, kept in the run log as it happens (docs/runs.md, "What a resume
//! repeats"). Each model turn an agent takes (a digest of what was asked, and the answer as its provider read it) and
//! each tool call's result is an entry, committed to the log before the agent goes on. A rebuilt agent — a resumed
//! run, a worker taking a run over, a parked run going on after a tool-call approval — is fed its entries in order
//! and goes live only after the last one: a turn that was answered is not asked again, a tool call that returned is
//! not made again. Only a call in flight when the process died is made again, with the same idempotency key.
//!
//! An entry is found again by where it happened in the node's execution (`at`): `t2` is the node's third model turn,
//! `c1` its second tool call, `i3.t0` the first turn of a `for_each` node's fourth item, and a subagent's entries sit
//! under the parent's call that asked it (`c1/reviewer.t0`). A turn is replayed only when what is asked now has the
//! digest that was journaled: a conversation that went another way (a different answer before it) goes live there.
//!
//! This module knows the vocabulary of entries (and of a model call's answer, which the recorded calls of evaluations
//! keep too) and how a rebuilt run looks them up; it knows nothing of providers, of the scheduler, or of the store
//! that keeps them (they travel as the run log's `journaled` inputs).

use std::collections::HashMap;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::result::Usage;
use sha2::{Digest, Sha256};

/// One thing that happened inside a node task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    pub node: String,
    pub iteration: u32,
    /// Where in the node's execution (see the module's documentation).
    pub at: String,
    #[serde(flatten)]
    pub what: What,
}

/// What an entry keeps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum What {
    /// A model turn: the digest of what was asked (model, messages, tools, schema) and the answer, as its provider
    /// reads it back (text, tool calls, usage).
    Turn { asked: String, answer: Value },
    /// A tool call and what it returned (an error goes back to the model as the tool's result). Its input is
    /// `arguments`: the run log's inputs are tagged `input`.
    Tool { tool: String, arguments: Value, output: Result<Value, String> },
    /// What the model said at this turn, as a person edited it in a fork of the run (`--fork … --answer`): the
    /// agent's answer, ending its conversation there.
    Said { text: String },
    /// A whole model call of the node (its conversation, or a routing question) that answered, under the key the
    /// recorded calls of evaluations use (`recorded.rs`): what a test case made from the run keeps, so that the
    /// case asks again exactly the calls an edit changes. Kept only for runs on a model (not on an answers file).
    Asked { key: String, call: Call },
}

/// What a model answered to one call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Call {
    /// The node that asked, for a person reading the file.
    pub node: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// A routing call's choice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub choice: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// A digest of the node as written (its prompts as templates, model, tools, schema): a call of the same node
    /// with the same definition whose key changed was asked something else because what reached it changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub definition: Option<String>,
}

/// The digest of what a model turn asks, as journaled and compared (and of what a recorded call asked: its key):
/// the first 16 bytes of the SHA-256 of the value's compact JSON, in hex. The JSON is written straight into the hash,
/// never built as text: an evaluation that replays its calls takes a digest per model call, and building the text
/// was most of its cost.
pub fn digest(asked: &(impl Serialize + ?Sized)) -> String {
    struct Hashing(Sha256);
    impl std::io::Write for Hashing {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.update(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut hashing = Hashing(Sha256::new());
    serde_json::to_writer(&mut hashing, asked).expect("what is asked serializes to JSON");
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut text = String::with_capacity(32);
    for byte in &hashing.0.finalize()[..16] {
        text.push(HEX[usize::from(byte >> 4)] as char);
        text.push(HEX[usize::from(byte & 15)] as char);
    }
    text
}

/// The idempotency key a tool call is made with: the same for a call made again after a crash (run, node, iteration,
/// and where in the node's execution), different for every other call.
pub fn idempotency_key(run: &str, node: &str, iteration: u32, at: &str) -> String {
    format!("{run}/{node}/{iteration}/{at}")
}

/// The entries of the node tasks a rebuilt run starts again, by node and iteration, then by place. Entries of tasks
/// that ended are dropped as their ends are applied; a later entry for the same place replaces an earlier one (an
/// attempt retried after a transient failure journals its turns again).
#[derive(Debug, Default)]
pub struct Journal {
    tasks: Mutex<HashMap<(String, u32), HashMap<String, What>>>,
}

impl Journal {
    pub fn keep(&self, entry: Entry) {
        let mut tasks = self.tasks.lock().unwrap();
        tasks.entry((entry.node, entry.iteration)).or_default().insert(entry.at, entry.what);
    }

    /// The task ended: what it journaled is no longer needed.
    pub fn ended(&self, node: &str, iteration: u32) {
        self.tasks.lock().unwrap().remove(&(node.to_string(), iteration));
    }

    /// The answer journaled for the turn at `at`, when it asked what is asked now (`asked`, a digest).
    pub fn turn(&self, node: &str, iteration: u32, at: &str, asked: &str) -> Option<Value> {
        let tasks = self.tasks.lock().unwrap();
        match tasks.get(&(node.to_string(), iteration))?.get(at)? {
            What::Turn { asked: was, answer } if was == asked => Some(answer.clone()),
            _ => None,
        }
    }

    /// The answer a fork gives at the turn at `at`, when the run was forked there.
    pub fn said(&self, node: &str, iteration: u32, at: &str) -> Option<String> {
        let tasks = self.tasks.lock().unwrap();
        match tasks.get(&(node.to_string(), iteration))?.get(at)? {
            What::Said { text } => Some(text.clone()),
            _ => None,
        }
    }

    /// What the tool call at `at` returned, when it called the same tool with the same input.
    pub fn tool(
        &self,
        node: &str,
        iteration: u32,
        at: &str,
        tool: &str,
        input: &Value,
    ) -> Option<Result<Value, String>> {
        let tasks = self.tasks.lock().unwrap();
        match tasks.get(&(node.to_string(), iteration))?.get(at)? {
            What::Tool { tool: was, arguments, output } if was == tool && arguments == input => Some(output.clone()),
            _ => None,
        }
    }

    /// How many entries are kept (for tests and figures).
    pub fn len(&self) -> usize {
        self.tasks.lock().unwrap().values().map(HashMap::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn turn(at: &str, asked: &str, text: &str) -> Entry {
        Entry {
            node: "a".into(),
            iteration: 0,
            at: at.into(),
            what: What::Turn { asked: asked.into(), answer: json!({"text": text}) },
        }
    }

    #[test]
    fn a_digest_is_the_sha256_of_the_compact_json_so_keys_recorded_before_stay_valid() {
        let asked = json!({"kind": "execute", "prompt": "step 1 of \"x\": é\n", "call": 0, "tools": [], "model": null});
        let before: String =
            Sha256::digest(asked.to_string().as_bytes()).iter().take(16).map(|b| format!("{b:02x}")).collect();
        assert_eq!(digest(&asked), before);
        assert_eq!(digest(&json!({"a": 1})), "015abd7f5cc57a2dd94b7590f04ad808");
    }

    #[test]
    fn a_turn_is_answered_from_the_journal_only_when_it_asks_what_was_asked() {
        let journal = Journal::default();
        journal.keep(turn("t0", "d1", "first"));
        assert_eq!(journal.turn("a", 0, "t0", "d1"), Some(json!({"text": "first"})));
        assert_eq!(journal.turn("a", 0, "t0", "other"), None, "another question goes live");
        assert_eq!(journal.turn("a", 1, "t0", "d1"), None, "another iteration has its own journal");
        assert_eq!(journal.turn("a", 0, "t1", "d1"), None);
    }

    #[test]
    fn a_later_entry_for_the_same_place_replaces_the_earlier_and_an_ended_task_forgets_its_entries() {
        let journal = Journal::default();
        journal.keep(turn("t0", "d1", "first attempt"));
        journal.keep(turn("t0", "d1", "second attempt"));
        assert_eq!(journal.turn("a", 0, "t0", "d1"), Some(json!({"text": "second attempt"})));
        journal.ended("a", 0);
        assert!(journal.is_empty());
    }

    #[test]
    fn a_tool_call_is_answered_from_the_journal_only_for_the_same_tool_and_input() {
        let journal = Journal::default();
        let what = What::Tool { tool: "s__add".into(), arguments: json!({"a": 1}), output: Ok(json!(2)) };
        journal.keep(Entry { node: "a".into(), iteration: 0, at: "c0".into(), what });
        assert_eq!(journal.tool("a", 0, "c0", "s__add", &json!({"a": 1})), Some(Ok(json!(2))));
        assert_eq!(journal.tool("a", 0, "c0", "s__add", &json!({"a": 2})), None);
        assert_eq!(journal.tool("a", 0, "c0", "s__sub", &json!({"a": 1})), None);
    }

    #[test]
    fn entries_read_back_as_they_were_written() {
        let entry = Entry {
            node: "a".into(),
            iteration: 2,
            at: "i1.c0/child.t3".into(),
            what: What::Tool { tool: "x".into(), arguments: json!({}), output: Err("no".into()) },
        };
        let text = serde_json::to_string(&entry).unwrap();
        assert!(text.contains("\"kind\":\"tool\""), "{text}");
        assert_eq!(serde_json::from_str::<Entry>(&text).unwrap(), entry);
        // As the run log keeps it: among the inputs, tagged `input`.
        let input =
            crate::record::Recorded { seq: 7, ts: None, input: crate::record::Input::Journaled(Box::new(entry)) };
        let text = serde_json::to_string(&input).unwrap();
        assert_eq!(serde_json::from_str::<crate::record::Recorded>(&text).unwrap(), input, "{text}");
    }
}
