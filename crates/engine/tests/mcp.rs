//! MCP tools against a real server (tests/mcp/server.py, the Python `mcp` package), over stdio and streamable HTTP:
//! discovery, scripted tool calls recording real results, a tool error, a hanging tool, a server that dies, one that
//! is not installed. `npm test` installs the package in a cached venv and runs these with
//! `SWITCHYARD_TEST_MCP_PYTHON` set; `cargo test -- --ignored` needs that variable.

mod support;

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{json, Value};
use support::*;
use switchyard_engine::events::EventKind;
use switchyard_engine::log::{Collector, MemoryLog};
use switchyard_engine::mcp::{probe, HttpServer, McpServerConfig, McpSessions, StdioServer};
use switchyard_engine::result::PendingApproval;
use switchyard_engine::run::{self, RunOptions};
use switchyard_engine::RunStatus;

fn python() -> String {
    std::env::var("SWITCHYARD_TEST_MCP_PYTHON")
        .expect("SWITCHYARD_TEST_MCP_PYTHON must name a python with the `mcp` package: run `npm test`")
}

fn server_script() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/server.py").display().to_string()
}

fn stdio(timeout_seconds: Option<u32>) -> McpServerConfig {
    McpServerConfig::Stdio(StdioServer {
        command: python(),
        args: vec![server_script(), "stdio".into()],
        env: Default::default(),
        cwd: None,
        timeout_seconds,
    })
}

/// The server over HTTP on a free port, stopped when the guard is dropped.
struct HttpGuard(std::process::Child, McpServerConfig);

impl Drop for HttpGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn http() -> HttpGuard {
    http_recording(None)
}

/// The server over HTTP; with `calls`, its `add` records each call there (tests/mcp/server.py, `record_call`).
fn http_recording(calls: Option<&std::path::Path>) -> HttpGuard {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut command = std::process::Command::new(python());
    if let Some(calls) = calls {
        command.env("SWITCHYARD_TEST_CALLS", calls);
    }
    let child = command
        .args([server_script(), "http".into(), port.to_string()])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Ready once it accepts connections (it binds after importing its packages).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(std::time::Instant::now() < deadline, "the HTTP MCP server did not start");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let config = McpServerConfig::Http(HttpServer {
        url: format!("http://127.0.0.1:{port}/mcp"),
        headers: Default::default(),
        timeout_seconds: None,
    });
    HttpGuard(child, config)
}

const AGENT: &str = "nodes:
  - {id: start, type: start}
  - {id: helper, type: agent, user_prompt: Add them, tools: {mcp: [test]}}
edges:
  - {from: start, to: helper}
";

async fn run_with_server(
    config: McpServerConfig,
    script_yaml: &str,
) -> (switchyard_engine::run::Outcome, Vec<switchyard_engine::events::Event>) {
    run_agent(AGENT, config, script_yaml).await
}

async fn run_agent(
    agent: &str,
    config: McpServerConfig,
    script_yaml: &str,
) -> (switchyard_engine::run::Outcome, Vec<switchyard_engine::events::Event>) {
    let wf = workflow(agent);
    let collector = Collector::default();
    let mut rt = runtime(script(script_yaml), AskedModel::new(script(script_yaml)), vec![Arc::new(collector.clone())]);
    rt.log = Some(Arc::new(MemoryLog::default()));
    rt.mcp = Arc::new(McpSessions::new([("test".to_string(), config)]));
    let outcome = run_to_pause(Arc::new(wf), RunOptions::default(), rt).await;
    (outcome, collector.events())
}

fn tool_calls(outcome: &switchyard_engine::run::Outcome) -> Vec<Value> {
    serde_json::to_value(&outcome.result.node("helper").unwrap().tool_calls).unwrap().as_array().unwrap().clone()
}

#[tokio::test]
#[ignore = "needs a python with the `mcp` package (SWITCHYARD_TEST_MCP_PYTHON); npm test runs it"]
async fn a_stdio_and_an_http_server_list_their_tools_and_scripted_calls_record_their_real_results() {
    let served = http();
    for (transport, config) in [("stdio", stdio(None)), ("http", served.1.clone())] {
        let tools = probe("test", &config).await.unwrap_or_else(|e| panic!("{transport}: {e}"));
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        for expected in ["add", "echo", "fail", "hang", "delete_everything", "crash"] {
            assert!(names.contains(&expected), "{transport}: {names:?}");
        }
        let add = tools.iter().find(|t| t.name == "add").unwrap();
        assert_eq!(
            add.input_schema["properties"]["a"]["type"], "integer",
            "{transport}: the schema as the server gave it"
        );
        assert!(!add.destructive && tools.iter().find(|t| t.name == "delete_everything").unwrap().destructive);

        let script = "nodes:\n  helper:\n    text: done\n    tool_calls:\n      - {tool: test/add, input: {a: 2, b: 3}}\n      - {tool: test__echo, input: {text: hi}}\n";
        let (outcome, events) = run_with_server(config, script).await;
        assert_eq!(outcome.result.status, RunStatus::Completed, "{transport}: {:?}", outcome.result.error);
        let calls = tool_calls(&outcome);
        assert_eq!(calls[0]["tool"], "test/add");
        assert_eq!(calls[0]["output"], json!({"result": 5}), "{transport}: the real result, recorded");
        assert_eq!(calls[1]["output"], json!({"result": "hi"}), "{transport}");
        let results: Vec<&Value> = events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::ToolResult { output, .. } => Some(output),
                _ => None,
            })
            .collect();
        assert_eq!(results.len(), 2, "{transport}: a tool:result event per call");
    }
}

#[tokio::test]
#[ignore = "needs a python with the `mcp` package (SWITCHYARD_TEST_MCP_PYTHON); npm test runs it"]
async fn discovery_follows_pagination_past_the_first_page() {
    let paged = McpServerConfig::Stdio(StdioServer {
        command: python(),
        args: vec![server_script(), "stdio-paged".into()],
        env: Default::default(),
        cwd: None,
        timeout_seconds: None,
    });
    let tools = probe("test", &paged).await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        ["add", "echo", "fail", "hang", "delete_everything", "write_file", "tally", "crash"],
        "four pages of two"
    );
    let (outcome, _) = run_with_server(paged, "nodes:\n  helper:\n    text: done\n    tool_calls:\n      - {tool: test/crash_not_listed, input: {}}\n      - {tool: test/delete_everything, input: {confirm: false}}\n").await;
    let calls = tool_calls(&outcome);
    assert_eq!(calls[1]["output"], json!({"result": "kept"}), "a tool from the last page is called: {calls:?}");
    assert!(calls[0]["error"].is_string(), "an unknown tool is an error for the model: {calls:?}");
}

#[tokio::test]
#[ignore = "needs a python with the `mcp` package (SWITCHYARD_TEST_MCP_PYTHON); npm test runs it"]
async fn a_tool_error_a_hanging_tool_and_a_dead_server_come_back_as_the_tools_result() {
    let script = "nodes:\n  helper:\n    text: done\n    tool_calls:\n      - {tool: test/fail, input: {reason: no disk}}\n      - {tool: test/hang, input: {}}\n      - {tool: test/crash, input: {}}\n      - {tool: test/add, input: {a: 1, b: 1}}\n";
    let (outcome, _) = run_with_server(stdio(Some(2)), script).await;
    assert_eq!(outcome.result.status, RunStatus::Completed, "tool errors go to the model, the node goes on");
    let calls = tool_calls(&outcome);
    let error = |i: usize| calls[i]["error"].as_str().unwrap_or_default().to_string();
    assert!(error(0).contains("no disk"), "{calls:?}");
    assert!(error(1).contains("did not answer within 2 s"), "{calls:?}");
    assert!(
        !error(2).is_empty() && !error(3).is_empty(),
        "after the server died, calls fail with a message: {calls:?}"
    );
}

#[tokio::test]
#[ignore = "needs a python with the `mcp` package (SWITCHYARD_TEST_MCP_PYTHON); npm test runs it"]
async fn a_server_that_is_not_installed_or_not_configured_leaves_the_agent_without_it_saying_why() {
    let missing = McpServerConfig::Stdio(StdioServer {
        command: "/nonexistent/mcp-server".into(),
        args: vec![],
        env: Default::default(),
        cwd: None,
        timeout_seconds: None,
    });
    let e = probe("gone", &missing).await.unwrap_err().to_string();
    assert!(e.contains("/nonexistent/mcp-server") && e.contains("installed"), "{e}");
    let (outcome, events) = run_with_server(missing, "nodes: {helper: {text: done}}").await;
    assert_eq!(outcome.result.status, RunStatus::Completed);
    let warnings: Vec<String> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::NodeWarning { message, .. } => Some(message.clone()),
            _ => None,
        })
        .collect();
    assert!(warnings.iter().any(|w| w.contains("did not start") && w.contains("runs without `test`")), "{warnings:?}");
}

/// An agent whose tool calls need approval (`tools.approval`), over the stdio server.
fn approving(approval: &str) -> String {
    AGENT.replace("tools: {mcp: [test]}", &format!("tools: {{mcp: [test], approval: {approval}}}"))
}

/// A script whose agent adds (a read-only tool), then writes `path` (a destructive one).
fn add_then_write(path: &std::path::Path) -> String {
    format!(
        "nodes:\n  helper:\n    text: done\n    tool_calls:\n      - {{tool: test/add, input: {{a: 2, b: 3}}}}\n      - {{tool: test/write_file, input: {{path: {:?}, text: hello}}}}\n",
        path.display().to_string()
    )
}

#[tokio::test]
#[ignore = "needs a python with the `mcp` package (SWITCHYARD_TEST_MCP_PYTHON); npm test runs it"]
async fn a_destructive_call_waits_for_approval_and_a_rejection_is_the_tools_result_without_calling_it() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("note.txt");
    let wf = Arc::new(workflow(&approving("destructive")));
    let answers = script(&add_then_write(&target));
    let log = MemoryLog::default();
    let mut rt = runtime(answers.clone(), AskedModel::new(answers.clone()), Vec::new());
    rt.log = Some(Arc::new(log.clone()));
    rt.mcp = Arc::new(McpSessions::new([("test".to_string(), stdio(None))]));
    let options = RunOptions { run_id: Some("asks".into()), ..RunOptions::default() };

    // Nobody decides in this process: the run pauses on the call, which has not run.
    let paused = run_to_pause(wf.clone(), options.clone(), rt.clone()).await.result;
    assert_eq!(paused.status, RunStatus::Paused, "{:?}", paused.error);
    assert_eq!(paused.pending.len(), 1);
    let request = paused.pending[0].tool.clone().expect("a tool call waits");
    assert_eq!((paused.pending[0].node.as_str(), request.tool.as_str()), ("helper", "test/write_file"));
    assert_eq!(request.input["text"], "hello");
    assert!(paused.pending[0].previous_output.contains("hello"), "the arguments are shown");
    assert!(!target.exists(), "a call waiting for approval has not run");

    // Continued in a new process with a rejection: the agent runs again, the read-only call runs without asking,
    // and the model is told the call was rejected.
    let decisions = vec![("helper".to_string(), json!({"decision": "reject", "note": "not there"}))];
    let resumed =
        resume_to_pause(wf.clone(), options.clone(), log.recording(), decisions, rt.clone()).await.unwrap().result;
    assert_eq!(resumed.status, RunStatus::Completed, "{:?}", resumed.error);
    let calls = serde_json::to_value(&resumed.node("helper").unwrap().tool_calls).unwrap();
    assert_eq!(calls[0]["output"], json!({"result": 5}));
    assert_eq!(calls[1]["error"], "rejected by the user: not there");
    assert!(!target.exists(), "a rejected call never reaches the server");

    // The recording plays back to the same result without a server call.
    let mut quiet = runtime(answers.clone(), AskedModel::new(answers), Vec::new());
    quiet.mcp = Arc::new(McpSessions::new([]));
    let replayed = run::replay(wf, options, log.recording(), quiet).unwrap().result;
    assert_eq!(replayed.status, RunStatus::Completed);
    assert_eq!(replayed.results, resumed.results);
}

#[tokio::test]
#[ignore = "needs a python with the `mcp` package (SWITCHYARD_TEST_MCP_PYTHON); npm test runs it"]
async fn an_approved_call_runs_when_the_person_decides_in_a_live_run() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("note.txt");
    let answers = script(&add_then_write(&target));
    let (asked_tx, mut asked) = tokio::sync::mpsc::unbounded_channel();
    let observer = move |e: &switchyard_engine::events::Event| {
        if let EventKind::ApprovalRequested(PendingApproval { tool: Some(request), .. }) = &e.kind {
            let _ = asked_tx.send(request.clone());
        }
        Ok(())
    };
    let mut rt = runtime(answers.clone(), AskedModel::new(answers), vec![Arc::new(observer)]);
    rt.mcp = Arc::new(McpSessions::new([("test".to_string(), stdio(None))]));
    let handle = start_live(Arc::new(workflow(&approving("destructive"))), RunOptions::default(), rt);
    let request = asked.recv().await.expect("the write waits for approval");
    assert_eq!(request.tool, "test/write_file");
    assert!(!target.exists());
    handle
        .decide("helper", switchyard_engine::run::Decision::new(switchyard_engine::run::Verdict::Approve, ""))
        .await
        .unwrap();
    let result = handle.finish().await.result;
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    let calls = serde_json::to_value(&result.node("helper").unwrap().tool_calls).unwrap();
    assert_eq!(calls[1]["output"], json!({"result": "written"}));
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "hello");
    assert!(asked.try_recv().is_err(), "the read-only call did not ask");
}

#[tokio::test]
#[ignore = "needs a python with the `mcp` package (SWITCHYARD_TEST_MCP_PYTHON); npm test runs it"]
async fn with_approval_all_every_call_asks_and_a_script_can_decide_each() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("note.txt");
    let answers = format!("{}approvals:\n  helper: [reject, approve]\n", add_then_write(&target));
    let (outcome, events) = run_agent(&approving("all"), stdio(None), &answers).await;
    assert_eq!(outcome.result.status, RunStatus::Completed, "{:?}", outcome.result.error);
    let calls = tool_calls(&outcome);
    assert_eq!(calls[0]["error"], "rejected by the user", "even a read-only call asks: {calls:?}");
    assert_eq!(calls[1]["output"], json!({"result": "written"}));
    let asked = events.iter().filter(|e| matches!(e.kind, EventKind::ApprovalRequested(_))).count();
    assert_eq!(asked, 2);
    assert!(target.exists());
}

#[tokio::test]
#[ignore = "needs a python with the `mcp` package (SWITCHYARD_TEST_MCP_PYTHON); npm test runs it"]
async fn a_call_over_http_carries_its_idempotency_key_in_the_idempotency_key_header_as_well_as_in_meta() {
    let dir = tempfile::tempdir().unwrap();
    let calls = dir.path().join("calls.jsonl");
    let served = http_recording(Some(&calls));
    let script = "nodes:\n  helper:\n    text: done\n    tool_calls:\n      - {tool: test/add, input: {a: 2, b: 3}}\n      - {tool: test/echo, input: {text: hi}}\n      - {tool: test/add, input: {a: 4, b: 5}}\n";
    let (outcome, _) = run_with_server(served.1.clone(), script).await;
    assert_eq!(outcome.result.status, RunStatus::Completed, "{:?}", outcome.result.error);
    let run = &outcome.result.run_id;
    let lines: Vec<Value> =
        std::fs::read_to_string(&calls).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(
        lines,
        [
            json!({"a": 2, "b": 3, "key": format!("{run}/helper/1/c0"), "header": format!("{run}/helper/1/c0")}),
            json!({"a": 4, "b": 5, "key": format!("{run}/helper/1/c2"), "header": format!("{run}/helper/1/c2")}),
        ],
        "each call's key, in _meta and in the header alike"
    );

    // Over stdio there is no header: the `_meta` carries the key.
    let stdio_calls = dir.path().join("stdio.jsonl");
    let over_stdio = McpServerConfig::Stdio(StdioServer {
        command: python(),
        args: vec![server_script(), "stdio".into()],
        env: [("SWITCHYARD_TEST_CALLS".to_string(), stdio_calls.display().to_string())].into(),
        cwd: None,
        timeout_seconds: None,
    });
    let (outcome, _) = run_with_server(over_stdio, script).await;
    let run = &outcome.result.run_id;
    let first: Value =
        serde_json::from_str(std::fs::read_to_string(&stdio_calls).unwrap().lines().next().unwrap()).unwrap();
    assert_eq!(first, json!({"a": 2, "b": 3, "key": format!("{run}/helper/1/c0"), "header": null}));
}
