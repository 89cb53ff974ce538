//! The `switchyard` command-line contract (README "Command line"): arguments, JSON shapes, exit codes. Runs the
//! real binary against the examples and malformed files.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{json, Value};

#[path = "../../engine/tests/support/http.rs"]
mod http;
mod support;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

struct Cli {
    home: tempfile::TempDir,
}

impl Cli {
    fn new() -> Cli {
        Cli { home: tempfile::tempdir().unwrap() }
    }

    fn run(&self, args: &[&str]) -> Output {
        self.run_with(args, &[])
    }

    /// Runs with these environment variables. The local model server is a closed port unless one is given, so no
    /// server that happens to run on this machine answers a test.
    fn run_with(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_switchyard"))
            .args(args)
            .current_dir(repo())
            .env("SWITCHYARD_HOME", self.home.path())
            .env("SWITCHYARD_LOCAL_URL", "http://127.0.0.1:9/v1")
            .envs(env.iter().copied())
            .output()
            .unwrap()
    }

    fn json(&self, args: &[&str]) -> (i32, Value) {
        support::json_output(args, self.run(args))
    }

    fn write(&self, name: &str, text: &str) -> String {
        support::write_file(self.home.path(), name, text)
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn ran(result: &Value) -> Vec<String> {
    result["trace"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["status"] == "success")
        .map(|s| s["node"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn every_example_runs_with_its_script_and_gives_the_documented_result() {
    let cli = Cli::new();
    let expected: &[(&str, &str, &[&str])] = &[
        ("alert-triage", "completed", &["start", "gather", "investigate", "create_issue", "notify"]),
        ("review-fix-loop", "completed", &["start", "implement", "review", "fix", "review", "fix", "review", "done"]),
        ("approval-flow", "paused", &["start", "draft"]),
        ("summarize-with-review", "paused", &["start", "fetch"]),
    ];
    for (name, status, steps) in expected {
        let (code, result) = cli.json(&[
            "run",
            &format!("examples/{name}.yaml"),
            "--answers",
            &format!("examples/{name}.script.yaml"),
            "--json",
        ]);
        assert_eq!(code, 0, "{name}");
        assert_eq!(result["status"], *status, "{name}");
        assert_eq!(ran(&result), *steps, "{name}");
    }
    let (code, result) = cli.json(&[
        "run",
        "examples/research-fanout.yaml",
        "--answers",
        "examples/research-fanout.script.yaml",
        "--json",
    ]);
    assert_eq!(code, 0);
    let steps = ran(&result);
    assert_eq!(steps.first().map(String::as_str), Some("start"));
    assert_eq!(steps.last().map(String::as_str), Some("synthesize"), "the join runs last, once");
    assert_eq!(steps.len(), 6);
    assert_eq!(
        result["results"]["synthesize"]["data"]["text"],
        "Move to self-hosted runners with per-job isolation: cheaper and faster."
    );
    // The fan-out trace edges are marked parallel.
    let parallel = result["trace"]["edges"].as_array().unwrap().iter().filter(|e| e["reason"] == "parallel").count();
    assert_eq!(parallel, 3);
}

#[test]
fn run_json_has_the_documented_shape() {
    let cli = Cli::new();
    let (_, r) =
        cli.json(&["run", "examples/approval-flow.yaml", "--answers", "examples/approval-flow.script.yaml", "--json"]);
    assert!(r["results"]["draft"]["status"].is_string());
    assert!(r["results"]["draft"]["data"].is_object());
    assert!(r["results"]["draft"]["toolCalls"].is_array());
    let step = &r["trace"]["steps"][0];
    assert!(step["node"].is_string() && step["status"].is_string() && step["iteration"].is_u64());
    let edge = &r["trace"]["edges"][0];
    assert!(edge["from"].is_string() && edge["to"].is_string() && edge["reason"].is_string());
    assert_eq!(r["pending"][0]["node"], "review");
    assert_eq!(r["pending"][0]["message"], "Publish this announcement?");
}

#[test]
fn a_paused_run_is_stored_and_resumed_from_another_process() {
    let cli = Cli::new();
    let (code, paused) =
        cli.json(&["run", "examples/approval-flow.yaml", "--answers", "examples/approval-flow.script.yaml", "--json"]);
    assert_eq!(code, 0);
    let id = paused["runId"].as_str().unwrap();
    assert!(cli.home.path().join("runs.sqlite").exists());
    let list = String::from_utf8(cli.run(&["runs"]).stdout).unwrap();
    assert!(list.contains(id) && list.contains("paused"), "{list}");

    let bad = cli.run(&["resume", id, "--decide", "draft=approve"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("not waiting"), "{}", stderr(&bad));
    // The same refusal the app's approval dialog gets for a node that does not wait (docs/errors.md).
    let (code, refused) = cli.json(&["resume", id, "--decide", "draft=approve", "--json"]);
    assert_eq!((code, refused["errors"][0]["code"].as_str()), (2, Some("DECISION_REFUSED")), "{refused}");

    let (code, done) = cli.json(&["resume", id, "--decide", "review=reject:mention the date", "--json"]);
    assert_eq!(code, 0);
    assert_eq!(done["status"], "completed");
    assert_eq!(done["results"]["review"]["data"]["note"], "mention the date");
    assert_eq!(ran(&done), ["start", "draft", "review", "revise"]);

    let again = cli.run(&["resume", id, "--decide", "review=approve"]);
    assert_eq!(again.status.code(), Some(2));
    assert!(stderr(&again).contains("is completed; only paused and interrupted runs"), "{}", stderr(&again));
    let missing = cli.run(&["resume", "no-such-run", "--decide", "review=approve"]);
    assert_eq!(missing.status.code(), Some(2));
}

#[test]
fn a_decision_made_with_resume_names_who_made_it_by_flag_or_else_the_login_name() {
    let cli = Cli::new();
    let paused = || {
        let args = ["run", "examples/approval-flow.yaml", "--answers", "examples/approval-flow.script.yaml", "--json"];
        cli.json(&args).1["runId"].as_str().unwrap().to_string()
    };
    let decided_by = |id: &str| {
        let (_, shown) = cli.json(&["show", id, "--json"]);
        shown["decisions"][0]["by"].clone()
    };
    let first = paused();
    let empty = cli.run(&["resume", &first, "--decide", "review=approve", "--by", " "]);
    assert_eq!(empty.status.code(), Some(2));
    assert!(stderr(&empty).contains("--by is empty"), "{}", stderr(&empty));
    let done = cli.run(&["resume", &first, "--decide", "review=approve", "--by", "Alice Chen"]);
    assert!(done.status.success(), "{}", stderr(&done));
    assert_eq!(decided_by(&first), "Alice Chen");
    let shown = String::from_utf8(cli.run(&["show", &first]).stdout).unwrap();
    assert!(shown.contains("review approved by Alice Chen at "), "{shown}");

    let second = paused();
    let args = ["resume", second.as_str(), "--decide", "review=reject"];
    let done = cli.run_with(&args, &[("USER", "bob"), ("USERNAME", "")]);
    assert!(done.status.success(), "{}", stderr(&done));
    assert_eq!(decided_by(&second), "bob", "without --by, the login name");
}

#[test]
fn an_approval_inside_a_child_run_is_decided_from_the_parent_by_its_path() {
    let cli = Cli::new();
    let (code, paused) = cli.json(&[
        "run",
        "examples/summarize-with-review.yaml",
        "--answers",
        "examples/summarize-with-review.script.yaml",
        "--json",
    ]);
    assert_eq!((code, paused["status"].as_str()), (0, Some("paused")), "{paused}");
    assert_eq!(paused["pending"][0]["node"], "summarize");
    assert_eq!(paused["pending"][0]["path"], "summarize › review");
    assert!(paused["pending"][0]["message"].as_str().unwrap().starts_with("Publish this summary?"));
    let id = paused["runId"].as_str().unwrap();
    // The child is a run of its own, paused with its parent.
    let list = String::from_utf8(cli.run(&["runs"]).stdout).unwrap();
    assert!(list.contains("review-summary.yaml") && list.matches("paused").count() == 2, "{list}");

    // The child is resumed through its parent, never alone (it would go on without the parent's answers).
    let (_, listed) = cli.json(&["runs", "--json"]);
    let child = listed.as_array().unwrap().iter().find(|r| r["parent"]["run"] == id).expect("the child is listed");
    let child = child["id"].as_str().unwrap().to_string();
    let alone = cli.run(&["resume", &child, "--decide", "review=approve"]);
    let said = String::from_utf8_lossy(&alone.stderr);
    assert_ne!(alone.status.code(), Some(0), "{said}");
    assert!(said.contains(&format!("is a child run of run `{id}`")) && said.contains("resume the parent"), "{said}");
    let (_, still) = cli.json(&["show", &child, "--json"]);
    assert_eq!(still["status"], "paused", "refused, it did not go on: {still}");
    let text = String::from_utf8(cli.run(&["show", &child]).stdout).unwrap();
    assert!(text.contains(&format!("child run of {}, run by its node summarize", &id[..8])), "{text}");

    let (code, refused) = cli.json(&["resume", id, "--decide", "summarize › draft=approve", "--json"]);
    assert_eq!((code, refused["errors"][0]["code"].as_str()), (2, Some("DECISION_REFUSED")), "{refused}");
    let (code, done) = cli.json(&["resume", id, "--decide", "summarize › review=approve", "--json"]);
    assert_eq!((code, done["status"].as_str()), (0, Some("completed")), "{done}");
    assert_eq!(
        done["results"]["summarize"]["data"]["text"],
        "Switchyard 2: sub-workflows, faithful replays, a faster editor."
    );
    assert_eq!(ran(&done), ["start", "fetch", "summarize", "post"], "nothing that completed ran again");
    let list = String::from_utf8(cli.run(&["runs"]).stdout).unwrap();
    assert_eq!(list.matches("completed").count(), 2, "{list}");
    // `show` of the parent lists its child run, by node, with where it is now; its short id names it.
    let (_, shown) = cli.json(&["show", id, "--json"]);
    let child = &shown["children"][0];
    assert_eq!(
        (&child["node"], &child["iteration"], &child["status"]),
        (&json!("summarize"), &json!(1), &json!("completed"))
    );
    let child_id = child["id"].as_str().unwrap();
    let text = String::from_utf8(cli.run(&["show", id]).stdout).unwrap();
    assert!(text.contains(&format!("child run {} completed (switchyard show {0})", &child_id[..8])), "{text}");
    let (code, child_shown) = cli.json(&["show", &child_id[..8], "--json"]);
    assert_eq!((code, child_shown["runId"].as_str()), (0, Some(child_id)));
    assert!(child_shown.get("children").is_none(), "a child with no workflow nodes lists none");
    // A workflow's runs with their children: the child names its parent and the node that ran it.
    let (code, family) = cli.json(&["runs", "--workflow", "Summarize with review", "--with-children", "--json"]);
    assert_eq!(code, 0);
    let listed: Vec<(&str, &Value)> =
        family.as_array().unwrap().iter().map(|r| (r["id"].as_str().unwrap(), &r["parent"])).collect();
    assert_eq!(listed, [(child_id, &json!({"run": id, "node": "summarize", "item": null})), (id, &Value::Null)]);
    let (_, own) = cli.json(&["runs", "--workflow", "Summarize with review", "--json"]);
    assert_eq!(own.as_array().unwrap().len(), 1, "without --with-children, the workflow's own runs: {own}");
    let text = String::from_utf8(cli.run(&["runs"]).stdout).unwrap();
    assert!(text.contains(&format!("child of {} (summarize)", &id[..8])), "{text}");
    let refused = cli.run(&["runs", "--with-children"]);
    assert_eq!(refused.status.code(), Some(2), "--with-children needs --workflow");
}

#[test]
fn prune_deletes_runs_that_ended_before_its_cutoff_with_their_events_and_never_a_paused_one() {
    let cli = Cli::new();
    let run = || {
        cli.json(&["run", "examples/approval-flow.yaml", "--answers", "examples/approval-flow.script.yaml", "--json"])
    };
    let (_, paused) = run();
    let (_, done) = run();
    let (paused, done) = (paused["runId"].as_str().unwrap(), done["runId"].as_str().unwrap());
    let (code, _) = cli.json(&["resume", done, "--decide", "review=approve", "--json"]);
    assert_eq!(code, 0);

    let (code, recent) = cli.json(&["prune", "--older-than", "1h", "--json"]);
    assert_eq!(
        (code, &recent["runs"], &recent["dryRun"]),
        (0, &json!(0), &json!(false)),
        "a recent run stays: {recent}"
    );
    let (_, would) = cli.json(&["prune", "--older-than", "0s", "--dry-run", "--json"]);
    assert_eq!(would["runs"], 1, "{would}");
    assert!(would["events"].as_u64().unwrap() > 5, "{would}");
    let said = String::from_utf8(cli.run(&["prune", "--older-than", "0s", "--dry-run"]).stdout).unwrap();
    assert!(said.starts_with("would prune 1 run that ended before ") && said.contains("nothing was deleted"), "{said}");
    let (_, listed) = cli.json(&["runs", "--json"]);
    assert_eq!(listed.as_array().unwrap().len(), 2, "a dry run deletes nothing");

    let (code, pruned) = cli.json(&["prune", "--older-than", "0s", "--status", "completed,failed", "--json"]);
    assert_eq!(code, 0);
    assert_eq!(
        (&pruned["runs"], &pruned["events"]),
        (&json!(1), &would["events"]),
        "what the dry run counted: {pruned}"
    );
    assert_eq!(pruned["statuses"], json!(["completed", "failed"]));
    let (_, listed) = cli.json(&["runs", "--json"]);
    let ids: Vec<&str> = listed.as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids, [paused], "the paused run stays");
    let (code, gone) = cli.json(&["show", done, "--json"]);
    assert_eq!((code, gone["errors"][0]["code"].as_str()), (2, Some("NO_SUCH_RUN")), "{gone}");

    let refused = cli.run(&["prune", "--older-than", "30d", "--status", "paused"]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(stderr(&refused).contains("--status: `paused` runs are never pruned"), "{}", stderr(&refused));
    let unbounded = cli.run(&["prune"]);
    assert_eq!(unbounded.status.code(), Some(2));
    assert!(stderr(&unbounded).contains("--older-than"), "nothing is pruned without a cutoff: {}", stderr(&unbounded));
    let future = cli.run(&["prune", "--older-than", "2999-01-01"]);
    assert!(stderr(&future).contains("in the future"), "{}", stderr(&future));
}

#[test]
fn events_are_written_as_json_lines() {
    let cli = Cli::new();
    let events = cli.home.path().join("events.jsonl");
    let out = cli.run(&[
        "run",
        "examples/alert-triage.yaml",
        "--answers",
        "examples/alert-triage.script.yaml",
        "--events",
        events.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let lines: Vec<Value> =
        std::fs::read_to_string(&events).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.first().unwrap()["type"], "workflow:start");
    assert_eq!(lines.last().unwrap()["type"], "workflow:end");
    for (i, e) in lines.iter().enumerate() {
        assert_eq!(e["seq"], i as u64 + 1);
        assert!(e["run"].is_string() && e["ts"].is_string());
    }
    assert!(lines.iter().any(|e| e["type"] == "route" && e["to"] == "create_issue"));
}

#[test]
fn exit_codes_follow_the_contract() {
    let cli = Cli::new();
    // validate: 0 ok, 1 errors, 2 unreadable. (`--script` is the older name of `--answers`, still taken.)
    assert_eq!(
        cli.run(&["validate", "examples/alert-triage.yaml", "--script", "examples/alert-triage.script.yaml"])
            .status
            .code(),
        Some(0)
    );
    let cycle = cli.write(
        "cycle.yaml",
        "switchyard: 1\nname: c\nnodes:\n  - {id: start, type: start}\n  - {id: a, type: agent}\n  - {id: b, type: agent}\nedges:\n  - {from: start, to: a}\n  - {from: a, to: b}\n  - {from: b, to: a}\n",
    );
    let (code, report) = cli.json(&["validate", &cycle, "--json"]);
    assert_eq!(code, 1);
    let codes: Vec<&str> = report["errors"].as_array().unwrap().iter().map(|f| f["code"].as_str().unwrap()).collect();
    assert!(codes.contains(&"UNBOUNDED_CYCLE"), "{codes:?}");
    assert!(report["errors"][0]["message"].is_string() && report["warnings"].is_array());
    let broken = cli.write("broken.yaml", "switchyard: 1\nname: x\nnodes:\n  - id: a\n   type: start\n");
    let out = cli.run(&["validate", &broken]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("broken.yaml:5:") && err.contains("invalid YAML"), "{err}");
    assert_eq!(cli.run(&["validate", "no/such/file.yaml"]).status.code(), Some(2));

    // run: 2 when it does not validate, 1 when the run fails, 0 completed or paused.
    let out = cli.run(&["run", &cycle, "--answers", "examples/alert-triage.script.yaml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("UNBOUNDED_CYCLE") && stderr(&out).contains("nothing was run"));
    let failing = cli.write("fail.script.yaml", "nodes:\n  gather: {status: failed, error: sentry is down}\n");
    let (code, result) = cli.json(&["run", "examples/alert-triage.yaml", "--answers", &failing, "--json"]);
    assert_eq!(code, 1);
    assert_eq!(result["status"], "failed");
    assert!(result["error"].as_str().unwrap().contains("sentry is down"));
    let bad_script = cli.write("bad.script.yaml", "nodes:\n  gather: {txt: typo}\n");
    let out = cli.run(&["run", "examples/alert-triage.yaml", "--answers", &bad_script]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("bad.script.yaml") && stderr(&out).contains("txt"), "{}", stderr(&out));
    let out = cli.run(&["run", "examples/alert-triage.yaml", "--format", "nonsense"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn without_a_script_the_run_uses_providers_and_says_what_is_missing() {
    let cli = Cli::new();
    // `local` exists with no settings; here it points at a closed port, so the first agent fails clearly.
    cli.write(
        "settings.yaml",
        "providers:\n  - {id: local, kind: openai, base_url: 'http://127.0.0.1:9/v1'}\nlimits: {retries: 0}\n",
    );
    let (code, result) = cli.json(&["run", "examples/alert-triage.yaml", "--json"]);
    assert_eq!(code, 1);
    let error = result["error"].as_str().unwrap();
    assert!(error.contains("`gather` failed") && error.contains("local") && error.contains("connect"), "{error}");

    // A provider nobody configured is a validation error naming the node.
    let flow = cli.write(
        "hosted.yaml",
        "switchyard: 1\nname: h\nnodes:\n  - {id: start, type: start}\n  - {id: a, type: agent, model: openai/gpt-4.1-mini}\nedges:\n  - {from: start, to: a}\n",
    );
    let out = cli.run(&["run", &flow]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("UNKNOWN_PROVIDER") && stderr(&out).contains("node `a`"), "{}", stderr(&out));
    // The file itself is valid; this machine lacks the provider: `validate` warns, says the fix, and exits 0.
    let out = cli.run(&["validate", &flow]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let said = stderr(&out);
    assert!(
        said.contains("warning") && said.contains("UNKNOWN_PROVIDER") && said.contains("add the provider"),
        "{said}"
    );
    let out = cli.run(&["run", "examples/alert-triage.yaml", "--model", "nowhere/x"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--model nowhere/x"));

    // `providers` lists what is configured and whether it answers.
    let out = cli.run(&["providers"]);
    assert_eq!(out.status.code(), Some(1), "the local provider does not answer here");
    let listing = String::from_utf8_lossy(&out.stdout);
    assert!(listing.contains("local") && listing.contains("no"), "{listing}");

    let bad = cli.write("settings.yaml", "providers:\n  - {id: local, kind: openai, base_ur: x}\n");
    let out = cli.run(&["validate", "examples/alert-triage.yaml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains(&bad) && stderr(&out).contains("did you mean `base_url`"), "{}", stderr(&out));
}

#[test]
fn input_is_json_text_or_a_file() {
    let cli = Cli::new();
    let flow = cli.write("echo.yaml", "switchyard: 1\nname: echo\nnodes:\n  - {id: start, type: start}\n");
    let (_, r) = cli.json(&["run", &flow, "--input", "{\"a\": 1}", "--json"]);
    assert_eq!(r["results"]["start"]["data"], serde_json::json!({"a": 1}));
    let (_, r) = cli.json(&["run", &flow, "--input", "plain words", "--json"]);
    assert_eq!(r["results"]["start"]["data"], serde_json::json!({"text": "plain words"}));
    let file = cli.write("input.json", "{\"from\": \"file\"}");
    let (_, r) = cli.json(&["run", &flow, "--input", &format!("@{file}"), "--json"]);
    assert_eq!(r["results"]["start"]["data"]["from"], "file");

    let typed = cli.write(
        "typed.yaml",
        "switchyard: 1\nname: t\ninput_schema: {type: object, required: [alert]}\nnodes:\n  - {id: start, type: start}\n",
    );
    let out = cli.run(&["run", &typed, "--input", "{}"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("input_schema"));
}

#[test]
fn export_prints_the_canonical_document_and_imports_report_notes() {
    let cli = Cli::new();
    let out = cli.run(&["export", "../shared/fixtures/sweny/triage.yml"]);
    assert_eq!(out.status.code(), Some(0));
    let yaml = String::from_utf8(out.stdout.clone()).unwrap();
    assert!(yaml.starts_with("switchyard: 1\n"));
    assert!(stderr(&out).contains("note:") && stderr(&out).contains("skills"), "importer notes go to stderr");
    let exported = cli.write("triage.yaml", &yaml);
    assert_eq!(cli.run(&["validate", &exported]).status.code(), Some(0));
    let again = cli.run(&["export", &exported]);
    assert_eq!(String::from_utf8(again.stdout).unwrap(), yaml, "exporting the export changes nothing");

    let (code, json) = cli.json(&["export", "examples/approval-flow.yaml", "--to", "json"]);
    assert_eq!(code, 0);
    assert_eq!(json["switchyard"], 1);

    let out = cli.run(&["export", "examples/approval-flow.yaml", "--format", "sweny"]);
    assert_eq!(out.status.code(), Some(2), "forcing the wrong format is a clear error");
}

#[test]
fn tea_and_openexpertise_files_run_from_the_command_line() {
    let cli = Cli::new();
    let fixture = |p: &str| repo().join("../shared/fixtures").join(p).to_string_lossy().into_owned();
    let script = |p: &str| repo().join("crates/engine/tests/scripts").join(p).to_string_lossy().into_owned();
    let (code, r) = cli.json(&[
        "run",
        &fixture("the_edge_agent/parallel_fanout.yaml"),
        "--answers",
        &script("tea-parallel-fanout.script.yaml"),
        "--json",
    ]);
    assert_eq!(code, 0);
    assert_eq!(r["state"]["count"], 6);
    let out = cli.run(&[
        "run",
        &fixture("the_edge_agent/parallel_fanout.yaml"),
        "--answers",
        &script("tea-parallel-fanout.script.yaml"),
    ]);
    assert!(stderr(&out).contains("note:"), "importer notes on stderr");

    let (code, r) = cli.json(&[
        "run",
        &fixture("openexpertise/oncall-runbook/experience.yaml"),
        "--answers",
        &script("oe-oncall-runbook.script.yaml"),
        "--json",
    ]);
    assert_eq!(code, 0);
    assert_eq!(r["state"]["findings"].as_array().unwrap().len(), 3);

    let out = cli.run(&["validate", &fixture("the_edge_agent/invalid_workflow.yaml")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("node `node_a`") && stderr(&out).contains("[TEA_GOTO_UNKNOWN_TARGET]"),
        "{}",
        stderr(&out)
    );

    // --format overrides detection.
    let out = cli.run(&["export", &fixture("the_edge_agent/simple_workflow.yaml"), "--format", "tea"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("switchyard: 1"));
}

const SLOW: &str = "switchyard: 1
name: slow review
nodes:
  - {id: start, type: start}
  - {id: draft, type: agent, user_prompt: Write}
  - {id: review, type: agent, user_prompt: 'Review {{ draft.text }}'}
  - {id: ship, type: agent}
edges:
  - {from: start, to: draft}
  - {from: draft, to: review}
  - {from: review, to: ship}
";

#[test]
fn a_run_killed_mid_way_is_listed_interrupted_and_resumes_without_rerunning_what_completed() {
    let cli = Cli::new();
    let wf = cli.write("slow.yaml", SLOW);
    let slow =
        cli.write("slow.script.yaml", "nodes: {draft: {text: D}, review: {text: R, delay_ms: 60000}, ship: {text: S}}");
    // Kill the process outright once `review` has started (its node:enter is in the events file).
    let events = cli.home.path().join("first.jsonl");
    kill_when(&cli, &["run", &wf, "--answers", &slow], &events, r#""node":"review","iteration""#);

    let (code, runs) = cli.json(&["runs", "--json"]);
    assert_eq!(code, 0);
    let row = &runs[0];
    let keys: Vec<&str> = row.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "id",
            "workflow",
            "name",
            "status",
            "started",
            "durationMs",
            "pending",
            "tokens",
            "cost",
            "costText",
            "priced",
            "eval",
            "origin",
            "cancelledBy",
            "version",
            "queue",
            "ahead",
            "waiting",
            "parent"
        ]
    );
    assert_eq!(row["origin"], serde_json::json!({"via": "local", "by": null}), "started on this machine");
    assert_eq!(row["parent"], serde_json::Value::Null, "a run started on its own is nobody's child");
    assert_eq!(row["status"], "interrupted");
    assert!(row["workflow"].as_str().unwrap().ends_with("slow.yaml"));
    let id = row["id"].as_str().unwrap();

    // The same answers, without the delay: `review` runs again, `draft` does not.
    let fast = cli.write("slow.script.yaml", "nodes: {draft: {text: NOT AGAIN}, review: {text: R}, ship: {text: S}}");
    assert!(fast.ends_with("slow.script.yaml"));
    let resumed_events = cli.home.path().join("resumed.jsonl");
    let (code, done) = cli.json(&["resume", id, "--json", "--events", resumed_events.to_str().unwrap()]);
    assert_eq!(code, 0, "{done}");
    assert_eq!(done["status"], "completed");
    assert_eq!(done["results"]["draft"]["data"]["text"], "D", "the recorded result, not a new one");
    assert_eq!(ran(&done), ["start", "draft", "review", "ship"]);
    let resumed = std::fs::read_to_string(&resumed_events).unwrap();
    assert!(!resumed.contains(r#""type":"node:enter","node":"draft""#), "{resumed}");
    assert!(resumed.contains(r#""node":"review","iteration""#), "{resumed}");

    // History and replay tell the same story.
    let (_, shown) = cli.json(&["show", id, "--json"]);
    assert_eq!(shown, done);
    // In words, a node that succeeded is "succeeded", as the app says it.
    let out = cli.run(&["show", id]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.lines().any(|l| l.contains("draft") && l.contains("succeeded")), "{said}");
    let (code, replayed) = cli.json(&["replay", id, "--json"]);
    assert_eq!(code, 0, "the replay differs from the recording");
    assert_eq!(replayed, done);
    let (_, runs) = cli.json(&["runs", "--json"]);
    assert_eq!(runs[0]["status"], "completed");
}

#[test]
fn run_from_a_node_reuses_the_earlier_results_upstream() {
    let cli = Cli::new();
    let wf = cli.write("slow.yaml", SLOW);
    let first = cli.write("first.script.yaml", "nodes: {draft: {text: D1}, review: {text: R1}, ship: {text: S1}}");
    let (_, earlier) = cli.json(&["run", &wf, "--answers", &first, "--json"]);
    let id = earlier["runId"].as_str().unwrap();
    let second = cli.write("second.script.yaml", "nodes: {draft: {text: D2}, review: {text: R2}, ship: {text: S2}}");
    let (code, again) = cli.json(&["run", &wf, "--answers", &second, "--reuse", id, "--from", "review", "--json"]);
    assert_eq!(code, 0);
    assert_eq!(again["results"]["draft"]["data"]["text"], "D1", "upstream of `review`: the earlier result");
    assert_eq!(again["results"]["review"]["data"]["text"], "R2");
    assert_eq!(again["results"]["ship"]["data"]["text"], "S2");

    let unknown = cli.run(&["run", &wf, "--answers", &second, "--reuse", id, "--from", "nope"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(stderr(&unknown).contains("--from nope: no such node"), "{}", stderr(&unknown));
    let no_run = cli.run(&["run", &wf, "--answers", &second, "--reuse", "no-such-run", "--from", "review"]);
    assert_eq!(no_run.status.code(), Some(2));
    assert!(stderr(&no_run).contains("no run `no-such-run`"), "{}", stderr(&no_run));
}

#[test]
fn a_corrupt_run_store_is_named_and_commands_that_need_no_store_still_work() {
    let cli = Cli::new();
    let store = cli.write("runs.sqlite", &"not a database ".repeat(100));
    let out = cli.run(&["runs"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains(&store) && stderr(&out).contains("move it aside"), "{}", stderr(&out));
    let run = cli.run(&["run", "examples/approval-flow.yaml", "--answers", "examples/approval-flow.script.yaml"]);
    assert_eq!(run.status.code(), Some(2));
    assert!(stderr(&run).contains("not a readable database"), "{}", stderr(&run));
    assert_eq!(cli.run(&["validate", "examples/approval-flow.yaml"]).status.code(), Some(0));
    let unstored = cli.run(&[
        "run",
        "examples/approval-flow.yaml",
        "--answers",
        "examples/approval-flow.script.yaml",
        "--no-store",
    ]);
    assert_eq!(unstored.status.code(), Some(0), "{}", stderr(&unstored));
}

/// Starts `switchyard ARGS --events FILE`, waits until FILE holds `marker`, kills the process with SIGKILL.
fn kill_when(cli: &Cli, args: &[&str], events: &Path, marker: &str) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .args(args)
        .args(["--events", events.to_str().unwrap()])
        .env("SWITCHYARD_HOME", cli.home.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !std::fs::read_to_string(events).unwrap_or_default().contains(marker) {
        assert!(std::time::Instant::now() < deadline, "never saw {marker}");
        assert!(child.try_wait().unwrap().is_none(), "the process ended before {marker}");
        std::thread::yield_now();
    }
    child.kill().unwrap();
    child.wait().unwrap();
}

/// Every `node:enter` of each node, over several events files.
fn enters(files: &[std::path::PathBuf]) -> std::collections::BTreeMap<String, usize> {
    let mut count = std::collections::BTreeMap::new();
    for file in files {
        for line in std::fs::read_to_string(file).unwrap_or_default().lines() {
            let event: Value = serde_json::from_str(line).unwrap();
            if event["type"] == "node:enter" {
                *count.entry(event["node"].as_str().unwrap().to_string()).or_insert(0) += 1;
            }
        }
    }
    count
}

#[test]
fn a_run_killed_at_any_point_resumes_in_a_new_process_and_every_node_runs_once_in_total() {
    // (what to wait for before SIGKILL, and why)
    let points = [
        (r#""node":"slow","iteration""#, "before the first node ends"),
        (r#""type":"node:exit","node":"quick""#, "mid-branch: `quick` done, `slow` running"),
        (r#""type":"approval:requested""#, "an approval waits while `slow` runs"),
    ];
    let reference = {
        let cli = Cli::new();
        let wf = cli.write("branches.yaml", support::BRANCHES);
        let fast = cli
            .write("answers.yaml", "nodes: {slow: {text: S}, quick: {text: Q}, polish: {text: P}, merge: {text: M}}\n");
        let (_, paused) = cli.json(&["run", &wf, "--answers", &fast, "--json"]);
        let id = paused["runId"].as_str().unwrap().to_string();
        cli.json(&["resume", &id, "--decide", "check=approve", "--json"]).1
    };
    for (marker, point) in points {
        let cli = Cli::new();
        let wf = cli.write("branches.yaml", support::BRANCHES);
        let slow = "nodes: {slow: {text: S, delay_ms: 60000}, quick: {text: Q}, polish: {text: P}, merge: {text: M}}\n";
        let answers = cli.write("answers.yaml", slow);
        let first = cli.home.path().join("first.jsonl");
        kill_when(&cli, &["run", &wf, "--answers", &answers], &first, marker);
        let (_, runs) = cli.json(&["runs", "--json"]);
        assert_eq!(runs[0]["status"], "interrupted", "{point}");
        let id = runs[0]["id"].as_str().unwrap().to_string();

        // The same answers without the delay; the next process goes on until the approval, a third decides it.
        cli.write("answers.yaml", &slow.replace(", delay_ms: 60000", ""));
        let second = cli.home.path().join("second.jsonl");
        let (code, after) = cli.json(&["resume", &id, "--json", "--events", second.to_str().unwrap()]);
        assert_eq!((code, after["status"].as_str()), (0, Some("paused")), "{point}: {after}");
        assert_eq!(after["pending"][0]["node"], "check", "{point}");
        let third = cli.home.path().join("third.jsonl");
        let (code, done) =
            cli.json(&["resume", &id, "--decide", "check=approve", "--json", "--events", third.to_str().unwrap()]);
        assert_eq!((code, done["status"].as_str()), (0, Some("completed")), "{point}: {done}");
        assert_eq!(done["results"], reference["results"], "{point}: the results of an uninterrupted run");
        // Counted in the run's log as the store keeps it, played again: the events files can lag the store by
        // what a kill cut off between the store's commit and the file's write.
        let replayed = cli.home.path().join("replayed.jsonl");
        let out = cli.run(&["replay", &id, "--json", "--events", replayed.to_str().unwrap()]);
        assert!(out.status.success() && !stderr(&out).contains("differs"), "{point}: {}", stderr(&out));
        let count = enters(&[replayed]);
        let seen = enters(&[first, second, third]);
        assert!(seen.values().all(|n| *n <= 1), "{point}: a node entered twice in the events files: {seen:?}");
        for node in ["start", "slow", "quick", "polish", "merge"] {
            assert_eq!(count.get(node), Some(&1), "{point}: `{node}` entered {:?} times", count.get(node));
        }
    }
}

#[test]
fn a_parent_killed_while_its_child_runs_resumes_and_the_same_child_goes_on_with_nothing_completed_run_again() {
    let cli = Cli::new();
    let parent = cli.write(
        "parent.yaml",
        "switchyard: 1\nname: Parent\nnodes:\n  - {id: start, type: start, initial_input: the page}\n  \
         - {id: summarize, type: workflow, workflow: children/child.yaml, input: {text: '{{ input }}'}}\n  \
         - {id: post, type: agent, user_prompt: 'Post {{ summarize.text }}'}\nedges:\n  - {from: start, to: summarize}\n  \
         - {from: summarize, to: post}\n",
    );
    std::fs::create_dir_all(cli.home.path().join("children")).unwrap();
    cli.write(
        "children/child.yaml",
        "switchyard: 1\nname: Child\ninput_schema: {type: object, properties: {text: {type: string}}, required: [text]}\n\
         nodes:\n  - {id: start, type: start}\n  - {id: first, type: agent, user_prompt: 'Read {{ input.text }}'}\n  \
         - {id: write, type: agent, user_prompt: 'Write {{ first.text }}'}\nedges:\n  - {from: start, to: first}\n  \
         - {from: first, to: write}\n",
    );
    let slow = "nodes: {post: {text: posted}}\nworkflows:\n  summarize:\n    nodes: {first: {text: read}, write: {text: short, delay_ms: 60000}}\n";
    let answers = cli.write("answers.yaml", slow);
    let first = cli.home.path().join("first.jsonl");
    // Killed while the child writes: the child's `node:enter` of `write` is in the parent's stream.
    kill_when(&cli, &["run", &parent, "--answers", &answers], &first, r#""type":"node:enter","node":"write""#);
    let (_, runs) = cli.json(&["runs", "--json"]);
    let runs = runs.as_array().unwrap().clone();
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert!(runs.iter().all(|r| r["status"] == "interrupted"), "{runs:?}");
    let id_of = |name: &str| runs.iter().find(|r| r["name"] == name).unwrap()["id"].as_str().unwrap().to_string();
    let (parent_id, child_id) = (id_of("Parent"), id_of("Child"));

    cli.write("answers.yaml", &slow.replace(", delay_ms: 60000", ""));
    let (code, done) = cli.json(&["resume", &parent_id, "--json"]);
    assert_eq!((code, done["status"].as_str()), (0, Some("completed")), "{done}");
    assert_eq!(done["results"]["summarize"]["data"]["text"], "short");
    assert_eq!(done["results"]["post"]["data"]["text"], "posted");
    let (_, runs) = cli.json(&["runs", "--json"]);
    assert_eq!(runs.as_array().unwrap().len(), 2, "the same child went on: {runs}");
    // Each node of each run entered once, as the store keeps them, played again.
    for (id, nodes) in
        [(&parent_id, &["start", "summarize", "post"][..]), (&child_id, &["start", "first", "write"][..])]
    {
        let replayed = cli.home.path().join(format!("{id}.jsonl"));
        let out = cli.run(&["replay", id, "--json", "--events", replayed.to_str().unwrap()]);
        assert!(out.status.success() && !stderr(&out).contains("differs"), "{}", stderr(&out));
        let count = enters(&[replayed]);
        for node in nodes {
            assert_eq!(count.get(*node), Some(&1), "{id}: `{node}` entered {:?} times", count.get(*node));
        }
    }
}

#[test]
fn a_paused_run_resumed_by_one_process_while_another_lists_runs() {
    let cli = Cli::new();
    let wf = cli.write("branches.yaml", support::BRANCHES);
    let answers = cli.write(
        "answers.yaml",
        "nodes: {slow: {text: S}, quick: {text: Q}, polish: {text: P, delay_ms: 1500}, merge: {text: M}}\n",
    );
    let (_, paused) = cli.json(&["run", &wf, "--answers", &answers, "--json"]);
    let id = paused["runId"].as_str().unwrap().to_string();
    let resumer = Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .args(["resume", &id, "--decide", "check=approve", "--json"])
        .env("SWITCHYARD_HOME", cli.home.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // A third process lists runs while the second resumes one.
    let mut seen = Vec::new();
    for _ in 0..20 {
        let (code, runs) = cli.json(&["runs", "--json"]);
        assert_eq!(code, 0);
        seen.push(runs[0]["status"].as_str().unwrap().to_string());
    }
    let done = resumer.wait_with_output().unwrap();
    assert!(done.status.success(), "{}", String::from_utf8_lossy(&done.stderr));
    assert!(seen.iter().all(|s| ["paused", "running", "completed"].contains(&s.as_str())), "{seen:?}");
    let (_, runs) = cli.json(&["runs", "--json"]);
    assert_eq!(runs[0]["status"], "completed");
}

#[test]
fn code_runs_with_allow_code_or_a_trusted_fingerprint_and_never_without_consent() {
    let cli = Cli::new();
    let fixture = repo().join("../shared/fixtures/the_edge_agent/parallel_fanout.yaml").to_string_lossy().into_owned();
    // Refused: the run fails at the first code step, says how to allow it, and validation said so before.
    let out = cli.run(&["run", &fixture, "--no-store"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("will not run without your consent") && err.contains("--allow-code"), "{err}");
    assert!(err.contains("switchyard trust"), "{err}");
    let (_, report) = cli.json(&["validate", &fixture, "--json"]);
    let warned: Vec<&str> = report["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"] == "CODE_NEEDS_CONSENT")
        .map(|f| f["node"].as_str().unwrap())
        .collect();
    assert_eq!(warned, ["start_node", "branch_1", "branch_2", "branch_3", "fan_in"]);
    // Given for one run.
    let (code, r) = cli.json(&["run", &fixture, "--no-store", "--allow-code", "--json"]);
    assert_eq!((code, r["state"]["count"].clone()), (0, serde_json::json!(6)));
    // Given for this version of the code: trusted, it runs; changed, it is refused again.
    let copy = cli.write("fanout.yaml", &std::fs::read_to_string(&fixture).unwrap());
    let out = cli.run(&["trust", &copy]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("trusted 5 code steps"));
    let (code, r) = cli.json(&["run", &copy, "--no-store", "--json"]);
    assert_eq!((code, r["state"]["count"].clone()), (0, serde_json::json!(6)));
    let changed = std::fs::read_to_string(&copy).unwrap().replace("return {\"count\": 3}", "return {\"count\": 30}");
    std::fs::write(&copy, changed).unwrap();
    let (code, r) = cli.json(&["run", &copy, "--no-store", "--json"]);
    assert_eq!((code, r["status"].clone()), (1, serde_json::json!("failed")));
    assert!(r["error"].as_str().unwrap().contains("consent"));
    assert_eq!(cli.run(&["trust", "--forget", &copy]).status.code(), Some(0));
    // A missing interpreter names what to install.
    let out = Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .args(["run", &fixture, "--no-store", "--allow-code", "--json"])
        .env("SWITCHYARD_HOME", cli.home.path())
        .env("SWITCHYARD_PYTHON", "/nonexistent/python3")
        .output()
        .unwrap();
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(r["error"].as_str().unwrap().contains("install Python 3"), "{r}");
}

#[test]
fn with_json_a_command_that_cannot_go_on_still_prints_one_json_object() {
    let cli = Cli::new();
    let (code, r) = cli.json(&["validate", "no/such/file.yaml", "--json"]);
    assert_eq!(code, 2);
    assert_eq!(r["errors"][0]["code"], "INVALID_FILE");
    let broken = cli.write("broken.yaml", "switchyard: 1\nname: x\nnodes:\n  - id: a\n   type: start\n");
    let (code, r) = cli.json(&["validate", &broken, "--json"]);
    assert_eq!(
        (code, r["errors"][0]["code"].clone(), r["errors"][0]["line"].clone()),
        (2, "PARSE_ERROR".into(), 5.into())
    );
    let cycle = cli.write(
        "cycle.yaml",
        "switchyard: 1\nname: c\nnodes:\n  - {id: start, type: start}\n  - {id: a, type: agent}\n  - {id: b, type: agent}\nedges:\n  - {from: start, to: a}\n  - {from: a, to: b}\n  - {from: b, to: a}\n",
    );
    let (code, r) = cli.json(&["run", &cycle, "--answers", "examples/alert-triage.script.yaml", "--json"]);
    assert_eq!((code, r["status"].clone()), (2, serde_json::json!("invalid")));
    assert!(r["errors"].as_array().unwrap().iter().any(|e| e["code"] == "UNBOUNDED_CYCLE"), "{r}");
    let (code, r) = cli.json(&["run", &broken, "--json"]);
    assert_eq!(
        (code, r["status"].clone(), r["errors"][0]["code"].clone()),
        (2, "invalid".into(), "PARSE_ERROR".into())
    );
    let (code, r) = cli.json(&["show", "no-such-run", "--json"]);
    assert_eq!((code, r["errors"][0]["code"].clone()), (2, "NO_SUCH_RUN".into()));
}

/// A python with the `mcp` package, for the tests against a real MCP server (npm test sets it).
fn mcp_python() -> String {
    std::env::var("SWITCHYARD_TEST_MCP_PYTHON")
        .expect("SWITCHYARD_TEST_MCP_PYTHON must name a python with the `mcp` package: run `npm test`")
}

#[test]
#[ignore = "needs a python with the `mcp` package (SWITCHYARD_TEST_MCP_PYTHON); npm test runs it"]
fn an_agents_scripted_tool_calls_reach_real_mcp_servers_over_stdio_and_http_and_mcp_lists_them() {
    let cli = Cli::new();
    let server = repo().join("crates/engine/tests/mcp/server.py").to_string_lossy().into_owned();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut http = Command::new(mcp_python())
        .args([server.as_str(), "http", &port.to_string()])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(std::time::Instant::now() < deadline, "the HTTP MCP server did not start");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    cli.write(
        "settings.yaml",
        &format!(
            "mcp_servers:\n  local: {{command: {:?}, args: [{server:?}, stdio]}}\n  remote: {{url: \"http://127.0.0.1:{port}/mcp\"}}\n  broken: {{command: /nonexistent/mcp-server}}\n",
            mcp_python()
        ),
    );
    let (code, listed) = cli.json(&["mcp", "--json"]);
    assert_eq!(code, 1, "one server does not start");
    let row = |name: &str| listed.as_array().unwrap().iter().find(|r| r["name"] == name).unwrap().clone();
    assert_eq!((row("local")["ok"].clone(), row("remote")["ok"].clone()), (json!(true), json!(true)));
    assert!(row("local")["tools"].as_array().unwrap().iter().any(|t| t["name"] == "add"));
    assert!(row("broken")["error"].as_str().unwrap().contains("/nonexistent/mcp-server"));

    for server in ["local", "remote"] {
        let workflow = cli.write(
            &format!("{server}.yaml"),
            &format!("switchyard: 1\nname: tools\nnodes:\n  - {{id: start, type: start}}\n  - {{id: helper, type: agent, tools: {{mcp: [{server}]}}}}\nedges:\n  - {{from: start, to: helper}}\n"),
        );
        let script = cli.write(
            &format!("{server}.script.yaml"),
            &format!("nodes:\n  helper:\n    text: done\n    tool_calls:\n      - {{tool: {server}/add, input: {{a: 20, b: 22}}}}\n"),
        );
        let (code, r) = cli.json(&["run", &workflow, "--answers", &script, "--json", "--no-store"]);
        assert_eq!(code, 0, "{server}: {r}");
        assert_eq!(r["results"]["helper"]["toolCalls"][0]["output"], json!({"result": 42}), "{server}: {r}");
    }
    // `validate` lists the servers whose single tools a workflow names, and names a tool a server does not have.
    let typo = cli.write(
        "typo.yaml",
        "switchyard: 1\nname: typo\nnodes:\n  - {id: start, type: start}\n  - {id: helper, type: agent, tools: {mcp: [local/ad]}}\nedges:\n  - {from: start, to: helper}\n",
    );
    let (code, report) = cli.json(&["validate", &typo, "--json"]);
    assert_eq!(code, 0, "a warning: {report}");
    let warning = report["warnings"].as_array().unwrap().iter().find(|w| w["code"] == "UNKNOWN_MCP_TOOL").cloned();
    let message = warning.unwrap_or_else(|| panic!("{report}"))["message"].as_str().unwrap().to_string();
    assert!(message.contains("`ad`") && message.contains("add"), "{message}");
    let _ = http.kill();
    let _ = http.wait();
}

#[test]
fn what_a_code_step_prints_shows_in_the_live_log_under_its_node() {
    let cli = Cli::new();
    let flow = cli.write(
        "prints.yaml",
        "switchyard: 1\nname: p\nnodes:\n  - {id: start, type: start, initial_input: {rows: [1, 2, 3]}}\n  - {id: sum, type: script, language: python, code: \"import sys\\nprint('summing', len(input['rows']))\\nprint('careful', file=sys.stderr)\\nreturn {'total': sum(input['rows'])}\"}\nedges:\n  - {from: start, to: sum}\n",
    );
    let out = cli.run(&["run", &flow, "--allow-code", "--no-store"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let log = String::from_utf8_lossy(&out.stdout);
    assert!(log.contains("sum | summing 3") && log.contains("sum ! careful") && log.contains("{\"total\":6}"), "{log}");
}

/// A workflow of `n` agents in a row, whose export and findings are far larger than a pipe's buffer.
fn long_workflow(n: usize) -> String {
    let mut text = String::from("switchyard: 1\nname: long\nnodes:\n  - id: start\n    type: start\n");
    for i in 0..n {
        text += &format!("  - id: n{i}\n    type: agent\n    user_prompt: step {i} of a long workflow\n");
    }
    text += "edges:\n  - from: start\n    to: n0\n";
    for i in 1..n {
        text += &format!("  - from: n{}\n    to: n{i}\n", i - 1);
    }
    text
}

#[test]
fn a_reader_that_closes_stdout_early_ends_the_command_quietly_with_status_141() {
    use std::io::Read;
    use std::process::Stdio;
    let cli = Cli::new();
    let file = cli.write("long.yaml", &long_workflow(3000));
    // The agents name no model and no server answers: validation has a NO_MODEL warning for each.
    for args in [vec!["export", &file], vec!["export", &file, "--to", "json"], vec!["validate", &file, "--json"]] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_switchyard"))
            .args(&args)
            .env("SWITCHYARD_HOME", cli.home.path())
            .env("SWITCHYARD_LOCAL_URL", "http://127.0.0.1:9/v1")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut first = [0u8; 64];
        child.stdout.take().unwrap().read_exact(&mut first).unwrap();
        // The read end is closed here, while the command still has most of its output to write.
        let out = child.wait_with_output().unwrap();
        let stderr = stderr(&out);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert_eq!(stderr, "", "{args:?} prints nothing when its reader has gone");
        assert_eq!(out.status.code(), Some(141), "{args:?}: the status a shell gives a tool ended by SIGPIPE");
    }
}

const NO_MODEL_NAMED: &str =
    "switchyard: 1\nname: plain\nnodes:\n  - {id: start, type: start}\n  - {id: a, type: agent, user_prompt: Say hi}\nedges:\n  - {from: start, to: a}\n";

#[test]
fn an_agent_that_names_no_model_uses_the_first_model_the_local_server_lists() {
    use http::{Reply, TestServer};
    let tokio = tokio::runtime::Runtime::new().unwrap();
    let server = tokio.block_on(TestServer::start(vec![
        Reply::json(200, &json!({"object": "list", "data": [{"id": "tiny-model", "object": "model"}]})),
        Reply::openai_stream(&["Hello", " there"]),
    ]));
    let cli = Cli::new();
    let flow = cli.write("plain.yaml", NO_MODEL_NAMED);
    let local = format!("{}/v1", server.url);
    let env = [("SWITCHYARD_LOCAL_URL", local.as_str())];
    let out = cli.run_with(&["run", &flow, "--no-store", "--json"], &env);
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((out.status.code(), &result["status"]), (Some(0), &json!("completed")), "{}", stderr(&out));
    assert_eq!(result["results"]["a"]["data"]["text"], "Hello there");
    assert!(stderr(&out).contains("local/tiny-model") && stderr(&out).contains(&local), "{}", stderr(&out));
    let requests = server.requests();
    let paths: Vec<&str> = requests.iter().map(|r| r.path.as_str()).collect();
    assert_eq!(paths, ["/v1/models", "/v1/chat/completions"]);
    assert_eq!(requests[1].body["model"], "tiny-model");
}

#[test]
fn with_no_model_anywhere_validate_warns_and_run_fails_saying_what_to_do() {
    let cli = Cli::new();
    cli.write("settings.yaml", "limits: {retries: 0}\n");
    let flow = cli.write("plain.yaml", NO_MODEL_NAMED);
    let (code, report) = cli.json(&["validate", &flow, "--json"]);
    assert_eq!(code, 0, "a warning: {report}");
    assert_eq!(report["warnings"][0]["code"], "NO_MODEL");
    assert_eq!(report["warnings"][0]["node"], "a");
    let out = cli.run(&["validate", &flow]);
    assert!(stderr(&out).contains("[NO_MODEL]") && stderr(&out).contains("--model"), "{}", stderr(&out));
    // A script answers everything: no model is needed.
    let (_, scripted) = cli.json(&["validate", &flow, "--json", "--answers", "examples/alert-triage.script.yaml"]);
    assert_eq!(scripted["warnings"], json!([]));

    let out = cli.run(&["run", &flow, "--no-store", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["results"]["a"]["errorCode"], "NO_MODEL");
    let error = result["error"].as_str().unwrap();
    assert!(error.contains("`a` has no model") && !error.contains("--model"), "engine words, no flags: {error}");
    let err = stderr(&out);
    assert!(err.contains("hint: [NO_MODEL]") && err.contains("--model"), "the command line adds its own: {err}");
    // With --model it runs (here to the same closed port, so it fails for that reason instead).
    let out = cli.run(&["run", &flow, "--no-store", "--json", "--model", "local/x"]);
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["results"]["a"].get("errorCode"), None, "{result}");
}

#[test]
fn a_settings_file_that_does_not_parse_is_reported_with_the_code_the_app_shows_for_it() {
    let cli = Cli::new();
    let settings = cli.home.path().join("settings.yaml");
    std::fs::write(&settings, "providers: [unclosed\n").unwrap();
    let expected = switchyard_engine::providers::Settings::load(&settings).unwrap_err().code();
    assert_eq!(expected, "SETTINGS_PARSE_ERROR");
    // `run` without an answers file reads the settings through the session; `mcp` reads them itself.
    for args in [&["run", "examples/approval-flow.yaml", "--json"][..], &["mcp", "--json"][..]] {
        let out = cli.run(args);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let value: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{args:?}: {e}: {stdout}"));
        assert_eq!(out.status.code(), Some(2), "{args:?}: {value}");
        assert_eq!(value["errors"][0]["code"], expected, "{args:?}: {value}");
        assert!(value["errors"][0]["message"].as_str().unwrap().contains("settings.yaml"), "{value}");
    }
}

/// Built without PostgreSQL (`--no-default-features`), a PostgreSQL run store and a worker are refused with a code
/// that says so, never a connection attempt.
#[cfg(not(feature = "postgres"))]
#[test]
fn without_the_postgres_feature_a_postgres_store_and_a_worker_are_refused_with_a_code() {
    let cli = Cli::new();
    let db = "postgres://someone:secret@127.0.0.1:9/runs";
    let (code, out) = cli.json(&["runs", "--json", "--db", db]);
    assert_eq!((code, out["errors"][0]["code"].as_str()), (2, Some("POSTGRES_NOT_BUILT")), "{out}");
    assert!(!out.to_string().contains("secret"), "{out}");
    let out = cli.run(&["worker", "--db", db]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("[POSTGRES_NOT_BUILT]"), "{}", stderr(&out));
}

#[test]
fn an_error_names_its_code_once_for_scripts_to_branch_on() {
    let cli = Cli::new();
    let serve = cli.run(&["--db", "postgres://nobody@127.0.0.1:9/none", "serve", "--listen", "localhost"]);
    assert_eq!(serve.status.code(), Some(2), "{}", stderr(&serve));
    let said = stderr(&serve);
    assert!(said.contains("--listen localhost") && said.trim_end().ends_with("[INVALID_LISTEN]"), "{said}");
    // A code a hint line already names, or one the message carries, is not said twice.
    let missing = cli.run(&["run", "no-such-file.yaml"]);
    let said = stderr(&missing);
    assert_eq!(said.matches("[INVALID_FILE]").count(), 1, "{said}");
}

#[test]
fn a_tea_step_sure_to_fail_stops_run_before_anything_runs_unless_an_answers_file_answers_it() {
    let cli = Cli::new();
    // A body that would need consent first, then an action Switchyard does not run.
    let flow = cli.write(
        "fetch.yaml",
        "name: fetch\nnodes:\n  - name: prepare\n    run: |\n      return {\"url\": \"https://example.com\"}\n  - name: fetch\n    uses: http.get\n    with: {url: \"{{ state.url }}\"}\n",
    );
    let out = cli.run(&["run", &flow, "--allow-code"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let said = stderr(&out);
    assert!(
        said.contains("UNSUPPORTED_ACTION") && said.contains("fetch") && said.contains("nothing was run"),
        "{said}"
    );
    assert!(!said.contains("prepare` ran") && !said.contains("completed"), "{said}");
    // Checking the file is not running it: a warning, exit 0.
    let out = cli.run(&["validate", &flow]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("warning") && stderr(&out).contains("UNSUPPORTED_ACTION"), "{}", stderr(&out));
    assert!(said.contains("TEA action `http.get`") && said.contains("answers file"), "{said}");
    // An answers file that does not answer that step does not lift the refusal; one that answers both runs it.
    let partial = cli.write("prepare-only.script.yaml", "nodes:\n  prepare: {data: {url: x}}\n");
    let out = cli.run(&["run", &flow, "--answers", &partial]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("UNSUPPORTED_ACTION") && stderr(&out).contains("`fetch`"), "{}", stderr(&out));
    let answers = cli.write("fetch.script.yaml", "nodes:\n  prepare: {data: {url: x}}\n  fetch: {data: {body: ok}}\n");
    let (code, result) = cli.json(&["run", &flow, "--answers", &answers, "--json"]);
    assert_eq!(code, 0, "{result}");
    assert_eq!(result["status"], "completed");
}

#[test]
fn validate_sums_up_many_findings_of_one_code_in_a_line_and_json_still_lists_every_one() {
    let cli = Cli::new();
    let mut text = String::from("switchyard: 1\nname: many\nnodes:\n  - {id: start, type: start}\n");
    for i in 0..50 {
        text.push_str(&format!("  - {{id: lost_{i}, type: approval}}\n"));
    }
    let flow = cli.write("many.yaml", &text);
    let out = cli.run(&["validate", &flow]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let said = stderr(&out);
    let lines: Vec<&str> = said.lines().filter(|l| l.contains("[UNREACHABLE_NODE]")).collect();
    assert_eq!(lines.len(), 4, "three shown, then one line for the rest: {said}");
    assert!(lines[0].contains("node `lost_0`"), "{said}");
    assert!(
        lines[3].contains("47 more like these") && lines[3].contains("lost_3") && lines[3].contains("--json"),
        "{said}"
    );
    let (_, report) = cli.json(&["validate", &flow, "--json"]);
    let unreachable = report["warnings"].as_array().unwrap().iter().filter(|w| w["code"] == "UNREACHABLE_NODE").count();
    assert_eq!(unreachable, 50);
}

#[test]
fn run_refuses_a_sweny_file_its_loader_refuses_as_validate_does() {
    let cli = Cli::new();
    let flow = cli.write(
        "island.yml",
        "id: f\nname: F\nentry: a\nnodes:\n  a: {name: A, instruction: hi}\n  b: {name: B, instruction: hi}\n  c: {name: C, instruction: hi}\nedges:\n  - {from: a, to: b}\n",
    );
    let answers = cli.write("island.script.yaml", "nodes:\n  a: {text: x}\n  b: {text: y}\n");
    let out = cli.run(&["validate", &flow]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let out = cli.run(&["run", &flow, "--answers", &answers]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("UNREACHABLE_NODE") && stderr(&out).contains("nothing was run"), "{}", stderr(&out));
}

#[test]
fn import_notes_that_say_the_same_of_many_nodes_are_summed_up_in_a_line_naming_where_the_rest_are() {
    let cli = Cli::new();
    let mut text = String::from("id: f\nname: F\nentry: a\nnodes:\n  a: {name: A, instruction: hi}\n");
    for i in 0..50 {
        text.push_str(&format!("  lost_{i}: {{name: L, instruction: hi}}\n"));
    }
    text.push_str("edges: []\n");
    let flow = cli.write("islands.yml", &text);
    for command in ["validate", "run", "export"] {
        let out = cli.run(&[command, &flow]);
        let said = stderr(&out);
        let notes: Vec<&str> = said.lines().filter(|l| l.starts_with("note:")).collect();
        let unreachable: Vec<&&str> = notes.iter().filter(|l| l.contains("cannot be reached")).collect();
        assert_eq!(unreachable.len(), 3, "{command}: three notes shown, then one line for the rest: {said}");
        assert!(unreachable[0].contains("node `lost_0`"), "{command}: {said}");
        let summed: Vec<&&str> = notes.iter().filter(|l| l.contains("more like these")).collect();
        assert_eq!(summed.len(), 1, "{command}: {said}");
        assert!(
            summed[0].contains("47 more like these, at node `lost_3`, node `lost_4`")
                && summed[0].contains("islands.yml")
                && summed[0].ends_with(", …"),
            "{command}: {said}"
        );
    }
}

#[test]
fn a_summed_up_line_names_each_node_once_however_many_of_its_findings_it_sums_up() {
    let cli = Cli::new();
    let conditions: Vec<String> = (0..9).map(|i| format!("{{operator: contains, value: v{i}}}")).collect();
    let flow = cli.write(
        "branches.yaml",
        &format!(
            "switchyard: 1\nname: b\nnodes:\n  - {{id: start, type: start}}\n  - {{id: choose, type: if, conditions: [{}]}}\nedges:\n  - {{from: start, to: choose}}\n",
            conditions.join(", ")
        ),
    );
    let out = cli.run(&["validate", &flow]);
    let said = stderr(&out);
    let summed = said.lines().find(|l| l.contains("[UNCONNECTED_BRANCH]") && l.contains("more like these"));
    let summed = summed.unwrap_or_else(|| panic!("the branches are summed up: {said}"));
    assert!(summed.contains("more like these, at node `choose` (--json lists every one)"), "{summed}");
    assert_eq!(summed.matches("choose").count(), 1, "{summed}");
}

#[test]
fn counts_of_one_are_singular_in_what_the_command_line_says() {
    let cli = Cli::new();
    let flow = cli.write(
        "one.yaml",
        "switchyard: 1\nname: one\nnodes:\n  - {id: start, type: start}\n  - {id: ok, type: approval, message: Ship it?}\nedges:\n  - {from: start, to: ok}\n",
    );
    let out = cli.run(&["validate", &flow]);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(stdout.contains("valid (2 nodes, 1 edge, 2 warnings)"), "{stdout}{}", stderr(&out));
    let broken = cli.write(
        "broken.yaml",
        "switchyard: 1\nname: broken\nnodes:\n  - {id: start, type: start}\n  - {id: ok, type: approval, message: Ship it?}\nedges:\n  - {from: start, to: ok}\n  - {from: ok, to: nowhere}\n",
    );
    let out = cli.run(&["run", &broken]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("does not validate (1 error); nothing was run"), "{}", stderr(&out));
    let (_, json) = cli.json(&["run", &broken, "--json"]);
    assert_eq!(json["status"], "invalid", "{json}");
}

#[test]
fn a_sweny_self_loop_beside_another_edge_is_reported_with_the_ambiguity_in_one_validate() {
    let cli = Cli::new();
    let nodes = "nodes:\n  a: {name: A, instruction: hi}\n  b: {name: B, instruction: hi}\n";
    let flow = cli.write(
        "loop.yml",
        &format!("id: f\nname: F\nentry: a\n{nodes}edges:\n  - {{from: a, to: a}}\n  - {{from: a, to: b}}\n"),
    );
    let out = cli.run(&["validate", &flow, "--answers", "examples/approval-flow.script.yaml"]);
    let said = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("edge `a->a` [SELF_LOOP_UNBOUNDED]"), "{said}");
    assert!(said.contains("node `a` [AMBIGUOUS_EDGES] `a` has 2 unconditional edges (to a, b)"), "{said}");
    assert!(!said.contains("NO_TERMINAL_REACHABLE"), "{said}");
    // Both fixed in one go, the file is valid.
    let fixed = cli.write(
        "fixed.yml",
        &format!("id: f\nname: F\nentry: a\n{nodes}edges:\n  - {{from: a, to: a, max_iterations: 2, when: again}}\n  - {{from: a, to: b}}\n"),
    );
    let out = cli.run(&["validate", &fixed, "--answers", "examples/approval-flow.script.yaml"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // A lone unbounded self-loop is that one error, not also a run that can never end.
    let lone = cli.write(
        "lone.yml",
        "id: f\nname: F\nentry: a\nnodes:\n  a: {name: A, instruction: hi}\nedges:\n  - {from: a, to: a}\n",
    );
    let (code, report) = cli.json(&["validate", &lone, "--answers", "examples/approval-flow.script.yaml", "--json"]);
    assert_eq!(code, 1, "{report}");
    let codes: Vec<&str> = report["errors"].as_array().unwrap().iter().map(|e| e["code"].as_str().unwrap()).collect();
    assert_eq!(codes, ["SELF_LOOP_UNBOUNDED"], "{report}");
}

#[test]
fn runs_are_listed_a_page_at_a_time_by_filter_and_the_short_id_history_prints_names_a_run() {
    let cli = Cli::new();
    let flow = ["run", "examples/approval-flow.yaml", "--answers", "examples/approval-flow.script.yaml", "--json"];
    let mut paused = Vec::new();
    for _ in 0..3 {
        let (code, run) = cli.json(&flow);
        assert_eq!(code, 0);
        paused.push(run["runId"].as_str().unwrap().to_string());
    }
    let (code, _) =
        cli.json(&["run", "examples/alert-triage.yaml", "--answers", "examples/alert-triage.script.yaml", "--json"]);
    assert_eq!(code, 0);
    let ids = |rows: &Value| -> Vec<String> {
        rows.as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap().to_string()).collect()
    };
    let (_, all) = cli.json(&["runs", "--json"]);
    let (all, name) = (ids(&all), all[1]["name"].as_str().unwrap().to_string());
    assert_eq!(all.len(), 4);

    // Two pages of two: the first says how to ask for the next.
    let first = cli.run(&["runs", "--json", "--limit", "2"]);
    let page: Value = serde_json::from_slice(&first.stdout).unwrap();
    assert_eq!(ids(&page), all[..2]);
    assert!(stderr(&first).contains(&format!("switchyard runs --before {}", all[1])), "{}", stderr(&first));
    let (_, page) = cli.json(&["runs", "--json", "--limit", "2", "--before", &all[1][..8]]);
    assert_eq!(ids(&page), all[2..], "--before takes a short id too");

    let (_, found) = cli.json(&["runs", "--json", "--status", "paused", "--workflow", &name]);
    assert_eq!(ids(&found), paused.iter().rev().cloned().collect::<Vec<_>>());
    let (_, found) = cli.json(&["runs", "--json", "--status", "completed,failed", "--since", "1h"]);
    assert_eq!(ids(&found), all[..1]);
    let (_, found) = cli.json(&["runs", "--json", "--search", &name.to_uppercase()[1..]]);
    assert_eq!(ids(&found), paused.iter().rev().cloned().collect::<Vec<_>>(), "--search finds a name in any case");
    let (_, found) = cli.json(&["runs", "--json", "--search", &all[2][..6]]);
    assert_eq!(ids(&found), all[2..3], "and the beginning of an id");
    let listed = String::from_utf8(cli.run(&["runs", "--status", "paused", "--limit", "1"]).stdout).unwrap();
    assert_eq!(listed.lines().count(), 1, "{listed}");
    let (code, refused) = cli.json(&["runs", "--json", "--status", "finished"]);
    assert_eq!((code, refused["errors"][0]["code"].as_str()), (2, Some("INVALID_ARGUMENTS")), "{refused}");

    // The short id names the run in show, replay and resume.
    let short = &paused[0][..8];
    let (code, shown) = cli.json(&["show", short, "--json"]);
    assert_eq!((code, shown["runId"].as_str()), (0, Some(paused[0].as_str())), "{shown}");
    assert_eq!(cli.run(&["replay", short]).status.code(), Some(0));
    let (code, done) = cli.json(&["resume", short, "--decide", "review=approve", "--json"]);
    assert_eq!((code, done["status"].as_str()), (0, Some("completed")), "{done}");
}
