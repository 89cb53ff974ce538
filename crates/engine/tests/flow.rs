//! Joins, dead paths, context accumulation, previous output, events and observers (SEMANTICS §2, §3, §6).

mod support;

use std::sync::Arc;

use serde_json::json;
use support::*;
use switchyard_engine::events::{Event, EventKind};
use switchyard_engine::log::Collector;
use switchyard_engine::result::{NodeStatus, RunStatus};
use switchyard_engine::run::RunOptions;

#[tokio::test]
async fn a_diamond_join_runs_once_after_both_branches() {
    let wf = workflow(
        "nodes:
  - {id: start, type: start}
  - {id: left, type: agent}
  - {id: right, type: agent}
  - {id: join, type: agent}
edges:
  - {from: start, to: left}
  - {from: start, to: right}
  - {from: left, to: join}
  - {from: right, to: join}",
    );
    let ran = run(&wf, "nodes: {left: {text: L, delay_ms: 20}, right: {text: R}}").await;
    assert_eq!(ran.ran().iter().filter(|n| **n == "join").count(), 1);
    assert_eq!(ran.ran().last(), Some(&"join"));
    // After a join, the previous output is the live predecessors' outputs in completion order.
    let (_, prompt, _, _) = ran.model.executes().into_iter().find(|e| e.0 == "join").unwrap();
    assert_eq!(prompt, "R\n\nL");
    assert!(ran.edges().contains(&("start", "left", "parallel")));
}

#[tokio::test]
async fn parallel_branches_run_concurrently() {
    let wf = workflow(
        "nodes:
  - {id: start, type: start}
  - {id: a, type: agent}
  - {id: b, type: agent}
  - {id: c, type: agent}
edges:
  - {from: start, to: a}
  - {from: start, to: b}
  - {from: start, to: c}",
    );
    let ran =
        run(&wf, "nodes: {a: {delay_ms: 30, text: a}, b: {delay_ms: 30, text: b}, c: {delay_ms: 30, text: c}}").await;
    // All three enter before any of them exits.
    let types = ran.types();
    let first_exit = types.iter().enumerate().filter(|(_, t)| **t == "node:exit").nth(1).unwrap().0;
    let enters_before = types[..first_exit].iter().filter(|t| **t == "node:enter").count();
    assert_eq!(enters_before, 4, "start + a, b, c entered before the first branch finished: {types:?}");
}

#[tokio::test]
async fn a_concurrency_limit_serializes_branches() {
    let wf = workflow(
        "defaults: {concurrency: 1}
nodes:
  - {id: start, type: start}
  - {id: a, type: agent}
  - {id: b, type: agent}
edges:
  - {from: start, to: a}
  - {from: start, to: b}",
    );
    let ran = run(&wf, "nodes: {a: {delay_ms: 10, text: a}, b: {text: b}}").await;
    let order: Vec<String> = ran
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::NodeEnter { node, .. } => Some(format!("enter {node}")),
            EventKind::NodeExit { node, .. } => Some(format!("exit {node}")),
            _ => None,
        })
        .collect();
    assert_eq!(order, ["enter start", "exit start", "enter a", "exit a", "enter b", "exit b"]);
}

/// OpenExpertise's issue-triage shape: a gated node, a skip cascade, and a bypass edge that keeps the end alive.
const CASCADE: &str = "nodes:
  - {id: start, type: start}
  - {id: classify, type: agent}
  - {id: search_similar, type: agent}
  - {id: dedup, type: agent}
  - {id: comment, type: agent}
  - {id: assign_labels, type: agent}
edges:
  - {from: start, to: classify}
  - {from: classify, to: search_similar}
  - {from: search_similar, to: dedup, if: 'search_similar.similar_issues | length > 0'}
  - {from: dedup, to: comment}
  - {from: comment, to: assign_labels}
  - {from: classify, to: assign_labels}";

#[tokio::test]
async fn the_skip_cascade_stops_at_a_bypass_edge() {
    let ran = run(&workflow(CASCADE), "nodes: {search_similar: {data: {similar_issues: []}}}").await;
    assert_eq!(ran.result().status, RunStatus::Completed);
    assert_eq!(ran.skipped(), ["dedup", "comment"], "the skip cascades through dedup's successors");
    assert!(ran.ran().contains(&"assign_labels"), "the bypass edge keeps assign_labels running");
    assert_eq!(ran.result().node("dedup").unwrap().status, NodeStatus::Skipped);

    let ran = run(&workflow(CASCADE), "nodes: {search_similar: {data: {similar_issues: [7]}}}").await;
    assert!(ran.skipped().is_empty());
    assert_eq!(ran.ran().last(), Some(&"assign_labels"), "the join waits for the longer path");
    assert_eq!(ran.ran().iter().filter(|n| **n == "assign_labels").count(), 1);
}

#[tokio::test]
async fn a_join_whose_inputs_are_all_dead_is_skipped() {
    let wf = workflow(
        "nodes:
  - {id: start, type: start}
  - {id: gate, type: agent}
  - {id: a, type: agent}
  - {id: b, type: agent}
  - {id: join, type: agent}
edges:
  - {from: start, to: gate}
  - {from: gate, to: a, if: 'false'}
  - {from: gate, to: b, if: 'false'}
  - {from: a, to: join}
  - {from: b, to: join}",
    );
    let ran = run(&wf, "").await;
    assert_eq!(ran.skipped(), ["a", "b", "join"]);
    let skipped_events = ran.events.iter().filter(|e| matches!(e.kind, EventKind::NodeSkipped { .. })).count();
    assert_eq!(skipped_events, 3);
}

#[tokio::test]
async fn each_node_sees_exactly_the_earlier_results_and_the_latest_iteration_wins() {
    let wf = workflow(
        "nodes:
  - {id: start, type: start}
  - {id: draft, type: agent}
  - {id: review, type: agent, user_prompt: 'review draft v{{ draft.version }}'}
  - {id: publish, type: agent, user_prompt: '{{ draft.version }}|{{ state.version }}|{{ input.topic }}'}
edges:
  - {from: start, to: draft}
  - {from: draft, to: review}
  - {from: review, to: draft, when: needs another draft, max_iterations: 2}
  - {from: review, to: publish, when: good}",
    );
    let options = RunOptions { input: Some(json!({"topic": "rust"})), ..Default::default() };
    let ran = run_with(
        &wf,
        "nodes: {draft: [{data: {version: 1}}, {data: {version: 2}}]}\nroutes: {review: [draft, publish]}",
        options,
    )
    .await;
    let executes = ran.model.executes();
    let keys = |node: &str, nth: usize| -> Vec<String> {
        let (_, _, ctx, _) = executes.iter().filter(|e| e.0 == node).nth(nth).unwrap();
        let mut keys: Vec<String> = ctx.as_object().unwrap().keys().cloned().collect();
        keys.sort();
        keys
    };
    assert_eq!(keys("draft", 0), ["input", "start"]);
    assert_eq!(keys("review", 0), ["draft", "input", "start"]);
    assert_eq!(keys("draft", 1), ["draft", "input", "review", "start"]);
    let prompts: Vec<&str> = executes.iter().filter(|e| e.0 == "review").map(|e| e.1.as_str()).collect();
    assert_eq!(prompts, ["review draft v1", "review draft v2"], "the latest iteration wins");
    let (_, publish, _, _) = executes.iter().find(|e| e.0 == "publish").unwrap();
    assert_eq!(publish, "2|2|rust");
}

#[tokio::test]
async fn previous_output_is_text_or_json_and_an_empty_prompt_means_previous_output() {
    let wf = workflow(
        "nodes:
  - {id: start, type: start}
  - {id: a, type: agent}
  - {id: b, type: agent, user_prompt: 'got: {{PREVIOUS_OUTPUT}}'}
  - {id: c, type: agent}
edges:
  - {from: start, to: a}
  - {from: a, to: b}
  - {from: b, to: c}",
    );
    let options = RunOptions { input: Some(json!("hello")), ..Default::default() };
    let ran = run_with(&wf, "nodes: {a: {data: {n: 1}}, b: {text: plain}}", options).await;
    let prompts: Vec<(String, String)> = ran.model.executes().into_iter().map(|e| (e.0, e.1)).collect();
    assert_eq!(
        prompts,
        [("a".into(), "hello".into()), ("b".into(), "got: {\"n\":1}".into()), ("c".into(), "plain".into())]
    );
    assert_eq!(ran.data("start"), json!({"text": "hello"}));
}

#[tokio::test]
async fn the_start_node_outputs_input_or_its_initial_input() {
    let wf = workflow(
        "nodes:
  - {id: start, type: start, initial_input: from the canvas}",
    );
    assert_eq!(run(&wf, "").await.data("start"), json!({"text": "from the canvas"}));
    let ran = run_with(&wf, "", RunOptions { input: Some(json!({"a": 1})), ..Default::default() }).await;
    assert_eq!(ran.data("start"), json!({"a": 1}));
    let bare = workflow("nodes:\n  - {id: start, type: start}");
    assert_eq!(run(&bare, "").await.data("start"), json!({"text": ""}));
}

#[tokio::test]
async fn events_come_in_the_required_order_with_sequence_and_run_id() {
    let wf = workflow(
        "nodes:
  - {id: start, type: start}
  - {id: parent, type: agent, tools: {subagents: true}}
  - {id: helper, type: agent, description: Looks things up}
edges:
  - {from: start, to: parent}
  - {from: parent, to: helper, handle: subagent}",
    );
    let ran = run(
        &wf,
        "nodes:
  parent: {tool_calls: [{tool: helper, input: {message: find X}}], text: plan ready}
  helper: {text: X is 42}",
    )
    .await;
    let types = ran.types();
    assert_eq!(types.first(), Some(&"workflow:start"));
    assert_eq!(types.last(), Some(&"workflow:end"));
    for (i, e) in ran.events.iter().enumerate() {
        assert_eq!(e.seq, i as u64 + 1, "seq increases by one");
        assert_eq!(e.run, ran.result().run_id);
        assert!(chrono::DateTime::parse_from_rfc3339(&e.ts).is_ok(), "timestamp {}", e.ts);
    }
    // Per node: enter, then tool call/result and progress, then exit, then its route.
    let parent: Vec<&str> = ran
        .events
        .iter()
        .filter(|e| match &e.kind {
            EventKind::NodeEnter { node, .. }
            | EventKind::NodeExit { node, .. }
            | EventKind::NodeProgress { node, .. } => node == "parent",
            EventKind::ToolCall { node, .. } | EventKind::ToolResult { node, .. } => node == "parent",
            _ => false,
        })
        .map(|e| e.kind.type_name())
        .collect();
    assert_eq!(parent, ["node:enter", "tool:call", "tool:result", "node:progress", "node:exit"]);
    let start_exit = types.iter().position(|t| *t == "node:exit").unwrap();
    assert_eq!(types[start_exit + 1], "route", "route follows its node's exit");
}

#[tokio::test]
async fn a_failing_or_panicking_observer_never_stops_a_run() {
    let wf = workflow(
        "nodes:
  - {id: start, type: start}
  - {id: a, type: agent}
edges:
  - {from: start, to: a}",
    );
    let script = script("nodes: {a: {text: fine}}");
    let model = AskedModel::new(script.clone());
    let failing = |_: &Event| -> Result<(), String> { Err("disk full".into()) };
    let panicking = |e: &Event| -> Result<(), String> {
        if e.kind.type_name() == "node:exit" {
            panic!("observer bug");
        }
        Ok(())
    };
    let collector = Collector::default();
    let observers: Vec<Arc<dyn switchyard_engine::log::Observer>> =
        vec![Arc::new(failing), Arc::new(panicking), Arc::new(collector.clone())];
    let outcome = run_to_pause(Arc::new(wf), RunOptions::default(), runtime(script, model, observers)).await;
    assert_eq!(outcome.result.status, RunStatus::Completed);
    assert_eq!(outcome.result.node("a").unwrap().data, json!({"text": "fine"}));
    assert_eq!(collector.events().last().unwrap().kind.type_name(), "workflow:end", "later observers still see all");
}

#[tokio::test]
async fn the_trace_records_steps_iterations_and_edge_reasons() {
    let wf = workflow(
        "nodes:
  - {id: start, type: start}
  - {id: review, type: agent}
  - {id: fix, type: agent}
  - {id: done, type: agent}
edges:
  - {from: start, to: review}
  - {from: review, to: fix, when: problems found, max_iterations: 3}
  - {from: review, to: done, when: passed}
  - {from: fix, to: review}",
    );
    let ran = run(&wf, "routes: {review: [fix, done]}").await;
    let steps: Vec<(&str, u32)> = ran.result().trace.steps.iter().map(|s| (s.node.as_str(), s.iteration)).collect();
    assert_eq!(steps, [("start", 1), ("review", 1), ("fix", 1), ("review", 2), ("done", 1)]);
    assert_eq!(
        ran.edges(),
        [
            ("start", "review", "only path"),
            ("review", "fix", "problems found"),
            ("fix", "review", "only path"),
            ("review", "done", "passed")
        ]
    );
    assert!(ran.skipped().is_empty(), "fix ran, so it is not reported skipped when the loop exits");
    assert_eq!(ran.result().node("fix").unwrap().status, NodeStatus::Success);
}

#[tokio::test]
async fn a_join_does_not_wait_for_an_input_from_a_node_nothing_reaches() {
    let wf = workflow(
        "nodes:
  - {id: start, type: start}
  - {id: a, type: agent}
  - {id: orphan, type: agent}
  - {id: join, type: agent}
edges:
  - {from: start, to: a}
  - {from: a, to: join}
  - {from: orphan, to: join}",
    );
    let ran = run(&wf, "").await;
    assert_eq!(ran.ran(), ["start", "a", "join"]);
    assert!(ran.result().node("orphan").is_none(), "an unreachable node neither runs nor is skipped");
}

#[tokio::test]
async fn a_tool_the_agent_denies_is_not_offered_and_a_call_of_it_is_refused() {
    let wf = workflow(
        "nodes:
  - {id: start, type: start}
  - {id: parent, type: agent, tools: {subagents: true, deny: [writer]}}
  - {id: reader, type: agent, description: Reads things}
  - {id: writer, type: agent, description: Writes things}
edges:
  - {from: start, to: parent}
  - {from: parent, to: reader, handle: subagent}
  - {from: parent, to: writer, handle: subagent}",
    );
    let ran = run(
        &wf,
        "nodes:
  parent: {tool_calls: [{tool: writer, input: {message: delete it}}, {tool: reader, input: {message: read it}}], text: done}
  reader: {text: read}
  writer: {text: deleted}",
    )
    .await;
    assert_eq!(ran.result().status, RunStatus::Completed, "{:?}", ran.result().error);
    let calls = &ran.result().node("parent").unwrap().tool_calls;
    assert!(calls[0].error.as_deref().is_some_and(|e| e.contains("tools.deny")), "{calls:?}");
    assert_eq!(calls[1].output, Some(json!("read")), "{calls:?}");
    assert!(!ran.ran().contains(&"writer"), "the denied subagent never ran: {:?}", ran.ran());
}

#[tokio::test]
async fn a_call_of_a_denied_tool_whose_server_is_not_configured_is_refused_by_tools_deny() {
    let wf = workflow(
        "nodes:
  - {id: start, type: start}
  - {id: a, type: agent, tools: {deny: [github/create_issue]}}
edges:
  - {from: start, to: a}",
    );
    let ran =
        run(&wf, "nodes:\n  a: {tool_calls: [{tool: github__create_issue, input: {title: x}}], text: done}").await;
    assert_eq!(ran.result().status, RunStatus::Completed, "{:?}", ran.result().error);
    let calls = &ran.result().node("a").unwrap().tool_calls;
    let error = calls[0].error.as_deref().unwrap_or_default();
    assert!(error.contains("may not call `github__create_issue`: its tools.deny names it"), "{calls:?}");
}
