//! TEA and OpenExpertise files (SEMANTICS §8, seeds 004 and 001): small inline documents with their expected runs,
//! the source documents' own examples, malformed inputs, and every public fixture.

mod support;

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use support::*;
use switchyard_engine::format::{self, Format};
use switchyard_engine::result::RunStatus;
use switchyard_engine::run::RunOptions;
use switchyard_engine::validate::{validate, Options};
use switchyard_engine::Workflow;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures")
}

fn scripts() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scripts")
}

fn import(text: &str, format: Format) -> (Workflow, Vec<String>) {
    let loaded = format::load_str(text, None, None).unwrap_or_else(|e| panic!("does not import: {e}"));
    assert_eq!(loaded.format, format);
    (loaded.workflow, loaded.notes)
}

fn tea(text: &str) -> Workflow {
    import(text, Format::Tea).0
}

/// The state at the end, without the keys the generated start node contributes.
fn state(ran: &Ran) -> Value {
    Value::Object(ran.result().state.clone())
}

// ---------------------------------------------------------------- TEA

#[tokio::test]
async fn tea_nodes_chain_implicitly_and_run_as_script_nodes() {
    let wf = tea("name: t\nnodes:\n  - name: step_a\n    run: return {}\n  - name: step_b\n    run: return {}\n  - name: step_c\n    run: return {}\n");
    let c = wf.node("step_c").unwrap();
    assert_eq!(
        (c.node_type, c.language.as_deref(), c.code.as_deref()),
        (switchyard_engine::NodeType::Script, Some("python"), Some("return {}"))
    );
    let options = RunOptions { input: Some(json!({})), ..Default::default() }; // TEA's initial state: an object
    let ran =
        run_with(&wf, "nodes: {step_a: {data: {a: 1}}, step_b: {data: {b: 2}}, step_c: {data: {c: 3}}}", options).await;
    assert_eq!(ran.ran(), ["start", "step_a", "step_b", "step_c"]);
    assert_eq!(state(&ran), json!({"a": 1, "b": 2, "c": 3}));
    // A run body nobody scripted fails, saying why.
    let ran = run(&wf, "nodes: {step_a: {data: {}}}").await;
    assert!(ran.result().error.as_deref().unwrap().contains("`step_b`"));
}

#[tokio::test]
async fn an_unconditional_goto_jumps_and_end_terminates() {
    let wf = tea("name: t
nodes:
  - name: start_here
    run: 'return {\"initialized\": True}'
    goto: validate
  - name: skipped_node
    run: 'return {}'
  - name: validate
    run: 'return {}'
    goto: __end__
  - name: never
    run: 'return {}'");
    let ran = run(&wf, "").await;
    assert_eq!(ran.result().status, RunStatus::Failed);
    assert!(
        ran.result().error.as_deref().unwrap().contains("`start_here`"),
        "unscripted script nodes fail, saying which"
    );
    let ran = run(&wf, "nodes: {start_here: {data: {}}, validate: {data: {}}}").await;
    assert_eq!(ran.ran(), ["start", "start_here", "validate"]);
}

const BY_SCORE: &str = "name: by-score
nodes:
  - name: validate
    run: |
      score = check_quality(state[\"input\"])
      return {\"score\": score}
    goto:
      - if: \"state.score > 0.9\"
        to: high_confidence
      - if: \"state.score > 0.5\"
        to: medium_confidence
      - to: low_confidence
  - name: high_confidence
    run: 'return {\"path\": \"high\"}'
    goto: __end__
  - name: medium_confidence
    run: 'return {\"path\": \"medium\"}'
  - name: low_confidence
    run: 'return {\"path\": \"low\"}'";

#[tokio::test]
async fn conditional_goto_by_score_takes_the_first_matching_rule_after_the_output_is_merged() {
    let wf = tea(BY_SCORE);
    let answers = "high_confidence: {data: {path: high}}\n  medium_confidence: {data: {path: medium}}\n  low_confidence: {data: {path: low}}";
    let cases: &[(f64, &[&str])] = &[
        (0.95, &["high_confidence"]),
        (0.7, &["medium_confidence", "low_confidence"]), // no goto on medium: implicit chaining to the next node
        (0.2, &["low_confidence"]),
    ];
    for (score, after) in cases {
        let ran = run(&wf, &format!("nodes:\n  validate: {{data: {{score: {score}}}}}\n  {answers}")).await;
        let ran_nodes: Vec<&str> =
            ran.ran().into_iter().filter(|n| !["start", "validate", "validate__goto"].contains(n)).collect();
        assert_eq!(ran_nodes, *after, "score {score}");
    }
}

#[tokio::test]
async fn a_goto_self_correction_loop_retries_until_it_succeeds_or_gives_up() {
    let wf = tea("name: retry
nodes:
  - name: retry_step
    run: |
      result = attempt_operation()
      attempts = state.get(\"attempts\", 0) + 1
      return {\"status\": result.status, \"attempts\": attempts}
    goto:
      - if: \"state.status == 'error' and state.attempts < 3\"
        to: retry_step
      - if: \"state.status == 'ok'\"
        to: success
      - to: failure
  - name: success
    run: 'return {\"final\": \"success\"}'
    goto: __end__
  - name: failure
    run: 'return {\"final\": \"failed\"}'
    goto: __end__");
    let loop_edge = wf.edges.iter().find(|e| e.to == "retry_step" && e.from.ends_with("__goto")).unwrap();
    assert_eq!(loop_edge.max_iterations, Some(1000), "bounded by TEA's own limit");
    let tail = "success: {data: {final: success}}\n  failure: {data: {final: failed}}";
    let ran = run(&wf, &format!("nodes:\n  retry_step: [{{data: {{status: error, attempts: 1}}}}, {{data: {{status: error, attempts: 2}}}}, {{data: {{status: ok, attempts: 3}}}}]\n  {tail}")).await;
    assert_eq!(ran.ran().iter().filter(|n| **n == "retry_step").count(), 3);
    assert_eq!(state(&ran)["final"], "success");
    let ran = run(&wf, &format!("nodes:\n  retry_step: [{{data: {{status: error, attempts: 1}}}}, {{data: {{status: error, attempts: 2}}}}, {{data: {{status: error, attempts: 3}}}}]\n  {tail}")).await;
    assert_eq!(state(&ran)["final"], "failed", "three errors: max retries exceeded");
}

#[tokio::test]
async fn a_conditional_goto_with_no_match_and_no_fallback_is_a_run_time_error_naming_the_node() {
    let wf = tea("name: t\nnodes:\n  - name: check\n    run: 'return {}'\n    goto:\n      - if: state.ready\n        to: go\n  - name: go\n    run: 'return {}'\n");
    let ran = run(&wf, "nodes: {check: {data: {ready: false}}, go: {data: {}}}").await;
    assert_eq!(ran.result().status, RunStatus::Failed);
    assert!(
        ran.result().error.as_deref().unwrap().contains("no goto rule of `check` matched"),
        "{:?}",
        ran.result().error
    );
    let ran = run(&wf, "nodes: {check: {data: {ready: true}}, go: {data: {}}}").await;
    assert_eq!(ran.result().status, RunStatus::Completed);
}

#[tokio::test]
async fn legacy_edges_with_start_end_conditions_and_negation() {
    let wf = tea(
        "name: legacy
nodes:
  - name: validate
    run: 'return {}'
  - name: process
    run: 'return {}'
  - name: error_handler
    run: 'return {}'
  - name: check
    run: 'return {}'
  - name: proceed
    run: 'return {}'
  - name: skip
    run: 'return {}'
edges:
  - {from: __start__, to: validate}
  - {from: validate, to: process, condition: {type: expression, value: 'state[\"is_valid\"] == True'}, when: true}
  - {from: validate, to: error_handler, condition: {type: expression, value: 'state[\"is_valid\"] == True'}, when: false}
  - {from: process, to: check}
  - {from: check, to: proceed, when: \"state['count'] > 0\"}
  - {from: check, to: skip, when: '!should_process'}
  - {from: proceed, to: __end__}
  - {from: skip, to: __end__}
  - {from: error_handler, to: __end__}",
    );
    let base = "process: {data: {}}\n  error_handler: {data: {}}\n  proceed: {data: {}}\n  skip: {data: {}}";
    let ran = run(&wf, &format!("nodes:\n  validate: {{data: {{is_valid: true}}}}\n  check: {{data: {{count: 2, should_process: true}}}}\n  {base}")).await;
    assert_eq!(ran.ran(), ["start", "validate", "process", "check", "proceed"]);
    assert_eq!(ran.skipped(), ["error_handler", "skip"]);
    let ran =
        run(&wf, &format!("nodes:\n  validate: {{data: {{is_valid: false}}}}\n  check: {{data: {{}}}}\n  {base}"))
            .await;
    assert_eq!(ran.ran(), ["start", "validate", "error_handler"]);
    let ran = run(&wf, &format!("nodes:\n  validate: {{data: {{is_valid: true}}}}\n  check: {{data: {{count: 0, should_process: false}}}}\n  {base}")).await;
    assert_eq!(ran.ran().last(), Some(&"skip"), "an undefined or false flag negated is true");
}

#[tokio::test]
async fn goto_takes_precedence_over_edges_and_says_so() {
    let (wf, notes) = import(
        "name: p\nnodes:\n  - name: step_a\n    goto: step_c\n  - name: step_b\n  - name: step_c\nedges:\n  - {from: step_a, to: step_b}\n",
        Format::Tea,
    );
    assert!(notes.iter().any(|n| n.contains("goto` takes precedence")));
    let ran = run(&wf, "nodes: {step_a: {data: {}}, step_b: {data: {}}, step_c: {data: {}}}").await;
    assert_eq!(ran.ran(), ["start", "step_a", "step_c"]);
}

#[tokio::test]
async fn the_parallel_fan_in_sums_three_branches() {
    let wf = format::load_file(&fixtures().join("the_edge_agent/parallel_fanout.yaml"), None).unwrap().workflow;
    let script = std::fs::read_to_string(scripts().join("tea-parallel-fanout.script.yaml")).unwrap();
    let ran = run(&wf, &script).await;
    assert_eq!(ran.result().status, RunStatus::Completed);
    let order = ran.ran();
    assert_eq!(order.iter().filter(|n| **n == "fan_in").count(), 1, "the fan-in runs once");
    assert_eq!(order.last(), Some(&"fan_in"));
    // The fan-in starts only after every branch has finished.
    let position = |node: &str| order.iter().position(|n| *n == node).unwrap();
    assert!(["branch_1", "branch_2", "branch_3"].iter().all(|b| position(b) < position("fan_in")));
    assert_eq!(state(&ran)["count"], 6);
    assert_eq!(ran.edges().iter().filter(|e| e.0 == "start_node" && e.2 == "parallel").count(), 3);
}

#[tokio::test]
async fn tea_loops_are_bounded_on_import_and_said_so() {
    let (wf, notes) = import("name: l\nnodes:\n  - name: a\n    goto: b\n  - name: b\n    goto: a\n", Format::Tea);
    assert!(notes.iter().any(|n| n.contains("1000 iterations")), "{notes:?}");
    assert!(validate(&wf, &Options::default()).errors.iter().all(|f| f.code != "UNBOUNDED_CYCLE"));
}

#[test]
fn malformed_tea_files_are_refused_with_a_code_and_the_place() {
    let cases = [
        ("name: t\nnodes:\n  - name: a\n    goto: nowhere\n", "TEA_GOTO_UNKNOWN_TARGET", "node `a`"),
        ("name: t\nnodes:\n  - name: a\n    goto:\n      - if: state.x\n", "TEA_GOTO_RULE_WITHOUT_TO", "node `a`"),
        ("name: t\nnodes:\n  - name: a\n  - name: a\n", "DUPLICATE_NODE_ID", "nodes[1]"),
        ("name: t\nnodes:\n  - name: a\nedges:\n  - {from: a, to: b}\n", "EDGE_TARGET_MISSING", "edges[0]"),
        ("name: t\nnodes:\n  - name: a\nedges:\n  - {from: z, to: __end__}\n", "EDGE_SOURCE_MISSING", "edges[0]"),
    ];
    for (text, code, place) in cases {
        let err = format::load_str(text, None, Some(Path::new("flow.yaml"))).unwrap_err();
        assert_eq!(err.code, code, "{text}");
        assert!(err.to_string().contains(place) && err.to_string().starts_with("flow.yaml"), "{err}");
    }
}

#[tokio::test]
async fn the_tea_fixtures_run_as_their_documents_say() {
    let dir = fixtures().join("the_edge_agent");
    let wf = format::load_file(&dir.join("goto_parity_test.yaml"), None).unwrap().workflow;
    let ran = run(&wf, &std::fs::read_to_string(scripts().join("tea-goto-parity.script.yaml")).unwrap()).await;
    let s = state(&ran);
    assert_eq!((s["should_continue"].clone(), s["result"].clone()), (json!(true), json!("processed")));

    let wf = format::load_file(&dir.join("simple_workflow.yaml"), None).unwrap().workflow;
    let ran = run(&wf, &std::fs::read_to_string(scripts().join("tea-simple.script.yaml")).unwrap()).await;
    assert_eq!(ran.ran(), ["start", "process", "finalize"]);
    assert_eq!(state(&ran)["output"], "processed: none - done");
}

/// A script that answers every script and agent node with `{}` (for fixtures whose bodies only need to run).
fn answer_everything(wf: &Workflow) -> String {
    let mut s = String::from("nodes:\n");
    for n in wf
        .nodes
        .iter()
        .filter(|n| matches!(n.node_type, switchyard_engine::NodeType::Script | switchyard_engine::NodeType::Agent))
    {
        s.push_str(&format!("  {}: {{data: {{}}}}\n", n.id));
    }
    s
}

#[tokio::test]
async fn every_valid_tea_fixture_imports_validates_and_runs() {
    let dir = fixtures().join("the_edge_agent/validate");
    for sub in ["valid", "strict_known_good", "strict_known_bad"] {
        for entry in std::fs::read_dir(dir.join(sub)).unwrap() {
            let path = entry.unwrap().path();
            let wf = format::load_file(&path, None).unwrap_or_else(|e| panic!("{e}")).workflow;
            let report = validate(&wf, &Options::default());
            assert!(report.is_ok(), "{}: {:?}", path.display(), report.errors);
            let ran = run_with(
                &wf,
                &answer_everything(&wf),
                RunOptions { input: Some(json!({"value": 12, "items": [1, 2]})), ..Default::default() },
            )
            .await;
            assert_eq!(ran.result().status, RunStatus::Completed, "{}: {:?}", path.display(), ran.result().error);
        }
    }
}

#[test]
fn every_broken_tea_fixture_is_refused_with_the_code_its_name_describes() {
    let dir = fixtures().join("the_edge_agent");
    let expected = [
        ("validate/broken/duplicate_nodes.yaml", "DUPLICATE_NODE_ID"),
        ("validate/broken/edge_from_undefined.yaml", "EDGE_SOURCE_MISSING"),
        ("validate/broken/edge_to_undefined.yaml", "EDGE_TARGET_MISSING"),
        ("validate/broken/dyn_parallel_fan_in_undefined.yaml", "TEA_FAN_IN_UNDEFINED"),
        ("validate/broken/dyn_parallel_no_fan_in.yaml", "TEA_FAN_IN_MISSING"),
        ("validate/broken/dyn_parallel_no_items.yaml", "TEA_ITEMS_MISSING"),
        ("validate/broken/dyn_parallel_two_modes.yaml", "TEA_PARALLEL_TWO_MODES"),
        ("validate/broken/invalid_jinja_condition.yaml", "INVALID_EXPRESSION"),
        ("validate/broken/missing_nodes.yaml", "NO_NODES"),
        ("validate/broken/yaml_parse_error.yaml", "PARSE_ERROR"),
        ("invalid_workflow.yaml", "TEA_GOTO_UNKNOWN_TARGET"),
    ];
    let broken = std::fs::read_dir(dir.join("validate/broken")).unwrap().count();
    assert_eq!(broken + 1, expected.len(), "every broken fixture is in this table");
    for (file, code) in expected {
        let path = dir.join(file);
        let codes: Vec<String> = match format::load_file(&path, None) {
            Err(e) => {
                assert!(e.to_string().contains(file.rsplit('/').next().unwrap()), "the message names the file: {e}");
                vec![e.code.to_string()]
            }
            Ok(loaded) => {
                let report = validate(&loaded.workflow, &Options::default());
                assert!(report.errors.iter().all(|f| f.node.is_some() || f.edge.is_some()), "{file}: located");
                report.errors.iter().map(|f| f.code.to_string()).collect()
            }
        };
        assert!(codes.iter().any(|c| c == code), "{file}: expected {code}, got {codes:?}");
    }
}

// ---------------------------------------------------------------- OpenExpertise

#[tokio::test]
async fn the_triage_branching_skips_dedup_and_keeps_the_bypass() {
    let path = fixtures().join("openexpertise/issue-triage/experience.yaml");
    let loaded = format::load_file(&path, None).unwrap();
    assert_eq!(loaded.format, Format::OpenExpertise);
    let wf = loaded.workflow;
    assert_eq!(
        wf.edges.iter().find(|e| e.to == "dedup").unwrap().r#if.as_deref(),
        Some("(((state.similar_issues or []) | length) > 0)")
    );
    assert!(wf.state.contains_key("labels"), "merge strategies carried over");
    let script = std::fs::read_to_string(scripts().join("oe-issue-triage.script.yaml")).unwrap();
    let ran = run(&wf, &script).await;
    assert_eq!(ran.result().status, RunStatus::Completed);
    assert_eq!(ran.skipped(), ["dedup"]);
    assert!(ran.ran().contains(&"assign_labels") && ran.ran().contains(&"suggest_owner"));
    assert_eq!(state(&ran)["labels"], json!(["bug", "editor"]));

    let with_similar = script.replace("similar_issues: []", "similar_issues: [{id: 7}]")
        + "  dedup: {data: {is_duplicate: true, duplicate_of: \"#7\"}}\n";
    let ran = run(&wf, &with_similar).await;
    assert!(ran.skipped().is_empty());
    assert_eq!(state(&ran)["duplicate_of"], "#7");
}

#[tokio::test]
async fn for_each_fans_out_and_array_append_accumulates() {
    let wf =
        format::load_file(&fixtures().join("openexpertise/oncall-runbook/experience.yaml"), None).unwrap().workflow;
    assert_eq!(wf.node("investigate").unwrap().for_each.as_ref().unwrap().items, "state.dimensions");
    let ran = run(&wf, &std::fs::read_to_string(scripts().join("oe-oncall-runbook.script.yaml")).unwrap()).await;
    assert_eq!(ran.result().status, RunStatus::Completed, "{:?}", ran.result().error);
    let s = state(&ran);
    let titles: Vec<&str> = s["findings"].as_array().unwrap().iter().map(|f| f["title"].as_str().unwrap()).collect();
    assert_eq!(titles, ["pool exhausted", "packet loss", "bad deploy"], "three iterations, one finding each");
    let prompts: Vec<String> = ran.model.executes().into_iter().filter(|e| e.0 == "investigate").map(|e| e.1).collect();
    assert_eq!(prompts.len(), 3);
}

const PERSIST: &str = "name: persist
version: 0.1.0
state:
  schema: {items: {type: array}, summary: {type: object}, refined_summary: {type: string}}
graph:
  nodes:
    - {id: load, kind: tool, impl: ./tools/load.mjs, writes: [items]}
    - {id: aggregate, kind: tool, impl: ./tools/aggregate.mjs, writes: [summary]}
    - {id: refine, kind: agent, prompt: 'Refine {{$.summary}}', writes: [refined_summary]}
    - {id: persist, kind: tool, impl: ./tools/persist.mjs}
  edges:
    - {from: load, to: aggregate}
    - {from: aggregate, to: refine, when: 'length($.summary.flags) > 0'}
    - {from: aggregate, to: persist}
    - {from: refine, to: persist}";

#[tokio::test]
async fn persist_regardless_runs_once_whether_or_not_refine_ran() {
    let (wf, _) = import(PERSIST, Format::OpenExpertise);
    for (flags, refine_runs) in [("[]", false), ("[x]", true)] {
        let ran = run(&wf, &format!("nodes:\n  load: {{data: {{items: [1]}}}}\n  aggregate: {{data: {{summary: {{flags: {flags}}}}}}}\n  refine: {{data: {{refined_summary: ok}}}}\n  persist: {{data: {{saved: true}}}}")).await;
        assert_eq!(ran.ran().iter().filter(|n| **n == "persist").count(), 1, "flags {flags}");
        assert_eq!(ran.ran().contains(&"refine"), refine_runs);
        assert_eq!(ran.ran().last(), Some(&"persist"), "persist waits for refine when it runs");
    }
}

#[tokio::test]
async fn loops_repeat_until_their_condition_or_max_iters() {
    let doc = "name: loop
version: 0.1.0
state:
  schema: {refined_count: {type: number}}
graph:
  nodes:
    - {id: refine, kind: agent, prompt: refine}
    - {id: publish, kind: tool, impl: ./p.mjs}
  edges:
    - {from: refine, to: publish}
  loops:
    - {id: refine_loop, body: refine, until: '$.refined_count >= 3', max_iters: 5}";
    let (wf, _) = import(doc, Format::OpenExpertise);
    let counts = "[{data: {refined_count: 1}}, {data: {refined_count: 2}}, {data: {refined_count: 3}}]";
    let ran = run(&wf, &format!("nodes:\n  refine: {counts}\n  publish: {{data: {{}}}}")).await;
    assert_eq!(ran.ran().iter().filter(|n| **n == "refine").count(), 3, "until holds after the third");
    assert_eq!(ran.ran().last(), Some(&"publish"));
    let ran = run(&wf, "nodes:\n  refine: {data: {refined_count: 0}}\n  publish: {data: {}}").await;
    assert_eq!(ran.ran().iter().filter(|n| **n == "refine").count(), 5, "max_iters caps it");
    assert_eq!(ran.ran().last(), Some(&"publish"), "and the flow goes on");
}

#[tokio::test]
async fn pipelines_and_set_once_merge() {
    let doc = "name: etl
version: 0.1.0
state:
  schema:
    first_seen: {type: string, merge: set_once}
graph:
  nodes:
    - {id: load, kind: tool, impl: ./load.mjs}
    - {id: enrich, kind: agent, prompt: 'enrich {{$item}}'}
  edges:
    - {from: load, to: enrich}
  pipelines:
    - {id: rows, items: $.rows, stages: [enrich]}";
    let (wf, notes) = import(doc, Format::OpenExpertise);
    assert!(notes.iter().any(|n| n.contains("pipeline rows")));
    let ran =
        run(&wf, "nodes:\n  load: {data: {rows: [a, b], first_seen: load}}\n  enrich: {data: {first_seen: enrich}}")
            .await;
    let prompts: Vec<String> = ran.model.executes().into_iter().map(|e| e.1).collect();
    assert_eq!(prompts, ["enrich a", "enrich b"]);
    assert_eq!(state(&ran)["first_seen"], "load", "set_once keeps the first value");
}

#[test]
fn malformed_openexpertise_files_are_refused_with_a_code() {
    let a = "{id: a, kind: agent, prompt: p}";
    let cases = [
        (format!("name: t\ngraph:\n  nodes: [{a}]\n  edges: [{{from: a, to: a, when: '$.x >'}}]\n"), "INVALID_EXPRESSION", "does not parse"),
        (format!("name: t\ngraph:\n  nodes: [{a}]\n  edges: []\n  loops: [{{id: l, body: nope, until: '$.x'}}]\n"), "OE_LOOP_UNKNOWN_BODY", "`body`"),
        ("name: t\ngraph:\n  nodes: [{kind: agent, prompt: p}]\n".into(), "OE_NODE_WITHOUT_ID", "`id`"),
        ("name: t\ngraph:\n  nodes: []\n".into(), "NO_NODES", "empty"),
        (format!("name: t\nstate: {{schema: {{x: {{merge: sometimes}}}}}}\ngraph:\n  nodes: [{a}]\n"), "OE_UNKNOWN_MERGE", "sometimes"),
        // OpenExpertise's validator's own refusals.
        (format!("graph:\n  nodes: [{a}]\n"), "OE_MISSING_NAME", "`name` is required"),
        ("name: t\ngraph:\n  nodes: [{id: a, kind: wizard}]\n".into(), "OE_UNKNOWN_KIND", "kind `wizard` is not one of agent, tool"),
        ("name: t\ngraph:\n  nodes: [{id: a, prompt: p}]\n".into(), "OE_UNKNOWN_KIND", "`kind` is required"),
        ("name: t\ngraph:\n  nodes: [{id: a, kind: tool}]\n".into(), "OE_MISSING_FIELD", "needs `impl`"),
        (
            "name: t\nstate: {schema: {x: {type: string}}}\ngraph:\n  nodes: [{id: a, kind: agent, prompt: p, writes: [x, y]}]\n".into(),
            "OE_UNDECLARED_STATE_FIELD",
            "node `a` writes undeclared state field `y`",
        ),
        (format!("name: t\ngraph:\n  nodes: [{a}]\n  edges: [{{from: a, to: b}}]\n"), "OE_UNKNOWN_EDGE_NODE", "`to: b` names no node"),
    ];
    for (text, code, says) in cases {
        // What OpenExpertise's schema requires besides, so that each case is refused for its own reason.
        let state = if text.contains("state:") { "" } else { "state: {schema: {}}\n" };
        let text = format!("version: 0.1.0\n{state}{text}");
        let err = format::load_str(&text, Some(Format::OpenExpertise), None).unwrap_err();
        assert_eq!(err.code, code, "{text}: {err}");
        assert!(err.to_string().contains(says), "{err}");
    }
}

#[test]
fn imported_files_export_as_canonical_yaml_that_loads_back() {
    for path in [
        fixtures().join("the_edge_agent/goto_parity_test.yaml"),
        fixtures().join("the_edge_agent/parallel_fanout.yaml"),
        fixtures().join("openexpertise/oncall-runbook/experience.yaml"),
    ] {
        let wf = format::load_file(&path, None).unwrap().workflow;
        let again = format::load_str(&format::to_yaml(&wf), None, None).unwrap();
        assert_eq!(again.format, Format::Switchyard);
        assert_eq!(again.workflow, wf, "{}", path.display());
    }
}

/// An OpenExpertise fixture copied into a folder with small real tool modules beside it.
fn experience_with_tools(name: &str, tools: &[(&str, &str)]) -> (tempfile::TempDir, Workflow) {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(fixtures().join(format!("openexpertise/{name}/experience.yaml"))).unwrap();
    std::fs::write(dir.path().join("experience.yaml"), text).unwrap();
    std::fs::create_dir(dir.path().join("tools")).unwrap();
    for (file, source) in tools {
        std::fs::write(dir.path().join("tools").join(file), source).unwrap();
    }
    let wf = format::load_file(&dir.path().join("experience.yaml"), None).unwrap().workflow;
    (dir, wf)
}

#[tokio::test]
async fn the_openexpertise_fixtures_run_with_real_tool_modules_and_scripted_agents() {
    let (dir, wf) = experience_with_tools(
        "issue-triage",
        &[
            ("load_issue.mjs", "export default async function (state, ctx) {\n  return { issue: { number: ctx.input.number ?? 1, title: 'Crash on save' } };\n}\n"),
            ("search_similar.mjs", "export default function (state) {\n  console.log(`searching for ${state.issue.title}`);\n  return { similar_issues: state.issue.title.includes('Crash') ? [{ number: 7 }] : [] };\n}\n"),
        ],
    );
    let agents = "nodes:
  classify: {data: {classification: {type: bug, severity: high, area: editor}}}
  dedup: {data: {is_duplicate: true, duplicate_of: '#7'}}
  assign_labels: {data: {labels: [bug, editor]}}
  suggest_owner: {data: {suggested_owner: '@ana'}}";
    let ran = run_code(&wf, agents, Some(json!({"number": 42})), dir.path()).await;
    assert_eq!(ran.result().status, RunStatus::Completed, "{:?}", ran.result().error);
    let s = state(&ran);
    assert_eq!(s["issue"], json!({"number": 42, "title": "Crash on save"}), "the tool module's output");
    assert_eq!(s["similar_issues"], json!([{"number": 7}]));
    assert!(ran.skipped().is_empty(), "a similar issue was found, so dedup ran");
    assert_eq!(s["duplicate_of"], "#7");
    assert_eq!(ran.logs("search_similar", "stdout"), ["searching for Crash on save"]);

    let (dir, wf) = experience_with_tools(
        "oncall-runbook",
        &[
            ("fetch_incident.mjs", "export default async () => ({ incident: { id: 'INC-7', service: 'checkout' } });\n"),
            ("list_dimensions.mjs", "export function run(state) {\n  return { dimensions: ['db', 'network', 'deploys'].map((key) => ({ key, service: state.incident.service })) };\n}\n"),
        ],
    );
    let agents = "nodes:
  investigate:
    - data: {findings: [{title: pool exhausted, evidence: logs, impact: high}]}
    - data: {findings: [{title: packet loss, evidence: metrics, impact: low}]}
    - data: {findings: [{title: bad deploy, evidence: diff, impact: high}]}
  prioritize: {data: {prioritized_findings: [{title: pool exhausted, priority: P1}]}}
  summary: {data: {summary: DB pool exhausted after deploy.}}";
    let ran = run_code(&wf, agents, Some(json!({})), dir.path()).await;
    assert_eq!(ran.result().status, RunStatus::Completed, "{:?}", ran.result().error);
    assert_eq!(state(&ran)["dimensions"][2], json!({"key": "deploys", "service": "checkout"}));
    assert_eq!(state(&ran)["findings"].as_array().unwrap().len(), 3, "one finding per dimension, appended");
    let prompts: Vec<String> = ran.model.executes().into_iter().filter(|e| e.0 == "investigate").map(|e| e.1).collect();
    assert_eq!(prompts.len(), 3);
}

#[test]
fn openexpertise_error_policies_map_to_retries_and_continue_and_its_schema_refuses_other_shapes() {
    let doc = |policy: &str| {
        format!("name: p\nversion: 0.1.0\nstate: {{schema: {{}}}}\ngraph:\n  nodes:\n    - {{id: a, kind: agent, prompt: p, on_error: {policy}}}\n  edges: []\n")
    };
    let (wf, _) = import(&doc("{policy: retry, attempts: 3, base_ms: 100}"), Format::OpenExpertise);
    let retry = wf.node("a").unwrap().retry.clone().unwrap();
    assert_eq!((retry.max, retry.backoff_ms), (2, Some(100)), "3 attempts are the first try and 2 retries");
    let (wf, _) = import(&doc("{policy: skip}"), Format::OpenExpertise);
    assert_eq!(wf.node("a").unwrap().on_error, Some(switchyard_engine::document::OnError::Continue));
    let (wf, _) = import(&doc("{policy: fail_run}"), Format::OpenExpertise);
    assert_eq!((wf.node("a").unwrap().on_error, wf.node("a").unwrap().retry.clone()), (None, None));
    for shape in ["skip", "{policy: retry}", "{policy: retry, attempts: 50}"] {
        let e = format::load_str(&doc(shape), Some(Format::OpenExpertise), None).unwrap_err();
        assert_eq!(e.code, "OE_SCHEMA", "{shape}");
        assert!(e.to_string().contains("/graph/nodes/0"), "{e}");
    }
}
