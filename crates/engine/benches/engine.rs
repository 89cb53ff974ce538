//! `npm run bench` (bench/engine.sh): engine overhead per shape against a bare tokio task-and-channel floor.
//!
//! `agent_turns` is one agent whose conversation is `n` model turns, each followed by a tool call, on a model that
//! answers at once: what the run log's journal of turns and tool calls (docs/runs.md, "What a resume repeats") costs,
//! logged against not logged.
//!
//! Each shape and each floor runs in a fresh child process (this binary re-invoked with `--one`), so peak RSS
//! (VmHWM) belongs to that shape alone. The parent prints one JSON line per shape and a summary line of targets.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use switchyard_engine::answers::{Answer, Answers, AnswersModel, OneOrMany};
use switchyard_engine::document::{Edge, Node, NodeType, Workflow};
use switchyard_engine::events::Event;
use switchyard_engine::log::{LogError, Observer, RunLog};
use switchyard_engine::model::{ExecuteRequest, Model, ModelError, ModelOutput, NodeIo, RouteAnswer, RouteRequest};
use switchyard_engine::run::{self, RunOptions, Runtime};
use switchyard_engine::store::{NewRun, RunStore};
use switchyard_engine::validate::{validate, Options};
use switchyard_engine::RunStatus;

const SHAPES: &[(&str, usize)] = &[
    ("chain", 1_000),
    ("chain", 10_000),
    ("fanout_50ms", 1_000),
    ("loop", 1_000),
    ("agent_turns", 20),
    ("validate", 100_000),
];
const LATENCY_MS: u64 = 50;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--one") {
        let (kind, shape, n) = (&args[i + 1], &args[i + 2], args[i + 3].parse().unwrap());
        let (wall, steps) = match kind.as_str() {
            "floor" => floor(shape, n),
            "logged" => engine(shape, n, true),
            _ => engine(shape, n, false),
        };
        println!("{}", json!({"wall_ms": ms(wall), "steps": steps, "peak_rss_mb": peak_rss_mb()}));
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let mut per_step = BTreeMap::new();
    let mut lines = Vec::new();
    for (shape, n) in SHAPES {
        let child = |kind: &str| -> Value {
            let out = std::process::Command::new(&exe).args(["--one", kind, shape, &n.to_string()]).output().unwrap();
            assert!(out.status.success(), "{kind} {shape} {n}: {}", String::from_utf8_lossy(&out.stderr));
            serde_json::from_slice(&out.stdout).unwrap()
        };
        // Best of three for wall time (the machine is shared), peak RSS from the same runs.
        let best = |kind: &str| -> Value {
            (0..3)
                .map(|_| child(kind))
                .min_by(|a, b| a["wall_ms"].as_f64().unwrap().total_cmp(&b["wall_ms"].as_f64().unwrap()))
                .unwrap()
        };
        let (e, f) = (best("engine"), best("floor"));
        // The same run with the durable run log on (a SQLite store in a temporary folder), in the same session.
        let l = if *shape == "validate" { e.clone() } else { best("logged") };
        let steps = e["steps"].as_f64().unwrap();
        let per = |v: &Value| v["wall_ms"].as_f64().unwrap() * 1000.0 / steps;
        let line = json!({
            "shape": shape, "nodes": n,
            "wall_ms": e["wall_ms"], "per_step_us": round(per(&e)), "peak_rss_mb": e["peak_rss_mb"],
            "floor_wall_ms": f["wall_ms"], "floor_per_step_us": round(per(&f)), "floor_peak_rss_mb": f["peak_rss_mb"],
            "overhead_x": round(per(&e) / per(&f)),
            "logged_wall_ms": l["wall_ms"], "logged_per_step_us": round(per(&l)), "logged_peak_rss_mb": l["peak_rss_mb"],
            "log_cost_x": round(per(&l) / per(&e)),
        });
        println!("{line}");
        per_step.insert(format!("{shape}_{n}"), per(&e));
        lines.push(line);
    }
    let find = |shape: &str, n: usize| lines.iter().find(|l| l["shape"] == shape && l["nodes"] == n).unwrap();
    let summary = json!({
        "summary": true,
        "chain_overhead_x": find("chain", 10_000)["overhead_x"],
        "linearity_10k_over_1k": round(per_step["chain_10000"] / per_step["chain_1000"]),
        "fanout_over_latency": round(find("fanout_50ms", 1_000)["wall_ms"].as_f64().unwrap() / LATENCY_MS as f64),
        "chain_10000_peak_rss_mb": find("chain", 10_000)["peak_rss_mb"],
        "chain_10000_logged_peak_rss_mb": find("chain", 10_000)["logged_peak_rss_mb"],
        // The journal's cost is its own line: every turn and tool call waits for its entry to be written.
        "log_cost_x_worst": lines.iter().filter(|l| l["shape"] != "validate" && l["shape"] != "agent_turns").map(|l| l["log_cost_x"].as_f64().unwrap()).fold(0.0, f64::max),
        "agent_turns_20_logged_per_step_us": find("agent_turns", 20)["logged_per_step_us"],
        "validate_100000_ms": find("validate", 100_000)["wall_ms"],
    });
    println!("{summary}");
    // A code step's cost with its worker warm: (a chain of 201 steps - a chain of 1) / 200, beside the engine's own
    // per-step figure (the 1,000-node chain).
    for shape in ["code_python", "code_javascript"] {
        let best = |n: usize| -> f64 {
            (0..3)
                .map(|_| {
                    let out = std::process::Command::new(&exe)
                        .args(["--one", "engine", shape, &n.to_string()])
                        .output()
                        .unwrap();
                    assert!(out.status.success(), "{shape}: {}", String::from_utf8_lossy(&out.stderr));
                    serde_json::from_slice::<Value>(&out.stdout).unwrap()["wall_ms"].as_f64().unwrap()
                })
                .fold(f64::MAX, f64::min)
        };
        let (one, many) = (best(1), best(201));
        println!(
            "{}",
            json!({
                "shape": shape, "first_step_ms": round(one), "warm_per_step_us": round((many - one) * 1000.0 / 200.0),
                "engine_per_step_us": round(per_step["chain_1000"]),
            })
        );
    }
}

fn round(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

fn ms(d: Duration) -> f64 {
    round(d.as_secs_f64() * 1000.0)
}

fn peak_rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0.0);
    round(kb / 1024.0)
}

fn agent(id: String) -> Node {
    Node::new(id, NodeType::Agent)
}

/// The workflow and script of a shape.
fn build(shape: &str, n: usize) -> (Workflow, Answers) {
    let mut wf = Workflow::new(format!("{shape} {n}"));
    wf.defaults.step_budget = Some(n as u32 * 2 + 10);
    wf.nodes.push(Node::new("start", NodeType::Start));
    let mut script = Answers::default();
    match shape {
        "chain" | "validate" => {
            for i in 0..n {
                wf.nodes.push(agent(format!("n{i}")));
                let from = if i == 0 { "start".to_string() } else { format!("n{}", i - 1) };
                wf.edges.push(Edge::new(from, format!("n{i}")));
            }
        }
        "fanout_50ms" => {
            wf.nodes.push(agent("join".into()));
            for i in 0..n {
                let id = format!("b{i}");
                wf.nodes.push(agent(id.clone()));
                wf.edges.push(Edge::new("start", id.clone()));
                wf.edges.push(Edge::new(id.clone(), "join"));
                let answer = Answer { text: Some("done".into()), delay_ms: Some(LATENCY_MS), ..Answer::default() };
                script.nodes.insert(id, OneOrMany::One(answer));
            }
        }
        "code_python" | "code_javascript" => {
            let (language, code) = match shape {
                "code_python" => ("python", "return {\"i\": state.get(\"i\", 0) + 1}"),
                _ => ("javascript", "return { i: (state.i ?? 0) + 1 };"),
            };
            for i in 0..n {
                let mut node = Node::new(format!("c{i}"), NodeType::Script);
                node.language = Some(language.into());
                node.code = Some(code.into());
                wf.nodes.push(node);
                let from = if i == 0 { "start".to_string() } else { format!("c{}", i - 1) };
                wf.edges.push(Edge::new(from, format!("c{i}")));
            }
        }
        "agent_turns" => {
            wf.nodes.push(agent("talker".into()));
            wf.edges.push(Edge::new("start", "talker"));
        }
        "loop" => {
            wf.nodes.push(agent("body".into()));
            wf.edges.push(Edge::new("start", "body"));
            let mut back = Edge::new("body", "body");
            back.max_iterations = Some(n as i64 - 1);
            wf.edges.push(back);
        }
        other => panic!("unknown shape {other}"),
    }
    (wf, script)
}

/// A model whose answer takes `n` turns, each asking for one tool call, every turn answered at once.
struct Turns(usize);

#[async_trait::async_trait]
impl Model for Turns {
    async fn execute(&self, request: &ExecuteRequest<'_>, io: &dyn NodeIo) -> Result<ModelOutput, ModelError> {
        for turn in 0..self.0 {
            let asked = json!({"node": request.node, "turn": turn});
            let answer = io.turn(&asked, Box::pin(async move { Ok(json!({"text": "", "call": turn})) })).await?;
            // The tool is not there: its error goes back as its result, as a real tool's would.
            let _ = io.call_tool("lookup", answer).await;
        }
        Ok(ModelOutput { text: Some("done".into()), ..ModelOutput::default() })
    }

    async fn route(&self, _: &RouteRequest<'_>, _: &dyn NodeIo) -> Result<RouteAnswer, ModelError> {
        Err(ModelError::fatal("no routing in this shape"))
    }
}

/// Counts events like a real observer would see them, without keeping them.
struct Counter(std::sync::atomic::AtomicU64);

impl Observer for Counter {
    fn on_event(&self, _: &Event) -> Result<(), LogError> {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }
}

fn engine(shape: &str, n: usize, logged: bool) -> (Duration, usize) {
    let (wf, script) = build(shape, n);
    if shape == "validate" {
        let t = Instant::now();
        let report = validate(&wf, &Options::default());
        let wall = t.elapsed();
        assert!(report.is_ok());
        return (wall, wf.nodes.len());
    }
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let script = Arc::new(script);
        let dir = tempfile::tempdir().unwrap();
        let options = RunOptions { run_id: Some(run::new_run_id()), ..RunOptions::default() };
        let mut claim = None;
        let log = if logged {
            let store = Arc::new(RunStore::open(&dir.path().join("runs.sqlite")).unwrap());
            let new = NewRun {
                id: options.run_id.as_deref().unwrap(),
                workflow: &wf,
                workflow_ref: None,
                answers_path: None,
                options: &options,
                eval_id: None,
            };
            claim = Some(store.create(&new).unwrap());
            Some(store as Arc<dyn RunLog>)
        } else {
            None
        };
        // A conversation of turns is a model's, not an answers file's: no answers, so it is journaled as on a model.
        let (model, answers): (Arc<dyn Model>, _) = match shape {
            "agent_turns" => (Arc::new(Turns(n)), None),
            _ => (Arc::new(AnswersModel::new(script.clone())), Some(script)),
        };
        let runtime = Runtime {
            model,
            answers,
            log,
            observers: vec![Arc::new(Counter(Default::default()))],
            code: switchyard_engine::code::Code { allowed: true, dir: Some(dir.path().into()), ..Default::default() },
            mcp: Default::default(),
        };
        let wf = Arc::new(wf);
        let t = Instant::now();
        let outcome = run::run(wf, options, runtime).await;
        drop(claim);
        let wall = t.elapsed();
        assert_eq!(outcome.result.status, RunStatus::Completed, "{:?}", outcome.result.error);
        // A turn and a tool call are the steps of a conversation.
        let steps = if shape == "agent_turns" { n * 2 } else { outcome.result.trace.steps.len() };
        (wall, steps)
    })
}

/// The bare loop the engine is measured against: one spawned task and one channel message per step.
fn floor(shape: &str, n: usize) -> (Duration, usize) {
    let steps = match shape {
        "fanout_50ms" => n + 2,
        "validate" => n + 1,
        _ => n + 1,
    };
    if shape == "validate" {
        // A single pass that touches every node id: the least any validator must do.
        let ids: Vec<String> = (0..steps).map(|i| format!("n{i}")).collect();
        let t = Instant::now();
        let set: std::collections::HashSet<&str> = ids.iter().map(String::as_str).collect();
        assert_eq!(set.len(), steps);
        return (t.elapsed(), steps);
    }
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<usize>();
        let t = Instant::now();
        if shape == "fanout_50ms" {
            for i in 0..n {
                let tx = tx.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(LATENCY_MS)).await;
                    tx.send(i).unwrap();
                });
            }
            for _ in 0..n {
                rx.recv().await.unwrap();
            }
        } else {
            for i in 0..steps {
                let tx = tx.clone();
                tokio::spawn(async move { tx.send(i).unwrap() });
                rx.recv().await.unwrap();
            }
        }
        (t.elapsed(), steps)
    })
}
