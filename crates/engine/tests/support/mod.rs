//! Helpers shared by the engine's integration tests: build a workflow and a script from YAML text, run them, and
//! record what the model was asked.
#![allow(dead_code)]

pub mod http;

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::Value;
use switchyard_engine::answers::{Answers, AnswersModel};
use switchyard_engine::events::{Event, EventKind};
use switchyard_engine::format::{self, Format};
use switchyard_engine::log::{Collector, MemoryLog, Observer};
use switchyard_engine::model::{
    Choice, ExecuteRequest, Model, ModelError, ModelOutput, NodeIo, RouteAnswer, RouteRequest,
};
use switchyard_engine::result::NodeStatus;
use switchyard_engine::run::{self, Outcome, RunOptions, Runtime};
use switchyard_engine::validate::{self, Options};
use switchyard_engine::{RunResult, Workflow};

/// Parses canonical YAML; the `switchyard: 1` and `name` lines are added when missing.
pub fn workflow(yaml: &str) -> Workflow {
    let text =
        if yaml.contains("switchyard:") { yaml.to_string() } else { format!("switchyard: 1\nname: test\n{yaml}") };
    format::load_str(&text, Some(Format::Switchyard), None)
        .unwrap_or_else(|e| panic!("test workflow does not load: {e}"))
        .workflow
}

pub fn script(yaml: &str) -> Arc<Answers> {
    Arc::new(Answers::parse(yaml).unwrap_or_else(|e| panic!("test script does not load: {e}")))
}

/// What the model was asked, in order.
#[derive(Debug, Clone)]
pub enum Asked {
    Execute { node: String, prompt: String, context: Value, previous_output: String },
    Route { node: String, choices: Vec<Choice>, context: Value },
}

/// A scripted model that keeps every request it was asked (not a run's `Recording`).
pub struct AskedModel {
    inner: AnswersModel,
    pub asked: Mutex<Vec<Asked>>,
}

impl AskedModel {
    pub fn new(script: Arc<Answers>) -> Arc<AskedModel> {
        Arc::new(AskedModel { inner: AnswersModel::new(script), asked: Mutex::new(Vec::new()) })
    }

    pub fn asked(&self) -> Vec<Asked> {
        self.asked.lock().unwrap().clone()
    }

    pub fn routes(&self) -> Vec<(String, Vec<Choice>, Value)> {
        self.asked()
            .into_iter()
            .filter_map(|a| match a {
                Asked::Route { node, choices, context } => Some((node, choices, context)),
                _ => None,
            })
            .collect()
    }

    pub fn executes(&self) -> Vec<(String, String, Value, String)> {
        self.asked()
            .into_iter()
            .filter_map(|a| match a {
                Asked::Execute { node, prompt, context, previous_output } => {
                    Some((node, prompt, context, previous_output))
                }
                _ => None,
            })
            .collect()
    }
}

#[async_trait]
impl Model for AskedModel {
    async fn execute(&self, r: &ExecuteRequest<'_>, io: &dyn NodeIo) -> Result<ModelOutput, ModelError> {
        self.asked.lock().unwrap().push(Asked::Execute {
            node: r.node.to_string(),
            prompt: r.prompt.to_string(),
            context: r.scope.context_json(),
            previous_output: r.scope.previous_output.to_string(),
        });
        self.inner.execute(r, io).await
    }

    async fn route(&self, r: &RouteRequest<'_>, io: &dyn NodeIo) -> Result<RouteAnswer, ModelError> {
        self.asked.lock().unwrap().push(Asked::Route {
            node: r.node.to_string(),
            choices: r.choices.to_vec(),
            context: r.context.clone(),
        });
        self.inner.route(r, io).await
    }
}

pub struct Ran {
    pub outcome: Outcome,
    pub events: Vec<Event>,
    pub model: Arc<AskedModel>,
    /// The run log: its events and inputs, as the run store keeps them.
    pub log: MemoryLog,
    pub options: RunOptions,
}

impl Ran {
    pub fn result(&self) -> &RunResult {
        &self.outcome.result
    }

    /// Node ids of successful trace steps, in order.
    pub fn ran(&self) -> Vec<&str> {
        self.result().steps_with(NodeStatus::Success)
    }

    pub fn skipped(&self) -> Vec<&str> {
        self.result().steps_with(NodeStatus::Skipped)
    }

    /// Trace edges as (from, to, reason).
    pub fn edges(&self) -> Vec<(&str, &str, &str)> {
        self.result().trace.edges.iter().map(|e| (e.from.as_str(), e.to.as_str(), e.reason.as_str())).collect()
    }

    pub fn data(&self, node: &str) -> Value {
        self.result().node(node).unwrap_or_else(|| panic!("no result for {node}")).data
    }

    pub fn types(&self) -> Vec<&'static str> {
        self.events.iter().map(|e| e.kind.type_name()).collect()
    }

    pub fn route_count(&self) -> usize {
        self.model.routes().len()
    }

    /// The `log` events of a node with this log type (`stdout`, `stderr`, …), their content as text.
    pub fn logs(&self, node: &str, log_type: &str) -> Vec<String> {
        self.events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::Log { node: Some(n), log_type: t, content } if n == node && t == log_type => {
                    Some(content.as_str().map_or_else(|| content.to_string(), str::to_string))
                }
                _ => None,
            })
            .collect()
    }

    pub fn error(&self, node: &str) -> String {
        self.result().node(node).and_then(|r| r.error.clone()).unwrap_or_else(|| panic!("{node} did not fail"))
    }

    pub fn warnings(&self) -> Vec<String> {
        self.events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::NodeWarning { message, .. } => Some(message.clone()),
                _ => None,
            })
            .collect()
    }
}

pub fn runtime(script: Arc<Answers>, model: Arc<AskedModel>, observers: Vec<Arc<dyn Observer>>) -> Runtime {
    Runtime {
        model,
        answers: Some(script),
        log: None,
        observers,
        code: Default::default(),
        mcp: Default::default(),
        children: None,
    }
}

/// Runs a workflow whose code steps run (consent given, in `dir`), with a script for its agents; then replays it.
pub async fn run_code(wf: &Workflow, script_yaml: &str, input: Option<Value>, dir: &std::path::Path) -> Ran {
    run_code_with(
        wf,
        script_yaml,
        input,
        switchyard_engine::code::Code { allowed: true, dir: Some(dir.into()), ..Default::default() },
    )
    .await
}

pub async fn run_code_with(
    wf: &Workflow,
    script_yaml: &str,
    input: Option<Value>,
    code: switchyard_engine::code::Code,
) -> Ran {
    run_full(wf, script_yaml, RunOptions { input, ..RunOptions::default() }, code).await
}

/// Validates (panicking on errors, so tests never run an invalid graph by accident), then runs.
pub async fn run_with(wf: &Workflow, script_yaml: &str, options: RunOptions) -> Ran {
    run_full(wf, script_yaml, options, Default::default()).await
}

async fn run_full(wf: &Workflow, script_yaml: &str, options: RunOptions, code: switchyard_engine::code::Code) -> Ran {
    let report = validate::validate(wf, &Options::default());
    assert!(report.is_ok(), "test workflow does not validate: {:?}", report.errors);
    let script = script(script_yaml);
    let model = AskedModel::new(script.clone());
    let collector = Collector::default();
    let log = MemoryLog::default();
    let mut rt = runtime(script, model.clone(), vec![Arc::new(collector.clone())]);
    rt.log = Some(Arc::new(log.clone()));
    rt.code = code;
    let outcome = run_to_pause(Arc::new(wf.clone()), options.clone(), rt).await;
    let ran = Ran { outcome, events: collector.events(), model, log, options };
    replays_the_same(wf, &ran);
    ran
}

/// A run from the beginning to its first pause, launched as the session launches one (`run::launch`).
pub async fn run_to_pause(wf: Arc<Workflow>, options: RunOptions, rt: Runtime) -> Outcome {
    run::launch(run::Launch::fresh(wf, options), rt).expect("a fresh run launches").finish().await
}

/// A recorded run going on to its next pause, given these decisions (written as an answers file writes them): one
/// its run cannot take fails.
pub async fn resume_to_pause(
    wf: Arc<Workflow>,
    options: RunOptions,
    recording: run::Recording,
    decisions: Vec<(String, Value)>,
    rt: Runtime,
) -> Result<Outcome, run::ResumeError> {
    let decisions = decisions.into_iter().map(|(node, d)| (node, run::Decision::normalize(&d))).collect();
    Ok(run::launch(run::Launch::recorded(wf, options, recording).deciding(decisions), rt)?.finish().await)
}

/// A run that stays alive while paused and takes decisions through its handle (the app's).
pub fn start_live(wf: Arc<Workflow>, options: RunOptions, rt: Runtime) -> run::RunHandle {
    run::launch(run::Launch::fresh(wf, options).until(run::Until::End), rt).expect("a fresh run launches")
}

/// Every test run is also played again from its recording: the replay must make no model call and give the same
/// events (how long quick nodes took aside), results and trace.
pub fn replays_the_same(wf: &Workflow, ran: &Ran) {
    let model = AskedModel::new(script(""));
    let collector = Collector::default();
    let rt = Runtime {
        model: model.clone(),
        answers: None,
        log: None,
        observers: vec![Arc::new(collector.clone())],
        code: Default::default(),
        mcp: Default::default(),
        children: None,
    };
    let options = RunOptions { run_id: Some(ran.result().run_id.clone()), ..ran.options.clone() };
    let replayed = run::replay(Arc::new(wf.clone()), options, ran.log.recording(), rt)
        .unwrap_or_else(|e| panic!("the run does not replay: {e}"));
    assert!(model.asked().is_empty(), "a replay asked the model: {:?}", model.asked());
    if let Some(d) = switchyard_engine::events::first_divergence(&ran.log.recording().events, &collector.events()) {
        panic!("the replay differs at event {}:\nrecorded: {:?}\nreplayed: {:?}", d.at, d.recorded, d.replayed);
    }
    assert_eq!(replayed.result.results, ran.result().results);
    assert_eq!(replayed.result.trace, ran.result().trace);
    assert_eq!(replayed.result.status, ran.result().status);
}

pub async fn run(wf: &Workflow, script_yaml: &str) -> Ran {
    run_with(wf, script_yaml, RunOptions::default()).await
}

pub fn codes(wf: &Workflow) -> Vec<&'static str> {
    validate::validate(wf, &Options::default()).codes()
}
