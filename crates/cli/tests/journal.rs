//! A run survives a crash in the middle of an agent's conversation (docs/runs.md, "What a resume repeats"): the real
//! binary runs an agent of six model turns on a model server over HTTP, whose five tool calls go to a real MCP server
//! that tallies each call in a file; the process is killed (SIGKILL, with its process group) at every turn in turn —
//! while the model is answering, or while a tool call is in flight — and `switchyard resume` finishes the run. And on
//! PostgreSQL, a run whose every tool call waits for approval is parked at each one and taken on by a worker when it
//! is decided: the conversation goes on where it stopped, each call made once.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

#[path = "../../engine/tests/support/http.rs"]
mod http;
#[cfg(feature = "postgres")]
#[path = "../../engine/tests/support/pg_cluster.rs"]
mod pg_cluster;
mod support;

use http::{Recorded, Reply, TestServer};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A python with the `mcp` package, for the tests against a real MCP server (npm test sets it).
fn mcp_python() -> String {
    std::env::var("SWITCHYARD_TEST_MCP_PYTHON")
        .expect("SWITCHYARD_TEST_MCP_PYTHON must name a python with the `mcp` package: run `npm test`")
}

/// How many tool calls the agent makes before it answers: six model turns in all.
const TOOL_CALLS: usize = 5;

/// What the model server does in a trial: which request of the first process it leaves unanswered.
#[derive(Default)]
struct Trial {
    /// Tool calls before the agent answers (`TOOL_CALLS` when 0).
    tool_calls: usize,
    /// Requests seen since the trial (or its resume) began.
    requests: usize,
    /// The request number (from 1) that is never answered, before the kill.
    hang_at: Option<usize>,
    tally: PathBuf,
    hold: PathBuf,
}

/// The agent's model: asks for a tally per turn until five tool results are in the conversation, then answers.
fn answer(trial: &Mutex<Trial>, request: &Recorded) -> Reply {
    let mut t = trial.lock().unwrap();
    t.requests += 1;
    if t.hang_at == Some(t.requests) {
        return Reply::Hang;
    }
    let messages = request.body["messages"].as_array().cloned().unwrap_or_default();
    let results = messages.iter().filter(|m| m["role"] == "tool").count();
    let calls = if t.tool_calls == 0 { TOOL_CALLS } else { t.tool_calls };
    if results >= calls {
        return Reply::openai_stream(&["tallied five times"]);
    }
    let arguments = json!({"path": t.tally, "n": results, "hold_file": t.hold});
    Reply::openai_tool_call(&format!("call_{results}"), "counter__tally", &arguments)
}

struct Home {
    dir: tempfile::TempDir,
    model_url: String,
}

impl Home {
    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_switchyard"));
        command
            .args(args)
            .env("SWITCHYARD_HOME", self.dir.path())
            .env("SWITCHYARD_LOCAL_URL", &self.model_url)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        command
    }
}

/// A home whose settings name the test MCP server as `counter`, with `tally.yaml`: one agent on `local/m` asked
/// `prompt`, whose tools are `tools` (a YAML mapping): its path.
fn with_counter(home: &Home, prompt: &str, tools: &str) -> String {
    let mcp_server = repo().join("crates/engine/tests/mcp/server.py");
    support::write_file(
        home.dir.path(),
        "settings.yaml",
        &format!("mcp_servers:\n  counter: {{command: {:?}, args: [{:?}, stdio]}}\n", mcp_python(), mcp_server),
    );
    support::write_file(
        home.dir.path(),
        "tally.yaml",
        &format!("switchyard: 1\nname: tally\nnodes:\n  - {{id: start, type: start}}\n  - {{id: worker, type: agent, model: local/m, user_prompt: {prompt}, tools: {tools}}}\nedges:\n  - {{from: start, to: worker}}\n"),
    )
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "waited a minute for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The tally file's lines: (n, idempotency key).
fn tallies(path: &Path) -> Vec<(usize, String)> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| {
            let (n, key) = l.split_once(' ').unwrap_or((l, ""));
            (n.parse().unwrap(), key.to_string())
        })
        .collect()
}

#[test]
#[ignore = "needs a python with the `mcp` package (SWITCHYARD_TEST_MCP_PYTHON); npm test runs it"]
fn a_run_killed_at_any_turn_resumes_mid_conversation_asking_only_what_it_had_not_asked_and_calling_each_tool_once() {
    use std::os::unix::process::CommandExt;
    let tokio = tokio::runtime::Runtime::new().unwrap();
    let trial = Arc::new(Mutex::new(Trial::default()));
    let answering = trial.clone();
    let server = tokio.block_on(TestServer::answering(Arc::new(move |r, _| answer(&answering, r))));
    let home = Home { dir: tempfile::tempdir().unwrap(), model_url: format!("{}/v1", server.url) };
    let flow = with_counter(&home, "Tally five times", "{mcp: [counter/tally]}");
    let mut figures = Vec::new();
    for i in 0..20 {
        let dir = tempfile::tempdir().unwrap();
        let (tally, hold) = (dir.path().join("tally.txt"), dir.path().join("hold.txt"));
        // Even trials stop the process while the model answers turn k (1–6); odd ones while tool call j (0–4) is in
        // flight: the tool has written its line and waits.
        let (hang_at, hold_call) = if i % 2 == 0 { (Some(1 + (i / 2) % 6), None) } else { (None, Some((i / 2) % 5)) };
        if let Some(j) = hold_call {
            std::fs::write(&hold, j.to_string()).unwrap();
        }
        *trial.lock().unwrap() = Trial { hang_at, tally: tally.clone(), hold: hold.clone(), ..Trial::default() };
        let mut run = home.command(&["run", &flow, "--json"]);
        run.process_group(0);
        let mut child = run.spawn().unwrap();
        match (hang_at, hold_call) {
            (Some(k), _) => wait_for(&format!("model request {k}"), || trial.lock().unwrap().requests >= k),
            (_, Some(j)) => wait_for(&format!("tool call {j}"), || tallies(&tally).iter().any(|(n, _)| *n == j)),
            _ => unreachable!(),
        }
        // Its own process group (the MCP server it started is in it too), and nothing else: checked before the kill.
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", child.id())).unwrap();
        let pgid: u32 = stat.rsplit(')').next().unwrap().split_whitespace().nth(2).unwrap().parse().unwrap();
        assert_eq!(pgid, child.id(), "trial {i}: the run leads its own process group");
        let killed = Command::new("kill").args(["-s", "KILL", "--", &format!("-{pgid}")]).status().unwrap();
        assert!(killed.success(), "trial {i}: the process group was killed");
        let _ = child.wait();
        let asked_before = trial.lock().unwrap().requests;
        let journaled_turns = match (hang_at, hold_call) {
            (Some(k), _) => k - 1,
            (_, Some(j)) => j + 1,
            _ => unreachable!(),
        };

        let listed = home.command(&["runs", "--json"]).output().unwrap();
        let runs: Value = serde_json::from_slice(&listed.stdout).unwrap();
        let run_id = runs[0]["id"].as_str().unwrap().to_string();
        assert_eq!(runs[0]["status"], "interrupted", "trial {i}: {runs}");
        {
            let mut t = trial.lock().unwrap();
            t.requests = 0;
            t.hang_at = None;
        }
        let out = home.command(&["resume", &run_id, "--json"]).output().unwrap();
        let (code, result) = support::json_output(&["resume"], out);
        assert_eq!((code, &result["status"]), (0, &json!("completed")), "trial {i}: {result}");
        assert_eq!(result["results"]["worker"]["data"]["text"], "tallied five times", "trial {i}");
        let asked_after = trial.lock().unwrap().requests;
        assert_eq!(
            asked_after,
            TOOL_CALLS + 1 - journaled_turns,
            "trial {i}: after the resume the model is asked only the turns not journaled ({asked_before} asked before the kill)"
        );
        // Every tool call happened once, but the one in flight at the kill: made again, with the same key.
        let lines = tallies(&tally);
        for n in 0..TOOL_CALLS {
            let calls: Vec<&String> = lines.iter().filter(|(m, _)| *m == n).map(|(_, k)| k).collect();
            let expected = if hold_call == Some(n) { 2 } else { 1 };
            assert_eq!(calls.len(), expected, "trial {i}: tool call {n}: {lines:?}");
            assert!(
                calls.iter().all(|k| *k == calls[0] && k.starts_with(&run_id)),
                "trial {i}: one key per call: {lines:?}"
            );
        }
        let keys: std::collections::BTreeSet<&String> = lines.iter().map(|(_, k)| k).collect();
        assert_eq!(keys.len(), TOOL_CALLS, "trial {i}: a different key for every call: {lines:?}");
        let tool_calls = result["results"]["worker"]["toolCalls"].as_array().map_or(0, Vec::len);
        assert_eq!(tool_calls, TOOL_CALLS, "trial {i}: the node lists every call, those made before the kill too");
        figures.push(json!({
            "trial": i, "killed_at": if hang_at.is_some() { "model turn" } else { "tool call" },
            "turns_journaled": journaled_turns, "calls_after_resume": asked_after, "tool_lines": lines.len()
        }));
    }
    println!("{}", serde_json::to_string(&figures).unwrap());
}

#[cfg(feature = "postgres")]
#[test]
#[ignore = "needs a python with the `mcp` package (SWITCHYARD_TEST_MCP_PYTHON); npm test runs it"]
fn on_postgres_a_run_parked_at_each_tool_call_approval_goes_on_mid_conversation_and_calls_each_tool_once() {
    use switchyard_engine::result::{Decision, Verdict};
    use switchyard_engine::store::postgres::{PgStore, Wait};
    let tokio = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let tally = dir.path().join("tally.txt");
    let trial = Arc::new(Mutex::new(Trial { tool_calls: 3, tally: tally.clone(), ..Trial::default() }));
    let answering = trial.clone();
    let server = tokio.block_on(TestServer::answering(Arc::new(move |r, _| answer(&answering, r))));
    let home = Home { dir: tempfile::tempdir().unwrap(), model_url: format!("{}/v1", server.url) };
    let db = pg_cluster::database("journal_tool_approvals");
    // `tally` says nothing of being read-only: every call of it waits for a person.
    let flow = with_counter(&home, "Tally three times", "{mcp: [counter/tally], approval: destructive}");
    let command = |args: &[&str]| {
        let mut c = home.command(args);
        c.env("SWITCHYARD_DB", &db);
        c
    };
    let out = command(&["run", &flow, "--detach", "--json"]).output().unwrap();
    let (code, submitted) = support::json_output(&["run"], out);
    assert_eq!((code, submitted["status"].as_str()), (0, Some("ready")), "{submitted}");
    let id = submitted["runId"].as_str().unwrap().to_string();
    let log = home.dir.path().join("worker.log");
    let mut worker = command(&["worker", "--lease", "2"])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let store = PgStore::open(&db).unwrap();
    let parked = format!("{id} paused: waits for worker; parked");
    let read_log = || std::fs::read_to_string(&log).unwrap_or_default();
    for round in 0..3u32 {
        // Parked at call `round`: the calls approved before it were made once each, and none of it yet.
        wait_for(&format!("the run to be parked for the {}th time", round + 1), || {
            assert!(worker.try_wait().unwrap().is_none(), "the worker ended: {}", read_log());
            read_log().matches(&parked).count() > round as usize
        });
        let lines: Vec<usize> = tallies(&tally).into_iter().map(|(n, _)| n).collect();
        assert_eq!(lines, (0..round as usize).collect::<Vec<_>>(), "round {round}: {}", read_log());
        assert_eq!(trial.lock().unwrap().requests, round as usize + 1, "round {round}: each turn asked once");
        store.keep_decision(&id, "worker", round, &Decision::new(Verdict::Approve, "")).wait().unwrap();
    }
    wait_for("the run to complete", || read_log().contains(&format!("{id} completed")));
    let lines = tallies(&tally);
    assert_eq!(lines.iter().map(|(n, _)| *n).collect::<Vec<_>>(), [0, 1, 2], "each call made once: {lines:?}");
    assert_eq!(trial.lock().unwrap().requests, 4, "three tool turns and the answer, each asked once, across 3 parks");
    let _ = worker.kill();
    let _ = worker.wait();
}

/// The model of the fork test: `talker` asks `lookup` (a tool nobody has: its error is the result) until three
/// results are in, then answers; `after` summarises what reached it.
fn lookups(request: &Recorded) -> Reply {
    let messages = request.body["messages"].as_array().cloned().unwrap_or_default();
    let first = messages.iter().find(|m| m["role"] == "user").and_then(|m| m["content"].as_str()).unwrap_or("");
    if first.starts_with("Summarise") {
        return Reply::openai_stream(&["summary of ", first.trim_start_matches("Summarise: ")]);
    }
    let results = messages.iter().filter(|m| m["role"] == "tool").count();
    if results >= 3 {
        return Reply::openai_stream(&["found three"]);
    }
    Reply::openai_tool_call(&format!("call_{results}"), "lookup", &json!({"n": results}))
}

#[test]
fn a_fork_at_a_turn_replays_the_conversation_before_it_at_no_call_and_runs_on_from_the_answer_given() {
    let tokio = tokio::runtime::Runtime::new().unwrap();
    let server = tokio.block_on(TestServer::answering(Arc::new(|r, _| lookups(r))));
    let home = Home { dir: tempfile::tempdir().unwrap(), model_url: format!("{}/v1", server.url) };
    let flow = support::write_file(
        home.dir.path(),
        "fork.yaml",
        "switchyard: 1\nname: fork\ndefaults:\n  model: local/m\nnodes:\n  - {id: start, type: start}\n  - {id: talker, type: agent, user_prompt: Look it up three times}\n  - {id: after, type: agent, user_prompt: \"Summarise: {{ talker.text }}\"}\nedges:\n  - {from: start, to: talker}\n  - {from: talker, to: after}\n",
    );
    let run = |args: &[&str]| {
        let out = home.command(args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let (code, result) = support::json_output(args, out);
        (code, result, stderr)
    };
    let (code, first, _) = run(&["run", &flow, "--json"]);
    assert_eq!(
        (code, first["results"]["after"]["data"]["text"].as_str()),
        (0, Some("summary of found three")),
        "{first}"
    );
    assert_eq!(server.requests().len(), 5, "four turns of talker, one of after");
    let id = first["runId"].as_str().unwrap().to_string();
    // `show --json` lists what happened inside the agent: its turns and tool calls, in order.
    let (code, shown, _) = run(&["show", &id, "--json"]);
    assert_eq!(code, 0, "{shown}");
    let kinds: Vec<&str> =
        shown["turns"]["talker"].as_array().unwrap().iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["turn", "tool", "turn", "tool", "turn", "tool", "turn"], "{shown}");
    assert_eq!(shown["turns"]["talker"][1]["arguments"], json!({"n": 0}), "{shown}");
    // Each with where it falls among the run's events, when it ended and how long it took.
    for turn in shown["turns"]["talker"].as_array().unwrap() {
        assert!(turn["seq"].as_u64().is_some() && turn["ms"].as_u64().is_some(), "{turn}");
        let ts = turn["ts"].as_str().unwrap_or_default();
        assert!(ts.len() == 24 && ts.ends_with('Z') && ts.as_bytes()[10] == b'T', "RFC 3339 in milliseconds: {turn}");
    }

    // At turn 3: turns 1 and 2 and their lookups come from the journal; the answer given ends the conversation.
    let before = server.requests().len();
    let (code, forked, stderr) =
        run(&["run", &flow, "--fork", &id, "--at", "talker#3", "--answer", "found it early", "--json"]);
    assert_eq!(code, 0, "{forked}\n{stderr}");
    assert!(stderr.contains(&format!("forking run {id}: the answer given at turn 3 of `talker`")), "{stderr}");
    assert_eq!(forked["results"]["talker"]["data"]["text"], "found it early");
    assert_eq!(forked["results"]["talker"]["toolCalls"].as_array().map(Vec::len), Some(2), "the two lookups before it");
    assert_eq!(forked["results"]["after"]["data"]["text"], "summary of found it early");
    assert_eq!(server.requests().len() - before, 1, "only `after` asks the model");
    // The fork is a run like any other: stored with where it came from, replayed from its log as it went.
    let fork_id = forked["runId"].as_str().unwrap().to_string();
    let replayed = home.command(&["replay", &fork_id]).output().unwrap();
    assert_eq!(replayed.status.code(), Some(0), "{}", String::from_utf8_lossy(&replayed.stderr));

    // At the node: its result is the answer given, and nothing of it is asked.
    let before = server.requests().len();
    let (code, whole, _) = run(&["run", &flow, "--fork", &id, "--at", "talker", "--answer", "all at once", "--json"]);
    assert_eq!(
        (code, whole["results"]["after"]["data"]["text"].as_str()),
        (0, Some("summary of all at once")),
        "{whole}"
    );
    assert_eq!(server.requests().len() - before, 1);

    // A turn the node did not take, or a node the workflow does not have, is refused before anything runs.
    let before = server.requests().len();
    let (code, refused, stderr) = run(&["run", &flow, "--fork", &id, "--at", "talker#9", "--answer", "x", "--json"]);
    assert_eq!((code, refused["errors"][0]["code"].as_str()), (2, Some("REUSE_FAILED")), "{refused}");
    let message = refused["errors"][0]["message"].as_str().unwrap();
    assert!(message.contains("took no turn 9") && message.contains("it took 4"), "{message}");
    assert!(stderr.contains("error: --at talker#9: "), "said as the flag that asked for it: {stderr}");
    let (code, refused, _) = run(&["run", &flow, "--fork", &id, "--at", "talker#0", "--answer", "x", "--json"]);
    assert_eq!((code, refused["errors"][0]["code"].as_str()), (2, Some("INVALID_ARGUMENTS")), "{refused}");
    let (code, refused, _) = run(&["run", &flow, "--fork", &id, "--at", "nobody", "--answer", "x", "--json"]);
    assert_eq!(code, 2, "{refused}");
    assert!(refused["errors"][0]["message"].as_str().unwrap().contains("no such node `nobody`"), "{refused}");
    assert_eq!(server.requests().len(), before, "nothing was asked");
}

/// A code step killed while it runs is run again by `resume` with the same idempotency key in its environment
/// (`SWITCHYARD_IDEMPOTENCY_KEY`), so the code can tell it made its side effect before.
#[test]
fn a_code_step_killed_while_it_runs_is_run_again_on_resume_with_the_same_idempotency_key() {
    use std::os::unix::process::CommandExt;
    let home = Home { dir: tempfile::tempdir().unwrap(), model_url: "http://127.0.0.1:9/v1".into() };
    let work = tempfile::tempdir().unwrap();
    // The step runs in the workflow's folder: it writes its key, then (the first time) its pid and waits for the kill.
    let flow = support::write_file(
        work.path(),
        "keyed.yaml",
        r#"switchyard: 1
name: keyed
nodes:
  - {id: start, type: start}
  - id: step
    type: script
    language: python
    code: |
      import os, time
      key = os.environ["SWITCHYARD_IDEMPOTENCY_KEY"]
      with open("keys.txt", "a") as f:
          f.write(key + "\n")
      if os.path.exists("hold"):
          os.remove("hold")
          with open("pid.txt", "w") as f:
              f.write(str(os.getpid()))
          time.sleep(3600)
      return {"key": key}
edges:
  - {from: start, to: step}
"#,
    );
    std::fs::write(work.path().join("hold"), "").unwrap();
    let (keys, pid) = (work.path().join("keys.txt"), work.path().join("pid.txt"));
    let mut run = home.command(&["run", &flow, "--allow-code", "--json"]);
    run.process_group(0);
    let mut child = run.spawn().unwrap();
    wait_for("the step to hold", || std::fs::read_to_string(&pid).is_ok_and(|p| !p.is_empty()));
    // The run's process group, then the step's own (code runs in a process group of its own): the machine went away.
    for group in [child.id().to_string(), std::fs::read_to_string(&pid).unwrap()] {
        let killed = Command::new("kill").args(["-s", "KILL", "--", &format!("-{group}")]).status().unwrap();
        assert!(killed.success(), "process group {group} was killed");
    }
    let _ = child.wait();
    let listed = home.command(&["runs", "--json"]).output().unwrap();
    let runs: Value = serde_json::from_slice(&listed.stdout).unwrap();
    let run_id = runs[0]["id"].as_str().unwrap().to_string();
    assert_eq!(runs[0]["status"], "interrupted", "{runs}");

    let out = home.command(&["resume", &run_id, "--allow-code", "--json"]).output().unwrap();
    let (code, result) = support::json_output(&["resume"], out);
    assert_eq!((code, &result["status"]), (0, &json!("completed")), "{result}");
    let expected = format!("{run_id}/step/1/s0");
    let lines: Vec<String> = std::fs::read_to_string(&keys).unwrap().lines().map(str::to_string).collect();
    assert_eq!(lines, [expected.clone(), expected.clone()], "the killed run and the resumed one, with the same key");
    assert_eq!(result["results"]["step"]["data"]["key"], expected.as_str());
}
