//! File formats: the canonical YAML/JSON round trip, its JSON Schema, located errors for malformed files, and the
//! AgentFlow and SWEny importers against their seeds and public fixtures (SEMANTICS §1, §8).

mod support;

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use support::*;
use switchyard_engine::document::NodeType;
use switchyard_engine::format::{self, Format};
use switchyard_engine::result::{NodeStatus, RunStatus};
use switchyard_engine::validate::{validate, Options};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn fixtures() -> PathBuf {
    repo().join("../shared/fixtures")
}

fn examples() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(repo().join("examples"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.to_string_lossy();
            p.extension().is_some_and(|e| e == "yaml")
                && !name.ends_with(".script.yaml")
                && !name.ends_with(".evals.yaml")
        })
        .collect();
    files.sort();
    assert!(files.len() >= 4, "examples/ holds the four documented workflows");
    files
}

#[test]
fn canonical_files_round_trip_without_loss() {
    let mut files = examples();
    files.extend(
        ["sweny/triage.yml", "sweny/implement.yml", "sweny/file-ops.yml", "sweny/seed-content.yml"]
            .map(|f| fixtures().join(f)),
    );
    for file in files {
        let first = format::load_file(&file, None).unwrap().workflow;
        let yaml = format::to_yaml(&first);
        let again = format::load_str(&yaml, None, None).unwrap();
        assert_eq!(again.format, Format::Switchyard);
        assert_eq!(again.workflow, first, "{}: YAML round trip", file.display());
        assert_eq!(format::to_yaml(&again.workflow), yaml, "{}: export is stable", file.display());
        let from_json = format::load_str(&format::to_json(&first), None, None).unwrap().workflow;
        assert_eq!(from_json, first, "{}: JSON round trip", file.display());
    }
}

#[test]
fn the_round_trip_keeps_ids_order_positions_and_every_field() {
    let text = r#"switchyard: 1
name: Everything
description: every field once
input_schema:
  type: object
defaults:
  model: local/tiny
  step_budget: 50
  concurrency: 4
nodes:
- id: zeta
  type: start
  position:
    x: 10.5
    y: -3
  initial_input:
    topic: rust
- id: alpha
  type: agent
  name: Alpha
  description: does things
  system_prompt: be brief
  user_prompt: '{{ PREVIOUS_OUTPUT }}'
  model: local/other
  reasoning_effort: high
  tools:
    web_search: true
    subagents: true
  output_schema:
    type: object
  on_error: continue
  retry:
    max: 2
    backoff_ms: 100
  for_each:
    items: input.list
    concurrency: 3
- id: gate
  type: if
  conditions:
  - operator: contains
    value: ok
- id: ask
  type: approval
  message: Go?
  timeout_seconds: 60
- id: code
  type: script
  language: python
  code: return 1
  pinned:
    rows: 2
edges:
- id: e1
  from: zeta
  to: alpha
  handle: output
  target_handle: input
  max_iterations: 3
- from: alpha
  to: gate
  if: state.x
- from: gate
  to: ask
  handle: condition-0
- from: ask
  to: code
  handle: approve
"#;
    let wf = format::load_str(text, None, None).unwrap().workflow;
    assert_eq!(format::to_yaml(&wf), text, "byte-for-byte: order, ids, positions and fields survive");
    let ids: Vec<&str> = wf.nodes.iter().map(|n| n.id.as_str()).collect();
    assert_eq!(ids, ["zeta", "alpha", "gate", "ask", "code"]);
}

#[test]
fn the_committed_json_schema_is_current_and_describes_the_examples() {
    let committed = std::fs::read_to_string(repo().join("schema/workflow.schema.json")).unwrap();
    assert_eq!(
        committed,
        switchyard_engine::schema::workflow_schema_json(),
        "schema/workflow.schema.json is stale: run `cargo run -p switchyard-cli -- schema > schema/workflow.schema.json`"
    );
    let schema: Value = serde_json::from_str(&committed).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    for file in examples() {
        let value: Value = serde_yaml::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        let errors: Vec<String> = validator.iter_errors(&value).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{}: {errors:?}", file.display());
    }
    let bad = json!({"switchyard": 1, "name": "x", "nodes": [{"id": "a", "type": "start", "colour": "red"}]});
    assert!(!validator.is_valid(&bad), "the schema rejects unknown fields too");
}

#[test]
fn malformed_files_get_a_located_message() {
    // (what, text, message fragment, line)
    let cases: &[(&str, &str, &str, Option<usize>)] = &[
        ("bad YAML", "switchyard: 1\nname: x\nnodes:\n  - id: a\n   type: start\n", "invalid YAML", Some(5)),
        ("unknown field", "switchyard: 1\nname: x\nnodes:\n  - id: start\n    type: start\n  - id: a\n    type: agent\n    user_promt: hi\n", "did you mean `user_prompt`", Some(8)),
        ("unknown node type", "switchyard: 1\nname: x\nnodes:\n  - id: a\n    type: agnet\n", "did you mean `agent`", Some(5)),
        ("wrong type", "switchyard: 1\nname: x\nnodes: 5\n", "invalid type", Some(3)),
        ("missing id", "switchyard: 1\nname: x\nnodes:\n  - type: start\n", "missing field `id`", Some(4)),
        ("newer version", "switchyard: 2\nname: x\nnodes: []\n", "unsupported format version", None),
        ("empty", "   \n", "empty", None),
        ("not a mapping", "- a\n- b\n", "top level", None),
        ("no version key", "name: x\nnodes:\n  - {id: a, type: start}\n", "add `switchyard: 1`", None),
        ("JSON unknown field", "{\"switchyard\": 1, \"name\": \"x\",\n \"nodes\": [{\"id\": \"s\", \"type\": \"start\", \"positon\": {}}]}", "did you mean `position`", Some(2)),
        ("bad JSON", "{\"switchyard\": 1,\n \"name\": }", "invalid JSON", Some(2)),
    ];
    for (what, text, fragment, line) in cases {
        let err = format::load_str(text, None, Some(Path::new("flow.yaml"))).expect_err(what);
        let shown = err.to_string();
        assert!(shown.starts_with("flow.yaml"), "{what}: names the file: {shown}");
        assert!(shown.contains(fragment), "{what}: {shown}");
        if line.is_some() {
            assert_eq!(err.line, *line, "{what}: {shown}");
        }
    }
}

#[test]
fn json_documents_are_accepted() {
    let text = r#"{"switchyard": 1, "name": "j", "nodes": [{"id": "start", "type": "start"}], "edges": []}"#;
    let loaded = format::load_str(text, None, None).unwrap();
    assert_eq!(loaded.format, Format::Switchyard);
    assert_eq!(loaded.workflow.nodes[0].node_type, NodeType::Start);
}

const AGENTFLOW: &str = r#"{
  "nodes": [
    {"id": "node_2", "type": "start", "x": 80, "y": 120, "data": {"initialInput": "please approve the plan"}},
    {"id": "node_1", "type": "agent", "x": 300, "y": 120, "data": {"agentName": "Planner", "systemPrompt": "Plan.", "userPrompt": "", "model": "gpt-5", "reasoningEffort": "low", "tools": {"web_search": true}, "collapsed": true}},
    {"id": "check", "type": "if", "x": 520, "y": 120, "data": {"condition": "approve", "conditions": []}},
    {"id": "ask", "type": "input", "x": 740, "y": 40, "data": {"prompt": "Proceed?"}},
    {"id": "fallback", "type": "agent", "x": 740, "y": 220, "data": {"userPrompt": "Explain"}},
    {"id": "done", "type": "end", "x": 960, "y": 40, "data": {}}
  ],
  "connections": [
    {"source": "node_2", "target": "node_1", "sourceHandle": "output", "targetHandle": "input"},
    {"source": "node_1", "target": "check"},
    {"source": "check", "target": "ask", "sourceHandle": "true"},
    {"source": "check", "target": "fallback", "sourceHandle": "false"},
    {"source": "ask", "target": "done", "sourceHandle": "approve"}
  ]
}"#;

#[tokio::test]
async fn agentflow_files_are_normalized_and_run() {
    let loaded = format::load_str(AGENTFLOW, None, None).unwrap();
    assert_eq!(loaded.format, Format::AgentFlow);
    let wf = &loaded.workflow;
    assert_eq!(wf.node("ask").unwrap().node_type, NodeType::Approval, "legacy input → approval");
    assert_eq!(wf.node("ask").unwrap().message.as_deref(), Some("Proceed?"));
    let check = wf.node("check").unwrap().conditions.clone().unwrap();
    assert_eq!(check.len(), 1, "legacy condition → one contains condition");
    assert_eq!(check[0].value, "approve");
    let edge = wf.edges.iter().find(|e| e.from == "check" && e.to == "ask").unwrap();
    assert_eq!(edge.handle.as_deref(), Some("condition-0"), "legacy true handle → first condition");
    assert_eq!(wf.node("node_1").unwrap().position.unwrap().x, 300.0);
    assert_eq!(wf.node("node_1").unwrap().model.as_deref(), Some("openai/gpt-5"));
    assert!(wf.node("done").is_none());
    for fragment in
        ["`input` became `approval`", "legacy `condition", "legacy handle `true`", "`end` nodes", "openai/gpt-5"]
    {
        assert!(loaded.notes.iter().any(|n| n.contains(fragment)), "a note says {fragment}: {:?}", loaded.notes);
    }
    assert!(!loaded.notes.iter().any(|n| n.contains("collapsed")), "editor-only data is not worth a note");
    let report = validate(wf, &Options::default());
    assert!(report.is_ok(), "{:?}", report.errors);

    let ran = run(wf, "nodes: {node_1: {text: I approve this plan}}").await;
    assert_eq!(ran.result().status, RunStatus::Paused);
    assert_eq!(ran.ran(), ["node_2", "node_1", "check"]);
    assert_eq!(ran.result().pending[0].node, "ask");
    // The empty user prompt means the previous output (docs/format.md).
    assert_eq!(ran.model.executes()[0].1, "please approve the plan");
}

#[test]
fn agentflow_errors_name_the_node() {
    let err =
        format::load_str(r#"{"nodes": [{"id": "x", "type": "teleport"}], "connections": []}"#, None, None).unwrap_err();
    assert!(err.message.contains("node `x`") && err.message.contains("teleport"), "{err}");
}

fn sweny_fixture(name: &str) -> PathBuf {
    fixtures().join("sweny").join(name)
}

#[test]
fn sweny_fixtures_are_sweny_valid_import_and_validate_cleanly() {
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string(sweny_fixture("workflow.json")).unwrap()).unwrap();
    let sweny_validator = jsonschema::validator_for(&schema).unwrap();
    for name in ["triage.yml", "implement.yml", "seed-content.yml", "file-ops.yml"] {
        let text = std::fs::read_to_string(sweny_fixture(name)).unwrap();
        let raw: Value = serde_yaml::from_str(&text).unwrap();
        assert!(sweny_validator.is_valid(&raw), "{name} is valid by SWEny's own schema");
        let loaded = format::load_file(&sweny_fixture(name), None).unwrap();
        assert_eq!(loaded.format, Format::Sweny, "{name}");
        let report = validate(&loaded.workflow, &Options::default());
        assert!(report.errors.is_empty() && report.warnings.is_empty(), "{name}: {report:?}");
        let raw_nodes = raw["nodes"].as_object().unwrap();
        assert_eq!(loaded.workflow.nodes.len(), raw_nodes.len() + 1, "{name}: every node plus a start");
        for (id, node) in raw_nodes {
            let ours = loaded.workflow.node(id).unwrap();
            assert_eq!(ours.node_type, NodeType::Agent);
            assert_eq!(ours.output_schema.as_ref(), node.get("output"), "{name}/{id}: output schema kept");
            assert_eq!(ours.on_error, Some(switchyard_engine::document::OnError::Continue));
        }
        let raw_edges = raw["edges"].as_array().unwrap();
        for e in raw_edges {
            let ours = loaded.workflow.edges.iter().find(|x| x.from == e["from"] && x.to == e["to"]).unwrap();
            assert_eq!(ours.when.as_deref(), e.get("when").and_then(Value::as_str));
            assert_eq!(ours.max_iterations, e.get("max_iterations").and_then(Value::as_i64));
        }
    }
}

#[tokio::test]
async fn the_sweny_triage_fixture_runs_under_a_script() {
    let wf = format::load_file(&sweny_fixture("triage.yml"), None).unwrap().workflow;
    let script = std::fs::read_to_string(repo().join("crates/engine/tests/scripts/sweny-triage.script.yaml")).unwrap();
    let ran = run(&wf, &script).await;
    assert_eq!(ran.result().status, RunStatus::Completed, "{:?}", ran.result().error);
    assert_eq!(ran.ran(), ["start", "gather", "investigate", "create_issue", "implement", "create_pr", "notify"]);
    assert_eq!(ran.skipped(), ["skip"]);
    assert_eq!(ran.route_count(), 3, "one decision per node with when edges, none elsewhere");
    // The route view after investigate shows only the declared keys of each schema'd node.
    let (_, _, view) = &ran.model.routes()[0];
    let keys: Vec<&String> = view["investigate"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["findings", "novel_count", "highest_severity", "recommendation"]);
    assert!(ran.result().trace.steps.iter().all(|s| s.status != NodeStatus::Failed));
}

#[tokio::test]
async fn the_linear_sweny_fixtures_run_under_scripts() {
    let wf = format::load_file(&sweny_fixture("seed-content.yml"), None).unwrap().workflow;
    let script =
        std::fs::read_to_string(repo().join("crates/engine/tests/scripts/sweny-seed-content.script.yaml")).unwrap();
    let ran = run(&wf, &script).await;
    assert_eq!(ran.ran(), ["start", "audit", "generate", "validate", "report"]);
    assert!(
        ran.result().trace.steps.iter().all(|s| s.status == NodeStatus::Success),
        "every output matches its schema"
    );
    assert_eq!(ran.route_count(), 0);
    for name in ["implement.yml", "file-ops.yml"] {
        let wf = format::load_file(&sweny_fixture(name), None).unwrap().workflow;
        let ran = run(&wf, "").await;
        assert_eq!(ran.result().status, RunStatus::Completed, "{name}");
    }
}

/// `../`s from the working folder up to the root, then `file`: a reference that reaches `file` from wherever the
/// test runs.
fn reaching(file: &Path) -> String {
    let up = std::env::current_dir().unwrap().components().count() - 1;
    format!("{}{}", "../".repeat(up), file.display().to_string().trim_start_matches('/'))
}

#[test]
fn text_that_is_no_file_never_reads_the_files_it_names_and_keeps_each_reference_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("secret.md");
    std::fs::write(&secret, "the secret words").unwrap();
    let reference = reaching(&secret);
    let sweny = format!(
        "id: f\nname: F\nentry: a\nnodes:\n  a: {{name: A, instruction: '{reference}'}}\n  \
         b: {{name: B, instruction: {{file: '{reference}'}}}}\nedges: [{{from: a, to: b}}]\n"
    );
    let experience = format!(
        "name: e\nversion: 0.1.0\nstate: {{schema: {{}}}}\ngraph:\n  nodes:\n    - {{id: a, kind: agent, prompt: '{reference}'}}\n  \
         edges: []\n"
    );
    for (text, nodes) in [(sweny, &["a", "b"][..]), (experience, &["a"][..])] {
        let loaded = format::load_str(&text, None, None).unwrap_or_else(|e| panic!("{e}: {text}"));
        for id in nodes {
            let prompt = loaded.workflow.node(id).unwrap().user_prompt.clone().unwrap();
            assert!(!prompt.contains("secret words") && prompt.contains(&reference), "{prompt}");
            let noted = loaded.notes.iter().any(|n| n.contains(&format!("node `{id}`")) && n.contains("not read"));
            assert!(noted, "{:?}", loaded.notes);
        }
        // A file opened from disk still has its references read next to it, as SWEny and OpenExpertise read them.
        let file = dir.path().join("flow.yaml");
        std::fs::write(&file, text.replace(&reference, "./secret.md")).unwrap();
        let opened = format::load_file(&file, None).unwrap();
        let prompt = opened.workflow.node("a").unwrap().user_prompt.clone().unwrap();
        assert_eq!(prompt, "the secret words");
    }
}

#[test]
fn sweny_instructions_load_from_files_and_errors_are_clear() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("prompts")).unwrap();
    std::fs::write(dir.path().join("prompts/a.md"), "Do the {{thing}}.").unwrap();
    let flow = dir.path().join("flow.yml");
    std::fs::write(&flow, "id: f\nname: F\nentry: a\nnodes:\n  a: {name: A, instruction: ./prompts/a.md}\nedges: []\n")
        .unwrap();
    let loaded = format::load_file(&flow, None).unwrap();
    let prompt = loaded.workflow.node("a").unwrap().user_prompt.clone().unwrap();
    assert_eq!(prompt, "{% raw %}Do the {{thing}}.{% endraw %}", "SWEny text is not a template: kept verbatim");
    assert!(loaded.notes.iter().any(|n| n.contains("raw")));

    std::fs::write(&flow, "id: f\nname: F\nentry: a\nnodes:\n  a: {name: A, instruction: ./missing.md}\nedges: []\n")
        .unwrap();
    // SWEny reads the file when the node runs, so the workflow opens; the note and the prompt say what is missing.
    let loaded = format::load_file(&flow, None).unwrap();
    assert!(loaded.notes.iter().any(|n| n.contains("node `a`") && n.contains("missing.md")), "{:?}", loaded.notes);
    let prompt = loaded.workflow.node("a").unwrap().user_prompt.clone().unwrap();
    assert!(prompt.contains("./missing.md was missing"), "{prompt}");

    std::fs::write(&flow, "id: f\nname: F\nentry: nowhere\nnodes:\n  a: {name: A, instruction: hi}\n").unwrap();
    let err = format::load_file(&flow, None).unwrap_err().to_string();
    assert!(err.contains("`entry: nowhere` names no node"), "{err}");

    std::fs::write(&flow, "id: f\nname: F\nentry: a\nnodes:\n  a: {name: A, instruction: hi}\nedges:\n  - {from: a, to: a, max_iterations: many}\n").unwrap();
    let err = format::load_file(&flow, None).unwrap_err().to_string();
    assert!(err.contains("max_iterations"), "{err}");
}

#[test]
fn sweny_files_its_own_loader_refuses_are_refused_with_a_code_and_the_place() {
    let nodes =
        "nodes:\n  a: {name: A, instruction: hi}\n  b: {name: B, instruction: hi}\n  c: {name: C, instruction: hi}\n";
    let cases = [
        (format!("id: f\nname: F\n{nodes}edges: []\n"), "MISSING_ENTRY", "`entry` must name"),
        (format!("id: f\nname: F\nentry: z\n{nodes}edges: []\n"), "MISSING_ENTRY", "`entry: z` names no node"),
        (
            format!("id: f\nname: F\nentry: a\n{nodes}edges:\n  - {{from: a, to: b}}\n  - {{from: a, to: c}}\n"),
            "AMBIGUOUS_EDGES",
            "node `a` has 2 unconditional edges (to b, c)",
        ),
        (
            format!("id: f\nname: F\nentry: a\n{nodes}edges:\n  - {{from: a, to: q}}\n"),
            "UNKNOWN_EDGE_TARGET",
            "`to: q`",
        ),
        (
            format!("id: f\nname: F\nentry: a\n{nodes}edges:\n  - {{from: q, to: a, when: x}}\n"),
            "UNKNOWN_EDGE_SOURCE",
            "`from: q`",
        ),
        (
            format!("id: f\nname: F\nentry: a\n{nodes}edges:\n  - {{from: a, to: b, max_iterations: 0}}\n"),
            "INVALID_MAX_ITERATIONS",
            "at least 1",
        ),
        (
            format!("id: f\nname: F\nentry: a\n{nodes}edges:\n  - {{from: a, to: b, when: ''}}\n"),
            "INVALID_EDGE",
            "non-empty",
        ),
        (
            "id: f\nname: F\nentry: a\nnodes:\n  a: {instruction: hi}\nedges: []\n".into(),
            "INVALID_NODE",
            "`name` is required",
        ),
        (
            "id: f\nname: F\nentry: a\nnodes:\n  a: {name: A}\nedges: []\n".into(),
            "MISSING_INSTRUCTION",
            "`instruction`",
        ),
        (
            "id: f\nname: F\nentry: a\nnodes:\n  a: {name: A, instruction: hi, verify: {any_tool_called: [t]}}\nedges: []\n".into(),
            "SWENY_LEGACY_VERIFY",
            "node `a` uses SWEny's legacy `verify:` field, renamed `eval:`",
        ),
        (
            "id: f\nname: F\nentry: a\nverify: {any_tool_called: [t]}\nnodes:\n  a: {name: A, instruction: hi}\nedges: []\n".into(),
            "SWENY_LEGACY_VERIFY",
            "the workflow uses",
        ),
        (
            "id: f\nname: F\nentry: a\nnodes:\n  a: {name: A, instruction: hi, eval_policy: weighted}\nedges: []\n".into(),
            "UNSUPPORTED_EVAL_POLICY",
            "eval_policy `weighted`",
        ),
        (
            "id: f\nname: F\nentry: a\nnodes:\n  a: {name: A, instruction: hi, eval: [{name: j, kind: judge, rubric: r, pass_when: 'yes please'}]}\nedges: []\n".into(),
            "SWENY_SCHEMA",
            "eval[0].pass_when `yes please` must be a single token",
        ),
        // What SWEny's schema constrains beyond these: here `id` is required and `output` must be an object.
        (format!("name: F\nentry: a\n{nodes}edges: []\n"), "SWENY_SCHEMA", "\"id\" is a required property"),
        (
            "id: f\nname: F\nentry: a\nnodes:\n  a: {name: A, instruction: hi, output: 3}\nedges: []\n".into(),
            "SWENY_SCHEMA",
            "`/nodes/a/output`",
        ),
    ];
    for (text, code, says) in cases {
        let e = format::load_str(&text, Some(Format::Sweny), Some(Path::new("flow.yml"))).unwrap_err();
        assert_eq!(e.code, code, "{text}");
        assert!(e.to_string().contains(says) && e.to_string().contains("flow.yml"), "{e}");
    }
    // One unconditional edge beside conditional ones is fine.
    let ok = format!(
        "id: f\nname: F\nentry: a\n{nodes}edges:\n  - {{from: a, to: b}}\n  - {{from: a, to: c, when: it failed}}\n"
    );
    assert!(format::load_str(&ok, Some(Format::Sweny), None).is_ok());
}

#[test]
fn formats_are_detected_from_content_and_can_be_forced() {
    let cases = [
        ("switchyard: 1\nname: x\nnodes: []\n", Format::Switchyard),
        (AGENTFLOW, Format::AgentFlow),
        ("entry: a\nnodes:\n  a: {instruction: hi}\n", Format::Sweny),
    ];
    for (text, expected) in cases {
        let value: Value = serde_yaml::from_str(text).unwrap();
        assert_eq!(format::detect(&value).unwrap(), expected);
    }
    let tea: Value = serde_yaml::from_str("name: t\nnodes:\n  - name: a\n    run: return {}\n").unwrap();
    assert_eq!(format::detect(&tea).unwrap(), Format::Tea);
    let oe: Value = serde_yaml::from_str("graph:\n  nodes: []\n").unwrap();
    assert_eq!(format::detect(&oe).unwrap(), Format::OpenExpertise);
    let err =
        format::load_str("entry: a\nnodes:\n  a: {instruction: hi}\n", Some(Format::Switchyard), None).unwrap_err();
    assert!(
        err.message.contains("missing field") || err.message.contains("unknown field"),
        "forcing a format parses as it: {err}"
    );
}

#[tokio::test]
async fn a_long_dead_chain_is_skipped_without_recursion() {
    let mut text = String::from("nodes:\n  - {id: start, type: start}\n  - {id: gate, type: agent}\n");
    let mut edges = String::from("edges:\n  - {from: start, to: gate}\n  - {from: gate, to: n0, if: 'false'}\n");
    for i in 0..10_000 {
        text.push_str(&format!("  - {{id: n{i}, type: agent}}\n"));
        if i > 0 {
            edges.push_str(&format!("  - {{from: n{}, to: n{i}}}\n", i - 1));
        }
    }
    let wf = workflow(&format!("{text}{edges}"));
    let ran = run(&wf, "").await;
    assert_eq!(ran.skipped().len(), 10_000);
}

#[test]
fn the_complete_example_in_docs_format_md_is_valid_and_round_trips() {
    let doc = std::fs::read_to_string(repo().join("docs/format.md")).unwrap();
    let start = doc.find("```yaml\n").expect("docs/format.md has a yaml example") + "```yaml\n".len();
    let end = start + doc[start..].find("```").unwrap();
    let wf = format::load_str(&doc[start..end], None, None).unwrap().workflow;
    let report = validate(&wf, &Options::default());
    assert!(report.is_ok(), "{:?}", report.errors);
    let warnings: Vec<(&str, Option<&str>)> = report.warnings.iter().map(|w| (w.code, w.node.as_deref())).collect();
    assert_eq!(warnings, [("UNCONNECTED_BRANCH", Some("page"))], "as the document says");
    assert_eq!(format::load_str(&format::to_yaml(&wf), None, None).unwrap().workflow, wf);
}

#[test]
fn a_file_that_is_not_a_mapping_is_refused_whichever_format_is_asked_for() {
    for format in [None, Some(Format::AgentFlow), Some(Format::Sweny), Some(Format::Tea), Some(Format::OpenExpertise)] {
        for text in ["just a sentence\n", "- a\n- list\n", "[1, 2]"] {
            let e = format::load_str(text, format, Some(Path::new("flow.yml"))).unwrap_err();
            assert_eq!(e.code, "NOT_A_MAPPING", "{format:?} {text}");
            assert!(e.to_string().contains("flow.yml") && e.to_string().contains("mapping"), "{e}");
        }
    }
}

#[test]
fn a_sweny_nodes_denied_tools_are_kept_as_its_tools_deny_never_dropped() {
    let loaded = format::load_file(&sweny_fixture("triage.yml"), None).unwrap();
    let gather = loaded.workflow.node("gather").unwrap().tools.clone().unwrap();
    for name in ["linear_create_issue", "github_create_pr", "Write", "Edit", "NotebookEdit"] {
        assert!(gather.deny.iter().any(|d| d == name), "gather denies {name}: {:?}", gather.deny);
    }
    // A skill's tool spelt `skill_tool` denies that server's tool, and nothing else of it.
    assert!(gather.denies(Some("linear"), "create_issue"));
    assert!(gather.denies(Some("github"), "create_pr"));
    assert!(!gather.denies(Some("linear"), "search_issues"));
    assert!(!gather.denies(Some("other"), "create_issue"));
    assert!(
        !loaded.notes.iter().any(|n| n.contains("`tools`") || n.contains("disallowed_tools")),
        "{:?}",
        loaded.notes
    );

    // `tools.allow` narrows the skills to the tools it names; a name of no skill is not offered, with a note.
    let allow = "id: a\nname: a\nentry: look\nnodes:\n  look:\n    name: Look\n    instruction: Look around.\n    skills: [linear, github]\n    tools:\n      allow: [linear_search_issues, slack_post]\n      deny: [github_create_pr]\nedges: []\n";
    let loaded = format::load_str(allow, None, None).unwrap();
    let tools = loaded.workflow.node("look").unwrap().tools.clone().unwrap();
    assert_eq!(tools.mcp, ["linear/search_issues"]);
    assert_eq!(tools.deny, ["github_create_pr"]);
    assert!(loaded.notes.iter().any(|n| n.contains("slack_post") && n.contains("not offered")), "{:?}", loaded.notes);
}

#[test]
fn a_sweny_file_that_breaks_sweny_graph_rules_opens_and_validation_shows_each_on_its_node_or_edge() {
    let nodes =
        "nodes:\n  a: {name: A, instruction: hi}\n  b: {name: B, instruction: hi}\n  c: {name: C, instruction: hi}\n";
    // An unreachable node: SWEny refuses the file; here it opens, with a note, and validation names the node.
    let text = format!("id: f\nname: F\nentry: a\n{nodes}edges:\n  - {{from: a, to: b}}\n");
    let loaded = format::load_str(&text, Some(Format::Sweny), Some(Path::new("flow.yml"))).unwrap();
    assert!(
        loaded.notes.iter().any(|n| n.contains("`c` cannot be reached") && n.contains("SWEny refuses")),
        "{:?}",
        loaded.notes
    );
    // Checked as SWEny's file (as `switchyard validate` checks it), that is an error, as SWEny's loader refuses it.
    let report = validate(&loaded.workflow, &Options { format: Some(loaded.format), ..Options::default() });
    let found = report.errors.iter().find(|f| f.code == "UNREACHABLE_NODE").expect("UNREACHABLE_NODE");
    assert_eq!(found.node.as_deref(), Some("c"));
    assert!(found.message.contains("SWEny refuses"), "{}", found.message);
    // In a workflow of its own, an unreachable node only never runs: a warning.
    let report = validate(&loaded.workflow, &Options::default());
    assert!(report.warnings.iter().any(|f| f.code == "UNREACHABLE_NODE" && f.node.as_deref() == Some("c")));
    // An unbounded self-loop: an error on the edge, so the file cannot run until it is bounded.
    let text = format!(
        "id: f\nname: F\nentry: a\n{nodes}edges:\n  - {{from: a, to: a}}\n  - {{from: a, to: b, when: done}}\n  - {{from: b, to: c}}\n"
    );
    let loaded = format::load_str(&text, Some(Format::Sweny), Some(Path::new("flow.yml"))).unwrap();
    let report = validate(&loaded.workflow, &Options::default());
    let found = report.errors.iter().find(|f| f.code == "SELF_LOOP_UNBOUNDED").expect("SELF_LOOP_UNBOUNDED");
    assert_eq!(found.edge.as_deref(), Some("a->a"));
}
