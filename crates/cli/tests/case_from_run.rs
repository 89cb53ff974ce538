//! A test case saved from a run on a model notices the prompt you changed (docs/evals.md, "Making a case from a
//! run"): the real binary runs a chain of three agents on a model server over HTTP that answers what it is asked,
//! `eval add` keeps the run's model calls, and an edit to one prompt makes the case ask again exactly that node and
//! the node its new answer reaches — offline, the case cannot run and names that node.

use std::path::Path;
use std::process::{Command, Output};
use std::sync::Arc;

use serde_json::Value;

#[path = "../../engine/tests/support/http.rs"]
mod http;
mod support;

use http::{Recorded, Reply, TestServer};

/// The model: answers every question with the question, so an answer changes exactly when what was asked changes.
fn echo(request: &Recorded) -> Reply {
    let messages = request.body["messages"].as_array().cloned().unwrap_or_default();
    let asked = messages.iter().rev().find(|m| m["role"] == "user").and_then(|m| m["content"].as_str()).unwrap_or("");
    Reply::openai_stream(&["You asked: ", asked])
}

fn switchyard(home: &Path, model_url: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .args(args)
        .env("SWITCHYARD_HOME", home)
        .env("SWITCHYARD_LOCAL_URL", model_url)
        .output()
        .unwrap()
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

const CHAIN: &str = "switchyard: 1
name: chain
defaults:
  model: local/echo
nodes:
  - {id: start, type: start}
  - {id: colour, type: agent, user_prompt: Name a colour}
  - {id: describe, type: agent, user_prompt: \"Describe it: {{ colour.text }}\"}
  - {id: summary, type: agent, user_prompt: \"Summarise: {{ describe.text }}\"}
edges:
  - {from: start, to: colour}
  - {from: colour, to: describe}
  - {from: describe, to: summary}
";

/// The nodes the model was asked for since `from` (its first question names the node's prompt).
fn asked_since(server: &TestServer, from: usize) -> Vec<String> {
    server.requests()[from..]
        .iter()
        .map(|r| {
            let prompt =
                r.body["messages"].as_array().unwrap().last().unwrap()["content"].as_str().unwrap().to_string();
            ["Name a colour", "Describe", "Tell me about", "Summarise"]
                .iter()
                .find(|p| prompt.starts_with(**p))
                .map_or(prompt.clone(), |p| p.to_string())
        })
        .collect()
}

#[test]
fn a_case_saved_from_a_run_on_a_model_replays_its_calls_and_asks_again_only_what_an_edit_changed() {
    let tokio = tokio::runtime::Runtime::new().unwrap();
    let server = tokio.block_on(TestServer::answering(Arc::new(|r, _| echo(r))));
    let model_url = format!("{}/v1", server.url);
    let home = tempfile::tempdir().unwrap();
    let flow = support::write_file(home.path(), "chain.yaml", CHAIN);
    let run = |args: &[&str]| switchyard(home.path(), &model_url, args);

    let out = run(&["run", &flow, "--json"]);
    let (code, result) = support::json_output(&["run"], out);
    assert_eq!((code, result["status"].as_str()), (0, Some("completed")), "{result}");
    assert_eq!(server.requests().len(), 3, "one model call per agent");
    let run_id = result["runId"].as_str().unwrap().to_string();

    let out = run(&["eval", "add", &run_id]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("3 model calls kept in"), "{}", text(&out));
    let evals = home.path().join("chain.evals.yaml");
    let written = std::fs::read_to_string(&evals).unwrap();
    assert!(!written.contains("answers:"), "the agents' outputs are not pinned as answers:\n{written}");
    let record: Value =
        serde_json::from_str(&std::fs::read_to_string(home.path().join("chain.evals.calls.json")).unwrap()).unwrap();
    assert_eq!(record["calls"].as_object().unwrap().len(), 3, "{record}");
    let evals = evals.to_string_lossy().into_owned();

    // Unchanged, the case replays its calls: it passes offline, and online asks no model.
    let out = run(&["eval", &evals, "--offline"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let before = server.requests().len();
    let out = run(&["eval", &evals]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(server.requests().len(), before, "an unchanged case asks no model");

    // One prompt edited: offline, the case cannot run, and it names that node and why.
    std::fs::write(&flow, CHAIN.replace("Describe it:", "Tell me about")).unwrap();
    let out = run(&["eval", &evals, "--offline", "--json"]);
    let (_, report) = support::json_output(&["eval"], out);
    let error = report["cases"][0]["attempts"][0]["error"].clone();
    assert_eq!(error["code"], "OFFLINE_UNRECORDED", "{report}");
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("`describe`") && message.contains("its prompt, model, tools or schema changed"),
        "{message}"
    );
    assert!(
        !message.contains("`colour`") && !message.contains("`summary`"),
        "only the edited node is named: {message}"
    );

    // Online, the edited node is asked again, and the node its new answer reaches; the one before it is not.
    let before = server.requests().len();
    let out = run(&["eval", &evals]);
    assert_eq!(asked_since(&server, before), ["Tell me about", "Summarise"], "{}", text(&out));
    let shown = text(&out);
    assert!(shown.contains("asked the model again: describe (its prompt, model, tools or schema changed)"), "{shown}");
    assert!(shown.contains("asked the model again: summary (what reached it changed)"), "{shown}");
    assert_eq!(out.status.code(), Some(1), "the case saved before the edit fails on what changed: {shown}");
}
