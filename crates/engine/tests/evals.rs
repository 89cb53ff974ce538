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

#[tokio::test]
async fn failures_name_nodes_as_their_cards_do_and_say_skipped_waited_and_which_branch_instead_of_raw_output() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("named.yaml"),
        "switchyard: 1
name: named
nodes:
  - {id: start, type: start, initial_input: disk full}
  - {id: agent_3, name: Triage, type: agent, user_prompt: 'Classify: {{ PREVIOUS_OUTPUT }}'}
  - {id: check, name: Severity, type: if, conditions: [{operator: contains, value: high}]}
  - {id: page, name: Page, type: agent, user_prompt: Page}
  - {id: gate, name: Sign-off, type: approval, message: Note it?}
  - {id: note, type: agent, user_prompt: Note}
edges:
  - {from: start, to: agent_3}
  - {from: agent_3, to: check}
  - {from: check, to: page, handle: condition-0}
  - {from: check, to: gate, handle: 'false'}
  - {from: gate, to: note, handle: approve}
",
    )
    .unwrap();
    let path = dir.path().join("named.evals.yaml");
    std::fs::write(
        &path,
        "workflow: named.yaml
cases:
  - id: low
    answers: {nodes: {agent_3: [{text: low disk}]}}
    expect:
      - {node: check, equals: {branch: else}}
      - {node: check, equals: {branch: condition-0}}
      - {node: check, route: page}
      - {node: agent_3, contains: high}
      - {node: page, contains: paged}
      - {node: gate, approval: approve}
      - {node: gate, status: succeeded}
      - {node: note, contains: noted}
",
    )
    .unwrap();
    let suite = Suite::load(&path).unwrap_or_else(|e| panic!("{e}"));
    let reports = run(&suite, &Options::default()).await;
    let failures: Vec<(Option<&str>, &str, &str)> = reports[0]
        .shown()
        .failures
        .iter()
        .map(|f| (f.name.as_deref(), f.expected.as_str(), f.actual.as_str()))
        .collect();
    assert_eq!(
        failures,
        [
            (Some("Severity (check)"), "equals branch “high”", "branch “else”"),
            (Some("Severity (check)"), "routes to Page (page)", "went to Sign-off (gate)"),
            (Some("Triage (agent_3)"), "contains \"high\"", "low disk"),
            (Some("Page (page)"), "contains \"paged\"", "was skipped"),
            (Some("Sign-off (gate)"), "is decided approve", "waited for a decision"),
            (Some("Sign-off (gate)"), "status succeeded", "waited for a decision"),
            (Some("note"), "contains \"noted\"", "did not run"),
        ],
        "`equals: {{branch: else}}` holds: `else` is the `false` branch's other name"
    );
    assert_eq!(reports[0].shown().failures[0].node.as_deref(), Some("check"), "the id stays for machines");
    let lines = eval::report::failure_lines(&reports[0]);
    assert_eq!(lines[3], "node Page (page): expected contains \"paged\", but it was skipped");
    assert_eq!(lines[4], "node Sign-off (gate): expected is decided approve, but it waited for a decision");
    let report = eval::Report::new("named.evals.yaml".into(), "named.yaml".into(), reports, Default::default());
    let junit = report.junit();
    assert!(junit.contains("node Severity (check): expected equals branch “high”, got branch “else”"), "{junit}");
    assert!(!junit.contains("{&quot;branch") && !junit.contains("got {"), "{junit}");
    let json = serde_json::to_string(&report).unwrap();
    assert!(
        json.contains(r#""name":"Sign-off (gate)","expected":"is decided approve","actual":"waited for a decision""#),
        "{json}"
    );
}

#[tokio::test]
async fn a_case_whose_run_waits_for_a_decision_it_does_not_give_is_judged_paused_and_its_kept_run_ends_cancelled() {
    use std::sync::Arc;
    use switchyard_engine::store::{RunStore, StoredStatus};
    let (dir, suite) = suite(
        "workflow: triage.yaml
cases:
  - id: nobody-decides
    answers: triage.script.yaml
    expect: [{status: paused}, {node: gate, approval: approve}]
",
    );
    let store = Arc::new(RunStore::open(&dir.path().join("runs.sqlite")).unwrap());
    let options = Options { store: Some((store.clone(), "eval-1".into())), ..Options::default() };
    let reports = run(&suite, &options).await;
    let attempt = reports[0].shown();
    assert_eq!(attempt.status, Some(switchyard_engine::RunStatus::Paused), "the case judges the run as it paused");
    let failures: Vec<&str> = attempt.failures.iter().map(|f| f.actual.as_str()).collect();
    assert_eq!(failures, ["waited for a decision"], "`status: paused` holds");
    let run_id = attempt.run_id.clone().expect("the run is kept");
    let row = store.get(&run_id).unwrap();
    assert_eq!(
        (row.status, row.pending.len(), row.eval.as_deref()),
        (StoredStatus::Cancelled, 0, Some("eval-1")),
        "the kept run no longer waits for anyone"
    );
    let events = store.events(&run_id).unwrap();
    let kinds: Vec<&str> = events.iter().map(|e| e.kind.type_name()).collect();
    assert_eq!(kinds.last(), Some(&"workflow:end"), "{kinds:?}");
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

#[tokio::test]
async fn a_workflow_that_cannot_be_loaded_is_an_invalid_workflow_and_says_why_the_loader_refused_it() {
    let (dir, suite) = suite("workflow: triage.yaml\ncases:\n  - {id: a, expect: [{status: completed}]}\n");
    for (text, said) in [
        ("name: nothing to run\n", "NO_NODES"),
        ("switchyard: 1\nname: broken\nnodes: [\n", "PARSE_ERROR"),
        ("just some text\n", "NOT_A_MAPPING"),
    ] {
        std::fs::write(dir.path().join("triage.yaml"), text).unwrap();
        let e = eval::run(&suite, &Options::default(), |_| panic!("no case runs")).await.unwrap_err();
        assert_eq!(e.code, "INVALID_WORKFLOW", "{text:?}: {e}");
        assert!(e.message.contains(said) && e.to_string().contains("triage.yaml"), "{text:?}: {e}");
    }
    std::fs::remove_file(dir.path().join("triage.yaml")).unwrap();
    let e = eval::run(&suite, &Options::default(), |_| panic!("no case runs")).await.unwrap_err();
    assert_eq!(e.code, "INVALID_WORKFLOW", "a missing workflow file cannot be loaded either: {e}");
}

/// Strings that YAML writes in every style it has (plain, quoted, literal and folded blocks, with each chomping and
/// indentation indicator), and that a careless re-indentation changes.
const TRICKY: [&str; 34] = [
    "a\n\nb",
    "\n",
    "\n\n",
    "a\n",
    "a\n\n",
    "\na",
    "  lead",
    "  lead\nnext",
    "trail  ",
    "trail  \nx",
    "# not a comment",
    "key: value",
    "- item",
    "a\r\nb",
    "a\rb",
    "\ttab",
    "a\n\tb",
    "é日本😀",
    "\u{85}",
    "a\u{2028}b",
    "\u{feff}bom",
    "---",
    "...",
    "null",
    "true",
    "1.0",
    "~",
    "*a",
    "&a",
    "!tag",
    "{x: [1]}",
    "'\"",
    "a\n \nb",
    "",
];

/// A case holding `text` wherever `eval add` writes a run's text: its input (plain and in an object), what a node
/// answered, its description and its expectations.
fn case_holding(id: &str, text: &str) -> eval::Case {
    use serde_json::json;
    use switchyard_engine::eval::{file::AnswersRef, Check, Expectation};
    let expect = |check: Check| Expectation { node: Some("page".into()), check };
    eval::Case {
        id: id.into(),
        description: Some(text.into()),
        input: Some(if id.ends_with('0') { json!(text) } else { json!({"text": text, text: [text]}) }),
        answers: Some(AnswersRef::Inline(json!({"nodes": {"page": [{"text": text}, {"data": {"note": text}}]}}))),
        decisions: [("gate".to_string(), json!({"decision": "approve", "note": text}))].into(),
        expect: vec![expect(Check::Contains(text.into())), expect(Check::Equals(json!(text)))],
    }
}

#[test]
fn a_case_added_to_an_evaluation_file_reads_back_exactly_whatever_its_text() {
    // Each tricky string alone, then seeded combinations of them: the same cases on every run.
    let mut texts: Vec<String> = TRICKY.iter().map(|s| s.to_string()).collect();
    let mut seed: u64 = 0x5EED_CA5E;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for _ in 0..300 {
        let parts = 1 + next() % 5;
        texts.push((0..parts).map(|_| TRICKY[(next() % TRICKY.len() as u64) as usize]).collect());
    }
    let path = Path::new("cases.evals.yaml");
    for (n, text) in texts.iter().enumerate() {
        // Two cases appended one after the other, as `eval add` appends them, the second after the first's text.
        let (first, second) = (case_holding(&format!("first-{n}0"), text), case_holding(&format!("second-{n}1"), text));
        let file = format!("workflow: triage.yaml\ncases:\n{}{}", eval::case_yaml(&first), eval::case_yaml(&second));
        let read = Suite::parse(&file, path).unwrap_or_else(|e| panic!("{text:?} does not read back: {e}\n{file}"));
        assert_eq!(read.file.cases, [first, second], "{text:?} read back otherwise from:\n{file}");
    }
}

/// A model whose every call reports more tokens than a count holds, with one more for the output.
struct Boundless;

#[async_trait::async_trait]
impl switchyard_engine::model::Model for Boundless {
    async fn execute(
        &self,
        _: &switchyard_engine::model::ExecuteRequest<'_>,
        _: &dyn switchyard_engine::model::NodeIo,
    ) -> Result<switchyard_engine::model::ModelOutput, switchyard_engine::model::ModelError> {
        let usage =
            switchyard_engine::result::Usage { input_tokens: u64::MAX, output_tokens: 1, cached_input_tokens: 0 };
        Ok(switchyard_engine::model::ModelOutput { text: Some("ok".into()), data: None, usage: Some(usage) })
    }

    async fn route(
        &self,
        _: &switchyard_engine::model::RouteRequest<'_>,
        _: &dyn switchyard_engine::model::NodeIo,
    ) -> Result<switchyard_engine::model::RouteAnswer, switchyard_engine::model::ModelError> {
        Err("no routes here".to_string().into())
    }
}

/// A model that panics when it is called: a bug in a provider, or in Switchyard.
struct Panicking;

#[async_trait::async_trait]
impl switchyard_engine::model::Model for Panicking {
    async fn execute(
        &self,
        _: &switchyard_engine::model::ExecuteRequest<'_>,
        _: &dyn switchyard_engine::model::NodeIo,
    ) -> Result<switchyard_engine::model::ModelOutput, switchyard_engine::model::ModelError> {
        panic!("the provider's answer made no sense")
    }

    async fn route(
        &self,
        _: &switchyard_engine::model::RouteRequest<'_>,
        _: &dyn switchyard_engine::model::NodeIo,
    ) -> Result<switchyard_engine::model::RouteAnswer, switchyard_engine::model::ModelError> {
        panic!("the provider's route made no sense")
    }
}

/// Runs `yaml` with `model`, its events collected; a run that has not ended within a minute has hung.
async fn run_with_model(
    yaml: &str,
    model: std::sync::Arc<dyn switchyard_engine::model::Model>,
) -> (switchyard_engine::run::Outcome, Vec<switchyard_engine::events::Event>) {
    use std::sync::Arc;
    use switchyard_engine::log::Collector;
    use switchyard_engine::run::{self, RunOptions, Runtime};
    let workflow = switchyard_engine::format::load_str(yaml, None, None).unwrap_or_else(|e| panic!("{e}"));
    let seen = Collector::default();
    let runtime = Runtime {
        model,
        answers: None,
        log: None,
        observers: vec![Arc::new(seen.clone())],
        code: Default::default(),
        mcp: Default::default(),
        children: None,
    };
    let launch = run::Launch::fresh(Arc::new(workflow.workflow), RunOptions::default());
    let running = run::launch(launch, runtime).expect("a fresh run launches").finish();
    let outcome = tokio::time::timeout(std::time::Duration::from_secs(60), running)
        .await
        .expect("the run ended instead of hanging");
    (outcome, seen.events())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_counts_past_what_a_count_holds_stay_at_the_most_and_fail_every_max_tokens() {
    use switchyard_engine::eval::{check, Check, Expectation};
    // Two calls in one node (one per item), then a second node: every sum would overflow.
    let (outcome, events) = run_with_model(
        "switchyard: 1
name: boundless
nodes:
  - {id: start, type: start}
  - {id: fan, type: agent, model: p/m, user_prompt: 'Item {{ item }}', for_each: {items: '[1, 2]'}}
  - {id: sum, type: agent, model: p/m, user_prompt: Sum up}
edges:
  - {from: start, to: fan}
  - {from: fan, to: sum}
",
        std::sync::Arc::new(Boundless),
    )
    .await;
    assert_eq!(outcome.result.status, switchyard_engine::RunStatus::Completed, "{:?}", outcome.result.results);
    let used = switchyard_engine::usage::by_model(&events, |_| Some("p/m".into()));
    assert_eq!(
        (used["p/m"].input_tokens, used["p/m"].output_tokens),
        (u64::MAX, 3),
        "the input count stays at the most"
    );
    assert_eq!(switchyard_engine::usage::tokens(&used), u64::MAX);
    assert_eq!(check::spent(&events, None).tokens, u64::MAX);
    // Not even the largest limit holds: the count overflowed, so the run used more than any.
    let limits = [1000, u64::MAX - 1, u64::MAX];
    for (node, max) in limits.iter().flat_map(|max| [(None, *max), (Some("fan".to_string()), *max)]) {
        let expect = [Expectation { node: node.clone(), check: Check::MaxTokens(max) }];
        let workflow = switchyard_engine::format::load_str(
            "switchyard: 1\nname: w\nnodes: [{id: fan, type: start}]\n",
            None,
            None,
        )
        .unwrap_or_else(|e| panic!("{e}"))
        .workflow;
        let failures = check::check(&expect, &outcome.result, &events, &workflow);
        assert_eq!(failures.len(), 1, "max_tokens {max} of {node:?} held on an overflowed count");
        assert!(failures[0].actual.contains("overflowed"), "{:?}", failures[0]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_that_panics_fails_its_run_instead_of_leaving_it_hung() {
    let (outcome, _) = run_with_model(
        "switchyard: 1
name: panics
nodes:
  - {id: start, type: start}
  - {id: ask, type: agent, model: p/m, user_prompt: Anything}
  - {id: after, type: agent, model: p/m, user_prompt: Then}
edges:
  - {from: start, to: ask}
  - {from: ask, to: after}
",
        std::sync::Arc::new(Panicking),
    )
    .await;
    assert_eq!(outcome.result.status, switchyard_engine::RunStatus::Failed);
    let ask = outcome.result.node("ask").unwrap();
    let error = ask.error.unwrap_or_default();
    assert!(error.contains("internal error") && error.contains("the provider's answer made no sense"), "{error}");
    assert!(outcome.result.node("after").is_none_or(|r| r.status != switchyard_engine::result::NodeStatus::Success));
}

/// A seeded xorshift generator: the fuzzer below makes the same cases on every run.
struct Seeded(u64);

impl Seeded {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a, T>(&mut self, from: &'a [T]) -> &'a T {
        &from[self.below(from.len())]
    }
}

/// Values a mutation puts where a file had another: every YAML and JSON kind, and the edges of numbers and text.
const ODD_VALUES: [&str; 24] = [
    "",
    "~",
    "null",
    "[]",
    "{}",
    "-1",
    "0",
    "1e999",
    "18446744073709551615",
    "18446744073709551616",
    "\"\\uFFFE\"",
    "|\n  a\n\n  b",
    "*x",
    "&x y",
    "!!binary aGk=",
    "'",
    "\"",
    "\t",
    "nope",
    "2026-01-01",
    "0x10",
    "true",
    "[[[[",
    "é",
];

/// One to three mutations of `text`, each a line deleted, doubled, swapped or re-indented, a value replaced, a line
/// inserted, a character replaced, or the text cut short. Lines with `delay_ms` keep their values: a simulated delay
/// is a wait the file asks for, not a hang.
fn mutate(text: &str, rng: &mut Seeded) -> String {
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    for _ in 0..rng.below(3) {
        if lines.is_empty() {
            lines.push(rng.pick(&ODD_VALUES).to_string());
        }
        let at = rng.below(lines.len());
        match rng.below(8) {
            0 => {
                lines.remove(at);
            }
            1 => lines.insert(at, lines[at].clone()),
            2 => {
                let other = rng.below(lines.len());
                lines.swap(at, other);
            }
            3 => {
                let line = &lines[at];
                let indent = line.len() - line.trim_start().len();
                let shift = rng.below(5);
                lines[at] = if rng.below(2) == 0 {
                    format!("{}{}", " ".repeat(indent + shift), line.trim_start())
                } else {
                    format!("{}{}", " ".repeat(indent.saturating_sub(shift)), line.trim_start())
                };
            }
            4 if !lines[at].contains("delay_ms") => {
                if let Some(colon) = lines[at].find(": ") {
                    lines[at] = format!("{}: {}", &lines[at][..colon], rng.pick(&ODD_VALUES));
                }
            }
            5 => {
                let indent = " ".repeat(rng.below(8));
                let key = rng.pick(&["- ", "node: ", "expect: ", "id: ", "answers: ", "max_tokens: ", "", "cases: "]);
                lines.insert(at, format!("{indent}{key}{}", rng.pick(&ODD_VALUES)));
            }
            6 => {
                let chars: Vec<char> = lines[at].chars().collect();
                if !chars.is_empty() {
                    let with = *rng.pick(&[':', '-', '[', '{', '#', '\'', '"', ' ', '\t', 'é', '\u{FFFE}', '\0', '*']);
                    let mut chars = chars;
                    let i = rng.below(chars.len());
                    chars[i] = with;
                    lines[at] = chars.into_iter().collect();
                }
            }
            _ => lines.truncate(at + 1),
        }
    }
    lines.join("\n") + "\n"
}

/// A recorded-calls file: well-formed, with usage at the edges of what a count holds, or mutated into any shape.
fn calls_json(rng: &mut Seeded, nodes: &[&str]) -> String {
    use serde_json::json;
    let counts = [json!(0), json!(1), json!(u64::MAX), json!(i64::MAX), json!(u64::MAX - 1)];
    let odd = [json!(-1), json!(1.5), json!("12"), json!(null), json!(1e30)];
    let count = |rng: &mut Seeded| if rng.below(16) == 0 { rng.pick(&odd) } else { rng.pick(&counts) }.clone();
    let mut calls = serde_json::Map::new();
    for _ in 0..rng.below(4) {
        let key = format!("{:032x}", rng.next());
        let usage = json!({"inputTokens": count(rng), "outputTokens": count(rng)});
        let call = json!({"node": rng.pick(nodes), "text": rng.pick(&ODD_VALUES), "usage": usage});
        calls.insert(key, call);
    }
    let version = if rng.below(8) == 0 { rng.pick(&[json!(2), json!("1"), json!(null)]).clone() } else { json!(1) };
    let text = serde_json::to_string_pretty(&json!({"version": version, "calls": calls})).unwrap();
    match rng.below(6) {
        0 => mutate(&text, rng),
        1 => text.chars().take(rng.below(text.len() + 1)).collect(),
        _ => text,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutated_evaluation_and_recorded_calls_files_never_panic_or_hang_and_every_refusal_names_its_file() {
    use futures::FutureExt;
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let dir = tempfile::tempdir().unwrap();
    let mut bases = Vec::new();
    for name in ["approval-flow", "alert-triage", "research-fanout", "review-fix-loop"] {
        for file in [format!("{name}.yaml"), format!("{name}.script.yaml")] {
            std::fs::copy(examples.join(&file), dir.path().join(&file)).unwrap();
        }
        // The examples' own cases wait a second in places; the fuzzer keeps their waits short.
        let text = std::fs::read_to_string(examples.join(format!("{name}.evals.yaml"))).unwrap();
        bases.push((name, text.replace("delay_ms: 1000", "delay_ms: 5")));
    }
    let started = std::time::Instant::now();
    // Another seed or more cases explore further: SWITCHYARD_FUZZ_SEED=N SWITCHYARD_FUZZ_CASES=N.
    let setting = |name: &str, default: u64| std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default);
    let (seed, cases) = (setting("SWITCHYARD_FUZZ_SEED", 0x0E7A_15F0_22ED), setting("SWITCHYARD_FUZZ_CASES", 300));
    let mut rng = Seeded(seed.max(1));
    let (mut loaded, mut ran) = (0, 0);
    for n in 0..cases {
        let (name, base) = rng.pick(&bases).clone();
        let mut text = mutate(&base, &mut rng);
        if rng.below(4) == 0 {
            // The same file as JSON, mutated as text.
            if let Ok(value) = serde_yaml::from_str::<serde_json::Value>(&base) {
                text = mutate(&serde_json::to_string_pretty(&value).unwrap(), &mut rng);
            }
        }
        let path = dir.path().join(format!("{name}.evals.yaml"));
        std::fs::write(&path, &text).unwrap();
        let calls = calls_json(&mut rng, &["draft", "review", "classify", "cost", "implement"]);
        std::fs::write(dir.path().join(format!("{name}.evals.calls.json")), &calls).unwrap();
        let case = format!("case {n} of seed {seed} ({name}):\n{text}\ncalls:\n{calls}");

        let suite = match std::panic::catch_unwind(|| Suite::load(&path)) {
            Err(_) => panic!("loading panicked on {case}"),
            Ok(Err(e)) => {
                assert!(!e.code.is_empty() && e.to_string().contains(&format!("{name}.evals.yaml")), "{e}: {case}");
                continue;
            }
            Ok(Ok(suite)) => suite,
        };
        loaded += 1;
        let options = Options { offline: true, jobs: 2, ..Options::default() };
        let running = std::panic::AssertUnwindSafe(eval::run(&suite, &options, |_| {})).catch_unwind();
        let outcome = tokio::time::timeout(std::time::Duration::from_secs(20), running)
            .await
            .unwrap_or_else(|_| panic!("the evaluation hung on {case}"))
            .unwrap_or_else(|_| panic!("the evaluation panicked on {case}"));
        match outcome {
            Ok((reports, calls)) => {
                ran += 1;
                assert!(reports.iter().all(|r| !r.attempts.is_empty()), "{case}");
                let report = eval::Report::new(path.display().to_string(), name.into(), reports, calls);
                let (junit, _) = (report.junit(), report.markdown());
                let forbidden = |c: char| matches!(c as u32, 0..=0x8 | 0xB | 0xC | 0xE..=0x1F | 0xFFFE | 0xFFFF);
                assert!(!junit.chars().any(forbidden), "the JUnit XML is not well-formed: {junit:?}\n{case}");
            }
            Err(e) => {
                let file = e.file.as_ref().unwrap_or_else(|| panic!("{e} names no file: {case}"));
                assert!(e.to_string().contains(&file.display().to_string()), "{e}: {case}");
                assert!(file.starts_with(dir.path()) || file.is_relative(), "{e} names a file elsewhere: {case}");
            }
        }
    }
    // The mutations keep enough files usable to run cases, and all of it in bounded time.
    eprintln!("{loaded} of {cases} files loaded, {ran} evaluated, in {:?}", started.elapsed());
    assert!(loaded * 3 > cases && ran * 6 > cases, "{loaded} of {cases} files loaded, {ran} evaluated");
    assert!(started.elapsed() < std::time::Duration::from_millis(200 * cases), "{:?}", started.elapsed());
}
