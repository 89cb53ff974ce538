//! Runs that survive their process (issue 9): a run is rebuilt from its recorded inputs, so it continues after its
//! process died without running completed nodes again, and a later run can take an earlier run's upstream results.

mod support;

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use support::*;
use switchyard_engine::events::EventKind;
use switchyard_engine::log::{Collector, LogError, LogItem, MemoryLog, RunLog};
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

/// A run log that keeps every item in the order the run wrote it: a process can die after any of them, since the
/// committer writes whatever has queued up as one batch.
#[derive(Default, Clone)]
struct OrderedLog(Arc<std::sync::Mutex<Vec<LogItem>>>);

impl OrderedLog {
    fn items(&self) -> Vec<LogItem> {
        self.0.lock().unwrap().clone()
    }

    fn recording(&self) -> run::Recording {
        recording_of(&self.items())
    }
}

fn recording_of(items: &[LogItem]) -> run::Recording {
    let mut recording = run::Recording::default();
    for item in items {
        match item {
            LogItem::Event(e) => recording.events.push(e.clone()),
            LogItem::Input(i) => recording.inputs.push(i.clone()),
            LogItem::Status { .. } => {}
        }
    }
    recording
}

impl RunLog for OrderedLog {
    fn append(&self, event: &switchyard_engine::events::Event) -> Result<(), LogError> {
        self.0.lock().unwrap().push(LogItem::Event(event.clone()));
        Ok(())
    }
    fn record_input(&self, _run: &str, input: &run::Recorded) -> Result<(), LogError> {
        self.0.lock().unwrap().push(LogItem::Input(input.clone()));
        Ok(())
    }
    fn run_status(&self, _run: &str, status: RunStatus, pending: &[String]) -> Result<(), LogError> {
        self.0.lock().unwrap().push(LogItem::Status { status, pending: pending.to_vec() });
        Ok(())
    }
}

/// The acceptance's four shapes (a chain, a fan-out and join, a loop, an approval), answered by a script.
const SHAPES: [(&str, &str); 4] = [
    (
        "nodes:
  - {id: start, type: start}
  - {id: a, type: agent, user_prompt: 'One: {{ input }}'}
  - {id: b, type: agent, user_prompt: 'Two: {{ PREVIOUS_OUTPUT }}'}
  - {id: c, type: agent, user_prompt: 'Three: {{ PREVIOUS_OUTPUT }}'}
edges: [{from: start, to: a}, {from: a, to: b}, {from: b, to: c}]",
        "nodes: {a: {text: A}, b: {text: B}, c: {text: C}}",
    ),
    (
        "nodes:
  - {id: start, type: start}
  - {id: p1, type: agent}
  - {id: p2, type: agent}
  - {id: p3, type: agent}
  - {id: join, type: agent, user_prompt: '{{ p1.text }} {{ p2.text }} {{ p3.text }}'}
edges:
  - {from: start, to: p1}
  - {from: start, to: p2}
  - {from: start, to: p3}
  - {from: p1, to: join}
  - {from: p2, to: join}
  - {from: p3, to: join}",
        "nodes: {p1: {text: one}, p2: {text: two}, p3: {text: three}, join: {text: all}}",
    ),
    (
        "nodes:
  - {id: start, type: start}
  - {id: work, type: agent}
  - id: check
    type: if
    conditions: [{operator: contains, value: again}]
  - {id: done, type: agent}
edges:
  - {from: start, to: work}
  - {from: work, to: check}
  - {from: check, to: work, handle: condition-0, max_iterations: 3}
  - {from: check, to: done, handle: 'false'}",
        "nodes: {work: {text: again}, done: {text: summed}}",
    ),
    (
        "nodes:
  - {id: start, type: start}
  - {id: draft, type: agent}
  - {id: review, type: approval, message: 'Ship it?'}
  - {id: ship, type: agent}
  - {id: redo, type: agent}
edges:
  - {from: start, to: draft}
  - {from: draft, to: review}
  - {from: review, to: ship, handle: approve}
  - {from: review, to: redo, handle: reject}",
        "nodes: {draft: {text: D}, ship: {text: shipped}, redo: {text: redone}}",
    ),
];

#[tokio::test]
async fn a_run_whose_holder_died_after_any_write_is_taken_over_to_one_end_and_replays_the_same() {
    for (yaml, answers) in SHAPES {
        let wf = Arc::new(workflow(yaml));
        let answers = script(answers);
        let options = RunOptions { run_id: Some("cut".into()), input: Some(json!("x")), ..RunOptions::default() };
        // A decision kept for the run, given each time it is taken (as a server keeps one for its workers).
        let decisions: Vec<(String, run::Decision)> = if yaml.contains("approval") {
            vec![("review".into(), run::Decision::normalize(&json!("approve")))]
        } else {
            Vec::new()
        };
        let whole = OrderedLog::default();
        let ran = take_to_its_end(&wf, &options, &answers, &whole, &decisions, None).await;
        assert_eq!(ran.result.status, RunStatus::Completed, "{yaml}");
        let items = whole.items();
        // The run says it ended only once its end is in the log: a holder that dies in between leaves it running.
        let said = items.iter().rposition(|i| matches!(i, LogItem::Status { .. })).unwrap();
        let end = items
            .iter()
            .position(|i| matches!(i, LogItem::Event(e) if matches!(e.kind, EventKind::WorkflowEnd { .. })));
        assert!(end.is_some_and(|end| end < said), "{yaml}: the end is written before the status that says so");
        // A holder that said its run ended is not taken over: every cut up to that.
        for cut in 0..=said {
            let log = OrderedLog(Arc::new(std::sync::Mutex::new(items[..cut].to_vec())));
            let taken_over = Some(("w1".to_string(), Some("w2".to_string())));
            let outcome = take_to_its_end(&wf, &options, &answers, &log, &decisions, taken_over).await;
            assert_eq!(outcome.result.status, RunStatus::Completed, "cut at {cut}\n{yaml}");
            let recording = log.recording();
            let ends = recording
                .events
                .iter()
                .filter(|e| matches!(e.kind, EventKind::WorkflowEnd { status: RunStatus::Completed, .. }))
                .count();
            assert_eq!(ends, 1, "cut at {cut}: the log ends once\n{:#?}", recording.events);

            let collector = Collector::default();
            let rt = runtime(script(""), AskedModel::new(script("")), vec![Arc::new(collector.clone())]);
            let replayed = run::replay(wf.clone(), options.clone(), recording.clone(), rt)
                .unwrap_or_else(|e| panic!("cut at {cut}: the log does not replay: {e}\n{yaml}"));
            assert_eq!(replayed.result.status, RunStatus::Completed, "cut at {cut}");
            if let Some(d) = switchyard_engine::events::first_divergence(&recording.events, &collector.events()) {
                panic!(
                    "cut at {cut} of {yaml}: the replay differs at event {}:\nrecorded: {:?}\nreplayed: {:?}",
                    d.at, d.recorded, d.replayed
                );
            }
            assert_eq!(replayed.result.results, outcome.result.results, "cut at {cut}");
        }
    }
}

/// Takes a run from what `log` holds to its end, as workers do: each take rebuilds it from its log (the first one
/// taken over from a holder that died, when `taken_over` says so) and gives it the decisions kept for it; a take
/// that pauses ends there, and the next one goes on.
async fn take_to_its_end(
    wf: &Arc<switchyard_engine::Workflow>,
    options: &RunOptions,
    answers: &Arc<switchyard_engine::answers::Answers>,
    log: &OrderedLog,
    decisions: &[(String, run::Decision)],
    mut taken_over: Option<(String, Option<String>)>,
) -> run::Outcome {
    for _take in 0..3 {
        let mut rt = runtime(answers.clone(), AskedModel::new(answers.clone()), Vec::new());
        rt.log = Some(Arc::new(log.clone()));
        let recording = log.recording();
        let launch = if recording.events.is_empty() && taken_over.is_none() {
            run::Launch::fresh(wf.clone(), options.clone())
        } else {
            let start =
                run::Start::Recorded { recording, decisions: decisions.to_vec(), refused: run::RefusedDecision::Skip };
            run::Launch { start, taken_over: taken_over.take(), ..run::Launch::fresh(wf.clone(), options.clone()) }
        };
        let taken = run::launch(launch, rt).unwrap_or_else(|e| panic!("{e}"));
        let outcome = tokio::time::timeout(Duration::from_secs(10), taken.finish())
            .await
            .unwrap_or_else(|_| panic!("the run never stopped:\n{:#?}", log.items()));
        if outcome.result.status != RunStatus::Paused {
            return outcome;
        }
    }
    panic!("the run still waits after three takes:\n{:#?}", log.items())
}
