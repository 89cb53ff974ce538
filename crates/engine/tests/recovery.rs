//! Runs that survive their process (issue 9): a run is rebuilt from its recorded inputs, so it continues after its
//! process died without running completed nodes again, and a later run can take an earlier run's upstream results.

mod support;

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use support::*;
use switchyard_engine::events::EventKind;
use switchyard_engine::log::{Collector, MemoryLog};
use switchyard_engine::result::RunStatus;
use switchyard_engine::run::{self, Reuse, RunOptions};

const CHAIN: &str = "nodes:
  - {id: start, type: start}
  - {id: draft, type: agent, user_prompt: Write}
  - {id: left, type: agent, user_prompt: 'Left of {{ draft.text }}'}
  - {id: right, type: agent, user_prompt: 'Right of {{ draft.text }}'}
  - {id: merge, type: agent, user_prompt: '{{ left.text }} + {{ right.text }}'}
edges:
  - {from: start, to: draft}
  - {from: draft, to: left}
  - {from: draft, to: right}
  - {from: left, to: merge}
  - {from: right, to: merge}";

const ANSWERS: &str = "nodes:
  draft: {text: the draft}
  left: {text: L}
  right: {text: R, delay_ms: 60000}
  merge: {text: merged}";

#[tokio::test]
async fn a_run_whose_process_died_goes_on_without_running_completed_nodes_again() {
    let wf = workflow(CHAIN);
    let log = MemoryLog::default();
    let script = script(ANSWERS);
    let first_model = AskedModel::new(script.clone());
    let mut rt = runtime(script.clone(), first_model.clone(), Vec::new());
    rt.log = Some(Arc::new(log.clone()));
    let options = RunOptions { run_id: Some("crashed".into()), ..RunOptions::default() };
    // The process "dies" while `right` runs: the scheduler is dropped mid-run.
    let died =
        tokio::time::timeout(Duration::from_millis(300), run_to_pause(Arc::new(wf.clone()), options.clone(), rt)).await;
    assert!(died.is_err(), "the run should still have been going");
    let before = log.recording();
    assert!(before.events.iter().any(|e| matches!(&e.kind, EventKind::NodeExit { node, .. } if node == "left")));
    assert!(!before.events.iter().any(|e| matches!(&e.kind, EventKind::NodeExit { node, .. } if node == "right")));

    let fast = script_with_no_delay();
    let model = AskedModel::new(fast.clone());
    let collector = Collector::default();
    let mut rt = runtime(fast, model.clone(), vec![Arc::new(collector.clone())]);
    rt.log = Some(Arc::new(log.clone()));
    let outcome = resume_to_pause(Arc::new(wf.clone()), options, before.clone(), Vec::new(), rt).await.unwrap();

    assert_eq!(outcome.result.status, RunStatus::Completed);
    assert_eq!(outcome.result.node("merge").unwrap().data, json!({"text": "merged"}));
    // Only what was running (`right`) and what had not started (`merge`) ran.
    let asked: Vec<String> = model.executes().into_iter().map(|(node, ..)| node).collect();
    assert_eq!(asked, ["right", "merge"]);
    for node in ["start", "draft", "left", "right", "merge"] {
        assert_eq!(outcome.result.trace.steps.iter().filter(|s| s.node == node).count(), 1, "{node}");
    }
    // New events follow the recorded ones; the log holds each number once.
    let first_new = collector.events()[0].seq;
    assert_eq!(first_new, before.events.last().unwrap().seq + 1);
    let seqs: Vec<u64> = log.recording().events.iter().map(|e| e.seq).collect();
    let mut unique = seqs.clone();
    unique.dedup();
    assert_eq!(seqs, unique);
    assert!(seqs.windows(2).all(|w| w[0] < w[1]));
}

fn script_with_no_delay() -> Arc<switchyard_engine::answers::Answers> {
    script(&ANSWERS.replace(", delay_ms: 60000", ""))
}

#[tokio::test]
async fn running_from_a_node_takes_the_earlier_results_upstream_and_runs_the_rest() {
    let wf = workflow(CHAIN);
    let earlier = run(&wf, &ANSWERS.replace(", delay_ms: 60000", "")).await;
    assert_eq!(earlier.result().status, RunStatus::Completed);
    // The prompt of `merge` is edited since; run from `right`.
    let edited =
        workflow(&CHAIN.replace("'{{ left.text }} + {{ right.text }}'", "'Both: {{ left.text }}, {{ right.text }}'"));
    let reuse = Reuse::upstream_of(&edited, "right", "earlier", &earlier.log.recording()).unwrap();
    assert_eq!(reuse.results.keys().collect::<Vec<_>>(), ["draft"], "only nodes upstream of `right`");
    let options = RunOptions { reuse: Some(reuse), ..RunOptions::default() };
    let again = run_with(
        &edited,
        "nodes: {draft: {text: NOT USED}, left: {text: L2}, right: {text: R2}, merge: {text: m2}}",
        options,
    )
    .await;
    assert_eq!(again.result().status, RunStatus::Completed);
    assert_eq!(again.result().node("draft").unwrap().data, json!({"text": "the draft"}), "the earlier result");
    let asked: Vec<String> = again.model.executes().into_iter().map(|(node, ..)| node).collect();
    assert!(!asked.contains(&"draft".to_string()), "{asked:?}");
    assert!(asked.contains(&"right".to_string()) && asked.contains(&"merge".to_string()), "{asked:?}");
    let merge_prompt = again.model.executes().into_iter().find(|(n, ..)| n == "merge").unwrap().1;
    assert!(merge_prompt.starts_with("Both:"), "the edited prompt ran: {merge_prompt}");
    assert!(again.events.iter().any(
        |e| matches!(&e.kind, EventKind::Log { node: Some(n), log_type, .. } if n == "draft" && log_type == "reused")
    ));
}

#[tokio::test]
async fn running_from_a_node_that_does_not_exist_says_which_nodes_do() {
    let wf = workflow(CHAIN);
    let error = Reuse::upstream_of(&wf, "nope", "r", &run::Recording::default()).unwrap_err();
    assert!(error.contains("`nope`") && error.contains("draft") && !error.contains("--from"), "{error}");
}

#[tokio::test]
async fn a_recording_that_does_not_fit_the_workflow_is_refused_with_the_reason() {
    let wf = workflow(CHAIN);
    let ran = run(&wf, &ANSWERS.replace(", delay_ms: 60000", "")).await;
    // `left` is gone from the workflow now.
    let changed = workflow(
        "nodes:
  - {id: start, type: start}
  - {id: draft, type: agent}
  - {id: right, type: agent}
  - {id: merge, type: agent}
edges:
  - {from: start, to: draft}
  - {from: draft, to: right}
  - {from: right, to: merge}",
    );
    let script = script("");
    let rt = runtime(script.clone(), AskedModel::new(script), Vec::new());
    let Err(run::ResumeError::Rebuild(error)) =
        resume_to_pause(Arc::new(changed), ran.options.clone(), ran.log.recording(), Vec::new(), rt).await
    else {
        panic!("a recording of another workflow was applied");
    };
    assert!(error.contains("does not fit this workflow") && error.contains("left"), "{error}");
}

#[tokio::test]
async fn an_approval_that_timed_out_after_a_resume_is_rebuilt_and_replayed_as_it_went() {
    // Timeout 0: the deadline has passed when the first process pauses, so the timer fires in the second.
    let wf = workflow(
        "nodes:
  - {id: start, type: start}
  - {id: ok, type: approval, timeout_seconds: 0}
  - {id: after, type: agent}
edges:
  - {from: start, to: ok}
  - {from: ok, to: after, handle: approve}",
    );
    let log = MemoryLog::default();
    let answers = script("nodes: {after: {text: done}}");
    let options = RunOptions { run_id: Some("timer".into()), ..RunOptions::default() };
    let mut rt = runtime(answers.clone(), AskedModel::new(answers.clone()), Vec::new());
    rt.log = Some(Arc::new(log.clone()));
    let paused = run_to_pause(Arc::new(wf.clone()), options.clone(), rt.clone()).await;
    assert_eq!(paused.result.status, RunStatus::Paused);
    let resumed =
        resume_to_pause(Arc::new(wf.clone()), options.clone(), log.recording(), Vec::new(), rt).await.unwrap();
    assert_eq!(resumed.result.status, RunStatus::Completed);
    assert_eq!(resumed.result.node("ok").unwrap().data["decision"], "reject", "timed out with no timeout edge");

    let rt = runtime(answers.clone(), AskedModel::new(answers), Vec::new());
    let replayed = run::replay(Arc::new(wf), options, log.recording(), rt).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(replayed.result.status, RunStatus::Completed);
    assert_eq!(replayed.result.results, resumed.result.results);
}

#[tokio::test]
async fn a_replay_shows_what_a_node_task_emitted_between_the_starts_of_its_siblings_where_it_was() {
    // A node task runs as soon as it is started, so its streamed text can be numbered before a sibling's
    // `node:enter`, which the run's state emitted in the same step. The recording says so; the replay must too.
    let wf = workflow(CHAIN);
    let ran =
        run(&wf, "nodes: {draft: {text: the draft}, left: {text: L}, right: {text: R}, merge: {text: merged}}").await;
    let mut recording = ran.log.recording();
    let entered = |node: &str| {
        recording.events.iter().position(|e| matches!(&e.kind, EventKind::NodeEnter { node: n, .. } if n == node))
    };
    let (left, right) = (entered("left").unwrap(), entered("right").unwrap());
    let (first, second) = if left < right { ("left", right) } else { ("right", left) };
    // The siblings start in one step: each `node:enter` and its `step_start` log, one after the other.
    assert_eq!(left.abs_diff(right), 2, "{:?}", recording.events);
    // `first`'s task streams a piece of text before `second` is entered.
    let at = recording.events[second].seq;
    for e in recording.events.iter_mut().filter(|e| e.seq >= at) {
        e.seq += 1;
    }
    for i in recording.inputs.iter_mut().filter(|i| i.seq >= at) {
        i.seq += 1;
    }
    let mut streamed = recording.events[second].clone();
    streamed.seq = at;
    streamed.kind = EventKind::NodeProgress { node: first.into(), message: "Le".into() };
    recording.events.insert(second, streamed);

    let collector = Collector::default();
    let mut rt = runtime(script(""), AskedModel::new(script("")), Vec::new());
    rt.observers = vec![Arc::new(collector.clone())];
    let options = RunOptions { run_id: Some(ran.result().run_id.clone()), ..ran.options.clone() };
    let replayed = run::replay(Arc::new(wf), options, recording.clone(), rt).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(replayed.result.status, RunStatus::Completed);
    let divergence = switchyard_engine::events::first_divergence(&recording.events, &collector.events());
    assert!(divergence.is_none(), "the replay differs: {divergence:?}");
}
