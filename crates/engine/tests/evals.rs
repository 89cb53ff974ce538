//! Evaluations through the engine: evaluation files read (and refused with the case named), cases run through the
//! session with their answers and decisions, and every kind of expectation reporting what was expected and what came.

use std::path::Path;

use switchyard_engine::eval::{self, Options, Suite, Verdict};

const WORKFLOW: &str = "switchyard: 1
name: triage
nodes:
  - {id: start, type: start, initial_input: disk full on db-1}
  - id: classify
    type: agent
    user_prompt: 'Classify: {{ PREVIOUS_OUTPUT }}'
    output_schema:
      type: object
      properties: {severity: {type: string}, count: {type: integer}}
  - {id: gate, type: approval, message: Page someone?}
  - {id: page, type: agent, user_prompt: Page the on-call}
  - {id: note, type: agent, user_prompt: Write a note}
edges:
  - {from: start, to: classify}
  - {from: classify, to: gate}
  - {from: gate, to: page, handle: approve}
  - {from: gate, to: note, handle: reject}
";

const ANSWERS: &str = "nodes:
  classify:
    - data: {severity: high, count: 2, owner: {team: storage}}
  page:
    - text: Paged storage on-call about db-1
      tool_calls: []
  note:
    - text: Noted; no page.
";

/// A suite in a fresh directory: the workflow, its answers, and the evaluation file `evals`.
fn suite(evals: &str) -> (tempfile::TempDir, Suite) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("triage.yaml"), WORKFLOW).unwrap();
    std::fs::write(dir.path().join("triage.script.yaml"), ANSWERS).unwrap();
    let path = dir.path().join("triage.evals.yaml");
    std::fs::write(&path, evals).unwrap();
    let suite = Suite::load(&path).unwrap_or_else(|e| panic!("{e}"));
    (dir, suite)
}

async fn run(suite: &Suite, options: &Options) -> Vec<eval::CaseReport> {
    eval::run(suite, options, |_| {}).await.unwrap_or_else(|e| panic!("{e}")).0
}

#[tokio::test]
async fn both_branches_of_an_approval_are_tested_from_one_answers_file_by_their_decisions() {
    let (_dir, suite) = suite(
        "workflow: triage.yaml
cases:
  - id: approved-pages
    answers: triage.script.yaml
    decisions: {gate: approve}
    expect:
      - {node: gate, approval: approve}
      - {node: gate, route: page}
      - {node: page, contains: storage on-call}
      - {node: note, status: skipped}
      - {status: completed}
      - {contains: Paged}
  - id: rejected-notes
    answers: triage.script.yaml
    decisions: {gate: {decision: reject, note: not at night}}
    expect:
      - {node: gate, approval: reject}
      - {node: gate, path: {path: note, equals: not at night}}
      - {node: note, equals: 'Noted; no page.'}
      - {node: page, status: skipped}
",
    );
    let reports = run(&suite, &Options::default()).await;
    for r in &reports {
        assert_eq!(r.verdict, Verdict::Passed, "{}: {:?}", r.id, r.shown());
    }
    assert_eq!(reports.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(), ["approved-pages", "rejected-notes"]);
}

#[tokio::test]
async fn each_expectation_that_does_not_hold_says_which_node_what_was_expected_and_what_came() {
    let (_dir, suite) = suite(
        "workflow: triage.yaml
cases:
  - id: everything-wrong
    answers: triage.script.yaml
    decisions: {gate: approve}
    expect:
      - {node: classify, equals: {severity: low}}
      - {node: page, contains: database team}
      - {node: page, regex: '^Called'}
      - {node: classify, schema: {type: object, required: [runbook]}}
      - {node: classify, path: {path: owner.team, equals: compute}}
      - {node: classify, path: {path: /count, equals: 3}}
      - {node: classify, path: {path: owner.missing, equals: 1}}
      - {node: gate, route: note}
      - {node: page, tool: {name: pager__send}}
      - {node: gate, approval: reject}
      - {node: note, status: success}
      - {status: failed}
      - {node: page, status: succeeded}
      - {max_tokens: 0}
",
    );
    let reports = run(&suite, &Options::default()).await;
    assert_eq!(reports[0].verdict, Verdict::Failed);
    let failures: Vec<(Option<&str>, &str, &str)> = reports[0]
        .shown()
        .failures
        .iter()
        .map(|f| (f.node.as_deref(), f.expected.as_str(), f.actual.as_str()))
        .collect();
    let data = r#"{"severity":"high","count":2,"owner":{"team":"storage"}}"#;
    assert_eq!(
        failures,
        [
            (Some("classify"), r#"equals {"severity":"low"}"#, data),
            (Some("page"), "contains \"database team\"", "Paged storage on-call about db-1"),
            (Some("page"), "matches /^Called/", "Paged storage on-call about db-1"),
            (Some("classify"), "matches the schema", "\"runbook\" is a required property"),
            (Some("classify"), r#"owner.team equals "compute""#, r#""storage""#),
            (Some("classify"), "/count equals 3", "2"),
            (Some("classify"), "owner.missing equals 1", "nothing there"),
            (Some("gate"), "routes to note", "went to page"),
            (Some("page"), "calls pager__send", "no tool call"),
            (Some("gate"), "is decided reject", "approve"),
            (Some("note"), "status success", "skipped"),
            (None, "status failed", "completed"),
        ],
        "the last two hold: `succeeded` is how `success` is shown, and answers use no tokens"
    );
}

#[test]
fn mistakes_in_an_evaluation_file_are_refused_naming_the_case_and_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.evals.yaml");
    let refused = |text: &str| {
        let e = Suite::parse(text, &path).unwrap_err();
        assert_eq!(e.file.as_deref(), Some(path.as_path()), "the error names the file: {e}");
        (e.code, e.message)
    };
    let case = |expect: &str| format!("workflow: w.yaml\ncases:\n  - id: a\n    expect: [{expect}]\n");
    assert_eq!(refused("workflow: w.yaml\ncases: []\n").0, "INVALID_EVALS");
    let (code, message) =
        refused(&format!("{}  - id: a\n    expect: [{{status: completed}}]\n", case("{status: completed}")));
    assert_eq!(code, "INVALID_EVALS");
    assert!(message.contains("two cases are called `a`"), "{message}");
    let (_, message) = refused("workflow: w.yaml\ncases:\n  - id: a\n    expect: []\n");
    assert!(message.contains("case `a` expects nothing"), "{message}");
    let (_, message) = refused(&case("{node: n, regex: '(unclosed'}"));
    assert!(message.contains("case `a`") && message.contains("not a regular expression"), "{message}");
    let (_, message) = refused(&case("{node: n, schema: {type: 12}}"));
    assert!(message.contains("case `a`") && message.contains("not a JSON Schema"), "{message}");
    let (code, message) =
        refused("workflow: w.yaml\ncases:\n  - id: a\n    inputs: x\n    expect: [{status: completed}]\n");
    assert_eq!(code, "PARSE_ERROR");
    assert!(message.contains("inputs"), "an unknown field is named: {message}");
    let (code, message) = refused(&case("{node: n, resembles: x}"));
    assert_eq!(code, "PARSE_ERROR", "an unknown expectation is refused");
    assert!(message.contains("unknown expectation `resembles`"), "{message}");
    let (_, message) = refused(&case("{nod: n, contains: x}"));
    assert!(message.contains("unknown expectation `nod`"), "a misspelt `node` is not read as the run: {message}");
    let (_, message) = refused(&case("{node: n, contains: x, regex: y}"));
    assert!(message.contains("one check, this one has `contains` and `regex`"), "{message}");
    let (_, message) = refused(&case("{node: n, max_cost: 0.01}"));
    assert!(message.contains("`max_cost` is of the whole run"), "{message}");
    let (_, message) = refused(&case("{route: publish}"));
    assert!(message.contains("`route` needs the `node`"), "{message}");
    let (_, message) = refused(
        "workflow: w.yaml\ncases:\n  - id: a\n    decisions: {gate: rejct}\n    expect: [{status: completed}]\n",
    );
    assert!(
        message.contains("the decision for `gate` is \"rejct\""),
        "a misspelt decision does not approve: {message}"
    );
}

#[tokio::test]
async fn a_case_naming_a_node_the_workflow_does_not_have_is_refused_before_anything_runs() {
    let (_dir, suite) = suite(
        "workflow: triage.yaml\ncases:\n  - {id: a, answers: triage.script.yaml, expect: [{node: pgae, status: skipped}]}\n",
    );
    let e = eval::run(&suite, &Options::default(), |_| panic!("no case runs")).await.unwrap_err();
    assert_eq!(e.code, "INVALID_EVALS");
    assert!(e.message.contains("case `a` names node `pgae`") && e.message.contains("did you mean `page`"), "{e}");
}

#[tokio::test]
async fn offline_a_case_with_no_answers_and_no_recorded_call_could_not_run_and_names_the_node() {
    let (_dir, suite) = suite("workflow: triage.yaml\ncases:\n  - id: live\n    expect: [{status: completed}]\n");
    let reports = run(&suite, &Options { offline: true, ..Options::default() }).await;
    assert_eq!(reports[0].verdict, Verdict::Error);
    let error = reports[0].shown().error.as_ref().unwrap();
    assert_eq!(error.code, "OFFLINE_UNRECORDED");
    assert!(error.message.contains("`classify`") && error.message.contains("--offline"), "{}", error.message);
}

#[tokio::test]
async fn a_case_named_with_case_runs_alone_and_an_unknown_one_is_refused_with_the_ids() {
    let (_dir, suite) = suite(
        "workflow: triage.yaml
cases:
  - {id: one, answers: triage.script.yaml, expect: [{status: paused}]}
  - {id: two, answers: triage.script.yaml, expect: [{status: paused}]}
",
    );
    let only = run(&suite, &Options { case: Some("two".into()), ..Options::default() }).await;
    assert_eq!(only.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(), ["two"]);
    let e = eval::run(&suite, &Options { case: Some("three".into()), ..Options::default() }, |_| {}).await.unwrap_err();
    assert_eq!(e.code, "NO_SUCH_CASE");
    assert!(e.message.contains("one, two"), "{e}");
}

#[test]
fn the_committed_json_schema_of_evaluation_files_is_current() {
    let committed =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schema/evals.schema.json"))
            .expect("schema/evals.schema.json exists: `switchyard schema --evals > schema/evals.schema.json`");
    assert_eq!(
        committed,
        eval::schema_json(),
        "regenerate with `switchyard schema --evals > schema/evals.schema.json`"
    );
}

#[test]
fn an_evaluation_the_store_does_not_keep_is_named_with_the_store_and_a_file_never_evaluated_has_no_last() {
    let dir = tempfile::tempdir().unwrap();
    let store = switchyard_engine::store::RunStore::open(&dir.path().join("runs.sqlite")).unwrap();
    let error = eval::kept::report(&store, "eval-nope").unwrap_err();
    assert_eq!(error.code(), "NO_SUCH_EVAL");
    let message = error.to_string();
    assert!(message.contains("`eval-nope`") && message.contains(&dir.path().display().to_string()), "{message}");
    assert!(eval::kept::last(&store, &dir.path().join("x.evals.yaml")).unwrap().is_none());
    assert!(eval::kept::latest(&store, &dir.path().join("x.evals.yaml")).unwrap().is_none());
}
