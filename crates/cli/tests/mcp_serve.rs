//! `switchyard mcp serve` against a real MCP client: the Python `mcp` SDK over stdio (tests/mcp_serve/client.py).
//! npm test gives the python (SWITCHYARD_TEST_MCP_PYTHON, from scripts/mcp-python.sh).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn mcp_python() -> String {
    std::env::var("SWITCHYARD_TEST_MCP_PYTHON")
        .expect("SWITCHYARD_TEST_MCP_PYTHON must name a python with the `mcp` package: run `npm test`")
}

/// A folder of workflows to serve (a copy of examples/approval-flow.yaml, one with an input and an output schema, one
/// with neither, one that does not load) and one answers file for all of them, in a home of its own.
struct Served {
    home: tempfile::TempDir,
}

const CLASSIFY: &str = "switchyard: 1
name: Classify a request
description: Says what kind of request it is and whether it is urgent.
input_schema:
  type: object
  properties:
    request: {type: string, description: What the person asks}
  required: [request]
defaults:
  model: local/smollm2-135m
nodes:
  - {id: start, type: start}
  - id: classify
    type: agent
    user_prompt: 'Classify this request: {{ PREVIOUS_OUTPUT }}'
    output_schema:
      type: object
      properties:
        kind: {type: string, enum: [bug, feature, question]}
        urgent: {type: boolean}
      required: [kind, urgent]
edges:
  - {from: start, to: classify}
";

const ECHO: &str = "switchyard: 1
name: echo
defaults:
  model: local/smollm2-135m
nodes:
  - {id: start, type: start}
  - {id: say, type: agent}
edges:
  - {from: start, to: say}
";

/// A code step: it runs only with consent, as with `run`.
const COUNT: &str = "switchyard: 1
name: Count rows
nodes:
  - {id: start, type: start, initial_input: {rows: [1, 2, 3]}}
  - {id: count, type: script, language: python, code: \"return {'count': len(input['rows'])}\"}
edges:
  - {from: start, to: count}
";

const ANSWERS: &str = "nodes:
  classify:
    - data: {kind: bug, urgent: true}
  say:
    - text: hello back
  draft:
    - text: Dark mode arrives next week on every platform.
  publish:
    - text: <h1>Dark mode is coming</h1>
  revise:
    - text: Dark mode arrives on March 3rd, on web first.
";

impl Served {
    fn new() -> Served {
        let home = tempfile::tempdir().unwrap();
        let flows = home.path().join("flows");
        std::fs::create_dir(&flows).unwrap();
        std::fs::copy(repo().join("examples/approval-flow.yaml"), flows.join("approval-flow.yaml")).unwrap();
        std::fs::write(flows.join("classify.yaml"), CLASSIFY).unwrap();
        std::fs::write(flows.join("echo.yaml"), ECHO).unwrap();
        std::fs::write(flows.join("count.yaml"), COUNT).unwrap();
        std::fs::write(flows.join("broken.yaml"), "switchyard: 1\nname: [unclosed\n").unwrap();
        std::fs::write(home.path().join("answers.yaml"), ANSWERS).unwrap();
        Served { home }
    }

    /// Plays a scenario of client.py against `switchyard mcp serve FLOWS --answers ANSWERS`: what the client saw.
    fn play(&self, scenario: &str) -> Value {
        let home = self.home.path();
        let out = Command::new(mcp_python())
            .arg(repo().join("crates/cli/tests/mcp_serve/client.py"))
            .args([scenario, env!("CARGO_BIN_EXE_switchyard")])
            .arg(home)
            .arg(home.join("flows"))
            .arg("--answers")
            .arg(home.join("answers.yaml"))
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{scenario}: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{scenario}: not JSON ({e}): {stdout}"))
    }

    fn show(&self, run_id: &str) -> Value {
        let out = Command::new(env!("CARGO_BIN_EXE_switchyard"))
            .args(["show", run_id, "--json"])
            .env("SWITCHYARD_HOME", self.home.path())
            .output()
            .unwrap();
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

fn tool<'a>(seen: &'a Value, name: &str) -> &'a Value {
    seen["tools"].as_array().unwrap().iter().find(|t| t["name"] == name).unwrap_or_else(|| panic!("{name}: {seen}"))
}

#[test]
#[ignore = "needs a python with the `mcp` package (SWITCHYARD_TEST_MCP_PYTHON); npm test runs it"]
fn a_real_client_lists_the_workflows_as_tools_with_their_schemas_and_gets_structured_content_with_progress() {
    let served = Served::new();
    let seen = served.play("list-and-call");
    assert_eq!(seen["protocol"], "2025-11-25", "the newest revision with elicitation: {seen}");
    let names: Vec<&str> = seen["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["publish_with_approval", "classify_a_request", "count_rows", "echo"],
        "only the workflows, the broken file left out: {seen}"
    );
    let classify = tool(&seen, "classify_a_request");
    assert_eq!(classify["description"], "Says what kind of request it is and whether it is urgent.");
    assert_eq!(classify["inputSchema"]["required"], json!(["request"]));
    assert_eq!(classify["outputSchema"]["required"], json!(["kind", "urgent"]));
    let echo = tool(&seen, "echo");
    assert_eq!(echo["inputSchema"]["properties"]["message"]["type"], "string");
    assert_eq!(echo["outputSchema"], Value::Null);

    assert_eq!(seen["call"]["isError"], false, "{seen}");
    assert_eq!(seen["call"]["structured"], json!({"kind": "bug", "urgent": true}));
    let progress: Vec<&str> =
        seen["progress"].as_array().unwrap().iter().filter_map(|p| p["message"].as_str()).collect();
    assert_eq!(progress, ["start entered", "start succeeded", "classify entered", "classify succeeded"], "{seen}");

    assert_eq!(seen["echo"]["text"], json!(["hello back"]));
    assert_eq!(seen["echo"]["structured"]["status"], "completed");
    assert_eq!(seen["echo"]["structured"]["result"], json!({"text": "hello back"}));
    // An input that does not match the input schema is refused with its code; a code step without consent fails.
    assert_eq!(
        (seen["mismatch"]["isError"].clone(), seen["mismatch"]["structured"]["code"].clone()),
        (json!(true), json!("INPUT_MISMATCH")),
        "{seen}"
    );
    assert_eq!(seen["code"]["isError"], true, "{seen}");
    assert_eq!(seen["code"]["structured"]["status"], "failed", "{seen}");
    assert_eq!(seen["code"]["structured"]["failed"][0]["code"], "CODE_NEEDS_CONSENT", "{seen}");
    assert!(seen["code"]["text"][0].as_str().unwrap().contains("[CODE_NEEDS_CONSENT]"), "{seen}");
    // The run is in the run store, as `run` keeps it.
    let run_id = seen["echo"]["structured"]["runId"].as_str().unwrap();
    assert_eq!(served.show(run_id)["status"], "completed");
}

#[test]
#[ignore = "needs a python with the `mcp` package (SWITCHYARD_TEST_MCP_PYTHON); npm test runs it"]
fn an_approval_is_asked_through_the_clients_elicitation_and_approving_completes_the_call() {
    let seen = Served::new().play("approve");
    let asked = seen["asked"].as_array().unwrap();
    assert_eq!(asked.len(), 1, "{seen}");
    let question = asked[0]["message"].as_str().unwrap();
    assert!(question.starts_with("Publish this announcement?"), "{question}");
    assert!(question.contains("Dark mode arrives next week"), "what is decided about is shown: {question}");
    assert_eq!(asked[0]["schema"]["properties"]["decision"]["enum"], json!(["approve", "reject"]));
    assert_eq!(seen["call"]["isError"], false, "{seen}");
    assert_eq!(seen["call"]["text"], json!(["<h1>Dark mode is coming</h1>"]));
    assert!(seen["progress"].as_array().unwrap().iter().any(|p| p["message"] == "review waits for a decision"));
    assert!(seen["progress"].as_array().unwrap().iter().any(|p| p["message"] == "publish succeeded"), "{seen}");
}

#[test]
#[ignore = "needs a python with the `mcp` package (SWITCHYARD_TEST_MCP_PYTHON); npm test runs it"]
fn rejecting_through_elicitation_gives_the_runs_rejected_outcome() {
    let served = Served::new();
    let seen = served.play("reject");
    assert_eq!(seen["call"]["text"], json!(["Dark mode arrives on March 3rd, on web first."]), "{seen}");
    let run_id = seen["call"]["structured"]["runId"].as_str().unwrap();
    let run = served.show(run_id);
    assert_eq!(run["results"]["review"]["data"]["decision"], "reject", "{run}");
    assert_eq!(run["results"]["review"]["data"]["note"], "say when", "{run}");
}

#[test]
#[ignore = "needs a python with the `mcp` package (SWITCHYARD_TEST_MCP_PYTHON); npm test runs it"]
fn a_decision_made_from_another_terminal_while_the_person_is_asked_wins_and_completes_the_call() {
    let served = Served::new();
    let seen = served.play("decided-elsewhere");
    assert_eq!(seen["elsewhere"], 0, "`switchyard resume --decide` took the decision first: {seen}");
    assert_eq!(seen["call"]["text"], json!(["<h1>Dark mode is coming</h1>"]), "the first decision won: {seen}");
    let run_id = seen["call"]["structured"]["runId"].as_str().unwrap();
    let run = served.show(run_id);
    assert_eq!(run["results"]["review"]["data"]["decision"], "approve", "the later rejection was not applied: {run}");
    assert_eq!(run["status"], "completed");
}

#[test]
#[ignore = "needs a python with the `mcp` package (SWITCHYARD_TEST_MCP_PYTHON); npm test runs it"]
fn without_elicitation_the_call_says_the_run_waits_and_resume_decide_completes_it() {
    let seen = Served::new().play("no-elicitation");
    assert_eq!(seen["call"]["isError"], false, "{seen}");
    let structured = &seen["call"]["structured"];
    assert_eq!(structured["status"], "paused", "{seen}");
    assert_eq!(structured["pending"], json!([{"node": "review", "message": "Publish this announcement?"}]));
    let run_id = structured["runId"].as_str().unwrap();
    let command = format!("switchyard resume {run_id} --decide review=approve");
    assert_eq!(structured["resume"], command.as_str());
    assert!(seen["call"]["text"][0].as_str().unwrap().contains(&command), "{seen}");
    assert_eq!(seen["resumed"]["code"], 0, "{seen}");
    assert_eq!(seen["resumed"]["result"]["status"], "completed", "{seen}");
    assert_eq!(seen["resumed"]["result"]["results"]["publish"]["data"]["text"], "<h1>Dark mode is coming</h1>");
}

#[test]
#[ignore = "needs a python with the `mcp` package (SWITCHYARD_TEST_MCP_PYTHON); npm test runs it"]
fn a_call_cancelled_while_its_run_waits_for_a_decision_cancels_the_run() {
    let served = Served::new();
    let seen = served.play("cancel");
    assert_eq!(seen["status"], "cancelled", "{seen}");
    let run = served.show(seen["run"].as_str().unwrap());
    assert!(run["results"].get("publish").is_none() && run["results"].get("revise").is_none(), "{run}");
}

/// The client cancels its call and dismisses the open question in one write (both reach the server together): the
/// cancellation, which came first, wins, however the two land while the server waits. Played over raw JSON-RPC lines
/// (no SDK decides the timing), five times: the race it guards against came out about once in three.
#[test]
fn a_cancellation_and_a_dismissal_that_arrive_together_cancel_the_run() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;
    for round in 0..5 {
        let served = Served::new();
        let home = served.home.path();
        let mut child = Command::new(env!("CARGO_BIN_EXE_switchyard"))
            .args(["mcp", "serve"])
            .arg(home.join("flows/approval-flow.yaml"))
            .arg("--answers")
            .arg(home.join("answers.yaml"))
            .env("SWITCHYARD_HOME", home)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut send = |text: String| stdin.write_all(text.as_bytes()).and_then(|_| stdin.flush()).unwrap();
        let hello = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {"form": {}}},
            "clientInfo": {"name": "raw", "version": "0"}}});
        send(format!("{hello}\n"));
        lines.next().unwrap().unwrap();
        let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "publish_with_approval", "arguments": {"message": "Dark mode ships"}}});
        send(format!("{}\n{call}\n", json!({"jsonrpc": "2.0", "method": "notifications/initialized"})));
        let asked = loop {
            let line: Value = serde_json::from_str(&lines.next().expect("the server asks").unwrap()).unwrap();
            if line["method"] == "elicitation/create" {
                break line;
            }
        };
        let run_id = asked["params"]["message"]
            .as_str()
            .unwrap()
            .split("(run ")
            .nth(1)
            .unwrap()
            .split(',')
            .next()
            .unwrap()
            .to_string();
        let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}});
        let dismiss = json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "cancel"}});
        send(format!("{cancel}\n{dismiss}\n"));
        // The cancelled call gets no answer: the run's status in the store says how it ended.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        let status = loop {
            let status = served.show(&run_id)["status"].as_str().unwrap_or("").to_string();
            if !matches!(status.as_str(), "paused" | "running") || std::time::Instant::now() > deadline {
                break status;
            }
            std::thread::yield_now();
        };
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(status, "cancelled", "round {round}: run {run_id}");
    }
}

#[test]
fn serving_nothing_that_loads_is_refused_with_a_code() {
    let home = tempfile::tempdir().unwrap();
    let broken = home.path().join("broken.yaml");
    std::fs::write(&broken, "switchyard: 1\nname: [unclosed\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .args(["mcp", "serve"])
        .arg(&broken)
        .env("SWITCHYARD_HOME", home.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("broken.yaml") && stderr.contains("not served"), "the file is named, with why: {stderr}");
    assert!(stderr.contains("MCP_NO_TOOLS"), "{stderr}");
    assert!(out.stdout.is_empty(), "stdout is the transport: nothing else is written to it");
}
