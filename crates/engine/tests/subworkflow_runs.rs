//! Child runs (issue 32, docs/subworkflows.md): a `workflow` node runs its child workflow as a run of its own, kept
//! in the parent's store and linked to it; the node's output is the child's; a parent whose process died takes up the
//! same child; a replay tells the parent's story again without running the child; `for_each` fans out to children
//! with the node's concurrency; an approval inside a child pauses the parent's branch and is decided from there;
//! cancelling the parent cancels the child.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use switchyard_engine::events::{Event, EventKind};
use switchyard_engine::log::{Collector, LogError, Observer};
use switchyard_engine::record::Input;
use switchyard_engine::result::{Decision, NodeStatus, RunStatus, Verdict};
use switchyard_engine::run::{ParentLink, Until, CHILD_EVENT};
use switchyard_engine::session::{self, Drive, RunRequest, Sinks, WorkflowRef};
use switchyard_engine::store::{RunStore, Store, StoredStatus};
use switchyard_engine::{format, validate, NodeType, Workflow};

const CHILD: &str = "switchyard: 1
name: Summarize
input_schema:
  type: object
  properties:
    text: {type: string}
  required: [text]
nodes:
  - {id: start, type: start}
  - {id: first, type: agent, user_prompt: 'Read {{ input.text }}'}
  - {id: write, type: agent, user_prompt: 'Summarize {{ first.text }}'}
edges:
  - {from: start, to: first}
  - {from: first, to: write}
";

const PARENT: &str = "switchyard: 1
name: Parent
nodes:
  - {id: start, type: start}
  - {id: fetch, type: agent, user_prompt: Fetch}
  - {id: summarize, type: workflow, workflow: children/summarize.yaml, input: {text: '{{ fetch.text }}'}}
  - {id: publish, type: agent, user_prompt: 'Publish {{ summarize.text }}'}
edges:
  - {from: start, to: fetch}
  - {from: fetch, to: summarize}
  - {from: summarize, to: publish}
";

const ANSWERS: &str = "nodes:
  fetch: {text: the page}
  publish: {text: published}
workflows:
  summarize:
    nodes:
      first: {text: read it}
      write: {text: short}
";

struct Setup {
    dir: tempfile::TempDir,
    store: Arc<dyn Store>,
}

impl Setup {
    fn new(files: &[(&str, &str)]) -> Setup {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in files {
            write(dir.path(), name, text);
        }
        let store: Arc<dyn Store> = Arc::new(RunStore::open(&dir.path().join("runs.sqlite")).unwrap());
        Setup { dir, store }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Starts the parent `parent.yaml` with the answers file `answers.yaml`, held in the store.
    async fn start(&self, until: Until, observers: Vec<Arc<dyn Observer>>) -> session::Driving {
        let file = self.path("parent.yaml");
        let workflow: Workflow = format::load_file(&file, None).unwrap().workflow;
        let request = RunRequest {
            workflow_ref: Some(WorkflowRef::new(&file, None)),
            answers_path: Some(self.path("answers.yaml")),
            ..RunRequest::default()
        };
        let prepared = session::prepare(workflow, request, Some(&*self.store)).await.unwrap();
        let held = session::begin(self.store.clone(), &prepared).unwrap();
        let sinks = Sinks { log: None, observers };
        session::drive(Drive::fresh(prepared, Some(held)).until(until), sinks).await.unwrap()
    }

    async fn resume(&self, id: &str, decisions: Vec<(String, Decision)>) -> switchyard_engine::run::Outcome {
        let resuming = session::open_to_resume(self.store.clone(), id, false).unwrap();
        session::drive(Drive::stored(resuming).deciding(decisions), Sinks::default()).await.unwrap().finish().await
    }

    fn child_id(&self, parent: &str, node: &str, item: Option<usize>) -> String {
        session::child_run_id(&ParentLink { run: parent.into(), node: node.into(), iteration: 1, item, call: None })
    }
}

fn write(dir: &Path, name: &str, text: &str) {
    let path = dir.join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// How often each node of a stored run completed (its `nodeDone` inputs).
fn completions(store: &dyn Store, run: &str, node: &str) -> usize {
    let stored = store.load(run).unwrap();
    stored.recording.inputs.iter().filter(|r| matches!(&r.input, Input::NodeDone { node: n, .. } if n == node)).count()
}

/// The parent's `child_event` logs: (child run, path, the child's event).
fn child_events(events: &[Event]) -> Vec<(String, String, Event)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Log { log_type, content, .. } if log_type == CHILD_EVENT => Some((
                content["childRun"].as_str().unwrap().to_string(),
                content["path"].as_str().unwrap().to_string(),
                serde_json::from_value(content["event"].clone()).unwrap(),
            )),
            _ => None,
        })
        .collect()
}

/// An observer of a parent's stream that notifies when its child enters the node `node` (the child's `node:enter`,
/// carried as a `child_event`).
fn on_entering(node: &'static str) -> (Arc<tokio::sync::Notify>, Arc<dyn Observer>) {
    let entered = Arc::new(tokio::sync::Notify::new());
    let seen = entered.clone();
    let watch = move |e: &Event| -> Result<(), String> {
        if let EventKind::Log { log_type, content, .. } = &e.kind {
            if log_type == CHILD_EVENT && content["event"]["type"] == "node:enter" && content["event"]["node"] == node {
                seen.notify_one();
            }
        }
        Ok(())
    };
    (entered, Arc::new(watch))
}

#[tokio::test]
async fn a_parent_with_a_child_completes_with_the_childs_output_and_the_child_is_a_linked_run_of_its_own() {
    let s = Setup::new(&[("parent.yaml", PARENT), ("children/summarize.yaml", CHILD), ("answers.yaml", ANSWERS)]);
    let collector = Collector::default();
    let outcome = s.start(Until::Pause, vec![Arc::new(collector.clone())]).await.finish().await;
    let result = &outcome.result;
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    assert_eq!(result.node("summarize").unwrap().data, json!({"text": "short"}), "the child's output");
    assert_eq!(result.node("publish").unwrap().data, json!({"text": "published"}));

    // The child is its own run, in the same store, linked to its parent's node and iteration, with its document.
    let child = s.child_id(&result.run_id, "summarize", None);
    let stored = s.store.load(&child).unwrap();
    assert_eq!(stored.row.status, StoredStatus::Completed);
    assert_eq!(
        stored.options.parent,
        Some(ParentLink { run: result.run_id.clone(), node: "summarize".into(), iteration: 1, item: None, call: None })
    );
    assert_eq!(stored.workflow.name, "Summarize");
    assert_eq!(stored.options.input, Some(json!({"text": "the page"})), "the input mapping, rendered");
    let children: Vec<String> = s.store.children(&result.run_id).unwrap().into_iter().map(|c| c.id).collect();
    assert_eq!(children, std::slice::from_ref(&child), "the store finds a parent's children by their link");

    // The parent's stream carries the child's events, marked with the child run and its path.
    let carried = child_events(&collector.events());
    assert!(!carried.is_empty());
    assert!(carried.iter().all(|(run, path, e)| *run == child && path == "summarize" && e.run == child));
    let kinds: Vec<&str> = carried.iter().map(|(_, _, e)| e.kind.type_name()).collect();
    assert_eq!(kinds.first(), Some(&"workflow:start"));
    assert_eq!(kinds.last(), Some(&"workflow:end"));
    assert_eq!(carried.len(), s.store.events(&child).unwrap().len(), "every event of the child, once");

    // A replay of the parent tells the same story from its recording: the child does not run again.
    let replayed = session::replay(&*s.store, &result.run_id, Sinks::default()).unwrap();
    assert!(replayed.diverged.is_none(), "{:?}", replayed.diverged);
    assert_eq!(replayed.result.node("summarize").unwrap().data, json!({"text": "short"}));
    assert_eq!(completions(&*s.store, &child, "write"), 1);
}

#[tokio::test]
async fn a_parent_whose_process_died_while_its_child_ran_takes_up_the_same_child_and_runs_nothing_completed_again() {
    let slow = ANSWERS.replace("write: {text: short}", "write: {text: short, delay_ms: 60000}");
    let s = Setup::new(&[("parent.yaml", PARENT), ("children/summarize.yaml", CHILD), ("answers.yaml", &slow)]);
    // The child has read its input and is writing when the parent's process "dies": its run is dropped there.
    let (started, watch) = on_entering("write");
    let driving = s.start(Until::Pause, vec![watch]).await;
    let parent = driving.run_id.clone();
    tokio::select! {
        _ = driving.finish() => panic!("the run should still have been going"),
        _ = started.notified() => {}
    }
    let child = s.child_id(&parent, "summarize", None);
    // Its process gone, the child is interrupted (its claim is given up as its task stops).
    let interrupted = async {
        while s.store.get(&child).unwrap().status != StoredStatus::Interrupted {
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), interrupted).await.expect("the child's claim was given up");
    assert_eq!(s.store.get(&parent).unwrap().status, StoredStatus::Interrupted);
    // The child's file changes meanwhile: the child run goes on with the document it started with.
    write(s.dir.path(), "children/summarize.yaml", &CHILD.replace("name: Summarize", "name: Changed"));
    write(s.dir.path(), "answers.yaml", ANSWERS);

    let outcome = s.resume(&parent, Vec::new()).await;
    assert_eq!(outcome.result.status, RunStatus::Completed, "{:?}", outcome.result.error);
    assert_eq!(outcome.result.node("summarize").unwrap().data, json!({"text": "short"}));
    assert_eq!(s.store.load(&child).unwrap().workflow.name, "Summarize", "the recorded document, not the file");
    // Nothing that completed ran again, at either level; no second child run was made.
    assert_eq!(completions(&*s.store, &parent, "fetch"), 1);
    assert_eq!(completions(&*s.store, &child, "first"), 1);
    assert_eq!(completions(&*s.store, &child, "write"), 1);
    assert_eq!(completions(&*s.store, &parent, "summarize"), 1);
    let runs: Vec<String> = s.store.list().unwrap().into_iter().map(|r| r.id).collect();
    assert_eq!(runs.len(), 2, "{runs:?}");
    let replayed = session::replay(&*s.store, &parent, Sinks::default()).unwrap();
    assert!(replayed.diverged.is_none(), "{:?}", replayed.diverged);
    assert_eq!(replayed.result.node("summarize").unwrap().data, json!({"text": "short"}));
}

/// Counts child runs in flight from the `workflow:start` and `workflow:end` events the parent's stream carries.
#[derive(Default)]
struct InFlight {
    now: Mutex<(usize, usize)>,
}

impl Observer for InFlight {
    fn on_event(&self, e: &Event) -> Result<(), LogError> {
        if let EventKind::Log { log_type, content, .. } = &e.kind {
            if log_type == CHILD_EVENT {
                let mut now = self.now.lock().unwrap();
                match content["event"]["type"].as_str() {
                    Some("workflow:start") => now.0 += 1,
                    Some("workflow:end") => now.0 -= 1,
                    _ => {}
                }
                now.1 = now.1.max(now.0);
            }
        }
        Ok(())
    }
}

#[tokio::test]
async fn for_each_over_a_workflow_node_runs_fifty_children_at_most_four_at_a_time_in_item_order() {
    let child = "switchyard: 1
name: Echo
input_schema: {type: object, properties: {n: {type: integer}}, required: [n]}
nodes:
  - {id: start, type: start}
  - {id: echo, type: agent, user_prompt: 'Echo {{ input.n }}'}
edges:
  - {from: start, to: echo}
";
    let parent = "switchyard: 1
name: Fan out
nodes:
  - {id: start, type: start}
  - {id: fan, type: workflow, workflow: echo.yaml, input: {n: '{{ item }}'}, for_each: {items: 'range(50) | list', concurrency: 4}}
edges:
  - {from: start, to: fan}
";
    let answers = "workflows:\n  fan:\n    nodes:\n      echo: {text: ok, delay_ms: 20}\n";
    let s = Setup::new(&[("parent.yaml", parent), ("echo.yaml", child), ("answers.yaml", answers)]);
    let in_flight = Arc::new(InFlight::default());
    let started = std::time::Instant::now();
    let outcome = s.start(Until::Pause, vec![in_flight.clone()]).await.finish().await;
    let took = started.elapsed();
    assert_eq!(outcome.result.status, RunStatus::Completed, "{:?}", outcome.result.error);
    let items = outcome.result.node("fan").unwrap().data["items"].as_array().unwrap().clone();
    assert_eq!(items.len(), 50);
    assert!(items.iter().all(|i| *i == json!({"text": "ok"})));
    assert_eq!(in_flight.now.lock().unwrap().1, 4, "the node's concurrency");
    for item in [0, 17, 49] {
        let id = s.child_id(&outcome.result.run_id, "fan", Some(item));
        let stored = s.store.load(&id).unwrap();
        assert_eq!(stored.options.input, Some(json!({"n": item})), "a value that is one expression keeps its type");
        assert_eq!(stored.options.parent.unwrap().item, Some(item));
    }
    assert_eq!(s.store.list().unwrap().len(), 51);
    let children = s.store.children(&outcome.result.run_id).unwrap();
    let items: Vec<Option<usize>> = children.iter().map(|c| c.link.item).collect();
    assert_eq!(items, (0..50).map(Some).collect::<Vec<_>>(), "each item's child, in item order");
    eprintln!("50 child runs, 4 at a time (20 ms each): {took:?}");
}

const REVIEWED: &str = "switchyard: 1
name: Reviewed
nodes:
  - {id: start, type: start}
  - {id: draft, type: agent, user_prompt: 'Draft {{ input }}'}
  - {id: review, type: approval, message: 'Publish {{ draft.text }}?'}
  - {id: publish, type: agent, user_prompt: 'Publish {{ draft.text }}'}
  - {id: revise, type: agent, user_prompt: 'Revise {{ draft.text }}'}
edges:
  - {from: start, to: draft}
  - {from: draft, to: review}
  - {from: review, to: publish, handle: approve}
  - {from: review, to: revise, handle: reject}
";

const REVIEWING_PARENT: &str = "switchyard: 1
name: Parent
nodes:
  - {id: start, type: start, initial_input: dark mode}
  - {id: summarize, type: workflow, workflow: reviewed.yaml}
  - {id: other, type: agent, user_prompt: Other}
  - {id: after, type: agent, user_prompt: 'After {{ summarize.text }}'}
edges:
  - {from: start, to: summarize}
  - {from: start, to: other}
  - {from: summarize, to: after}
";

const REVIEWING_ANSWERS: &str = "nodes:
  other: {text: independent}
  after: {text: done}
workflows:
  summarize:
    nodes:
      draft: {text: the draft}
      publish: {text: the post}
      revise: {text: revised}
";

#[tokio::test]
async fn an_approval_inside_a_child_pauses_only_the_parents_branch_and_is_decided_from_the_parent_by_its_path() {
    let s = Setup::new(&[
        ("parent.yaml", REVIEWING_PARENT),
        ("reviewed.yaml", REVIEWED),
        ("answers.yaml", REVIEWING_ANSWERS),
    ]);
    let paused = s.start(Until::Pause, Vec::new()).await.finish().await.result;
    assert_eq!(paused.status, RunStatus::Paused, "{:?}", paused.error);
    // The independent branch ran; the child's branch waits.
    assert_eq!(paused.node("other").unwrap().data, json!({"text": "independent"}));
    assert!(paused.node("after").is_none());
    assert_eq!(paused.pending.len(), 1);
    let pending = &paused.pending[0];
    assert_eq!(pending.path(), "summarize › review");
    assert_eq!(pending.message, "Publish the draft?", "what the child's approval asks");
    let child = s.child_id(&paused.run_id, "summarize", None);
    assert_eq!(s.store.get(&child).unwrap().status, StoredStatus::Paused);
    assert_eq!(s.store.get(&paused.run_id).unwrap().status, StoredStatus::Paused);

    let outcome =
        s.resume(&paused.run_id, vec![("summarize".into(), Decision::new(Verdict::Approve, "ship it"))]).await;
    assert_eq!(outcome.result.status, RunStatus::Completed, "{:?}", outcome.result.error);
    assert_eq!(outcome.result.node("summarize").unwrap().data, json!({"text": "the post"}));
    assert_eq!(outcome.result.node("after").unwrap().data, json!({"text": "done"}));
    // The child took the decision, note and all, and nothing it had done ran again.
    let (_, child_result) = session::show(&*s.store, &child).unwrap();
    assert_eq!(child_result.node("review").unwrap().data, json!({"decision": "approve", "note": "ship it"}));
    assert_eq!(completions(&*s.store, &child, "draft"), 1);
    assert_eq!(completions(&*s.store, &paused.run_id, "other"), 1);
    let replayed = session::replay(&*s.store, &paused.run_id, Sinks::default()).unwrap();
    assert!(replayed.diverged.is_none(), "{:?}", replayed.diverged);
}

#[tokio::test]
async fn a_rejection_from_the_parent_takes_the_childs_reject_branch() {
    let s = Setup::new(&[
        ("parent.yaml", REVIEWING_PARENT),
        ("reviewed.yaml", REVIEWED),
        ("answers.yaml", REVIEWING_ANSWERS),
    ]);
    let paused = s.start(Until::Pause, Vec::new()).await.finish().await.result;
    let outcome =
        s.resume(&paused.run_id, vec![("summarize".into(), Decision::new(Verdict::Reject, "too long"))]).await;
    assert_eq!(outcome.result.status, RunStatus::Completed);
    assert_eq!(outcome.result.node("summarize").unwrap().data, json!({"text": "revised"}));
}

#[tokio::test]
async fn cancelling_a_parent_cancels_its_child() {
    let slow = ANSWERS.replace("first: {text: read it}", "first: {text: read it, delay_ms: 60000}");
    let s = Setup::new(&[("parent.yaml", PARENT), ("children/summarize.yaml", CHILD), ("answers.yaml", &slow)]);
    let (started, watch) = on_entering("first");
    let driving = s.start(Until::End, vec![watch]).await;
    let controller = driving.controller();
    let parent = driving.run_id.clone();
    let finishing = tokio::spawn(driving.finish());
    started.notified().await;
    controller.cancel();
    let outcome = tokio::time::timeout(Duration::from_secs(10), finishing).await.unwrap().unwrap();
    assert_eq!(outcome.result.status, RunStatus::Cancelled);
    let child = s.child_id(&parent, "summarize", None);
    assert_eq!(s.store.get(&child).unwrap().status, StoredStatus::Cancelled, "the child ended with its parent");
    let _: Value = json!(null);
}

#[tokio::test]
async fn a_childs_code_step_runs_only_with_consent_given_for_the_run_not_on_the_parents_file_alone() {
    let child = "switchyard: 1
name: Coded
nodes:
  - {id: start, type: start}
  - {id: step, type: script, language: python, code: \"return {'sum': 1 + 2}\"}
edges:
  - {from: start, to: step}
";
    let parent = "switchyard: 1
name: Parent
nodes:
  - {id: start, type: start}
  - {id: summarize, type: workflow, workflow: coded.yaml}
edges:
  - {from: start, to: summarize}
";
    let s = Setup::new(&[("parent.yaml", parent), ("coded.yaml", child), ("answers.yaml", "{}\n")]);
    // No trust file here: only what this test gives counts.
    std::env::set_var("SWITCHYARD_HOME", s.dir.path());
    let s = &s;
    let run = |allow_code: bool| async move {
        let file = s.path("parent.yaml");
        let workflow: Workflow = format::load_file(&file, None).unwrap().workflow;
        let request =
            RunRequest { workflow_ref: Some(WorkflowRef::new(&file, None)), allow_code, ..RunRequest::default() };
        let prepared = session::prepare(workflow, request, Some(&*s.store)).await.unwrap();
        let held = session::begin(s.store.clone(), &prepared).unwrap();
        session::drive(Drive::fresh(prepared, Some(held)), Sinks::default()).await.unwrap().finish().await.result
    };
    let refused = run(false).await;
    assert_eq!(refused.status, RunStatus::Failed);
    let node = refused.node("summarize").unwrap();
    assert_eq!(node.error_code.as_deref(), Some("CHILD_FAILED"), "{:?}", node.error);
    let (_, child) = session::show(&*s.store, &s.child_id(&refused.run_id, "summarize", None)).unwrap();
    assert_eq!(child.node("step").unwrap().error_code.as_deref(), Some("CODE_NEEDS_CONSENT"));

    let allowed = run(true).await;
    assert_eq!(allowed.status, RunStatus::Completed, "{:?}", allowed.error);
    assert_eq!(allowed.node("summarize").unwrap().data, json!({"sum": 3}));
}

#[tokio::test]
async fn a_tea_dynamic_parallel_subgraph_runs_each_item_as_a_child_run_of_the_subgraphs_file() {
    // TEA's own example's shape (examples/yaml/dynamic_parallel_subgraph_mode.yaml): the item and its index under
    // names of the node's choosing, read by the `input` templates, and the subgraph's file beside the parent's.
    let parent = "name: batch
nodes:
  - name: analyze
    type: dynamic_parallel
    items: \"{{ state.sources }}\"
    item_var: source
    index_var: source_index
    max_concurrency: 2
    fan_in: done
    subgraph: ./one_source.yaml
    input:
      data_source: \"{{ source }}\"
      position: \"{{ source_index }}\"
      from: \"{{ state.origin }}\"
    output: results
  - name: done
    run: return {}
";
    let child = "name: one-source
nodes:
  - name: label
    run: |
      return {\"label\": state[\"data_source\"][\"name\"] + \"#\" + str(state[\"position\"]) + \" of \" + state[\"from\"]}
";
    let s = Setup::new(&[("parent.yaml", parent), ("one_source.yaml", child)]);
    let (wf, notes) = {
        let loaded = format::load_file(&s.path("parent.yaml"), None).unwrap();
        (loaded.workflow, loaded.notes)
    };
    let node = wf.node("analyze").unwrap();
    assert_eq!((node.node_type, node.workflow.as_deref()), (NodeType::Workflow, Some("one_source.yaml")));
    let input = node.input.as_ref().unwrap();
    assert_eq!(input["data_source"], json!("{{ item }}"));
    assert_eq!(input["position"], json!("{{ index }}"));
    assert_eq!(input["from"], json!("{{ state.origin }}"), "the rest of TEA's state is read as it is");
    assert!(notes.iter().any(|n| n.contains("child run") && n.contains("final state")), "{notes:?}");
    assert!(notes.iter().any(|n| n.contains("`output: results`") && n.contains("analyze.items")), "{notes:?}");
    assert!(validate::validate(&wf, &validate::Options::default()).is_ok());

    let file = s.path("parent.yaml");
    let request = RunRequest {
        workflow_ref: Some(WorkflowRef::new(&file, None)),
        allow_code: true,
        input: Some(json!({"sources": [{"name": "a"}, {"name": "b"}, {"name": "c"}], "origin": "sales"})),
        ..RunRequest::default()
    };
    let prepared = session::prepare(wf, request, Some(&*s.store)).await.unwrap();
    let held = session::begin(s.store.clone(), &prepared).unwrap();
    let ran = session::drive(Drive::fresh(prepared, Some(held)), Sinks::default()).await.unwrap().finish().await.result;
    assert_eq!(ran.status, RunStatus::Completed, "{:?}", ran.error);
    assert_eq!(
        ran.node("analyze").unwrap().data,
        json!({"items": [{"label": "a#0 of sales"}, {"label": "b#1 of sales"}, {"label": "c#2 of sales"}]})
    );
    let children = s.store.children(&ran.run_id).unwrap();
    assert_eq!(children.iter().map(|c| c.link.item).collect::<Vec<_>>(), [Some(0), Some(1), Some(2)]);
}

/// The model the child run of `summarize` defaults to when the parent names `parent_default` and is run with
/// `given` (`--model`), and the child names `child_default`.
async fn childs_model(
    parent_default: Option<&str>,
    given: Option<&str>,
    child_default: Option<&str>,
) -> Option<String> {
    let with_default = |text: &str, model: Option<&str>| match model {
        Some(m) => text.replacen("nodes:\n", &format!("defaults: {{model: {m}}}\nnodes:\n"), 1),
        None => text.to_string(),
    };
    let (parent, child) = (with_default(PARENT, parent_default), with_default(CHILD, child_default));
    let s = Setup::new(&[("parent.yaml", &parent), ("children/summarize.yaml", &child), ("answers.yaml", ANSWERS)]);
    let file = s.path("parent.yaml");
    let request = RunRequest {
        workflow_ref: Some(WorkflowRef::new(&file, None)),
        answers_path: Some(s.path("answers.yaml")),
        model: given.map(str::to_string),
        ..RunRequest::default()
    };
    let workflow = format::load_file(&file, None).unwrap().workflow;
    let prepared = session::prepare(workflow, request, Some(&*s.store)).await.unwrap();
    let held = session::begin(s.store.clone(), &prepared).unwrap();
    let outcome = session::drive(Drive::fresh(prepared, Some(held)), Sinks::default()).await.unwrap().finish().await;
    assert_eq!(outcome.result.status, RunStatus::Completed, "{:?}", outcome.result.error);
    let stored = s.store.load(&s.child_id(&outcome.result.run_id, "summarize", None)).unwrap();
    stored.options.model.or(stored.workflow.defaults.model)
}

#[tokio::test]
async fn a_child_defaults_to_its_own_model_else_its_parents_and_a_model_given_for_the_parent_overrides_both() {
    let own = |m: &str| Some(m.to_string());
    assert_eq!(childs_model(Some("local/parent"), None, Some("local/child")).await, own("local/child"));
    assert_eq!(childs_model(Some("local/parent"), None, None).await, own("local/parent"), "the parent's default");
    assert_eq!(childs_model(None, Some("local/given"), Some("local/child")).await, own("local/given"), "--model");
    assert_eq!(childs_model(Some("local/parent"), Some("local/given"), None).await, own("local/given"));
}

const TIMED_CHILD: &str = "switchyard: 1
name: Timed review
nodes:
  - {id: start, type: start}
  - {id: review, type: approval, timeout_seconds: SECONDS}
  - {id: ok, type: agent, user_prompt: Fine}
  - {id: late, type: agent, user_prompt: Late}
edges:
  - {from: start, to: review}
  - {from: review, to: ok, handle: approve}
  - {from: review, to: late, handle: timeout}
";

const TIMED_ANSWERS: &str = "nodes:
  fetch: {text: the page}
  publish: {text: published}
workflows:
  summarize:
    nodes:
      ok: {text: approved in time}
      late: {text: nobody answered}
";

/// A parent whose child's approval times out after `seconds`.
fn timed(seconds: u32) -> Setup {
    let child = TIMED_CHILD.replace("SECONDS", &seconds.to_string());
    let parent = PARENT.replace(
        "workflow: children/summarize.yaml, input: {text: '{{ fetch.text }}'}",
        "workflow: children/timed.yaml",
    );
    Setup::new(&[("parent.yaml", &parent), ("children/timed.yaml", &child), ("answers.yaml", TIMED_ANSWERS)])
}

#[tokio::test(start_paused = true)]
async fn an_approval_inside_a_child_that_times_out_takes_the_childs_timeout_edge_while_its_parent_waits() {
    let s = timed(60);
    let finishing = s.start(Until::End, Vec::new()).await.finish();
    let outcome =
        tokio::time::timeout(Duration::from_secs(3600), finishing).await.expect("the child's timeout ends it");
    assert_eq!(outcome.result.status, RunStatus::Completed, "{:?}", outcome.result.error);
    assert_eq!(outcome.result.node("summarize").unwrap().data, json!({"text": "nobody answered"}));
    let child = s.store.load(&s.child_id(&outcome.result.run_id, "summarize", None)).unwrap();
    let (_, shown) = session::show(&*s.store, &child.row.id).unwrap();
    assert_eq!(shown.node("review").unwrap().data, json!({"decision": "timeout", "note": "timed out"}));
    assert_eq!(shown.node("late").unwrap().status, NodeStatus::Success);
    assert_ne!(shown.node("ok").map(|n| n.status), Some(NodeStatus::Success), "the approve edge was not taken");
}

#[tokio::test]
async fn a_parked_parent_is_woken_at_its_childs_approval_deadline_and_the_child_times_out_as_it_would_alone() {
    let s = timed(1);
    let now = || std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    let before = now();
    let paused = s.start(Until::Pause, Vec::new()).await.finish().await;
    assert_eq!(paused.result.status, RunStatus::Paused);
    assert_eq!(paused.result.pending[0].path(), "summarize › review");
    // The parent is woken when the child's approval times out (a worker releases it with this `wake_at`).
    let wake = paused.wake_at_ms.expect("the parent wakes at its child's deadline");
    assert!((before + 1_000..=now() + 1_000).contains(&wake), "{wake} is 1 s after the child paused ({before})");

    // Taken up after the deadline (as a worker takes it at `wake_at`): the child times out by its own edge.
    tokio::time::sleep(Duration::from_millis((wake - now()).max(0) as u64 + 20)).await;
    let done = s.resume(&paused.result.run_id, Vec::new()).await;
    assert_eq!(done.result.status, RunStatus::Completed, "{:?}", done.result.error);
    assert_eq!(done.result.node("summarize").unwrap().data, json!({"text": "nobody answered"}));
    assert_eq!(done.result.node("publish").unwrap().data, json!({"text": "published"}));
}

/// An agent offered the child workflows `children/summarize.yaml` (input `{text}`) and `reviewed.yaml` (no input
/// schema: it takes `{message}`) as tools, and an answers file whose agent calls `call`.
fn asking_agent(call: &str) -> Setup {
    let parent = "switchyard: 1
name: Asker
nodes:
  - {id: start, type: start}
  - {id: helper, type: agent, user_prompt: Help, tools: {workflows: [children/summarize.yaml, reviewed.yaml]}}
  - {id: after, type: agent, user_prompt: 'After {{ helper.text }}'}
edges:
  - {from: start, to: helper}
  - {from: helper, to: after}
";
    let answers = format!(
        "nodes:
  helper: {{text: helped, tool_calls: [{call}]}}
  after: {{text: done}}
workflows:
  helper:
    nodes:
      first: {{text: read it}}
      write: {{text: short}}
      draft: {{text: the draft}}
      publish: {{text: the post}}
"
    );
    Setup::new(&[
        ("parent.yaml", parent),
        ("children/summarize.yaml", CHILD),
        ("reviewed.yaml", REVIEWED),
        ("answers.yaml", &answers),
    ])
}

#[tokio::test]
async fn an_agent_calls_a_workflow_as_a_tool_and_the_tool_call_is_a_child_run_of_its_own_whose_output_it_reads() {
    let s = asking_agent("{tool: summarize, input: {text: the page}}");
    let collector = Collector::default();
    let outcome = s.start(Until::Pause, vec![Arc::new(collector.clone())]).await.finish().await;
    let result = &outcome.result;
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    let helper = result.node("helper").unwrap();
    assert_eq!(helper.tool_calls.len(), 1, "{:?}", helper.tool_calls);
    let call = &helper.tool_calls[0];
    assert_eq!(call.tool, "summarize", "offered under its workflow's tool name");
    assert_eq!(call.output, Some(json!({"text": "short"})), "the child's output is the tool's result");
    assert_eq!(call.error, None);

    // The call is a child run, linked to the agent's node and the call, with the model's arguments as its input.
    let link = ParentLink {
        run: result.run_id.clone(),
        node: "helper".into(),
        iteration: 1,
        item: None,
        call: Some("c0".into()),
    };
    let child = session::child_run_id(&link);
    let stored = s.store.load(&child).unwrap();
    assert_eq!(stored.row.status, StoredStatus::Completed);
    assert_eq!(stored.options.parent, Some(link));
    assert_eq!(stored.options.input, Some(json!({"text": "the page"})));
    assert_eq!(s.store.children(&result.run_id).unwrap().len(), 1);
    let carried = child_events(&collector.events());
    assert!(!carried.is_empty());
    assert!(carried.iter().all(|(run, path, _)| *run == child && path == "helper"), "under the agent's path");

    // A replay tells the same story without running the child again.
    let replayed = session::replay(&*s.store, &result.run_id, Sinks::default()).unwrap();
    assert!(replayed.diverged.is_none(), "{:?}", replayed.diverged);
    assert_eq!(replayed.result.node("helper").unwrap().tool_calls[0].output, Some(json!({"text": "short"})));
    assert_eq!(completions(&*s.store, &child, "write"), 1);
}

#[tokio::test]
async fn a_workflow_tool_without_an_input_schema_takes_a_message_and_an_approval_inside_it_is_decided_from_the_parent()
{
    let s = asking_agent("{tool: reviewed, input: {message: dark mode}}");
    let paused = s.start(Until::Pause, Vec::new()).await.finish().await.result;
    assert_eq!(paused.status, RunStatus::Paused, "{:?}", paused.error);
    assert_eq!(paused.pending.len(), 1);
    let pending = &paused.pending[0];
    assert_eq!(pending.path(), "helper › review", "the agent, then the child's node");
    assert_eq!(pending.message, "Publish the draft?");
    let link = ParentLink {
        run: paused.run_id.clone(),
        node: "helper".into(),
        iteration: 1,
        item: None,
        call: Some("c0".into()),
    };
    let child = session::child_run_id(&link);
    assert_eq!(s.store.get(&child).unwrap().status, StoredStatus::Paused);
    assert_eq!(s.store.load(&child).unwrap().options.input, Some(json!("dark mode")), "the message is its input");

    let outcome = s.resume(&paused.run_id, vec![("helper".into(), Decision::new(Verdict::Approve, "ship it"))]).await;
    assert_eq!(outcome.result.status, RunStatus::Completed, "{:?}", outcome.result.error);
    let helper = outcome.result.node("helper").unwrap();
    assert_eq!(
        helper.tool_calls.len(),
        1,
        "the call made again after the pause is the same call: {:?}",
        helper.tool_calls
    );
    assert_eq!(helper.tool_calls[0].output, Some(json!({"text": "the post"})));
    assert_eq!(outcome.result.node("after").unwrap().data, json!({"text": "done"}));
    // One child run for the call, taken up where it paused: the draft was written once.
    assert_eq!(s.store.children(&paused.run_id).unwrap().len(), 1);
    assert_eq!(completions(&*s.store, &child, "draft"), 1);
    let replayed = session::replay(&*s.store, &paused.run_id, Sinks::default()).unwrap();
    assert!(replayed.diverged.is_none(), "{:?}", replayed.diverged);
}

#[tokio::test]
async fn a_workflow_tool_whose_input_does_not_fit_its_schema_answers_the_model_with_an_error_and_makes_no_run() {
    let s = asking_agent("{tool: summarize, input: {words: 3}}");
    let outcome = s.start(Until::Pause, Vec::new()).await.finish().await;
    assert_eq!(outcome.result.status, RunStatus::Completed, "a tool's error is the model's to read");
    let call = &outcome.result.node("helper").unwrap().tool_calls[0];
    let error = call.error.as_deref().unwrap();
    assert!(error.contains("does not fit") && error.contains("CHILD_INPUT_MISMATCH"), "{error}");
    assert!(s.store.children(&outcome.result.run_id).unwrap().is_empty());
}

#[tokio::test]
async fn cancelling_a_parent_cancels_the_child_run_its_agents_workflow_tool_call_made() {
    let s = asking_agent("{tool: summarize, input: {text: the page}}");
    let answers = std::fs::read_to_string(s.path("answers.yaml")).unwrap();
    write(
        s.dir.path(),
        "answers.yaml",
        &answers.replace("first: {text: read it}", "first: {text: read it, delay_ms: 60000}"),
    );
    let (started, watch) = on_entering("first");
    let driving = s.start(Until::End, vec![watch]).await;
    let (controller, parent) = (driving.controller(), driving.run_id.clone());
    let finishing = tokio::spawn(driving.finish());
    started.notified().await;
    controller.cancel();
    let outcome = tokio::time::timeout(Duration::from_secs(10), finishing).await.unwrap().unwrap();
    assert_eq!(outcome.result.status, RunStatus::Cancelled);
    let children = s.store.children(&parent).unwrap();
    assert_eq!(children.len(), 1);
    assert_eq!(children[0].link.call.as_deref(), Some("c0"));
    assert_eq!(
        s.store.get(&children[0].id).unwrap().status,
        StoredStatus::Cancelled,
        "the child ended with its parent"
    );
}
