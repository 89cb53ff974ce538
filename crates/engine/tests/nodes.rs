//! Node types and per-node behaviour: if, for_each, pinned, script, failure handling, retries, output schemas,
//! subagents (SEMANTICS §1, §2, §4, §5).

mod support;

use serde_json::{json, Value};
use support::*;
use switchyard_engine::events::EventKind;
use switchyard_engine::result::{NodeStatus, RunStatus};
use switchyard_engine::run::RunOptions;

fn if_workflow(conditions: &str) -> switchyard_engine::Workflow {
    let n = conditions.matches("operator").count();
    let mut edges = String::new();
    let mut nodes = String::new();
    for i in 0..n {
        nodes.push_str(&format!("  - {{id: c{i}, type: agent}}\n"));
        edges.push_str(&format!("  - {{from: check, to: c{i}, handle: condition-{i}}}\n"));
    }
    workflow(&format!(
        "nodes:
  - {{id: start, type: start}}
  - {{id: check, type: if, conditions: {conditions}}}
  - {{id: otherwise, type: agent}}
{nodes}edges:
  - {{from: start, to: check}}
  - {{from: check, to: otherwise, handle: 'false'}}
{edges}"
    ))
}

#[tokio::test]
async fn if_nodes_take_the_first_true_condition_or_false_and_name_the_branch_as_its_handle_is_named() {
    // (input, conditions, expected node, expected branch label) — as AgentFlow compares: stringified, lowercased; value trimmed,
    // lowercased; an empty value never matches; first match wins.
    let cases: &[(Value, &str, &str, &str)] = &[
        (json!("Approved by QA"), "[{operator: contains, value: ' APPROVED '}]", "c0", "APPROVED"),
        (json!("approved"), "[{operator: equal, value: Approved}]", "c0", "Approved"),
        (json!("approved by qa"), "[{operator: equal, value: approved}]", "otherwise", "else"),
        (json!("anything"), "[{operator: contains, value: ''}]", "otherwise", "else"),
        (json!("anything"), "[{operator: equal, value: '  '}]", "otherwise", "else"),
        (
            json!("red green"),
            "[{operator: contains, value: blue}, {operator: contains, value: green}, {operator: contains, value: red}]",
            "c1",
            "green",
        ),
        (json!({"score": 7}), "[{operator: contains, value: '\"score\":7'}]", "c0", "\"score\":7"),
        (json!({"score": 7}), "[{operator: expression, value: 'state.score > 5'}]", "c0", "state.score > 5"),
        (
            json!({"score": 3}),
            "[{operator: expression, value: 'state.score > 5'}, {operator: expression, value: 'state.missing'}]",
            "otherwise",
            "else",
        ),
    ];
    for (input, conditions, expected, label) in cases {
        let wf = if_workflow(conditions);
        let ran = run_with(&wf, "", RunOptions { input: Some(input.clone()), ..Default::default() }).await;
        assert_eq!(ran.ran().last(), Some(expected), "input {input}, conditions {conditions}");
        assert_eq!(ran.route_count(), 0);
        let data = ran.data("check");
        assert_eq!(data["label"], *label, "input {input}, conditions {conditions}: {data}");
        // The label is the one the handle it left by has.
        let check = wf.nodes.iter().find(|n| n.id == "check").unwrap();
        let handles = switchyard_engine::node_types::source_handles(check);
        let at = handles.iter().position(|(id, _)| data["branch"] == *id).expect("the branch is a handle");
        assert_eq!(switchyard_engine::node_types::source_handle_label(check, at).as_deref(), Some(*label));
    }
}

#[tokio::test]
async fn the_legacy_true_handle_is_the_first_condition() {
    let wf = workflow(
        "nodes:
  - {id: start, type: start}
  - {id: check, type: if, conditions: [{operator: contains, value: yes}]}
  - {id: yes, type: agent}
  - {id: no, type: agent}
edges:
  - {from: start, to: check}
  - {from: check, to: yes, handle: 'true'}
  - {from: check, to: no, handle: 'false'}",
    );
    let ran = run_with(&wf, "", RunOptions { input: Some(json!("yes please")), ..Default::default() }).await;
    assert_eq!(ran.ran(), ["start", "check", "yes"]);
    assert_eq!(ran.edges()[1], ("check", "yes", "contains \"yes\""));
}

#[tokio::test]
async fn for_each_runs_per_item_with_item_and_index_and_collects_in_order() {
    let wf = workflow(
        "nodes:
  - {id: start, type: start}
  - {id: fan, type: agent, user_prompt: '{{ index }}:{{ item.key }}', for_each: {items: input.dims, concurrency: 2}}
edges:
  - {from: start, to: fan}",
    );
    let input = json!({"dims": [{"key": "a"}, {"key": "b"}, {"key": "c"}]});
    let ran = run_with(
        &wf,
        "nodes: {fan: [{text: A, delay_ms: 30}, {text: B}, {text: C}]}",
        RunOptions { input: Some(input), ..Default::default() },
    )
    .await;
    let mut prompts: Vec<String> = ran.model.executes().into_iter().map(|e| e.1).collect();
    prompts.sort();
    assert_eq!(prompts, ["0:a", "1:b", "2:c"]);
    let items = ran.data("fan")["items"].as_array().unwrap().len();
    assert_eq!(items, 3);
    assert_eq!(ran.result().trace.steps.iter().filter(|s| s.node == "fan").count(), 1, "one step for the node");
}

#[tokio::test]
async fn for_each_over_something_that_is_not_a_list_fails_the_node() {
    let wf = workflow(
        "nodes:
  - {id: start, type: start}
  - {id: fan, type: agent, for_each: {items: input.n}}
edges:
  - {from: start, to: fan}",
    );
    let ran = run_with(&wf, "", RunOptions { input: Some(json!({"n": 3})), ..Default::default() }).await;
    assert_eq!(ran.result().status, RunStatus::Failed);
    let error = ran.result().node("fan").unwrap().error.unwrap();
    assert!(error.contains("not a list"), "{error}");
}

#[tokio::test]
async fn pinned_output_replaces_execution() {
    let wf = workflow(
        "nodes:
  - {id: start, type: start}
  - {id: expensive, type: agent, pinned: {answer: 42}}
  - {id: code, type: script, language: python, code: 'return 1', pinned: {rows: 3}}
edges:
  - {from: start, to: expensive}
  - {from: expensive, to: code}",
    );
    let ran = run(&wf, "").await;
    assert_eq!(ran.data("expensive"), json!({"answer": 42}));
    assert_eq!(ran.data("code"), json!({"rows": 3}));
    assert!(ran.model.executes().is_empty(), "a pinned node never calls the model");
}

#[tokio::test]
async fn a_script_node_runs_from_the_script_file_or_without_consent_fails_saying_consent_is_needed() {
    let wf = workflow(
        "nodes:
  - {id: start, type: start}
  - {id: load, type: script, language: python, code: 'return {\"rows\": [1, 2]}'}
edges:
  - {from: start, to: load}",
    );
    let ran = run(&wf, "nodes: {load: {data: {rows: [1, 2]}}}").await;
    assert_eq!(ran.data("load"), json!({"rows": [1, 2]}));
    let ran = run(&wf, "").await;
    assert_eq!(ran.result().status, RunStatus::Failed);
    let result = ran.result().node("load").unwrap();
    let error = result.error.unwrap();
    assert!(error.contains("consent"), "{error}");
    assert_eq!(result.error_code.as_deref(), Some("CODE_NEEDS_CONSENT"), "each front end says how to give it");
}

const FLAKY: &str = "nodes:
  - {id: start, type: start}
  - {id: flaky, type: agent}
  - {id: after, type: agent}
  - {id: handler, type: agent}
edges:
  - {from: start, to: flaky}
  - {from: flaky, to: after}";

#[tokio::test]
async fn a_failure_stops_the_run_unless_error_edges_or_on_error_continue() {
    let script = "nodes: {flaky: {status: failed, error: upstream timeout}}";
    // Default: the run stops and says which node failed.
    let wf = workflow(&FLAKY.replace("  - {id: handler, type: agent}\n", ""));
    let ran = run(&wf, script).await;
    assert_eq!(ran.result().status, RunStatus::Failed);
    assert!(ran.result().error.as_deref().unwrap().contains("`flaky` failed: upstream timeout"));
    assert!(ran.result().node("after").is_none());
    assert_eq!(ran.result().trace.steps[1].status, NodeStatus::Failed);

    // on_error: continue routes on as if it had succeeded.
    let wf = workflow(
        &FLAKY
            .replace("{id: flaky, type: agent}", "{id: flaky, type: agent, on_error: continue}")
            .replace("  - {id: handler, type: agent}\n", ""),
    );
    let ran = run(&wf, script).await;
    assert_eq!(ran.result().status, RunStatus::Completed);
    assert_eq!(ran.ran(), ["start", "after"]);
    assert_eq!(ran.data("flaky"), json!({"error": "upstream timeout"}));

    // error edges are followed with the failure data; the output edge is dead.
    let wf = workflow(&format!("{FLAKY}\n  - {{from: flaky, to: handler, handle: error}}"));
    let ran = run(&wf, script).await;
    assert_eq!(ran.result().status, RunStatus::Completed);
    assert_eq!(ran.ran(), ["start", "handler"]);
    assert_eq!(ran.skipped(), ["after"]);
    let (_, prompt, _, _) = ran.model.executes().into_iter().find(|e| e.0 == "handler").unwrap();
    assert_eq!(prompt, r#"{"error":"upstream timeout"}"#);
}

#[tokio::test]
async fn retries_try_again_and_say_so_in_events() {
    let wf = workflow(
        &FLAKY
            .replace("{id: flaky, type: agent}", "{id: flaky, type: agent, retry: {max: 2}}")
            .replace("  - {id: handler, type: agent}\n", ""),
    );
    let ran =
        run(&wf, "nodes: {flaky: [{status: failed, error: '503'}, {status: failed, error: '503'}, {text: ok}]}").await;
    assert_eq!(ran.result().status, RunStatus::Completed);
    assert_eq!(ran.data("flaky"), json!({"text": "ok"}));
    let retries = ran
        .events
        .iter()
        .filter(|e| matches!(&e.kind, EventKind::Log { log_type, content, .. } if log_type == "llm_error" && content.as_str().unwrap().contains("retrying")))
        .count();
    assert_eq!(retries, 2);
    // Out of retries: fails.
    let ran = run(&wf, "nodes: {flaky: {status: failed, error: '503'}}").await;
    assert_eq!(ran.result().status, RunStatus::Failed);
    assert_eq!(ran.model.executes().len(), 3);
}

#[tokio::test]
async fn output_schemas_validate_with_one_repair_turn() {
    let wf = workflow(
        "nodes:
  - {id: start, type: start}
  - {id: classify, type: agent, output_schema: {type: object, properties: {label: {type: string, enum: [bug, feature]}}, required: [label]}}
edges:
  - {from: start, to: classify}",
    );
    let ran = run(&wf, "nodes: {classify: {data: {label: bug}}}").await;
    assert_eq!(ran.data("classify"), json!({"label": "bug"}));

    let ran = run(&wf, "nodes: {classify: [{data: {label: question}}, {data: {label: feature}}]}").await;
    assert_eq!(ran.data("classify"), json!({"label": "feature"}), "repaired on the second turn");
    assert!(ran.warnings().iter().any(|w| w.contains("repair")));

    let ran = run(&wf, "nodes: {classify: {text: 'not json at all'}}").await;
    assert_eq!(ran.result().status, RunStatus::Failed);
    let error = ran.result().node("classify").unwrap().error.unwrap();
    assert!(error.contains("output schema") && error.contains("repair"), "{error}");
    assert_eq!(ran.model.executes().len(), 2, "one repair turn, no more");
}

#[tokio::test]
async fn a_template_that_fails_to_render_fails_the_node() {
    let wf = workflow(
        "nodes:
  - {id: start, type: start}
  - {id: a, type: agent, user_prompt: '{{ input.x | no_such_filter }}'}
edges:
  - {from: start, to: a}",
    );
    let ran = run(&wf, "").await;
    assert_eq!(ran.result().status, RunStatus::Failed);
    let error = ran.result().node("a").unwrap().error.unwrap();
    assert!(error.contains("user_prompt") && error.contains("no_such_filter"), "{error}");
}

#[tokio::test]
async fn subagents_run_as_tools_with_their_events_and_never_in_the_main_flow() {
    let wf = workflow(
        "nodes:
  - {id: start, type: start}
  - {id: planner, type: agent, tools: {subagents: true}}
  - {id: researcher, type: agent, description: Finds facts, tools: {subagents: true}, user_prompt: 'research: {{ PREVIOUS_OUTPUT }}'}
  - {id: librarian, type: agent}
edges:
  - {from: start, to: planner}
  - {from: planner, to: researcher, handle: subagent}
  - {from: researcher, to: librarian, handle: subagent}",
    );
    let ran = run(
        &wf,
        "nodes:
  planner: {tool_calls: [{tool: researcher, input: {message: find X}}, {tool: nobody, input: {}}], text: plan ready}
  researcher: {tool_calls: [{tool: librarian, input: {message: shelf 3}}], text: X is 42}
  librarian: {text: book found}",
    )
    .await;
    assert_eq!(ran.result().status, RunStatus::Completed);
    assert_eq!(ran.ran(), ["start", "planner"], "children never run in the main flow");
    let planner = ran.result().node("planner").unwrap();
    assert_eq!(planner.data, json!({"text": "plan ready"}));
    let tools: Vec<(&str, Option<&Value>, bool)> =
        planner.tool_calls.iter().map(|c| (c.tool.as_str(), c.output.as_ref(), c.error.is_some())).collect();
    assert_eq!(tools.len(), 2, "only the planner's own calls: {tools:?}");
    assert_eq!(tools[0], ("researcher", Some(&json!("X is 42")), false));
    assert_eq!((tools[1].0, tools[1].2), ("nobody", true), "an unknown tool is an error result, not a failure");
    let (_, prompt, _, _) = ran.model.executes().into_iter().find(|e| e.0 == "researcher").unwrap();
    assert_eq!(prompt, "research: find X");
    let logs: Vec<Value> = ran
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Log { log_type, content, .. } if log_type.starts_with("subagent_call") => {
                Some(json!({"type": log_type, "child": content["child"], "depth": content["depth"], "parent": content["parent"], "hasParentCall": !content["parentCallId"].is_null()}))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        logs,
        [
            json!({"type": "subagent_call_start", "child": "researcher", "depth": 1, "parent": "planner", "hasParentCall": false}),
            json!({"type": "subagent_call_start", "child": "librarian", "depth": 2, "parent": "researcher", "hasParentCall": true}),
            json!({"type": "subagent_call_end", "child": "librarian", "depth": 2, "parent": "researcher", "hasParentCall": true}),
            json!({"type": "subagent_call_end", "child": "researcher", "depth": 1, "parent": "planner", "hasParentCall": false}),
        ]
    );
}

#[tokio::test]
async fn a_failing_subagent_returns_an_error_to_the_model_and_the_parent_carries_on() {
    let wf = workflow(
        "nodes:
  - {id: start, type: start}
  - {id: planner, type: agent, tools: {subagents: true}}
  - {id: helper, type: agent}
edges:
  - {from: start, to: planner}
  - {from: planner, to: helper, handle: subagent}",
    );
    let ran = run(&wf, "nodes: {planner: {tool_calls: [{tool: helper, input: {message: x}}], text: done anyway}, helper: {status: failed, error: boom}}").await;
    assert_eq!(ran.result().status, RunStatus::Completed);
    let call = &ran.result().node("planner").unwrap().tool_calls[0];
    assert_eq!(call.error.as_deref(), Some("boom"));
    assert!(call.output.is_none());
    assert!(ran
        .events
        .iter()
        .any(|e| matches!(&e.kind, EventKind::Log { log_type, .. } if log_type == "subagent_call_error")));
}
