//! `switchyard eval` as a CI system runs it: exit codes, the live lines, the JSON report, JUnit XML and Markdown
//! files, `--case`, and a flaky case found by `--repeat`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs `switchyard` from the repository with a fresh home (no settings, no trust file).
fn switchyard(home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .args(args)
        .current_dir(repo())
        .env("SWITCHYARD_HOME", home)
        .env("SWITCHYARD_LOCAL_URL", "http://127.0.0.1:9/v1")
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn every_example_has_an_evaluation_file_and_passes_it_offline() {
    let home = tempfile::tempdir().unwrap();
    let mut examples: Vec<PathBuf> = std::fs::read_dir(repo().join("examples"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.ends_with(".yaml") && !name.ends_with(".script.yaml") && !name.ends_with(".evals.yaml")
        })
        .collect();
    examples.sort();
    assert!(examples.len() >= 4, "{examples:?}");
    for workflow in examples {
        let evals = workflow.with_extension("evals.yaml");
        assert!(evals.exists(), "{} has no evaluation file beside it", workflow.display());
        let out = switchyard(home.path(), &["eval", evals.to_str().unwrap(), "--offline"]);
        assert_eq!(out.status.code(), Some(0), "{}:\n{}{}", evals.display(), text(&out.stdout), text(&out.stderr));
        assert!(text(&out.stdout).contains(" passed (0 failed, 0 flaky, 0 could not run)"), "{}", text(&out.stdout));
    }
}

/// A suite in a fresh directory beside a copy of the approval example: `evals` is its evaluation file.
fn suite(evals: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    for name in ["approval-flow.yaml", "approval-flow.script.yaml"] {
        std::fs::copy(repo().join("examples").join(name), dir.path().join(name)).unwrap();
    }
    let path = dir.path().join("approval-flow.evals.yaml");
    std::fs::write(&path, evals).unwrap();
    (dir, path.to_string_lossy().into_owned())
}

const ONE_PASSES_ONE_FAILS: &str = "workflow: approval-flow.yaml
cases:
  - id: publishes
    answers: approval-flow.script.yaml
    decisions: {review: approve}
    expect: [{node: publish, contains: Dark mode}]
  - id: expects-the-wrong-thing
    answers: approval-flow.script.yaml
    decisions: {review: approve}
    expect: [{node: publish, contains: Light mode}, {node: review, route: revise}]
";

#[test]
fn the_exit_code_says_whether_the_pass_rate_was_met_and_each_failure_names_its_node() {
    let home = tempfile::tempdir().unwrap();
    let (_dir, file) = suite(ONE_PASSES_ONE_FAILS);
    let out = switchyard(home.path(), &["eval", &file]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("✓ publishes"), "{stdout}");
    assert!(stdout.contains("✗ expects-the-wrong-thing"), "{stdout}");
    assert!(
        stdout.contains("node publish: expected contains \"Light mode\", got <h1>Dark mode is coming</h1>"),
        "{stdout}"
    );
    assert!(stdout.contains("node review: expected routes to revise, got went to publish"), "{stdout}");
    assert!(stdout.contains("1/2 passed (1 failed") && stdout.contains("below --min-pass-rate 1"), "{stdout}");

    let half = switchyard(home.path(), &["eval", &file, "--min-pass-rate", "0.5"]);
    assert_eq!(half.status.code(), Some(0), "half the cases is enough at 0.5: {}", text(&half.stdout));
    let one = switchyard(home.path(), &["eval", &file, "--case", "publishes"]);
    assert_eq!(one.status.code(), Some(0), "{}", text(&one.stdout));
    assert!(!text(&one.stdout).contains("expects-the-wrong-thing"));
}

#[test]
fn a_file_that_cannot_be_used_exits_2_with_a_coded_error() {
    let home = tempfile::tempdir().unwrap();
    let missing = switchyard(home.path(), &["eval", "examples/nope.evals.yaml", "--json"]);
    assert_eq!(missing.status.code(), Some(2));
    let v: Value = serde_json::from_slice(&missing.stdout).unwrap();
    assert_eq!(v["errors"][0]["code"], "INVALID_FILE", "{v}");
    assert!(text(&missing.stderr).contains("examples/nope.evals.yaml"), "{}", text(&missing.stderr));

    let (_dir, file) = suite("workflow: approval-flow.yaml\ncases:\n  - {id: a, expect: [{node: x, regex: '('}]}\n");
    let bad = switchyard(home.path(), &["eval", &file, "--json"]);
    assert_eq!(bad.status.code(), Some(2));
    let v: Value = serde_json::from_slice(&bad.stdout).unwrap();
    assert_eq!(v["errors"][0]["code"], "INVALID_EVALS", "{v}");

    let (_dir, file) = suite("workflow: gone.yaml\ncases:\n  - {id: a, expect: [{status: completed}]}\n");
    let gone = switchyard(home.path(), &["eval", &file]);
    assert_eq!(gone.status.code(), Some(2), "{}", text(&gone.stderr));
    assert!(text(&gone.stderr).contains("gone.yaml"), "{}", text(&gone.stderr));

    let (_dir, broken) = suite("workflow: approval-flow.yaml\ncases:\n  - {id: a, answers: approval-flow.script.yaml, expect: [{status: completed}]}\n");
    let workflow = Path::new(&broken).with_file_name("approval-flow.yaml");
    let changed = std::fs::read_to_string(&workflow).unwrap().replace("to: publish", "to: nowhere");
    std::fs::write(&workflow, changed).unwrap();
    let invalid = switchyard(home.path(), &["eval", &broken, "--json"]);
    assert_eq!(invalid.status.code(), Some(2), "a workflow that does not validate cannot be evaluated");
    let v: Value = serde_json::from_slice(&invalid.stdout).unwrap();
    assert_eq!(v["errors"][0]["code"], "INVALID_WORKFLOW", "{v}");

    let rate = switchyard(home.path(), &["eval", &file, "--min-pass-rate", "90"]);
    assert_eq!(rate.status.code(), Some(2));
    assert!(text(&rate.stderr).contains("--min-pass-rate"), "{}", text(&rate.stderr));
}

#[test]
fn a_failure_names_the_node_as_its_card_does_and_says_it_waited_for_a_decision_in_every_report() {
    let home = tempfile::tempdir().unwrap();
    let (dir, file) = suite(
        "workflow: approval-flow.yaml
cases:
  - id: nobody-decides
    answers: approval-flow.script.yaml
    expect: [{node: review, approval: approve}, {node: publish, contains: Dark mode}]
",
    );
    let workflow = dir.path().join("approval-flow.yaml");
    let named =
        std::fs::read_to_string(&workflow).unwrap().replace("type: approval\n", "type: approval\n    name: Sign-off\n");
    std::fs::write(&workflow, named).unwrap();
    let junit = dir.path().join("report.xml");
    let out = switchyard(home.path(), &["eval", &file, "--junit", junit.to_str().unwrap()]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let waited = "node Sign-off (review): expected is decided approve, but it waited for a decision";
    let not_run = "node publish: expected contains \"Dark mode\", but it did not run";
    assert!(stdout.contains(waited) && stdout.contains(not_run), "{stdout}");
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains(waited) && xml.contains(&not_run.replace('"', "&quot;")), "{xml}");
    let json = switchyard(home.path(), &["eval", &file, "--json"]);
    let report: Value = serde_json::from_slice(&json.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&json.stdout)));
    let failure = &report["cases"][0]["attempts"][0]["failures"][0];
    assert_eq!(
        (&failure["node"], &failure["name"], &failure["actual"]),
        (&Value::from("review"), &Value::from("Sign-off (review)"), &Value::from("waited for a decision")),
        "{report}"
    );
}

#[test]
fn the_reports_are_json_on_stdout_junit_xml_and_a_markdown_summary() {
    let home = tempfile::tempdir().unwrap();
    let (dir, file) = suite(ONE_PASSES_ONE_FAILS);
    let junit = dir.path().join("report.xml");
    let markdown = dir.path().join("summary.md");
    let out = switchyard(
        home.path(),
        &["eval", &file, "--json", "--junit", junit.to_str().unwrap(), "--markdown", markdown.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out.stdout)));
    assert_eq!((report["passed"].as_u64(), report["failed"].as_u64()), (Some(1), Some(1)), "{report}");
    assert_eq!(report["passRate"], 0.5);
    assert_eq!(report["cases"][1]["verdict"], "failed");
    assert_eq!(report["cases"][1]["attempts"][0]["failures"][0]["node"], "publish");
    assert!(text(&out.stderr).contains("✗ expects-the-wrong-thing"), "live lines go to stderr with --json");

    // The JUnit file parses as XML (Python's parser) with a test case per case and a failure for the failing one.
    let xml = std::fs::read_to_string(&junit).unwrap();
    let parsed = Command::new("python3")
        .args(["-c", "import sys, xml.etree.ElementTree as E\nr = E.parse(sys.argv[1]).getroot()\ns = r.find('testsuite')\nprint(r.tag, s.get('tests'), s.get('failures'), [(c.get('name'), c.find('failure') is not None) for c in s.iter('testcase')])", junit.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(
        text(&parsed.stdout).trim(),
        "testsuites 2 1 [('publishes', False), ('expects-the-wrong-thing', True)]",
        "{xml}\n{}",
        text(&parsed.stderr)
    );
    assert!(xml.contains("expected contains &quot;Light mode&quot;"), "{xml}");
    let summary = std::fs::read_to_string(&markdown).unwrap();
    assert!(summary.contains("1/2 passed") && summary.contains("| `expects-the-wrong-thing` | ❌ |"), "{summary}");
}

#[test]
fn a_case_that_passes_in_some_runs_and_fails_in_others_is_marked_flaky_by_repeat() {
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    // A code step that answers differently each time it runs: it counts its runs in a file.
    std::fs::write(
        dir.path().join("coin.yaml"),
        "switchyard: 1
name: coin
nodes:
  - {id: start, type: start}
  - id: flip
    type: script
    language: python
    code: |
      import os
      path = input['counter']
      n = int(open(path).read()) if os.path.exists(path) else 0
      open(path, 'w').write(str(n + 1))
      return {'heads': n % 2 == 0}
edges:
  - {from: start, to: flip}
",
    )
    .unwrap();
    let counter = dir.path().join("counter.txt");
    let evals = dir.path().join("coin.evals.yaml");
    std::fs::write(
        &evals,
        format!(
            "workflow: coin.yaml\ncases:\n  - id: heads\n    input: {{counter: {:?}}}\n    expect: [{{node: flip, path: {{path: heads, equals: true}}}}]\n",
            counter.to_str().unwrap()
        ),
    )
    .unwrap();
    let evals = evals.to_str().unwrap();
    let refused = switchyard(home.path(), &["eval", evals, "--json"]);
    let report: Value = serde_json::from_slice(&refused.stdout).unwrap();
    assert_eq!(report["cases"][0]["verdict"], "error", "code runs only with consent: {report}");
    assert_eq!(report["cases"][0]["attempts"][0]["error"]["code"], "CODE_NEEDS_CONSENT", "{report}");
    assert!(!counter.exists(), "the code did not run");

    let out = switchyard(home.path(), &["eval", evals, "--allow-code", "--repeat", "4", "--json"]);
    assert_eq!(out.status.code(), Some(1), "a flaky case does not pass: {}", text(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["cases"][0]["verdict"], "flaky", "{report}");
    assert_eq!(report["flaky"], 1);
    let passed: Vec<bool> =
        report["cases"][0]["attempts"].as_array().unwrap().iter().map(|a| a["passed"].as_bool().unwrap()).collect();
    assert_eq!(passed, [true, false, true, false]);
    assert!(text(&out.stderr).contains("passed 2 of 4 runs"), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(&counter).unwrap(), "4");
}

#[test]
fn a_case_whose_judge_has_no_model_or_offline_no_recorded_verdict_could_not_run_and_says_why() {
    let home = tempfile::tempdir().unwrap();
    let (_dir, file) = suite(
        "workflow: approval-flow.yaml
cases:
  - id: judged
    answers: approval-flow.script.yaml
    decisions: {review: approve}
    expect: [{node: publish, judge: {rubric: Reads like a blog headline., threshold: 0.5}}]
",
    );
    let out = switchyard(home.path(), &["eval", &file, "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["cases"][0]["verdict"], "error", "no model to judge with: the case could not run: {report}");
    let error = &report["cases"][0]["attempts"][0]["error"];
    assert_eq!(error["code"], "NO_MODEL", "{report}");
    assert!(error["message"].as_str().unwrap().contains("judge"), "{report}");

    let offline = switchyard(home.path(), &["eval", &file, "--offline", "--json"]);
    let report: Value = serde_json::from_slice(&offline.stdout).unwrap();
    let error = &report["cases"][0]["attempts"][0]["error"];
    assert_eq!(error["code"], "OFFLINE_UNRECORDED", "no verdict was recorded, and offline none is asked: {report}");
    assert!(error["message"].as_str().unwrap().starts_with("the judge failed"), "{report}");
}

#[test]
fn a_stored_run_becomes_a_case_that_runs_offline_and_catches_a_change_to_the_workflow() {
    let home = tempfile::tempdir().unwrap();
    let (dir, _) = suite("workflow: approval-flow.yaml\ncases: []\n");
    std::fs::remove_file(dir.path().join("approval-flow.evals.yaml")).unwrap();
    let workflow = dir.path().join("approval-flow.yaml");
    let answers = dir.path().join("approval-flow.script.yaml");
    let run = |args: &[&str]| switchyard(home.path(), args);
    let paused = run(&["run", workflow.to_str().unwrap(), "--answers", answers.to_str().unwrap(), "--json"]);
    let id = serde_json::from_slice::<Value>(&paused.stdout).unwrap()["runId"].as_str().unwrap().to_string();
    assert_eq!(run(&["resume", &id, "--decide", "review=reject:mention the date"]).status.code(), Some(0));

    let added = run(&["eval", "add", &id]);
    assert_eq!(added.status.code(), Some(0), "{}", text(&added.stderr));
    let evals = dir.path().join("approval-flow.evals.yaml");
    assert!(text(&added.stdout).contains(&format!("added case `run-{}`", &id[..8])), "{}", text(&added.stdout));
    let file = std::fs::read_to_string(&evals).unwrap();
    assert!(file.contains("workflow: approval-flow.yaml") && file.contains("route: revise"), "{file}");
    assert!(file.contains("decision: reject") && file.contains("note: mention the date"), "{file}");
    assert!(!file.contains("status: success"), "answers are written as a person writes them: {file}");
    // Added again, the case gets an id of its own; both pass offline, with no answers file beside them.
    std::fs::remove_file(&answers).unwrap();
    assert!(text(&run(&["eval", "add", &id]).stdout).contains(&format!("`run-{}-2`", &id[..8])));
    let passed = run(&["eval", evals.to_str().unwrap(), "--offline"]);
    assert_eq!(passed.status.code(), Some(0), "{}", text(&passed.stdout));

    // The workflow changes: a rejection now publishes. The recorded case says what broke.
    let changed = std::fs::read_to_string(&workflow)
        .unwrap()
        .replace("to: revise\n    handle: reject", "to: publish\n    handle: reject");
    std::fs::write(&workflow, changed).unwrap();
    let broke = run(&["eval", evals.to_str().unwrap(), "--offline"]);
    assert_eq!(broke.status.code(), Some(1));
    let out = text(&broke.stdout);
    assert!(out.contains("node review: expected routes to revise, got went to publish"), "{out}");
    assert!(out.contains("node revise: expected contains"), "{out}");

    let unknown = run(&["eval", "add", "no-such-run"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(text(&unknown.stderr).contains("no-such-run"), "{}", text(&unknown.stderr));
    let elsewhere = dir.path().join("notes.evals.yaml");
    std::fs::write(&elsewhere, "cases:\n  - {id: a, expect: [{status: completed}]}\nworkflow: approval-flow.yaml\n")
        .unwrap();
    let refused = run(&["eval", "add", &id, "--to", elsewhere.to_str().unwrap()]);
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused.stderr));
    assert!(text(&refused.stderr).contains("`cases:` is not its last entry"), "{}", text(&refused.stderr));
}

#[test]
fn a_baseline_report_marks_each_case_regressed_improved_or_unchanged_and_a_regression_exits_1() {
    let home = tempfile::tempdir().unwrap();
    let (dir, file) = suite(ONE_PASSES_ONE_FAILS);
    let before = dir.path().join("before.json");
    let out = switchyard(home.path(), &["eval", &file, "--json"]);
    std::fs::write(&before, &out.stdout).unwrap();
    // The answers change: the case that passed now fails; the one that failed stays failed, its output changed.
    let answers = dir.path().join("approval-flow.script.yaml");
    let changed = std::fs::read_to_string(&answers).unwrap().replace("Dark mode is coming", "Coming soon");
    std::fs::write(&answers, changed).unwrap();
    let out = switchyard(home.path(), &["eval", &file, "--baseline", before.to_str().unwrap()]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("1 regressed, 0 improved, 1 unchanged"), "{stdout}");
    assert!(stdout.contains("↓ publishes: passed → failed; outputs changed: publish"), "{stdout}");
    assert!(stdout.contains("= expects-the-wrong-thing: failed → failed; outputs changed: publish"), "{stdout}");

    let json = switchyard(home.path(), &["eval", &file, "--baseline", before.to_str().unwrap(), "--json"]);
    let report: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(report["comparison"]["cases"][0]["change"], "regressed", "{report}");
    assert_eq!(report["comparison"]["cases"][0]["changedNodes"], serde_json::json!(["publish"]));

    std::fs::write(&before, "{\"not\": \"a report\"}").unwrap();
    let bad = switchyard(home.path(), &["eval", &file, "--baseline", before.to_str().unwrap(), "--json"]);
    assert_eq!(bad.status.code(), Some(2));
    let v: Value = serde_json::from_slice(&bad.stdout).unwrap();
    assert_eq!(v["errors"][0]["code"], "BASELINE_UNREADABLE", "{v}");
}

#[test]
fn each_evaluation_is_kept_with_its_cases_runs_and_a_later_one_compares_with_it_by_last_or_its_id() {
    let home = tempfile::tempdir().unwrap();
    let (dir, file) = suite(ONE_PASSES_ONE_FAILS);
    // Before any evaluation of the file, `last` has nothing to compare with; an unknown id is neither file nor kept.
    for given in ["last", "eval-nope"] {
        let out = switchyard(home.path(), &["eval", &file, "--baseline", given, "--json"]);
        assert_eq!(out.status.code(), Some(2), "{given}");
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["errors"][0]["code"], "BASELINE_UNREADABLE", "{v}");
        let message = v["errors"][0]["message"].as_str().unwrap();
        let says = if given == "last" { "has not been evaluated before" } else { "no evaluation kept with that id" };
        assert!(message.contains(says), "{message}");
    }
    let first = switchyard(home.path(), &["eval", &file, "--json"]);
    let first: Value = serde_json::from_slice(&first.stdout).unwrap();
    let id = first["id"].as_str().expect("the report names the evaluation kept").to_string();
    // A failing case's run is kept: `show` prints it.
    let failing = first["cases"].as_array().unwrap().iter().find(|c| c["verdict"] == "failed").unwrap();
    let run = failing["attempts"][0]["runId"].as_str().unwrap();
    let shown = switchyard(home.path(), &["show", run]);
    assert_eq!(shown.status.code(), Some(0));
    assert!(text(&shown.stdout).contains("publish"), "{}", text(&shown.stdout));
    let runs: Value = serde_json::from_slice(&switchyard(home.path(), &["runs", "--json"]).stdout).unwrap();
    assert!(runs.as_array().unwrap().iter().any(|r| r["id"] == run && r["eval"] == id.as_str()), "{runs}");
    let listed = text(&switchyard(home.path(), &["runs"]).stdout);
    assert!(listed.lines().any(|l| l.starts_with(run) && l.ends_with("(test case)")), "{listed}");
    // The text lines say where a failing case's run is.
    let out = switchyard(home.path(), &["eval", &file]);
    assert!(text(&out.stdout).contains("its run: `switchyard show "), "{}", text(&out.stdout));

    // An evaluation of one case does not hide the other's result from `last`.
    let one = switchyard(home.path(), &["eval", &file, "--case", "publishes"]);
    assert_eq!(one.status.code(), Some(0), "{}", text(&one.stdout));

    let answers = dir.path().join("approval-flow.script.yaml");
    let changed = std::fs::read_to_string(&answers).unwrap().replace("Dark mode is coming", "Coming soon");
    std::fs::write(&answers, changed).unwrap();
    for given in ["last", id.as_str()] {
        let out = switchyard(home.path(), &["eval", &file, "--baseline", given, "--json"]);
        assert_eq!(out.status.code(), Some(1), "a regression exits 1");
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        let cases = report["comparison"]["cases"].as_array().unwrap();
        assert!(cases.iter().all(|c| c["change"] != "new"), "every case was evaluated before: {report}");
        let case = &cases[0];
        assert_eq!(case["change"], "regressed", "{report}");
        let publish = case["nodes"].as_array().unwrap().iter().find(|n| n["node"] == "publish").unwrap();
        assert_eq!(publish["change"], "regressed", "its expectation fails now and did not before: {publish}");
        assert!(publish["before"].as_str().unwrap().contains("Dark mode is coming"), "{publish}");
        assert!(publish["after"].as_str().unwrap().contains("Coming soon"), "{publish}");
    }
}

#[test]
fn a_code_assertion_runs_only_with_consent_and_its_message_says_what_did_not_hold() {
    let home = tempfile::tempdir().unwrap();
    let (_dir, file) = suite(
        r#"workflow: approval-flow.yaml
cases:
  - id: asserted
    answers: approval-flow.script.yaml
    decisions: {review: approve}
    expect:
      - node: publish
        code:
          language: python
          code: |
            ok = input["output"].startswith("<h1>") and input["status"] == "succeeded"
            return {"pass": ok, "message": "not a headline: " + input["output"]}
      - node: draft
        code:
          language: javascript
          code: |
            return {pass: input.output.includes("Light"), message: `no light in: ${input.output}`};
"#,
    );
    let refused = switchyard(home.path(), &["eval", &file, "--json"]);
    let report: Value = serde_json::from_slice(&refused.stdout).unwrap();
    assert_eq!(report["cases"][0]["verdict"], "error", "{report}");
    assert_eq!(report["cases"][0]["attempts"][0]["error"]["code"], "CODE_NEEDS_CONSENT", "{report}");

    let out = switchyard(home.path(), &["eval", &file, "--allow-code", "--json"]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let failures = &report["cases"][0]["attempts"][0]["failures"];
    assert_eq!(
        failures.as_array().unwrap().len(),
        1,
        "the python assertion holds, the javascript one does not: {report}"
    );
    assert_eq!(failures[0]["node"], "draft");
    assert_eq!(failures[0]["expected"], "passes the javascript assertion");
    assert_eq!(failures[0]["actual"], "no light in: Dark mode arrives next week on every platform.");
}

/// Parses `xml` with Python's XML parser (expat) and prints each test case's name and the type of its `error` or
/// `failure`, as Python's `ascii()` writes them.
fn junit_cases(xml: &Path) -> String {
    let parsed = Command::new("python3")
        .args([
            "-c",
            "import sys, xml.etree.ElementTree as E\ns = E.parse(sys.argv[1]).getroot().find('testsuite')\nfor c in s.iter('testcase'):\n    f = c.find('error') if c.find('error') is not None else c.find('failure')\n    print(ascii(c.get('name')), *([] if f is None else [f.tag, f.get('type'), ascii(f.get('message'))]))",
            xml.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(
        parsed.status.success(),
        "not well-formed XML: {}\n{}",
        text(&parsed.stderr),
        std::fs::read_to_string(xml).unwrap()
    );
    text(&parsed.stdout)
}

#[test]
fn a_case_that_failed_once_and_then_could_not_run_could_not_run_and_still_gets_its_totals_and_junit_file() {
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    // A code step that removes the case's answers file: the first attempt runs (and fails its expectation), the
    // second cannot read its answers.
    std::fs::write(
        dir.path().join("vanish.yaml"),
        "switchyard: 1
name: vanish
nodes:
  - {id: start, type: start}
  - id: burn
    type: script
    language: python
    code: |
      import os
      os.remove(input['answers'])
      return {'burned': True}
edges:
  - {from: start, to: burn}
",
    )
    .unwrap();
    let answers = dir.path().join("vanish.answers.yaml");
    let evals = dir.path().join("vanish.evals.yaml");
    std::fs::write(
        &evals,
        format!(
            "workflow: vanish.yaml\ncases:\n  - id: burns\n    answers: vanish.answers.yaml\n    input: {{answers: {:?}}}\n    expect: [{{node: burn, path: {{path: burned, equals: false}}}}]\n",
            answers.to_str().unwrap()
        ),
    )
    .unwrap();
    let junit = dir.path().join("report.xml");
    let args = ["eval", evals.to_str().unwrap(), "--allow-code", "--repeat", "2", "--junit", junit.to_str().unwrap()];

    std::fs::write(&answers, "nodes: {}\n").unwrap();
    let out = switchyard(home.path(), &[&args[..], &["--json"]].concat());
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out.stderr)));
    let case = &report["cases"][0];
    assert_eq!((case["verdict"].as_str(), report["errors"].as_u64()), (Some("error"), Some(1)), "{report}");
    assert_eq!(case["attempts"][0]["failures"][0]["node"], "burn", "the first attempt ran and failed: {report}");
    assert_eq!(case["attempts"][1]["error"]["code"], "ANSWERS_UNREADABLE", "{report}");
    assert!(text(&out.stderr).contains("[ANSWERS_UNREADABLE]"), "the live line says why: {}", text(&out.stderr));
    let cases = junit_cases(&junit);
    assert!(cases.starts_with("'burns' error ANSWERS_UNREADABLE '"), "{cases}");

    std::fs::write(&answers, "nodes: {}\n").unwrap();
    std::fs::remove_file(&junit).unwrap();
    let out = switchyard(home.path(), &args);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("0/1 passed (0 failed, 0 flaky, 1 could not run)"), "{stdout}");
    assert!(junit.exists(), "the JUnit file is written");
}

#[test]
fn characters_xml_has_no_place_for_in_a_case_id_or_an_expected_value_leave_the_junit_file_well_formed() {
    let home = tempfile::tempdir().unwrap();
    let evals = serde_json::json!({
        "workflow": "approval-flow.yaml",
        "cases": [{
            "id": "odd\u{FFFE}\u{FFFF}\u{1}id",
            "answers": "approval-flow.script.yaml",
            "decisions": {"review": "approve"},
            "expect": [{"node": "publish", "equals": "\u{FFFE}\u{FFFF}"}]
        }]
    });
    let (dir, file) = suite(&evals.to_string());
    let junit = dir.path().join("report.xml");
    let out = switchyard(home.path(), &["eval", &file, "--junit", junit.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}{}", text(&out.stdout), text(&out.stderr));
    let cases = junit_cases(&junit);
    assert!(cases.starts_with("'odd\\ufffd\\ufffd\\ufffdid' failure expectation '"), "{cases}");
    assert!(cases.contains("equals \"\\ufffd\\ufffd\""), "the expected value shows where they were: {cases}");
}

#[test]
fn a_run_whose_text_has_empty_lines_becomes_a_case_with_exactly_that_text() {
    let home = tempfile::tempdir().unwrap();
    let (dir, _) = suite("workflow: approval-flow.yaml\ncases: []\n");
    std::fs::remove_file(dir.path().join("approval-flow.evals.yaml")).unwrap();
    let workflow = dir.path().join("approval-flow.yaml");
    let answers = dir.path().join("approval-flow.script.yaml");
    let draft = "Dark mode\n\n  arrives next week.\n\n";
    std::fs::write(
        &answers,
        serde_json::json!({"nodes": {"draft": [{"text": draft}], "publish": [{"text": "\n"}]}}).to_string(),
    )
    .unwrap();
    let input = "line one\n\nline three\n";
    let paused = switchyard(
        home.path(),
        &["run", workflow.to_str().unwrap(), "--answers", answers.to_str().unwrap(), "--input", input, "--json"],
    );
    let id = serde_json::from_slice::<Value>(&paused.stdout).unwrap()["runId"].as_str().unwrap().to_string();
    assert_eq!(switchyard(home.path(), &["resume", &id, "--decide", "review=approve"]).status.code(), Some(0));
    let added = switchyard(home.path(), &["eval", "add", &id]);
    assert_eq!(added.status.code(), Some(0), "{}", text(&added.stderr));

    let evals = dir.path().join("approval-flow.evals.yaml");
    let suite = switchyard_engine::eval::Suite::load(&evals).unwrap_or_else(|e| panic!("{e}"));
    let case = &suite.file.cases[0];
    assert_eq!(case.input, Some(Value::from(input)), "{}", std::fs::read_to_string(&evals).unwrap());
    let Some(switchyard_engine::eval::file::AnswersRef::Inline(answered)) = &case.answers else { panic!("{case:?}") };
    assert_eq!(answered["nodes"]["draft"]["text"], draft, "{answered}");
    assert_eq!(answered["nodes"]["publish"]["text"], "\n", "{answered}");
    let passed = switchyard(home.path(), &["eval", evals.to_str().unwrap(), "--offline"]);
    assert_eq!(passed.status.code(), Some(0), "{}", text(&passed.stdout));
}

#[test]
fn with_json_a_command_line_that_cannot_be_used_or_a_workflow_that_cannot_be_loaded_is_a_coded_json_error() {
    let home = tempfile::tempdir().unwrap();
    let (dir, file) = suite(ONE_PASSES_ONE_FAILS);
    let file = file.as_str();
    let refused = |args: &[&str]| {
        let out = switchyard(home.path(), args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out.stderr));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!("{args:?}: stdout is not JSON ({e}): {}{}", text(&out.stdout), text(&out.stderr))
        });
        (v, text(&out.stderr))
    };
    // A negative fraction is a value of --min-pass-rate, refused by what it says.
    let (v, _) = refused(&["eval", file, "--min-pass-rate", "-0.1", "--json"]);
    assert_eq!(v["errors"][0]["code"], "INVALID_PASS_RATE", "{v}");
    // What clap refuses: the mistake, with a code, on stdout; clap's text with the usage on stderr.
    for (args, said) in [
        (vec!["eval", file, "--json", "--min-pass-rat", "0.5"], "--min-pass-rat"),
        (vec!["eval", file, "--json", "--repeat", "twice"], "--repeat"),
        (vec!["eval", "--json"], "<FILE>"),
    ] {
        let (v, stderr) = refused(&args);
        assert_eq!(v["errors"][0]["code"], "INVALID_ARGUMENTS", "{args:?}: {v}");
        let message = v["errors"][0]["message"].as_str().unwrap();
        assert!(message.contains(said) && !message.starts_with("error:"), "{args:?}: {message}");
        assert!(stderr.starts_with("error: ") && stderr.contains(said), "clap's own text: {args:?}: {stderr}");
    }
    // The commands that print a run say it was invalid, as for any input they cannot use.
    let (v, _) = refused(&["run", "examples/approval-flow.yaml", "--json", "--answer", "x.yaml"]);
    assert_eq!((v["status"].as_str(), v["errors"][0]["code"].as_str()), (Some("invalid"), Some("INVALID_ARGUMENTS")));
    // Without --json, clap says it alone, on stderr; --help is help, on stdout.
    let plain = switchyard(home.path(), &["eval", file, "--min-pass-rat", "0.5"]);
    assert_eq!((plain.status.code(), plain.stdout.is_empty()), (Some(2), true), "{}", text(&plain.stdout));
    let help = switchyard(home.path(), &["eval", "--help", "--json"]);
    assert_eq!(help.status.code(), Some(0));
    assert!(text(&help.stdout).contains("--min-pass-rate"), "{}", text(&help.stdout));

    // A workflow that cannot be loaded is one that cannot be evaluated: INVALID_WORKFLOW, the loader's code said.
    std::fs::write(dir.path().join("approval-flow.yaml"), "name: nothing to run\n").unwrap();
    let (v, _) = refused(&["eval", file, "--json"]);
    assert_eq!(v["errors"][0]["code"], "INVALID_WORKFLOW", "{v}");
    assert!(v["errors"][0]["message"].as_str().unwrap().contains("NO_NODES"), "{v}");
}

#[test]
fn a_jobs_or_repeat_below_one_is_refused_by_the_command_line_saying_it_must_be_at_least_1() {
    let home = tempfile::tempdir().unwrap();
    let (_dir, file) = suite(ONE_PASSES_ONE_FAILS);
    for (flag, value) in [("--jobs", "0"), ("--jobs", "-2"), ("--repeat", "0"), ("--repeat", "-1")] {
        let out = switchyard(home.path(), &["eval", &file, flag, value]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag} {value}: {stderr}");
        assert!(
            stderr.contains(&format!("invalid value '{value}' for '{flag}")) && stderr.contains("must be at least 1"),
            "{flag} {value}: {stderr}"
        );
        assert!(!stderr.contains("unexpected argument"), "{flag} {value} is a value, not a flag: {stderr}");
        assert!(text(&out.stdout).is_empty(), "no case ran: {}", text(&out.stdout));
        let json = switchyard(home.path(), &["eval", &file, flag, value, "--json"]);
        let v: Value = serde_json::from_slice(&json.stdout).unwrap();
        assert_eq!(v["errors"][0]["code"], "INVALID_ARGUMENTS", "{v}");
        assert!(v["errors"][0]["message"].as_str().unwrap().contains("must be at least 1"), "{v}");
    }
}

#[test]
fn control_characters_in_an_answer_are_printed_escaped_so_they_never_drive_the_terminal() {
    let home = tempfile::tempdir().unwrap();
    let (dir, file) = suite(
        "workflow: approval-flow.yaml
cases:
  - id: \"shouts\\e[2J\"
    answers: loud.script.yaml
    decisions: {review: approve}
    expect: [{node: publish, contains: Light mode}]
",
    );
    std::fs::write(
        dir.path().join("loud.script.yaml"),
        "nodes:\n  draft: {text: ok}\n  publish: {text: \"\\e[31mDark\\rmode\\e]0;owned\\a\\u202Eevil\"}\n",
    )
    .unwrap();
    let out = switchyard(home.path(), &["eval", &file]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", text(&out.stderr));
    assert!(!stdout.contains(['\u{1b}', '\r', '\u{7}', '\u{202E}']), "nothing raw reaches the terminal: {stdout:?}");
    assert!(stdout.contains("✗ shouts\\u{1b}[2J"), "{stdout}");
    assert!(stdout.contains("got \\u{1b}[31mDark\\rmode\\u{1b}]0;owned\\u{7}\\u{202e}evil"), "{stdout}");
    // The JSON report keeps the answer exactly, as JSON escapes it.
    let json = switchyard(home.path(), &["eval", &file, "--json"]);
    let report: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert!(report.to_string().contains("\\u001b[31mDark\\rmode"), "{report}");
}

#[test]
fn offline_a_node_never_recorded_is_said_to_be_never_recorded_not_changed() {
    let home = tempfile::tempdir().unwrap();
    let (_dir, file) = suite("workflow: approval-flow.yaml\ncases:\n  - {id: live, expect: [{status: paused}]}\n");
    let out = switchyard(home.path(), &["eval", &file, "--offline"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains("no recorded call for `draft`: none was ever recorded for it, and --offline calls no model; run without --offline to record it"),
        "{stdout}"
    );
    assert!(!stdout.contains("changed since"), "{stdout}");
}
