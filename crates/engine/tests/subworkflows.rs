//! Sub-workflows (issue 32, docs/subworkflows.md): a `workflow` node runs another workflow file as a child run.
//! Validation across files here; runs in `subworkflow_runs.rs`.

use std::path::{Path, PathBuf};

use switchyard_engine::format;
use switchyard_engine::validate::{self, Options, Report};

/// Writes `files` (name, text) into a new temporary folder.
fn folder(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

/// Validates the file `name` of `dir` as `switchyard validate` does.
fn check(dir: &Path, name: &str) -> Report {
    let file: PathBuf = dir.join(name);
    let loaded = format::load_file(&file, None).unwrap();
    validate::validate(&loaded.workflow, &Options { file: Some(file), ..Options::default() })
}

fn findings(report: &Report, code: &str) -> Vec<(String, String)> {
    report
        .errors
        .iter()
        .chain(&report.warnings)
        .filter(|f| f.code == code)
        .map(|f| (f.node.clone().unwrap_or_default(), f.message.clone()))
        .collect()
}

const CHILD: &str = "switchyard: 1
name: Summarize
input_schema:
  type: object
  properties:
    text: {type: string}
    tone: {type: string}
  required: [text]
nodes:
  - {id: start, type: start}
  - {id: write, type: agent, user_prompt: 'Summarize {{ input.text }}'}
edges:
  - {from: start, to: write}
";

fn parent(node: &str) -> String {
    format!(
        "switchyard: 1
name: Parent
nodes:
  - {{id: start, type: start}}
  - {{id: fetch, type: agent, user_prompt: Fetch}}
  - {node}
edges:
  - {{from: start, to: fetch}}
  - {{from: fetch, to: summarize}}
"
    )
}

#[test]
fn a_workflow_node_whose_child_exists_and_fits_is_valid() {
    let node = "{id: summarize, type: workflow, workflow: children/summarize.yaml, input: {text: '{{ fetch.text }}'}}";
    let dir = folder(&[("parent.yaml", &parent(node)), ("children/summarize.yaml", CHILD)]);
    let report = check(dir.path(), "parent.yaml");
    assert!(report.errors.is_empty(), "{:?}", report.errors);
}

#[test]
fn a_child_file_that_does_not_exist_is_child_missing_on_the_node() {
    let node = "{id: summarize, type: workflow, workflow: children/nope.yaml, input: {text: x}}";
    let dir = folder(&[("parent.yaml", &parent(node))]);
    let found = findings(&check(dir.path(), "parent.yaml"), "CHILD_MISSING");
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, "summarize");
    assert!(found[0].1.contains("children/nope.yaml"), "{}", found[0].1);
}

#[test]
fn a_workflow_node_without_a_file_is_no_child_workflow() {
    let node = "{id: summarize, type: workflow}";
    let dir = folder(&[("parent.yaml", &parent(node))]);
    assert_eq!(findings(&check(dir.path(), "parent.yaml"), "NO_CHILD_WORKFLOW").len(), 1);
}

#[test]
fn a_child_with_errors_is_child_invalid_naming_the_childs_file_and_node() {
    let broken = "switchyard: 1
name: Broken
nodes:
  - {id: start, type: start}
  - {id: ask, type: agent, message: not an agent's field}
edges:
  - {from: start, to: ask}
";
    let node = "{id: summarize, type: workflow, workflow: broken.yaml}";
    let dir = folder(&[("parent.yaml", &parent(node)), ("broken.yaml", broken)]);
    let found = findings(&check(dir.path(), "parent.yaml"), "CHILD_INVALID");
    assert!(!found.is_empty());
    assert_eq!(found[0].0, "summarize");
    assert!(found[0].1.starts_with("broken.yaml › `ask`:"), "{}", found[0].1);
    assert!(found[0].1.contains("FIELD_NOT_FOR_TYPE"), "{}", found[0].1);
}

#[test]
fn a_child_that_does_not_read_is_child_unreadable() {
    let node = "{id: summarize, type: workflow, workflow: bad.yaml}";
    let dir = folder(&[
        ("parent.yaml", &parent(node)),
        ("bad.yaml", "switchyard: 1\nname: x\nnodes: [{id: a, type: nope}]\n"),
    ]);
    assert_eq!(findings(&check(dir.path(), "parent.yaml"), "CHILD_UNREADABLE").len(), 1);
}

#[test]
fn an_input_that_misses_a_required_field_is_child_input_missing() {
    let node = "{id: summarize, type: workflow, workflow: children/summarize.yaml, input: {tone: dry}}";
    let dir = folder(&[("parent.yaml", &parent(node)), ("children/summarize.yaml", CHILD)]);
    let report = check(dir.path(), "parent.yaml");
    let found = findings(&report, "CHILD_INPUT_MISSING");
    assert_eq!(found.len(), 1, "{:?}", report.errors);
    assert!(found[0].1.contains("`text`"), "{}", found[0].1);
    assert!(findings(&report, "CHILD_INPUT_UNKNOWN").is_empty());
}

#[test]
fn an_input_field_the_childs_schema_does_not_have_is_child_input_unknown() {
    let node = "{id: summarize, type: workflow, workflow: children/summarize.yaml, input: {text: x, txet: y}}";
    let dir = folder(&[("parent.yaml", &parent(node)), ("children/summarize.yaml", CHILD)]);
    let found = findings(&check(dir.path(), "parent.yaml"), "CHILD_INPUT_UNKNOWN");
    assert_eq!(found.len(), 1);
    assert!(found[0].1.contains("`txet`") && found[0].1.contains("text, tone"), "{}", found[0].1);
}

#[test]
fn a_workflow_that_runs_itself_through_a_child_is_child_recursion() {
    let a = "switchyard: 1
name: A
nodes:
  - {id: start, type: start}
  - {id: b, type: workflow, workflow: b.yaml}
edges:
  - {from: start, to: b}
";
    let b = "switchyard: 1
name: B
nodes:
  - {id: start, type: start}
  - {id: a, type: workflow, workflow: a.yaml}
edges:
  - {from: start, to: a}
";
    let dir = folder(&[("a.yaml", a), ("b.yaml", b)]);
    let report = check(dir.path(), "a.yaml");
    // Found in the child (b's node `a`), and said on the parent's node that leads there.
    let found = findings(&report, "CHILD_INVALID");
    assert_eq!(found.len(), 1, "{:?}", report.errors);
    assert!(
        found[0].1.contains("CHILD_RECURSION") && found[0].1.contains("a.yaml › b.yaml › a.yaml"),
        "{}",
        found[0].1
    );
    // A workflow that names itself is found at once.
    let me = "switchyard: 1\nname: Me\nnodes:\n  - {id: start, type: start}\n  - {id: me, type: workflow, workflow: me.yaml}\nedges:\n  - {from: start, to: me}\n";
    let dir = folder(&[("me.yaml", me)]);
    assert_eq!(findings(&check(dir.path(), "me.yaml"), "CHILD_RECURSION").len(), 1);
}

#[test]
fn children_nested_deeper_than_the_limit_are_child_too_deep() {
    let depth = validate::workflows::MAX_DEPTH + 1;
    let mut files = Vec::new();
    for i in 0..depth {
        let body = if i + 1 < depth {
            format!(
                "  - {{id: next, type: workflow, workflow: w{}.yaml}}\nedges:\n  - {{from: start, to: next}}\n",
                i + 1
            )
        } else {
            "  - {id: end, type: agent}\nedges:\n  - {from: start, to: end}\n".to_string()
        };
        files.push((
            format!("w{i}.yaml"),
            format!("switchyard: 1\nname: W{i}\nnodes:\n  - {{id: start, type: start}}\n{body}"),
        ));
    }
    let refs: Vec<(&str, &str)> = files.iter().map(|(n, t)| (n.as_str(), t.as_str())).collect();
    let dir = folder(&refs);
    let report = check(dir.path(), "w0.yaml");
    let all: Vec<&str> = report.errors.iter().map(|f| f.message.as_str()).collect();
    assert!(all.iter().any(|m| m.contains("CHILD_TOO_DEEP")), "{all:?}");
    // One level less is fine.
    let report = check(dir.path(), "w1.yaml");
    assert!(report.errors.is_empty(), "{:?}", report.errors);
}

#[test]
fn a_workflow_node_of_an_unsaved_workflow_is_not_checked_and_says_so() {
    let node = "{id: summarize, type: workflow, workflow: children/summarize.yaml}";
    let wf = format::load_str(&parent(node), None, None).unwrap().workflow;
    let report = validate::validate(&wf, &Options::default());
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    assert_eq!(report.warnings.iter().filter(|f| f.code == "CHILD_NOT_CHECKED").count(), 1);
}

#[test]
fn a_read_of_a_field_the_childs_output_schema_does_not_declare_is_child_output_undeclared() {
    let declaring = CHILD.replace(
        "{id: write, type: agent, user_prompt: 'Summarize {{ input.text }}'}",
        "{id: write, type: agent, user_prompt: 'Summarize {{ input.text }}', output_schema: {type: object, properties: {summary: {type: string}, words: {type: integer}}}}",
    );
    let parent = "switchyard: 1
name: Parent
nodes:
  - {id: start, type: start}
  - {id: summarize, type: workflow, workflow: children/summarize.yaml, input: {text: x}}
  - {id: publish, type: agent, user_prompt: 'Post {{ summarize.summary }} ({{ summarize.words }} words) by {{ summarize.author }}'}
  - {id: short, type: agent, user_prompt: Short}
edges:
  - {from: start, to: summarize}
  - {from: summarize, to: publish}
  - {from: summarize, to: short, if: 'summarize.lenght < 10'}
";
    let dir = folder(&[("parent.yaml", parent), ("children/summarize.yaml", &declaring)]);
    let report = check(dir.path(), "parent.yaml");
    let found = findings(&report, "CHILD_OUTPUT_UNDECLARED");
    assert_eq!(found.len(), 2, "{found:?}");
    assert_eq!(found[0].0, "publish");
    assert!(found[0].1.contains("`{{ summarize.author }}`") && found[0].1.contains("summary, words"), "{}", found[0].1);
    assert!(found[1].1.contains("`summarize.lenght`") && found[1].1.contains("on edge"), "{}", found[1].1);
    assert!(report.is_ok(), "a warning: {:?}", report.errors);

    // A child that declares no output schema is not checked: its output is what its last node gave.
    let dir = folder(&[("parent.yaml", parent), ("children/summarize.yaml", CHILD)]);
    assert!(findings(&check(dir.path(), "parent.yaml"), "CHILD_OUTPUT_UNDECLARED").is_empty());
}

/// A parent whose agent `helper` has these `tools` (YAML flow mapping).
fn asking(tools: &str) -> String {
    format!(
        "switchyard: 1
name: Asker
nodes:
  - {{id: start, type: start}}
  - {{id: helper, type: agent, user_prompt: Help, tools: {tools}}}
edges:
  - {{from: start, to: helper}}
"
    )
}

#[test]
fn an_agents_workflow_tools_are_read_and_checked_as_a_workflow_nodes_child_is() {
    let tools = "{workflows: [children/summarize.yaml, children/nope.yaml, broken.yaml], call_first: summarize}";
    let broken = "switchyard: 1\nname: Broken\nnodes:\n  - {id: start, type: start}\n  - {id: ask, type: agent, message: x}\nedges:\n  - {from: start, to: ask}\n";
    let dir = folder(&[("parent.yaml", &asking(tools)), ("children/summarize.yaml", CHILD), ("broken.yaml", broken)]);
    let report = check(dir.path(), "parent.yaml");
    let missing = findings(&report, "CHILD_MISSING");
    assert_eq!(missing.len(), 1, "{:?}", report.errors);
    assert_eq!(missing[0].0, "helper");
    assert!(missing[0].1.contains("children/nope.yaml"), "{}", missing[0].1);
    let invalid = findings(&report, "CHILD_INVALID");
    assert!(invalid.iter().any(|(node, m)| node == "helper" && m.starts_with("broken.yaml › `ask`:")), "{invalid:?}");
    // `call_first` may name a workflow tool by its name.
    assert!(findings(&report, "CALL_FIRST_NOT_OFFERED").is_empty(), "{:?}", report.errors);

    let dir = folder(&[
        ("parent.yaml", &asking("{workflows: [children/summarize.yaml]}")),
        ("children/summarize.yaml", CHILD),
    ]);
    let report = check(dir.path(), "parent.yaml");
    assert!(report.errors.is_empty(), "{:?}", report.errors);
}

#[test]
fn two_workflow_tools_of_one_name_or_one_named_as_a_subagent_are_tool_name_taken() {
    let again = CHILD.replace("text: {type: string}", "words: {type: string}").replace("required: [text]", "");
    let tools = "{workflows: [children/summarize.yaml, again.yaml]}";
    let dir = folder(&[("parent.yaml", &asking(tools)), ("children/summarize.yaml", CHILD), ("again.yaml", &again)]);
    let found = findings(&check(dir.path(), "parent.yaml"), "TOOL_NAME_TAKEN");
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, "helper");
    assert!(found[0].1.contains("`again.yaml`") && found[0].1.contains("`summarize`"), "{}", found[0].1);

    let parent = "switchyard: 1
name: Asker
nodes:
  - {id: start, type: start}
  - {id: helper, type: agent, user_prompt: Help, tools: {subagents: true, workflows: [children/summarize.yaml]}}
  - {id: summarize, type: agent, user_prompt: Sum}
edges:
  - {from: start, to: helper}
  - {from: helper, to: summarize, handle: subagent}
";
    let dir = folder(&[("parent.yaml", parent), ("children/summarize.yaml", CHILD)]);
    let report = check(dir.path(), "parent.yaml");
    let found = findings(&report, "TOOL_NAME_TAKEN");
    assert_eq!(found.len(), 1, "{:?}", report.errors);
    assert!(found[0].1.contains("the subagent `summarize`"), "{}", found[0].1);
}

#[test]
fn call_first_naming_no_workflow_tool_of_the_agent_is_call_first_not_offered() {
    let tools = "{workflows: [children/summarize.yaml], call_first: summary}";
    let dir = folder(&[("parent.yaml", &asking(tools)), ("children/summarize.yaml", CHILD)]);
    let found = findings(&check(dir.path(), "parent.yaml"), "CALL_FIRST_NOT_OFFERED");
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].1.contains("its workflow tools are summarize"), "{}", found[0].1);
}

#[test]
fn an_agent_that_offers_itself_as_a_workflow_tool_is_child_recursion() {
    let dir = folder(&[("parent.yaml", &asking("{workflows: [parent.yaml]}"))]);
    assert_eq!(findings(&check(dir.path(), "parent.yaml"), "CHILD_RECURSION").len(), 1);
}
