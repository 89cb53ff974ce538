//! The state driven by hand, without a runtime: each test plays the driver with the loop every driver uses
//! ([`stand`]), answering `RunNode` effects itself.

use serde_json::json;

use super::*;
use crate::format::{self, Format};
use crate::result::{PendingApproval, Verdict};

fn state(yaml: &str) -> RunState {
    let text = format!("switchyard: 1\nname: t\n{yaml}");
    let wf = format::load_str(&text, Some(Format::Switchyard), None).unwrap().workflow;
    RunState::new(Arc::new(wf), &RunOptions::default())
}

/// A driver that keeps what it saw: nodes asked to run (with the output that reached them), events, and the
/// effects of the last step.
struct Driver {
    st: RunState,
    now_ms: i64,
    ran: Vec<(String, Arc<str>)>,
    events: Vec<EventKind>,
    /// Node tasks asked for and not answered yet.
    tasks: Vec<(NodeIx, u32)>,
    last: Vec<Effect>,
}

impl Driver {
    fn new(yaml: &str) -> Driver {
        Driver { st: state(yaml), now_ms: 0, ran: Vec::new(), events: Vec::new(), tasks: Vec::new(), last: Vec::new() }
    }

    fn apply(&mut self, step: Step) {
        let effects = self.st.apply(step, self.now_ms);
        for effect in &effects {
            match effect {
                Effect::RunNode { node, iteration, scope } => {
                    self.ran.push((self.st.id(*node).to_string(), scope.previous_output.clone()));
                    self.tasks.push((*node, *iteration));
                }
                Effect::Emit(kind) => self.events.push(kind.clone()),
                _ => {}
            }
        }
        self.last = effects;
    }

    /// Admits, then applies, an input, as the scheduler does (it keeps it in the run log in between).
    fn input(&mut self, input: Input) -> Result<(), Unfit> {
        if self.st.admit(&input)? {
            self.apply(Step::Input(input));
        }
        Ok(())
    }

    fn stand(&mut self) -> Standing {
        stand(self, |d| &d.st, |d, step| d.apply(step))
    }

    /// Ends the oldest node task with `{"text": "<id> <iteration>"}`.
    fn answer_oldest(&mut self) {
        let (node, iteration) = self.tasks.remove(0);
        let text = format!("{} {iteration}", self.st.id(node));
        self.input(node_done(self.st.id(node), iteration, json!({ "text": text }))).unwrap();
    }

    fn decide(&mut self, node: &str, decision: serde_json::Value) -> Result<(), Unfit> {
        self.input(Input::Decided { node: node.into(), decision: Decision::normalize(&decision), immediate: false })
    }

    fn ask(&mut self, node: &str, request: &ToolRequest) {
        let input =
            Input::ToolAsked { node: node.into(), tool: request.tool.clone(), arguments: request.input.clone() };
        self.input(input).unwrap();
    }

    fn skipped(&self) -> Vec<&str> {
        self.events
            .iter()
            .filter_map(|e| match e {
                EventKind::NodeSkipped { node } => Some(node.as_str()),
                _ => None,
            })
            .collect()
    }

    fn ran(&self) -> Vec<&str> {
        self.ran.iter().map(|(n, _)| n.as_str()).collect()
    }

    /// Tool calls whose decision went to a task in the last step: `(node, verdict)`.
    fn decided(&self) -> Vec<(String, Verdict)> {
        self.last
            .iter()
            .filter_map(|e| match e {
                Effect::ToolDecided { node, decision, .. } => Some((node.clone(), decision.verdict)),
                _ => None,
            })
            .collect()
    }

    /// Tool calls shown to the person in the last step.
    fn shown(&self) -> Vec<ToolRequest> {
        self.last
            .iter()
            .filter_map(|e| match e {
                Effect::Emit(EventKind::ApprovalRequested(PendingApproval { tool: Some(t), .. })) => Some(t.clone()),
                _ => None,
            })
            .collect()
    }
}

fn node_done(node: &str, iteration: u32, data: serde_json::Value) -> Input {
    Input::NodeDone {
        node: node.into(),
        iteration,
        data: Ok(data),
        code: None,
        tool_calls: Vec::new(),
        usage: None,
        duration_ms: 0,
        model_calls: 0,
    }
}

/// Runs the state to its end, answering each node in the order started.
fn play(yaml: &str) -> Driver {
    let mut d = Driver::new(yaml);
    d.apply(Step::Begin);
    while d.stand() == Standing::Working {
        d.answer_oldest();
    }
    d.apply(Step::Finish);
    d
}

#[test]
fn a_join_starts_once_after_both_branches_with_their_outputs_in_completion_order() {
    let d = play(
        "nodes:\n  - {id: start, type: start}\n  - {id: a, type: agent}\n  - {id: b, type: agent}\n  - {id: j, type: agent}
edges:\n  - {from: start, to: a}\n  - {from: start, to: b}\n  - {from: a, to: j}\n  - {from: b, to: j}\n",
    );
    assert_eq!(d.ran(), ["a", "b", "j"]);
    assert_eq!(&*d.ran[2].1, "a 1\n\nb 1");
    assert_eq!(d.st.status(), RunStatus::Completed);
}

#[test]
fn the_branch_not_taken_is_skipped_and_a_join_after_it_still_runs() {
    let d = play(
        "nodes:
  - {id: start, type: start, initial_input: yes please}
  - {id: check, type: if, conditions: [{operator: contains, value: yes}]}
  - {id: yes, type: agent}
  - {id: no, type: agent}
  - {id: after_no, type: agent}
  - {id: end, type: agent}
edges:
  - {from: start, to: check}
  - {from: check, to: yes, handle: condition-0}
  - {from: check, to: no, handle: else}
  - {from: no, to: after_no}
  - {from: yes, to: end}
  - {from: after_no, to: end}
",
    );
    assert_eq!(d.ran(), ["yes", "end"]);
    assert_eq!(d.skipped(), ["no", "after_no"]);
    assert_eq!(&*d.ran[1].1, "yes 1", "a dead branch adds nothing to the join's input");
}

#[test]
fn a_loop_runs_its_bound_then_leaves_by_the_exit() {
    let d = play(
        "nodes:\n  - {id: start, type: start}\n  - {id: body, type: agent}\n  - {id: after, type: agent}
edges:\n  - {from: start, to: body}\n  - {from: body, to: body, max_iterations: 2}\n  - {from: body, to: after}\n",
    );
    let bodies = d.ran().iter().filter(|n| **n == "body").count();
    assert_eq!(bodies, 3, "the first run and two follows of the back edge");
    assert!(d.ran().contains(&"after"));
    assert_eq!(d.st.status(), RunStatus::Completed);
}

#[test]
fn the_step_budget_fails_a_run_that_would_go_on_and_says_how_to_raise_it() {
    let d = play(
        "defaults: {step_budget: 3}\nnodes:\n  - {id: start, type: start}\n  - {id: body, type: agent}
edges:\n  - {from: start, to: body}\n  - {from: body, to: body, max_iterations: 10}\n",
    );
    assert_eq!(d.st.status(), RunStatus::Failed);
    assert_eq!(d.ran().len(), 2, "start and two runs of body are the three steps");
    assert!(d.st.error().unwrap().contains("defaults.step_budget"), "{:?}", d.st.error());
}

#[test]
fn an_approval_pauses_the_run_and_a_decision_goes_on_by_its_handle() {
    let mut d = Driver::new(
        "nodes:\n  - {id: start, type: start}\n  - {id: ok, type: approval}\n  - {id: ship, type: agent}\n  - {id: hold, type: agent}
edges:\n  - {from: start, to: ok}\n  - {from: ok, to: ship, handle: approve}\n  - {from: ok, to: hold, handle: reject}\n",
    );
    d.apply(Step::Begin);
    assert_eq!(d.stand(), Standing::Paused);
    assert_eq!(d.st.status(), RunStatus::Paused);
    assert_eq!(d.st.pending_nodes(), ["ok"]);
    assert!(d.events.iter().any(|e| matches!(e, EventKind::WorkflowPaused { .. })));
    let refused = d.decide("ship", json!("approve")).unwrap_err();
    assert_eq!(refused.to_string(), "`ship` is not waiting for a decision (waiting: ok)");
    d.decide("ok", json!({"decision": "reject", "note": "not yet"})).unwrap();
    assert_eq!(d.st.status(), RunStatus::Running);
    assert!(d.events.iter().any(|e| matches!(e, EventKind::ApprovalReceived { decision: Verdict::Reject, .. })));
    assert_eq!(d.stand(), Standing::Working);
    assert_eq!(d.ran(), ["hold"]);
    assert_eq!(d.skipped(), ["ship"]);
}

#[test]
fn an_approvals_exit_reports_how_long_it_waited_from_the_request_to_the_decision() {
    let mut d = Driver::new(
        "nodes:\n  - {id: start, type: start}\n  - {id: ok, type: approval, timeout_seconds: 60}\n  - {id: late, type: approval, timeout_seconds: 60}
edges:\n  - {from: start, to: ok}\n  - {from: ok, to: late, handle: approve}\n",
    );
    let exit_ms = |d: &Driver, id: &str| {
        d.events.iter().find_map(|e| match e {
            EventKind::NodeExit { node, duration_ms, .. } if node == id => Some(*duration_ms),
            _ => None,
        })
    };
    d.now_ms = 1_000_000;
    d.apply(Step::Begin);
    assert_eq!(d.stand(), Standing::Paused);
    assert_eq!(d.st.next_deadline(), Some(1_060_000));
    d.now_ms += 4_250;
    d.decide("ok", json!("approve")).unwrap();
    assert_eq!(exit_ms(&d, "ok"), Some(4_250));
    // A timeout waited its whole timeout; with no `timeout` edge it rejects.
    assert_eq!(d.stand(), Standing::Paused);
    d.now_ms += 60_000;
    assert_eq!(d.st.expired(d.now_ms).as_deref(), Some("late"));
    d.input(Input::TimedOut { node: "late".into() }).unwrap();
    assert_eq!(exit_ms(&d, "late"), Some(60_000));
    assert!(d
        .events
        .iter()
        .any(|e| matches!(e, EventKind::ApprovalReceived { node, decision: Verdict::Reject, .. } if node == "late")));
}

#[test]
fn an_input_that_ends_work_the_run_did_not_start_is_refused_and_changes_nothing() {
    let mut d = Driver::new(
        "nodes:\n  - {id: start, type: start}\n  - {id: a, type: agent}\nedges:\n  - {from: start, to: a}\n",
    );
    d.apply(Step::Begin);
    assert_eq!(d.stand(), Standing::Working);
    let refused = |d: &mut Driver, input: Input| d.input(input).unwrap_err().to_string();
    assert_eq!(refused(&mut d, node_done("a", 2, json!({}))), "`a` (iteration 2) ended but was not running");
    assert_eq!(refused(&mut d, node_done("gone", 1, json!({}))), "node `gone` is gone");
    let routed = Input::Routed { node: "a".into(), answer: Err("x".into()) };
    assert_eq!(refused(&mut d, routed), "a route was chosen after `a`, which was not routing");
    assert_eq!(refused(&mut d, Input::TimedOut { node: "a".into() }), "`a` timed out but is not waiting");
    assert_eq!(d.stand(), Standing::Working, "a still runs");
    d.answer_oldest();
    assert_eq!(d.stand(), Standing::Over);
}

#[test]
fn cancelling_ends_the_run_and_asks_to_stop_the_tasks_once() {
    let mut d = Driver::new(
        "nodes:\n  - {id: start, type: start}\n  - {id: a, type: agent}\nedges:\n  - {from: start, to: a}\n",
    );
    d.apply(Step::Begin);
    assert_eq!(d.stand(), Standing::Working);
    d.input(Input::Cancelled { by: None }).unwrap();
    assert!(d.last.iter().any(|e| matches!(e, Effect::CancelTasks)));
    assert_eq!(d.st.status(), RunStatus::Cancelled);
    assert!(!d.st.is_live());
    assert_eq!(d.st.admit(&Input::Cancelled { by: None }), Ok(false), "a second cancellation is not kept");
    // The cancelled task still reports its end.
    d.answer_oldest();
    assert_eq!(d.stand(), Standing::Over);
}

#[test]
fn a_tool_call_waiting_for_approval_pauses_its_branch_and_the_decision_goes_to_the_task() {
    let mut d = Driver::new(
        "nodes:\n  - {id: start, type: start}\n  - {id: a, type: agent}\nedges:\n  - {from: start, to: a}\n",
    );
    d.apply(Step::Begin);
    assert_eq!(d.stand(), Standing::Working);
    let call = ToolRequest { tool: "files__delete".into(), input: json!({"path": "x"}) };
    d.ask("a", &call);
    assert_eq!(d.shown(), std::slice::from_ref(&call));
    assert_eq!(d.stand(), Standing::Paused, "the only running task waits: the run pauses");
    assert_eq!(d.st.status(), RunStatus::Paused);
    d.decide("a", json!("reject")).unwrap();
    assert_eq!(d.decided(), [("a".to_string(), Verdict::Reject)]);
    assert_eq!(d.st.status(), RunStatus::Running);
    assert_eq!(d.stand(), Standing::Working, "the task goes on");
    assert!(d.st.pending().is_empty());
}

#[test]
fn a_continued_run_keeps_a_waiting_calls_decision_for_the_task_that_asks_for_the_same_call() {
    let mut d = Driver::new(
        "nodes:\n  - {id: start, type: start}\n  - {id: a, type: agent}\nedges:\n  - {from: start, to: a}\n",
    );
    d.apply(Step::Begin);
    d.stand();
    let call = ToolRequest { tool: "files__delete".into(), input: json!({"path": "x"}) };
    d.ask("a", &call);
    // The process ends; in the next one the task starts again and no task waits on the call.
    assert_eq!(d.st.admit(&Input::Continued), Ok(true), "a waiting call makes the new process worth recording");
    d.input(Input::Continued).unwrap();
    assert_eq!(d.st.admit(&Input::Continued), Ok(false));
    assert_eq!(d.stand(), Standing::Working, "the task that starts again runs");
    d.decide("a", json!("approve")).unwrap();
    assert!(d.decided().is_empty(), "no task waits yet: the decision is kept");
    d.ask("a", &call);
    assert_eq!(d.decided(), [("a".to_string(), Verdict::Approve)], "the same call: at once");
    // Another call of the restarted task is asked anew, and an orphaned different call is withdrawn.
    d.ask("a", &call);
    d.input(Input::Continued).unwrap();
    d.ask("a", &ToolRequest { tool: "files__delete".into(), input: json!({"path": "y"}) });
    assert!(d.decided().is_empty());
    let pending = d.st.pending();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].tool.as_ref().unwrap().input, json!({"path": "y"}));
    assert_eq!(d.stand(), Standing::Paused);
}

#[test]
fn calls_of_one_node_wait_one_at_a_time_so_the_decision_is_for_the_call_shown() {
    let mut d = Driver::new(
        "nodes:\n  - {id: start, type: start}\n  - {id: a, type: agent, for_each: {items: '[1, 2]', concurrency: 2}}\nedges:\n  - {from: start, to: a}\n",
    );
    d.apply(Step::Begin);
    d.stand();
    let first = ToolRequest { tool: "files__delete".into(), input: json!({"path": "1"}) };
    let second = ToolRequest { tool: "files__delete".into(), input: json!({"path": "2"}) };
    d.ask("a", &first);
    assert_eq!(d.shown(), std::slice::from_ref(&first));
    d.ask("a", &second);
    assert!(d.shown().is_empty(), "the second call waits behind the first");
    assert_eq!(d.st.pending().len(), 1);
    d.decide("a", json!("approve")).unwrap();
    assert!(d.last.iter().any(|e| matches!(e, Effect::ToolDecided { request, .. } if *request == first)));
    assert_eq!(d.shown(), std::slice::from_ref(&second), "then the second is shown");
    d.decide("a", json!("reject")).unwrap();
    assert!(d.last.iter().any(|e| matches!(e, Effect::ToolDecided { request, decision, .. } if *request == second && decision.verdict == Verdict::Reject)));
    assert!(d.st.pending().is_empty());
    assert_eq!(d.stand(), Standing::Working, "no task waits: the node's task runs on");
}

#[test]
fn a_task_waiting_for_a_tool_decision_does_not_hold_a_concurrency_place() {
    let mut d = Driver::new(
        "defaults: {concurrency: 1}\nnodes:\n  - {id: start, type: start}\n  - {id: a, type: agent}\n  - {id: b, type: agent}\nedges:\n  - {from: start, to: a}\n  - {from: start, to: b}\n",
    );
    d.apply(Step::Begin);
    d.stand();
    assert_eq!(d.ran(), ["a"], "one at a time");
    d.ask("a", &ToolRequest { tool: "t__x".into(), input: json!({}) });
    assert_eq!(d.stand(), Standing::Working);
    assert_eq!(d.ran(), ["a", "b"], "b runs while a waits for a person");
}

#[test]
fn a_replayed_recording_that_stops_while_work_was_out_fails_saying_it_was_interrupted() {
    let mut d = Driver::new(
        "nodes:\n  - {id: start, type: start}\n  - {id: a, type: agent}\nedges:\n  - {from: start, to: a}\n",
    );
    d.apply(Step::Begin);
    d.stand();
    d.apply(Step::Interrupted);
    assert_eq!(d.st.status(), RunStatus::Failed);
    assert!(d.st.error().unwrap().starts_with("the recording stops while `a` ran"), "{:?}", d.st.error());
    assert_eq!(d.stand(), Standing::Over);
}
