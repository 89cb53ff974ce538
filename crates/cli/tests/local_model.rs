//! A real local model's tool loop survives a kill (docs/runs.md, "What a resume repeats"): the real binary runs an
//! agent on llama.cpp's server (SmolLM2-135M, as in the engine's local_model tests) whose first turn must call a real
//! MCP server's `add` (`tools.call_first`), the server recording each call it gets. The model's requests go through a
//! proxy that holds the second one: by then the first turn and its tool call are journaled, and the run is killed
//! (SIGKILL, with its process group). `switchyard resume` finishes it asking the model only the turns not journaled,
//! and the tool is not called again. `npm test` starts the model server and runs this with `--ignored`,
//! `SWITCHYARD_TEST_LLM_URL` and `SWITCHYARD_TEST_MCP_PYTHON` set.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

#[path = "../../engine/tests/support/http.rs"]
mod http;
mod support;

use http::{Recorded, Reply, TestServer};

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("{name} must be set: run `npm test` (scripts/test.sh)"))
}

/// What the proxy in front of the model server does: it counts the model turns asked (chat completions) and holds
/// the one numbered `hold_at` (from 1) unanswered.
struct Proxy {
    /// `host:port` of the real model server.
    upstream: String,
    turns: usize,
    hold_at: Option<usize>,
}

/// Sends the request to the model server as it came (one request per connection) and gives back its answer, a
/// stream read to its end.
fn forward(upstream: &str, request: &Recorded) -> Reply {
    let mut socket = std::net::TcpStream::connect(upstream).expect("the model server accepts connections");
    let head = |method: &str, length: usize| {
        format!("{method} {} HTTP/1.1\r\nhost: {upstream}\r\ncontent-type: application/json\r\ncontent-length: {length}\r\nconnection: close\r\n\r\n", request.path)
    };
    let sent = match &request.body {
        Value::Null => head("GET", 0),
        body => {
            let body = body.to_string();
            head("POST", body.len()) + &body
        }
    };
    socket.write_all(sent.as_bytes()).unwrap();
    let mut answer = Vec::new();
    socket.read_to_end(&mut answer).unwrap();
    let end = answer.windows(4).position(|w| w == b"\r\n\r\n").expect("an HTTP answer") + 4;
    let head = String::from_utf8_lossy(&answer[..end]).to_lowercase();
    let status: u16 = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    let content_type =
        head.lines().find_map(|l| l.strip_prefix("content-type:")).unwrap_or("application/json").trim().to_string();
    let mut body = answer[end..].to_vec();
    if head.contains("transfer-encoding: chunked") {
        body = dechunk(&body);
    }
    Reply::Body { status, headers: vec![("content-type", content_type)], body: String::from_utf8(body).unwrap() }
}

fn dechunk(mut chunked: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    loop {
        let line_end = chunked.windows(2).position(|w| w == b"\r\n").expect("a chunk size line");
        let size_text = String::from_utf8_lossy(&chunked[..line_end]);
        let size = usize::from_str_radix(size_text.split(';').next().unwrap().trim(), 16).unwrap();
        if size == 0 {
            return body;
        }
        body.extend_from_slice(&chunked[line_end + 2..line_end + 2 + size]);
        chunked = &chunked[line_end + 2 + size + 2..];
    }
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(300);
    while !done() {
        assert!(Instant::now() < deadline, "waited five minutes for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The calls the MCP server's `add` recorded (tests/mcp/server.py, `record_call`).
fn recorded_calls(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path).unwrap_or_default().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
#[ignore = "needs a local model server and a python with the `mcp` package; `npm test` starts them"]
fn the_local_models_call_first_tool_loop_killed_after_its_tool_call_resumes_asking_only_the_turns_not_journaled() {
    use std::os::unix::process::CommandExt;
    let llm_url = env("SWITCHYARD_TEST_LLM_URL");
    let upstream = llm_url.trim_start_matches("http://").split('/').next().unwrap().to_string();
    let tokio = tokio::runtime::Runtime::new().unwrap();
    let proxy = Arc::new(Mutex::new(Proxy { upstream, turns: 0, hold_at: Some(2) }));
    let answering = proxy.clone();
    let server = tokio.block_on(TestServer::answering(Arc::new(move |request, _| {
        let upstream = {
            let mut p = answering.lock().unwrap();
            if request.path.ends_with("/chat/completions") {
                p.turns += 1;
                if p.hold_at == Some(p.turns) {
                    return Reply::Hang;
                }
            }
            p.upstream.clone()
        };
        // The model takes a second or two: this worker thread waits for it, the others serve on.
        tokio::task::block_in_place(|| forward(&upstream, request))
    })));

    let home = tempfile::tempdir().unwrap();
    let calls = home.path().join("calls.jsonl");
    let mcp_server: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR")).join("../engine/tests/mcp/server.py");
    support::write_file(
        home.path(),
        "settings.yaml",
        &format!(
            "providers:\n  - {{id: local, kind: openai, base_url: '{}/v1', max_tokens: 48}}\nmcp_servers:\n  calc: {{command: {:?}, args: [{:?}, stdio], env: {{SWITCHYARD_TEST_CALLS: {:?}}}}}\n",
            server.url,
            env("SWITCHYARD_TEST_MCP_PYTHON"),
            mcp_server,
            calls
        ),
    );
    let flow = support::write_file(
        home.path(),
        "adder.yaml",
        "switchyard: 1\nname: adder\nnodes:\n  - {id: start, type: start, initial_input: What is 2 plus 3?}\n  - id: a\n    type: agent\n    model: local/smollm2-135m\n    system_prompt: Use the add tool, then answer briefly.\n    tools: {mcp: [calc/add], call_first: calc/add}\nedges:\n  - {from: start, to: a}\n",
    );
    let command = |args: &[&str]| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_switchyard"));
        command
            .args(args)
            .env("SWITCHYARD_HOME", home.path())
            .env_remove("SWITCHYARD_LOCAL_URL")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        command
    };

    let mut run = command(&["run", &flow, "--json"]);
    run.process_group(0);
    let mut child = run.spawn().unwrap();
    // The second turn is asked only once the first one and its tool call are in the run log.
    wait_for("the model's second turn", || {
        assert!(child.try_wait().unwrap().is_none(), "the run ended before its second turn");
        proxy.lock().unwrap().turns >= 2
    });
    let killed = Command::new("kill").args(["-s", "KILL", "--", &format!("-{}", child.id())]).status().unwrap();
    assert!(killed.success(), "the run's process group (the MCP server with it) was killed");
    let _ = child.wait();
    let before = recorded_calls(&calls);
    assert_eq!(before.len(), 1, "the forced first call reached the tool: {before:?}");

    let listed = command(&["runs", "--json"]).output().unwrap();
    let runs: Value = serde_json::from_slice(&listed.stdout).unwrap();
    let run_id = runs[0]["id"].as_str().unwrap().to_string();
    assert_eq!(runs[0]["status"], "interrupted", "{runs}");
    let (code, shown) = support::json_output(&["show"], command(&["show", &run_id, "--json"]).output().unwrap());
    let kinds = |shown: &Value| -> Vec<String> {
        shown["turns"]["a"].as_array().unwrap().iter().map(|e| e["kind"].as_str().unwrap().to_string()).collect()
    };
    assert_eq!((code, kinds(&shown)), (0, vec!["turn".to_string(), "tool".to_string()]), "journaled: {shown}");

    {
        let mut p = proxy.lock().unwrap();
        p.turns = 0;
        p.hold_at = None;
    }
    let (code, result) = support::json_output(&["resume"], command(&["resume", &run_id, "--json"]).output().unwrap());
    assert_eq!((code, &result["status"]), (0, &json!("completed")), "{result}");
    let asked_after = proxy.lock().unwrap().turns;
    let (_, shown) = support::json_output(&["show"], command(&["show", &run_id, "--json"]).output().unwrap());
    let all = kinds(&shown);
    let turns = all.iter().filter(|k| *k == "turn").count();
    assert_eq!(asked_after, turns - 1, "only the turns not journaled were asked after the resume: {all:?}");
    let node = &result["results"]["a"];
    assert!(node["data"]["text"].is_string(), "the agent answered: {node}");
    let tool_calls = node["toolCalls"].as_array().unwrap();
    let after = recorded_calls(&calls);
    assert_eq!(after.len(), tool_calls.len(), "every tool call reached the tool once: {after:?} {tool_calls:?}");
    assert_eq!(after[0], before[0], "the first call, made before the kill, was not made again");
    let (a, b) = (after[0]["a"].as_i64().unwrap(), after[0]["b"].as_i64().unwrap());
    assert_eq!(tool_calls[0]["output"], json!({"result": a + b}), "its journaled result went to the model");
    assert_eq!(after[0]["key"], format!("{run_id}/a/1/c0"));
    println!(
        "{}",
        json!({"turns": turns, "journaled_before_kill": 1, "asked_after_resume": asked_after,
               "tool_calls": tool_calls.len(), "tool_side_effects": after.len(), "call": after[0]})
    );
}

/// A workflow as an agent's tool, called by the real local model (docs/subworkflows.md): the agent's first turn
/// must call the workflow tool `add` (`tools.call_first`, as llama.cpp calls no tool on its own), whose arguments
/// are the child workflow's `input_schema`; the child is a run of its own whose code step adds them; its output is
/// the tool's result the model reads.
#[test]
#[ignore = "needs a local model server; `npm test` starts one"]
fn the_local_model_calls_a_workflow_as_a_tool_and_the_child_run_computes_its_result() {
    let home = tempfile::tempdir().unwrap();
    support::write_file(
        home.path(),
        "settings.yaml",
        &format!(
            "providers:\n  - {{id: local, kind: openai, base_url: '{}', max_tokens: 48}}\n",
            env("SWITCHYARD_TEST_LLM_URL")
        ),
    );
    std::fs::create_dir_all(home.path().join("tools")).unwrap();
    support::write_file(
        home.path(),
        "tools/add.yaml",
        "switchyard: 1\nname: add\ndescription: Adds two whole numbers.\ninput_schema:\n  type: object\n  properties:\n    a: {type: integer}\n    b: {type: integer}\n  required: [a, b]\nnodes:\n  - {id: start, type: start}\n  - {id: sum, type: script, language: python, code: \"return {'result': input['a'] + input['b']}\"}\nedges:\n  - {from: start, to: sum}\n",
    );
    let flow = support::write_file(
        home.path(),
        "asker.yaml",
        "switchyard: 1\nname: asker\nnodes:\n  - {id: start, type: start, initial_input: What is 2 plus 3?}\n  - id: a\n    type: agent\n    model: local/smollm2-135m\n    system_prompt: Use the add tool, then answer briefly.\n    tools: {workflows: [tools/add.yaml], call_first: add}\nedges:\n  - {from: start, to: a}\n",
    );
    let out = Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .args(["run", &flow, "--json", "--allow-code"])
        .env("SWITCHYARD_HOME", home.path())
        .env_remove("SWITCHYARD_LOCAL_URL")
        .output()
        .unwrap();
    let (code, result) = support::json_output(&["run"], out);
    assert_eq!((code, &result["status"]), (0, &json!("completed")), "{result}");
    let node = &result["results"]["a"];
    let call = &node["toolCalls"][0];
    assert_eq!(call["tool"], "add", "{node}");
    // Whatever numbers the tiny model chose, the result is the child run's sum of them.
    let (a, b) = (call["input"]["a"].as_i64(), call["input"]["b"].as_i64());
    assert!(a.is_some() && b.is_some(), "grammar-constrained arguments: {}", call["input"]);
    assert_eq!(call["output"], json!({"result": a.unwrap() + b.unwrap()}), "{call}");
    assert!(node["data"]["text"].is_string(), "then a final answer: {node}");
    // The call was a child run of its own, linked to the agent and the call.
    let run_id = result["runId"].as_str().unwrap().to_string();
    let shown = Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .args(["show", &run_id, "--json"])
        .env("SWITCHYARD_HOME", home.path())
        .output()
        .unwrap();
    let (_, shown) = support::json_output(&["show"], shown);
    let child = &shown["children"][0];
    assert_eq!(
        (&child["node"], &child["call"], &child["status"]),
        (&json!("a"), &json!("c0"), &json!("completed")),
        "{shown}"
    );
    println!("{}", json!({"arguments": call["input"], "output": call["output"]}));
}
