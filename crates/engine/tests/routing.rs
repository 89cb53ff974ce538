//! SEMANTICS §3 routing, and the SWEny seed cases (000, 003).

mod support;

use support::*;
use switchyard_engine::model::DEFAULT_CHOICE;
use switchyard_engine::result::RunStatus;

#[tokio::test]
async fn a_single_unconditional_edge_never_calls_the_model_to_route() {
    let wf = workflow(
        "nodes:
  - {id: start, type: start}
  - {id: gather, type: agent}
  - {id: investigate, type: agent}
  - {id: notify, type: agent}
edges:
  - {from: start, to: gather}
  - {from: gather, to: investigate}
  - {from: investigate, to: notify}",
    );
    let ran = run(&wf, "").await;
    assert_eq!(ran.result().status, RunStatus::Completed);
    assert_eq!(ran.ran(), ["start", "gather", "investigate", "notify"]);
    assert_eq!(ran.route_count(), 0);
    assert!(ran.edges().iter().all(|(_, _, reason)| *reason == "only path"));
}

#[tokio::test]
async fn a_node_with_no_live_edge_is_terminal() {
    let wf = workflow(
        "nodes:
  - {id: start, type: start}
  - {id: only, type: agent}
edges:
  - {from: start, to: only}",
    );
    let ran = run(&wf, "nodes: {only: {text: done}}").await;
    assert_eq!(ran.result().status, RunStatus::Completed);
    assert_eq!(ran.ran(), ["start", "only"]);
    assert_eq!(ran.edges(), [("start", "only", "only path")]);
}

const TRIAGE: &str = "nodes:
  - {id: start, type: start}
  - {id: investigate, type: agent}
  - {id: create_issue, type: agent}
  - {id: skip, type: agent}
  - {id: notify, type: agent}
edges:
  - {from: start, to: investigate}
  - {from: investigate, to: create_issue, when: novel_count is greater than 0 AND highest_severity is medium or higher}
  - {from: investigate, to: skip, when: 'novel_count is 0, OR highest_severity is low'}
  - {from: create_issue, to: notify}
  - {from: skip, to: notify}";

#[tokio::test]
async fn conditional_routing_runs_only_the_chosen_branch_and_converges() {
    // The seed-000 "conditional branching" example, both ways.
    for (choice, taken, not_taken) in [("create_issue", "create_issue", "skip"), ("skip", "skip", "create_issue")] {
        let ran = run(&workflow(TRIAGE), &format!("routes: {{investigate: {choice}}}")).await;
        assert_eq!(ran.ran(), ["start", "investigate", taken, "notify"], "choice {choice}");
        assert_eq!(ran.skipped(), [not_taken]);
        let routes = ran.model.routes();
        assert_eq!(routes.len(), 1);
        let ids: Vec<&str> = routes[0].1.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["create_issue", "skip"], "no default choice without an unconditional edge");
        let (_, _, reason) = ran.edges()[1];
        assert!(reason.starts_with("novel_count is"), "reason is the when text: {reason}");
    }
}

#[tokio::test]
async fn asking_the_model_to_route_is_announced_with_the_choices_before_the_route_it_chose() {
    use switchyard_engine::events::EventKind;
    let ran = run(&workflow(TRIAGE), "routes: {investigate: skip}").await;
    let at = |test: &dyn Fn(&EventKind) -> bool| ran.events.iter().position(|e| test(&e.kind)).unwrap();
    let choosing = at(&|k| matches!(k, EventKind::RouteChoosing { node, .. } if node == "investigate"));
    let exit = at(&|k| matches!(k, EventKind::NodeExit { node, .. } if node == "investigate"));
    let route = at(&|k| matches!(k, EventKind::Route { from, .. } if from == "investigate"));
    assert!(exit < choosing && choosing < route, "exit {exit}, choosing {choosing}, route {route}");
    let EventKind::RouteChoosing { choices, .. } = &ran.events[choosing].kind else { unreachable!() };
    assert_eq!(choices, &["create_issue", "skip"]);
    let json = serde_json::to_value(&ran.events[choosing]).unwrap();
    assert_eq!(
        (&json["type"], &json["node"]),
        (&serde_json::json!("route:choosing"), &serde_json::json!("investigate"))
    );
    // Routes nobody asks a model for are not announced.
    let quiet = run(&workflow(DEFAULT_PATH.replace(", when: the alert is critical", "").as_str()), "").await;
    assert!(quiet.events.iter().all(|e| !matches!(e.kind, EventKind::RouteChoosing { .. })));
}

/// A natural-language branch beside an unconditional (default) edge.
const DEFAULT_PATH: &str = "nodes:
  - {id: start, type: start}
  - {id: check, type: agent}
  - {id: urgent, type: agent}
  - {id: normal, type: agent}
edges:
  - {from: start, to: check}
  - {from: check, to: urgent, when: the alert is critical}
  - {from: check, to: normal}";

#[tokio::test]
async fn an_unconditional_edge_beside_when_edges_is_the_default_path() {
    let wf = workflow(DEFAULT_PATH);
    let ran = run(&wf, &format!("routes: {{check: {DEFAULT_CHOICE}}}")).await;
    assert_eq!(ran.ran(), ["start", "check", "normal"]);
    assert!(ran.edges().contains(&("check", "normal", "none of the above")));
    let choices = &ran.model.routes()[0].1;
    assert_eq!(choices.len(), 2);
    assert_eq!(choices[1].id, DEFAULT_CHOICE);

    let ran = run(&wf, "routes: {check: urgent}").await;
    assert_eq!(ran.ran(), ["start", "check", "urgent"]);
    assert_eq!(ran.skipped(), ["normal"]);
}

#[tokio::test]
async fn an_invalid_route_target_follows_the_default_or_ends_the_branch() {
    // Without a default path: the branch ends with a route event saying why, nothing else runs.
    let ran = run(&workflow(TRIAGE), "routes: {investigate: nowhere}").await;
    assert_eq!(ran.result().status, RunStatus::Completed);
    assert_eq!(ran.ran(), ["start", "investigate"]);
    let last = ran.edges().last().copied().unwrap();
    assert_eq!((last.0, last.1), ("investigate", "(end)"));
    assert!(last.2.contains("invalid route target"), "{}", last.2);
    assert!(!ran.ran().contains(&"create_issue"), "never silently takes the first edge");

    // With a default path: it is followed, and the reason still says the answer was invalid.
    let wf = workflow(DEFAULT_PATH);
    let ran = run(&wf, "routes: {check: bogus}").await;
    assert_eq!(ran.ran(), ["start", "check", "normal"]);
    let (_, _, reason) = *ran.edges().iter().find(|e| e.1 == "normal").unwrap();
    assert!(reason.contains("invalid route target") && reason.contains("none of the above"), "{reason}");
}

#[tokio::test]
async fn an_unscripted_decision_takes_the_first_choice_and_says_so() {
    let ran = run(&workflow(TRIAGE), "").await;
    assert_eq!(ran.ran(), ["start", "investigate", "create_issue", "notify"]);
    let (_, _, reason) = ran.edges()[1];
    assert!(reason.contains("unscripted"), "{reason}");
}

const RETRY_LOOP: &str = "nodes:
  - {id: start, type: start}
  - {id: implement, type: agent}
  - {id: test, type: agent}
  - {id: done, type: agent}
edges:
  - {from: start, to: implement}
  - {from: implement, to: test}
  - {from: test, to: implement, when: tests failed, max_iterations: 3}
  - {from: test, to: done, when: all tests passed}";

#[tokio::test]
async fn the_bounded_retry_loop_stops_after_max_iterations_and_falls_through() {
    // Seed 000: test → implement at most 3 times; then only `done` is live, and a single conditional edge still
    // goes through the model (it is not unconditional).
    let ran = run(&workflow(RETRY_LOOP), "routes: {test: implement}").await;
    assert_eq!(
        ran.ran(),
        ["start", "implement", "test", "implement", "test", "implement", "test", "implement", "test"],
        "3 retries then the model is only offered `done`, and it still names `implement`"
    );
    let routes = ran.model.routes();
    assert_eq!(routes.len(), 4);
    let last_choices: Vec<&str> = routes[3].1.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(last_choices, ["done"], "the exhausted edge is no longer offered");
    let result = ran.result();
    let iterations: Vec<u32> = result.trace.steps.iter().filter(|s| s.node == "test").map(|s| s.iteration).collect();
    assert_eq!(iterations, [1, 2, 3, 4]);
}

#[tokio::test]
async fn an_exhausted_edge_falls_through_to_the_other_branch() {
    let ran = run(&workflow(RETRY_LOOP), "routes: {test: [implement, implement, implement, done]}").await;
    assert_eq!(ran.ran().last(), Some(&"done"));
    assert_eq!(ran.ran().iter().filter(|n| **n == "implement").count(), 4);
    assert!(ran.skipped().is_empty(), "a loop's other exit is not skipped while the loop may still take it");
}

#[tokio::test]
async fn max_iterations_one_means_one_retry() {
    let wf = workflow(
        "nodes:
  - {id: start, type: start}
  - {id: attempt, type: agent}
  - {id: done, type: agent}
edges:
  - {from: start, to: attempt}
  - {from: attempt, to: attempt, when: it failed, max_iterations: 1}
  - {from: attempt, to: done, when: it worked}",
    );
    let ran = run(&wf, "routes: {attempt: attempt}").await;
    assert_eq!(ran.ran(), ["start", "attempt", "attempt"], "first try plus exactly one retry");
    assert_eq!(ran.result().trace.steps[2].iteration, 2);
}

#[tokio::test]
async fn a_self_loop_with_an_unconditional_exit_stops_after_its_bound() {
    let wf = workflow(
        "nodes:
  - {id: start, type: start}
  - {id: poll, type: agent}
  - {id: next, type: agent}
edges:
  - {from: start, to: poll}
  - {from: poll, to: poll, if: 'true', max_iterations: 2}",
    );
    let ran = run(&wf, "").await;
    assert_eq!(ran.ran(), ["start", "poll", "poll", "poll"]);
    assert_eq!(ran.route_count(), 0, "expression guards never call the model");
}

#[tokio::test]
async fn expression_guards_gate_edges_and_unconditional_edges_fan_out() {
    let wf = workflow(
        "nodes:
  - {id: start, type: start}
  - {id: score, type: agent}
  - {id: high, type: agent}
  - {id: low, type: agent}
  - {id: audit, type: agent}
edges:
  - {from: start, to: score}
  - {from: score, to: high, if: 'state.score > 0.9'}
  - {from: score, to: low, if: 'state.score <= 0.9'}
  - {from: score, to: audit}",
    );
    let ran = run(&wf, "nodes: {score: {data: {score: 0.95}}}").await;
    let mut ran_nodes = ran.ran();
    ran_nodes.sort();
    assert_eq!(ran_nodes, ["audit", "high", "score", "start"]);
    assert_eq!(ran.skipped(), ["low"]);
    assert!(ran.edges().contains(&("score", "high", "state.score > 0.9")));
    assert!(ran.edges().contains(&("score", "audit", "parallel")));
}

#[tokio::test]
async fn route_view_is_scoped_by_output_schema() {
    let wf = workflow(
        "nodes:
  - {id: start, type: start}
  - {id: typed, type: agent, output_schema: {type: object, properties: {novel_count: {type: integer}, severity: {type: string}}}}
  - {id: free, type: agent}
  - {id: a, type: agent}
  - {id: b, type: agent}
edges:
  - {from: start, to: typed}
  - {from: typed, to: free}
  - {from: free, to: a, when: go to a}
  - {from: free, to: b, when: go to b}",
    );
    let ran = run(
        &wf,
        "nodes:
  typed: {data: {novel_count: 1, summary: 'long prose that must not sway routing'}}
  free: {data: {anything: goes, summary: kept}}",
    )
    .await;
    let (_, _, view) = &ran.model.routes()[0];
    assert_eq!(
        view["typed"],
        serde_json::json!({"novel_count": 1, "severity": null}),
        "declared keys only, missing as null"
    );
    assert_eq!(view["free"], serde_json::json!({"anything": "goes", "summary": "kept"}), "no schema: everything");
    assert!(ran.warnings().iter().any(|w| w.contains("severity")), "a missing declared key warns");
    // Prompts still see everything.
    let (_, _, context, _) = ran.model.executes().into_iter().find(|e| e.0 == "a").unwrap();
    assert_eq!(context["typed"]["summary"], "long prose that must not sway routing");
}

#[tokio::test]
async fn dry_run_stops_at_the_first_decision_without_calling_the_model() {
    let wf = workflow(
        "nodes:
  - {id: start, type: start}
  - {id: gather, type: agent}
  - {id: investigate, type: agent}
  - {id: create_issue, type: agent}
  - {id: skip, type: agent}
edges:
  - {from: start, to: gather}
  - {from: gather, to: investigate}
  - {from: investigate, to: create_issue, when: novel findings}
  - {from: investigate, to: skip, when: nothing new}",
    );
    let options = switchyard_engine::run::RunOptions {
        input: Some(serde_json::json!({"dryRun": true, "alert": "x"})),
        ..Default::default()
    };
    let ran = run_with(&wf, "", options).await;
    assert_eq!(ran.result().status, RunStatus::Completed);
    assert_eq!(ran.ran(), ["start", "gather", "investigate"]);
    assert_eq!(ran.route_count(), 0);
    assert_eq!(ran.edges().last().copied(), Some(("investigate", "(end)", "dry run")));
    assert!(ran.result().node("create_issue").is_none() && ran.result().node("skip").is_none());
}

#[tokio::test]
async fn the_step_budget_stops_a_run_cleanly() {
    let wf = workflow(
        "defaults: {step_budget: 5}
nodes:
  - {id: start, type: start}
  - {id: spin, type: agent}
edges:
  - {from: start, to: spin}
  - {from: spin, to: spin, max_iterations: 100}",
    );
    let ran = run(&wf, "").await;
    assert_eq!(ran.result().status, RunStatus::Failed);
    assert_eq!(ran.result().trace.steps.len(), 5);
    let error = ran.result().error.clone().unwrap();
    assert!(error.contains("step budget") && error.contains("spin"), "{error}");
    assert_eq!(ran.types().last(), Some(&"workflow:end"));

    // A per-run budget overrides the workflow's.
    let options = switchyard_engine::run::RunOptions { step_budget: Some(3), ..Default::default() };
    let ran = run_with(&wf, "", options).await;
    assert_eq!(ran.result().trace.steps.len(), 3);
}
