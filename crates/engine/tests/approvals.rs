//! SEMANTICS §4: approvals pause one branch, several can be pending, decisions resume exactly; cancellation.

mod support;

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use support::*;
use switchyard_engine::events::EventKind;
use switchyard_engine::log::Collector;
use switchyard_engine::result::{RunStatus, Verdict};
use switchyard_engine::run::{self, Decision, RunOptions};

const TWO_APPROVALS: &str = "nodes:
  - {id: start, type: start}
  - {id: legal, type: approval, message: Legal sign-off?}
  - {id: brand, type: approval, message: Brand sign-off?}
  - {id: other, type: agent}
  - {id: ship, type: agent}
  - {id: hold, type: agent}
edges:
  - {from: start, to: legal}
  - {from: start, to: brand}
  - {from: start, to: other}
  - {from: legal, to: ship, handle: approve}
  - {from: brand, to: ship, handle: approve}
  - {from: legal, to: hold, handle: reject}
  - {from: brand, to: hold, handle: reject}";

#[tokio::test]
async fn an_approval_pauses_only_its_branch_and_several_can_be_pending() {
    let ran = run(&workflow(TWO_APPROVALS), "nodes: {other: {text: independent work, delay_ms: 10}}").await;
    assert_eq!(ran.result().status, RunStatus::Paused);
    let pending: Vec<&str> = ran.result().pending.iter().map(|p| p.node.as_str()).collect();
    assert_eq!(pending, ["legal", "brand"]);
    assert!(ran.ran().contains(&"other"), "independent branches keep running");
    assert!(ran.types().contains(&"workflow:paused"));
    assert_eq!(ran.types().iter().filter(|t| **t == "approval:requested").count(), 2);
    // What ran is in the log as inputs: the two approvals wait, nothing else does.
    let inputs = ran.log.recording().inputs;
    assert!(inputs.iter().any(|i| matches!(&i.input, run::Input::NodeDone { node, .. } if node == "other")));
}

#[tokio::test]
async fn two_pending_approvals_resume_in_either_order_from_the_recorded_run() {
    let wf = workflow(TWO_APPROVALS);
    for order in [["legal", "brand"], ["brand", "legal"]] {
        let paused = run(&wf, "nodes: {ship: {text: shipped}}").await;
        // Through JSON, as the run store keeps it.
        let recording = paused.log.recording();
        let recording = run::Recording {
            inputs: serde_json::from_str(&serde_json::to_string(&recording.inputs).unwrap()).unwrap(),
            events: recording.events,
        };
        let script = script("nodes: {ship: {text: shipped}}");
        let collector = Collector::default();
        let mut rt = runtime(script.clone(), AskedModel::new(script.clone()), vec![Arc::new(collector.clone())]);
        rt.log = Some(Arc::new(paused.log.clone()));
        let options = RunOptions { run_id: Some(paused.result().run_id.clone()), ..paused.options.clone() };
        let first = resume_to_pause(
            Arc::new(wf.clone()),
            options.clone(),
            recording,
            vec![(order[0].into(), json!("approve"))],
            rt,
        )
        .await
        .unwrap();
        assert_eq!(first.result.status, RunStatus::Paused, "the other approval still waits");
        assert_eq!(first.result.pending.len(), 1);
        assert_eq!(first.result.pending[0].node, order[1]);
        assert!(first.result.node("ship").is_none(), "the join waits for the second decision");

        let model = AskedModel::new(script.clone());
        let mut rt = runtime(script.clone(), model.clone(), vec![Arc::new(collector.clone())]);
        rt.log = Some(Arc::new(paused.log.clone()));
        let second = resume_to_pause(
            Arc::new(wf.clone()),
            options,
            paused.log.recording(),
            vec![(order[1].into(), json!({"decision": "approve", "note": "ok"}))],
            rt,
        )
        .await
        .unwrap();
        assert_eq!(second.result.status, RunStatus::Completed);
        assert_eq!(second.result.node("ship").unwrap().data, json!({"text": "shipped"}));
        assert_eq!(second.result.node(order[1]).unwrap().data, json!({"decision": "approve", "note": "ok"}));
        // Nothing that completed ran again: each node has one step, and the model was asked for `ship` only.
        for node in ["start", "other", "legal", "brand", "ship"] {
            assert_eq!(second.result.trace.steps.iter().filter(|s| s.node == node).count(), 1, "{node} in {order:?}");
        }
        let asked: Vec<String> = model.executes().into_iter().map(|(node, ..)| node).collect();
        assert_eq!(asked, ["ship"]);
        // Sequence numbers continue across each pause, and the log holds every event once, in order.
        let seqs: Vec<u64> = collector.events().iter().map(|e| e.seq).collect();
        assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "{seqs:?}");
        assert_eq!(seqs[0], paused.events.last().unwrap().seq + 1);
        let logged: Vec<u64> = paused.log.recording().events.iter().map(|e| e.seq).collect();
        assert_eq!(logged, (1..=logged.len() as u64).collect::<Vec<_>>());
    }
}

#[tokio::test]
async fn a_live_run_takes_decisions_while_other_branches_run() {
    let wf = Arc::new(workflow(TWO_APPROVALS));
    let script = script("nodes: {other: {text: slow, delay_ms: 50}, hold: {text: held}}");
    let collector = Collector::default();
    let rt = runtime(script.clone(), AskedModel::new(script), vec![Arc::new(collector.clone())]);
    let handle = start_live(wf, RunOptions::default(), rt);
    // Wait for both approvals to be requested (observed through events, no sleeps).
    let mut requested = 0;
    while requested < 2 {
        tokio::task::yield_now().await;
        requested = collector.events().iter().filter(|e| e.kind.type_name() == "approval:requested").count();
    }
    handle.decide("brand", Decision::normalize(&json!("I reject this"))).await.unwrap();
    assert!(handle.decide("brand", Decision::new(Verdict::Approve, "")).await.unwrap_err().contains("not waiting"));
    assert!(handle.decide("nope", Decision::new(Verdict::Approve, "")).await.is_err());
    handle.decide("legal", Decision::normalize(&json!(null))).await.unwrap();
    let outcome = handle.finish().await;
    assert_eq!(outcome.result.status, RunStatus::Completed);
    assert_eq!(outcome.result.node("brand").unwrap().data["decision"], "reject");
    assert_eq!(outcome.result.node("legal").unwrap().data["decision"], "approve");
    // ship waits on both approve edges: brand rejected, legal approved → ship runs once; hold runs from brand.
    let steps: Vec<String> = outcome.result.trace.steps.iter().map(|s| s.node.clone()).collect();
    assert_eq!(steps.iter().filter(|s| *s == "ship").count(), 1);
    assert_eq!(steps.iter().filter(|s| *s == "hold").count(), 1);
}

#[tokio::test]
async fn decisions_are_normalized_as_agentflow_does() {
    let cases = [
        (json!("approve"), Verdict::Approve, ""),
        (json!("REJECTED, sorry"), Verdict::Reject, ""),
        (json!({"decision": "Reject", "note": "typo"}), Verdict::Reject, "typo"),
        (json!({"decision": "approve", "note": 5}), Verdict::Approve, ""),
        (json!(null), Verdict::Approve, ""),
        (json!({}), Verdict::Approve, ""),
    ];
    for (input, verdict, note) in cases {
        assert_eq!(Decision::normalize(&input), Decision::new(verdict, note), "{input}");
    }
    // Recordings and events keep writing the verdict as the word it always was, the handle it leaves by.
    let written = serde_json::to_value(Decision::new(Verdict::Timeout, "late")).unwrap();
    assert_eq!(written, json!({"decision": "timeout", "note": "late"}));
    assert_eq!(Verdict::Reject.handle(), "reject");
}

#[tokio::test]
async fn after_an_approval_the_previous_output_is_the_one_before_it() {
    let wf = workflow(
        "nodes:
  - {id: start, type: start}
  - {id: draft, type: agent}
  - {id: review, type: approval}
  - {id: publish, type: agent}
edges:
  - {from: start, to: draft}
  - {from: draft, to: review}
  - {from: review, to: publish, handle: approve}",
    );
    let ran = run(&wf, "nodes: {draft: {text: the draft}}\napprovals: {review: {decision: approve, note: fine}}").await;
    assert_eq!(ran.result().status, RunStatus::Completed);
    let (_, prompt, _, _) = ran.model.executes().into_iter().find(|e| e.0 == "publish").unwrap();
    assert_eq!(prompt, "the draft");
    let requested = ran.events.iter().find_map(|e| match &e.kind {
        EventKind::ApprovalRequested(p) => Some(p.previous_output.clone()),
        _ => None,
    });
    assert_eq!(requested.as_deref(), Some("the draft"));
    assert_eq!(ran.edges().last().copied(), Some(("review", "publish", "approve")));
}

#[tokio::test]
async fn a_rejected_approval_follows_reject_and_skips_approve() {
    let wf = workflow(
        "nodes:
  - {id: start, type: start}
  - {id: review, type: approval}
  - {id: publish, type: agent}
  - {id: revise, type: agent}
edges:
  - {from: start, to: review}
  - {from: review, to: publish, handle: approve}
  - {from: review, to: revise, handle: reject}",
    );
    let ran = run(&wf, "approvals: {review: reject}").await;
    assert_eq!(ran.ran(), ["start", "review", "revise"]);
    assert_eq!(ran.skipped(), ["publish"]);
}

#[tokio::test(start_paused = true)]
async fn an_approval_times_out_through_its_timeout_edge_or_rejects() {
    for (with_timeout_edge, expect) in [(true, "escalate"), (false, "revise")] {
        let timeout_edge = if with_timeout_edge { "\n  - {from: review, to: escalate, handle: timeout}" } else { "" };
        let wf = workflow(&format!(
            "nodes:
  - {{id: start, type: start}}
  - {{id: review, type: approval, timeout_seconds: 1}}
  - {{id: publish, type: agent}}
  - {{id: revise, type: agent}}
  - {{id: escalate, type: agent}}
edges:
  - {{from: start, to: review}}
  - {{from: review, to: publish, handle: approve}}
  - {{from: review, to: revise, handle: reject}}{timeout_edge}"
        ));
        let script = script("");
        let rt = runtime(script.clone(), AskedModel::new(script), vec![]);
        let handle = start_live(Arc::new(wf), RunOptions::default(), rt);
        let outcome = tokio::time::timeout(Duration::from_secs(3600), handle.finish()).await.unwrap();
        assert_eq!(outcome.result.status, RunStatus::Completed);
        assert!(outcome.result.node(expect).is_some(), "{expect} ran");
        assert_eq!(outcome.result.node("review").unwrap().data["note"], "timed out");
    }
}

#[tokio::test]
async fn cancelling_aborts_in_flight_nodes_and_ends_cancelled() {
    let wf = Arc::new(workflow(
        "nodes:
  - {id: start, type: start}
  - {id: slow, type: agent}
  - {id: after, type: agent}
edges:
  - {from: start, to: slow}
  - {from: slow, to: after}",
    ));
    let script = script("nodes: {slow: {text: never, delay_ms: 600000}}");
    let collector = Collector::default();
    let rt = runtime(script.clone(), AskedModel::new(script), vec![Arc::new(collector.clone())]);
    let handle = start_live(wf, RunOptions::default(), rt);
    while !collector.events().iter().any(|e| matches!(&e.kind, EventKind::NodeEnter { node, .. } if node == "slow")) {
        tokio::task::yield_now().await;
    }
    handle.cancel();
    let outcome = tokio::time::timeout(Duration::from_secs(10), handle.finish()).await.expect("cancel is prompt");
    assert_eq!(outcome.result.status, RunStatus::Cancelled);
    let slow = outcome.result.node("slow").unwrap();
    assert_eq!(slow.error.as_deref(), Some("cancelled"));
    assert!(outcome.result.node("after").is_none());
    assert_eq!(collector.events().last().unwrap().kind.type_name(), "workflow:end");
}

#[tokio::test]
async fn a_dry_run_ends_a_branch_at_an_approval() {
    let wf = workflow(
        "nodes:
  - {id: start, type: start}
  - {id: review, type: approval}
  - {id: publish, type: agent}
edges:
  - {from: start, to: review}
  - {from: review, to: publish, handle: approve}",
    );
    let ran = run_with(&wf, "", RunOptions { input: Some(json!({"dryRun": true})), ..Default::default() }).await;
    assert_eq!(ran.result().status, RunStatus::Completed);
    assert!(ran.result().pending.is_empty());
    assert_eq!(ran.edges().last().copied(), Some(("review", "(end)", "dry run")));
}

#[tokio::test]
async fn a_scripted_decision_beside_a_parallel_branch_replays_in_the_same_order() {
    // The approval and `other` start in the same step; the script decides the approval the moment it is reached.
    let wf = workflow(
        "nodes:
  - {id: start, type: start}
  - {id: ok, type: approval}
  - {id: other, type: agent}
  - {id: ship, type: agent}
edges:
  - {from: start, to: ok}
  - {from: start, to: other}
  - {from: ok, to: ship, handle: approve}",
    );
    // `run` replays every run and checks the events are the same.
    let ran = run(&wf, "nodes: {other: {text: o}, ship: {text: s}}\napprovals: {ok: approve}").await;
    assert_eq!(ran.result().status, RunStatus::Completed);
    assert!(ran.ran().contains(&"ship") && ran.ran().contains(&"other"));
}

#[tokio::test]
async fn an_approval_decided_after_a_restart_reports_the_wait_since_its_recorded_request() {
    let wf = workflow(
        "nodes:
  - {id: start, type: start}
  - {id: ok, type: approval}
  - {id: ship, type: agent}
edges:
  - {from: start, to: ok}
  - {from: ok, to: ship, handle: approve}",
    );
    let paused = run(&wf, "nodes: {ship: {text: shipped}}").await;
    assert_eq!(paused.result().status, RunStatus::Paused);
    // As if the process had stopped an hour ago: every recorded event is an hour older.
    let mut recording = paused.log.recording();
    for e in &mut recording.events {
        let ts = chrono::DateTime::parse_from_rfc3339(&e.ts).unwrap() - chrono::Duration::hours(1);
        e.ts = ts.to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    }
    let script = script("nodes: {ship: {text: shipped}}");
    let collector = Collector::default();
    let rt = runtime(script.clone(), AskedModel::new(script), vec![Arc::new(collector.clone())]);
    let options = RunOptions { run_id: Some(paused.result().run_id.clone()), ..paused.options.clone() };
    let resumed =
        resume_to_pause(Arc::new(wf), options, recording, vec![("ok".into(), json!("approve"))], rt).await.unwrap();
    assert_eq!(resumed.result.status, RunStatus::Completed);
    let waited = collector.events().iter().find_map(|e| match &e.kind {
        EventKind::NodeExit { node, duration_ms, .. } if node == "ok" => Some(*duration_ms),
        _ => None,
    });
    let waited = waited.expect("the approval's exit");
    assert!((3_600_000..3_660_000).contains(&waited), "an hour, not 0 ms: {waited}");
}
