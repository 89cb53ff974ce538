//! Code steps run for real: Python and JavaScript in warm workers, bash per step, Lua in-process — their data, their
//! failures, timeouts, cancellation (the whole process group), a missing interpreter, and consent.

mod support;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use support::*;
use switchyard_engine::code::{Code, Language};
use switchyard_engine::events::EventKind;
use switchyard_engine::log::Collector;
use switchyard_engine::result::NodeStatus;
use switchyard_engine::run::RunOptions;
use switchyard_engine::RunStatus;

/// A workflow of one code step after the start node.
fn one_step(language: &str, code: &str, extra: &str) -> switchyard_engine::Workflow {
    workflow(&format!(
        "nodes:\n  - {{id: start, type: start}}\n  - {{id: step, type: script, language: {language}, code: {code:?}{extra}}}\nedges:\n  - {{from: start, to: step}}\n"
    ))
}

#[tokio::test]
async fn each_language_returns_an_object_that_later_steps_read_from_state_and_context() {
    let dir = tempfile::tempdir().unwrap();
    let wf = workflow(
        r#"nodes:
  - {id: start, type: start}
  - id: py
    type: script
    language: python
    code: |
      print("doubling", input["x"])
      return {"n": input["x"] * 2}
  - id: js
    type: script
    language: javascript
    code: |
      console.error("from js");
      return { m: state.n + 1, seen: context.py.n };
  - id: sh
    type: script
    language: bash
    code: |
      python3 -c 'import json,sys; s=json.load(sys.stdin)["state"]; print(json.dumps({"k": s["m"] * 10}))'
  - id: lua
    type: script
    language: lua
    code: |
      print("lua sees", state.k)
      return { total = state.k + state.n }
edges:
  - {from: start, to: py}
  - {from: py, to: js}
  - {from: js, to: sh}
  - {from: sh, to: lua}
"#,
    );
    let ran = run_code(&wf, "", Some(json!({"x": 21})), dir.path()).await;
    assert_eq!(ran.result().status, RunStatus::Completed, "{:?}", ran.result().error);
    assert_eq!(ran.data("py"), json!({"n": 42}));
    assert_eq!(ran.data("js"), json!({"m": 43, "seen": 42}));
    assert_eq!(ran.data("sh"), json!({"k": 430}));
    assert_eq!(ran.data("lua"), json!({"total": 472}));
    assert_eq!(ran.logs("py", "stdout"), ["doubling 21"]);
    assert_eq!(ran.logs("js", "stderr"), ["from js"]);
    assert_eq!(ran.logs("lua", "stdout"), ["lua sees\t430"]);
}

#[tokio::test]
async fn a_failing_step_fails_its_node_with_the_error_and_the_line() {
    let cases = [
        ("python", "x = 1\nraise ValueError('no good')", "ValueError: no good (line 2)"),
        ("javascript", "const x = 1;\nthrow new TypeError('no good');", "TypeError: no good (line 2)"),
        ("bash", "echo 'no good' >&2\nexit 3", "bash exited with exit status: 3: no good"),
        ("lua", "local x = 1\nerror('no good')", "step:2: no good"),
        ("bash", "echo hello", "the step's output is not JSON"),
        ("python", "def broken(:\n  pass", "SyntaxError"),
    ];
    let dir = tempfile::tempdir().unwrap();
    for (language, code, expected) in cases {
        let ran = run_code(&one_step(language, code, ""), "", None, dir.path()).await;
        assert_eq!(ran.result().status, RunStatus::Failed, "{language}: {code}");
        let error = ran.error("step");
        assert!(error.contains(expected), "{language}: {code}\nexpected {expected:?} in {error:?}");
    }
}

#[tokio::test]
async fn a_value_that_is_not_an_object_is_the_outputs_result_and_a_python_body_without_return_gives_its_names() {
    let dir = tempfile::tempdir().unwrap();
    for (language, code, expected) in [
        ("python", "return [1, 2]", json!({"result": [1, 2]})),
        ("javascript", "return 7;", json!({"result": 7})),
        ("lua", "return 'text'", json!({"result": "text"})),
        ("python", "return None", json!({})),
        ("javascript", "", json!({})),
        (
            "python",
            "import os\ntotal = 1 + 2\n_hidden = 5\ndef helper(): pass\nlabel = f'n={total}'",
            json!({"total": 3, "label": "n=3"}),
        ),
    ] {
        let ran = run_code(&one_step(language, code, ""), "", None, dir.path()).await;
        assert_eq!(ran.data("step"), expected, "{language}: {code}");
    }
}

#[tokio::test]
async fn a_step_that_runs_too_long_is_stopped_at_its_timeout() {
    let dir = tempfile::tempdir().unwrap();
    for (language, code) in [
        ("python", "while True:\n    pass"),
        ("javascript", "while (true) {}"),
        ("bash", "sleep 30"),
        ("lua", "while true do end"),
    ] {
        let started = std::time::Instant::now();
        let ran = run_code(&one_step(language, code, ", timeout_seconds: 1"), "", None, dir.path()).await;
        assert!(started.elapsed() < Duration::from_secs(20), "{language} was not stopped");
        let error = ran.error("step");
        assert!(error.contains("stopped after 1 s"), "{language}: {error}");
    }
}

/// Whether a process is gone (or a zombie waiting to be reaped: it runs no more).
fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

#[tokio::test]
async fn cancelling_a_run_kills_the_step_and_what_it_started() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "python",
            "import subprocess, time\nchild = subprocess.Popen(['sleep', '60'])\nprint('pid', child.pid, flush=True)\ntime.sleep(60)",
        ),
        (
            "javascript",
            "const { spawn } = await import('node:child_process');\nconst child = spawn('sleep', ['60']);\nconsole.log('pid', child.pid);\nawait new Promise(r => setTimeout(r, 60000));",
        ),
        ("bash", "sleep 60 &\necho \"pid $!\" >&2\nwait"),
    ];
    // Lua runs inside Switchyard: cancelling stops the interpreter at its next instruction check.
    {
        let wf = Arc::new(one_step("lua", "print('spinning')\nwhile true do end", ""));
        let collector = Collector::default();
        let mut rt = runtime(script(""), AskedModel::new(script("")), vec![Arc::new(collector.clone())]);
        rt.code = Code { allowed: true, dir: Some(dir.path().into()), ..Code::default() };
        let handle = start_live(wf, RunOptions::default(), rt);
        while !collector
            .events()
            .iter()
            .any(|e| matches!(&e.kind, EventKind::Log { log_type, .. } if log_type == "stdout"))
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        handle.cancel();
        let outcome = tokio::time::timeout(Duration::from_secs(10), handle.finish()).await.expect("cancel is prompt");
        assert_eq!(outcome.result.status, RunStatus::Cancelled, "lua");
    }
    for (language, code) in cases {
        let wf = Arc::new(one_step(language, code, ""));
        let collector = Collector::default();
        let mut rt = runtime(script(""), AskedModel::new(script("")), vec![Arc::new(collector.clone())]);
        rt.code = Code { allowed: true, dir: Some(dir.path().into()), ..Code::default() };
        let handle = start_live(wf, RunOptions::default(), rt);
        // The pid of the process the step started, from the log the step streams.
        let pid = loop {
            let found = collector.events().iter().find_map(|e| match &e.kind {
                EventKind::Log { log_type, content, .. } if log_type == "stdout" || log_type == "stderr" => {
                    content.as_str().and_then(|t| t.strip_prefix("pid ")).and_then(|p| p.trim().parse::<u32>().ok())
                }
                _ => None,
            });
            if let Some(pid) = found {
                break pid;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        handle.cancel();
        let outcome = tokio::time::timeout(Duration::from_secs(10), handle.finish()).await.expect("cancel is prompt");
        assert_eq!(outcome.result.status, RunStatus::Cancelled, "{language}");
        // The kill is sent when the run's task drops the step; the process is gone once the kernel has delivered it.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while !gone(pid) && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(gone(pid), "{language}: the process the step started ({pid}) still runs");
    }
}

#[tokio::test]
async fn a_missing_interpreter_fails_the_step_with_what_to_install() {
    let dir = tempfile::tempdir().unwrap();
    for (language, expected) in [
        (Language::Python, "install Python 3"),
        (Language::JavaScript, "install Node.js"),
        (Language::Bash, "install bash"),
    ] {
        let code = Code {
            allowed: true,
            dir: Some(dir.path().into()),
            interpreters: BTreeMap::from([(language, PathBuf::from("/nonexistent/interpreter"))]),
        };
        let ran = run_code_with(&one_step(language.name(), "return {}", ""), "", None, code).await;
        let error = ran.error("step");
        assert!(error.contains("/nonexistent/interpreter") && error.contains(expected), "{error}");
    }
}

#[tokio::test]
async fn without_consent_no_code_runs_and_the_failure_says_so_with_a_code_each_front_end_explains() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let wf = one_step("python", &format!("open({:?}, 'w').write('x')", marker.display().to_string()), "");
    let ran = run_code_with(&wf, "", None, Code { dir: Some(dir.path().into()), ..Code::default() }).await;
    let error = ran.error("step");
    assert!(error.contains("consent") && !error.contains("--allow-code"), "the problem, in no shell's words: {error}");
    let result = ran.result().node("step").unwrap();
    assert_eq!(result.error_code.as_deref(), Some("CODE_NEEDS_CONSENT"));
    assert!(!marker.exists(), "the code ran without consent");
}

#[tokio::test]
async fn a_script_answer_takes_precedence_over_the_code() {
    let dir = tempfile::tempdir().unwrap();
    let wf = one_step("python", "raise RuntimeError('should not run')", "");
    let ran = run_code_with(&wf, "nodes: {step: {data: {from: script}}}", None, Code::default()).await;
    assert_eq!(ran.data("step"), json!({"from": "script"}));
    let _ = dir;
}

#[tokio::test]
async fn one_warm_worker_serves_a_runs_steps_and_parallel_steps_get_their_own() {
    let dir = tempfile::tempdir().unwrap();
    let wf = workflow(
        r#"nodes:
  - {id: start, type: start}
  - {id: a, type: script, language: python, code: "import os\nreturn {'a': os.getpid()}"}
  - {id: b, type: script, language: python, code: "import os\nreturn {'b': os.getpid()}"}
  - id: fan
    type: script
    language: python
    for_each: {items: "[1, 2, 3, 4]", concurrency: 2}
    code: "import os, time\ntime.sleep(0.2)\nreturn {'pid': os.getpid(), 'item': item}"
edges:
  - {from: start, to: a}
  - {from: a, to: b}
  - {from: b, to: fan}
"#,
    );
    let ran = run_code(&wf, "", None, dir.path()).await;
    assert_eq!(ran.result().status, RunStatus::Completed, "{:?}", ran.result().error);
    assert_eq!(ran.data("a")["a"], ran.data("b")["b"], "the second step reuses the first one's worker");
    let items = ran.data("fan")["items"].as_array().unwrap().clone();
    assert_eq!(items.iter().map(|i| i["item"].clone()).collect::<Vec<_>>(), [json!(1), json!(2), json!(3), json!(4)]);
    let pids: std::collections::BTreeSet<String> = items.iter().map(|i| i["pid"].to_string()).collect();
    assert_eq!(pids.len(), 2, "two items at a time need two workers, reused after: {pids:?}");
}

#[tokio::test]
async fn a_python_module_step_calls_its_run_function() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("tool.py"),
        "def run(state, names):\n    return {'seen': sorted(state), 'n': names['input']['n'] + 1}\n",
    )
    .unwrap();
    let wf = workflow(
        "nodes:\n  - {id: start, type: start}\n  - {id: tool, type: script, language: python, module: ./tool.py}\nedges: [{from: start, to: tool}]\n",
    );
    let ran = run_code(&wf, "", Some(json!({"n": 1})), dir.path()).await;
    assert_eq!(ran.data("tool"), json!({"seen": ["n"], "n": 2}));
}

#[tokio::test]
async fn code_runs_in_the_workflow_folder_with_only_path_and_the_declared_variables() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("data.txt"), "from the folder").unwrap();
    std::env::set_var("SWITCHYARD_TEST_DECLARED", "declared value");
    std::env::set_var("SWITCHYARD_TEST_UNDECLARED", "secret");
    let wf = workflow(
        r#"env: [SWITCHYARD_TEST_DECLARED]
nodes:
  - {id: start, type: start}
  - id: step
    type: script
    language: python
    code: |
      import os
      return {"text": open("data.txt").read(), "env": sorted(k for k in os.environ if not k.startswith("LC_")),
              "declared": os.environ.get("SWITCHYARD_TEST_DECLARED")}
edges: [{from: start, to: step}]
"#,
    );
    let ran = run_code(&wf, "", None, dir.path()).await;
    let data = ran.data("step");
    assert_eq!(data["text"], "from the folder");
    assert_eq!(data["declared"], "declared value");
    // What the interpreter's own launcher adds (pyenv's shim sets PYENV_*) aside, nothing of this process's
    // environment but PATH and the declared variable gets through.
    let env: Vec<&str> = data["env"].as_array().unwrap().iter().filter_map(|v| v.as_str()).collect();
    assert!(env.contains(&"PATH") && env.contains(&"SWITCHYARD_TEST_DECLARED"), "{env:?}");
    for leaked in ["SWITCHYARD_TEST_UNDECLARED", "HOME", "CARGO_MANIFEST_DIR", "SWITCHYARD_WORKER"] {
        assert!(!env.contains(&leaked), "{leaked} reached the code: {env:?}");
    }
}

#[tokio::test]
async fn a_javascript_module_step_is_called_with_the_state() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("tools")).unwrap();
    std::fs::write(
        dir.path().join("tools/load.mjs"),
        "export default async function (state, ctx) { return { issue: { title: `#${ctx.input.number}` }, had: Object.keys(state) }; }\n",
    )
    .unwrap();
    let wf = workflow(
        "nodes:\n  - {id: start, type: start}\n  - {id: load, type: script, language: javascript, module: ./tools/load.mjs}\nedges: [{from: start, to: load}]\n",
    );
    let ran = run_code(&wf, "", Some(json!({"number": 7})), dir.path()).await;
    assert_eq!(ran.data("load"), json!({"issue": {"title": "#7"}, "had": ["number"]}));
    let missing = workflow(
        "nodes:\n  - {id: start, type: start}\n  - {id: load, type: script, language: javascript, module: ./tools/none.mjs}\nedges: [{from: start, to: load}]\n",
    );
    let ran = run_code(&missing, "", None, dir.path()).await;
    assert!(ran.error("load").contains("./tools/none.mjs"), "{}", ran.error("load"));
    assert_eq!(ran.result().node("load").unwrap().status, NodeStatus::Failed);
}

#[tokio::test]
async fn a_run_given_no_input_sees_the_start_nodes_initial_input_as_its_input() {
    let dir = tempfile::tempdir().unwrap();
    let wf = workflow(
        "nodes:
  - {id: start, type: start, initial_input: {rows: [1, 2, 3]}}
  - {id: sum, type: script, language: python, code: \"return {'total': sum(input['rows'])}\"}
  - {id: say, type: agent, user_prompt: 'rows: {{ input.rows | length }}'}
edges:
  - {from: start, to: sum}
  - {from: sum, to: say}",
    );
    let ran = run_code(&wf, "", None, dir.path()).await;
    assert_eq!(ran.data("sum"), json!({"total": 6}));
    assert_eq!(ran.model.executes()[0].1, "rows: 3");
    let given = run_code(&wf, "", Some(json!({"rows": [5]})), dir.path()).await;
    assert_eq!(given.data("sum"), json!({"total": 5}), "a given input wins");
}

#[tokio::test]
async fn everything_a_step_writes_on_stderr_is_logged_in_order_before_the_step_completes() {
    let dir = tempfile::tempdir().unwrap();
    let wf = workflow(
        r#"nodes:
  - {id: start, type: start}
  - id: py
    type: script
    language: python
    code: |
      import sys
      for i in range(300):
          print("py", i, file=sys.stderr)
      sys.stderr.write("no newline")
      return {}
  - id: js
    type: script
    language: javascript
    code: |
      for (let i = 0; i < 300; i++) console.error("js", i);
      process.stderr.write("no newline");
      return {};
edges:
  - {from: start, to: py}
  - {from: py, to: js}
"#,
    );
    let ran = run_code(&wf, "", None, dir.path()).await;
    assert_eq!(ran.result().status, RunStatus::Completed, "{:?}", ran.result().error);
    for node in ["py", "js"] {
        let mut expected: Vec<String> = (0..300).map(|i| format!("{node} {i}")).collect();
        expected.push("no newline".into());
        assert_eq!(ran.logs(node, "stderr"), expected);
        let completed = ran
            .events
            .iter()
            .position(|e| matches!(&e.kind, EventKind::NodeExit { node: n, .. } if n == node))
            .unwrap();
        let last_log = ran
            .events
            .iter()
            .rposition(|e| matches!(&e.kind, EventKind::Log { node: Some(n), .. } if n == node))
            .unwrap();
        assert!(last_log < completed, "{node}: a stderr line came after the step completed");
    }
}

#[tokio::test]
async fn every_code_step_sees_its_idempotency_key_in_its_environment_the_same_when_it_is_retried() {
    let dir = tempfile::tempdir().unwrap();
    let wf = workflow(
        r#"nodes:
  - {id: start, type: start}
  - id: py
    type: script
    language: python
    retry: {max: 1}
    code: |
      import os
      key = os.environ["SWITCHYARD_IDEMPOTENCY_KEY"]
      if not os.path.exists("first.txt"):
          open("first.txt", "w").write(key)
          raise RuntimeError("a transient failure")
      return {"key": key, "first": open("first.txt").read()}
  - {id: js, type: script, language: javascript, code: "return { key: process.env.SWITCHYARD_IDEMPOTENCY_KEY };"}
  - id: sh
    type: script
    language: bash
    code: |
      printf '{"key": "%s"}' "$SWITCHYARD_IDEMPOTENCY_KEY"
  - id: fan
    type: script
    language: python
    for_each: {items: "[1, 2]", concurrency: 1}
    code: "import os\nreturn {'key': os.environ['SWITCHYARD_IDEMPOTENCY_KEY']}"
edges:
  - {from: start, to: py}
  - {from: py, to: js}
  - {from: js, to: sh}
  - {from: sh, to: fan}
"#,
    );
    let ran = run_code(&wf, "", None, dir.path()).await;
    assert_eq!(ran.result().status, RunStatus::Completed, "{:?}", ran.result().error);
    let run = &ran.result().run_id;
    let py = ran.data("py");
    assert_eq!(
        py["key"],
        format!("{run}/py/1/s0"),
        "RUN/NODE/ITERATION/PLACE: a node's first iteration is 1, a step's place s0"
    );
    assert_eq!(py["first"], py["key"], "the attempt that failed had the same key as its retry");
    assert_eq!(ran.data("js")["key"], format!("{run}/js/1/s0"));
    assert_eq!(ran.data("sh")["key"], format!("{run}/sh/1/s0"));
    let items: Vec<Value> = ran.data("fan")["items"].as_array().unwrap().iter().map(|i| i["key"].clone()).collect();
    assert_eq!(
        items,
        [json!(format!("{run}/fan/1/i0.s0")), json!(format!("{run}/fan/1/i1.s0"))],
        "one warm worker, a key per item"
    );
}
