//! `npm run bench` (bench/engine.sh): the engine's marginal cost per step, against a bare tokio floor and LangGraph.
//!
//! A run's cost is `fixed + steps × per_step`. The figure that matters is `per_step`, the slope between sizes
//! (1,000, 10,000 and 100,000 steps), so fixed costs (the runtime, opening the store, building the run) cancel; they
//! are reported apart (`fixed_ms`: the intercept, and `runtime_ms`, `store_ms`, `validate_ms` measured on their own).
//! Each measurement is a fresh child process (this binary re-invoked with `--one`), so peak RSS (VmHWM) is that run's;
//! each figure is the median of several (fewer at 100,000), the modes interleaved so load from elsewhere on the
//! machine falls on both. CPU time (all threads of the process) is printed beside wall time.
//!
//! Shapes: `chain` (start → n nodes in a row), `fanout` (start → n branches → a join), `loop` (one node with an
//! edge back to itself, n visits). Each with the run log off and on (the SQLite run store in a temporary folder,
//! the durable log a `switchyard run` keeps). The same shapes in LangGraph (../shared/bench-anchors/, in a cached
//! venv: bench/langgraph-python.sh), plain and with its SQLite checkpointer, are timed in the same run.
//!
//! Also: `agent_turns` (one agent of 20 model turns, each followed by a tool call: the journal's cost), `validate`
//! (100,000 nodes) and a code step with a warm worker. Output: a table, then one JSON line per figure.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use switchyard_engine::answers::{Answers, AnswersModel};
use switchyard_engine::document::{Edge, Node, NodeType, Workflow};
use switchyard_engine::events::Event;
use switchyard_engine::log::{LogError, Observer, RunLog};
use switchyard_engine::model::{ExecuteRequest, Model, ModelError, ModelOutput, NodeIo, RouteAnswer, RouteRequest};
use switchyard_engine::run::{self, RunOptions, Runtime};
use switchyard_engine::store::{NewRun, RunStore};
use switchyard_engine::validate::{validate, Options};
use switchyard_engine::RunStatus;

/// Sizes and how many runs of each the median is taken over.
const SIZES: &[(usize, usize)] = &[(1_000, 5), (10_000, 5), (100_000, 3)];
const SHAPES: &[&str] = &["chain", "fanout", "loop"];
const MODES: &[&str] = &["off", "on"];
/// A child that runs longer than this is stopped, and the sizes above it are not measured (it says so).
const CHILD_TIMEOUT: Duration = Duration::from_secs(120);

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--one") {
        let (kind, shape, n) = (&args[i + 1], &args[i + 2], args[i + 3].parse().unwrap());
        let mut m = match kind.as_str() {
            "floor" => floor(shape, n),
            "on" => engine(shape, n, true),
            _ => engine(shape, n, false),
        };
        m["peak_rss_mb"] = json!(peak_rss_mb());
        println!("{m}");
        return;
    }
    let quick = args.iter().any(|a| a == "--quick");
    let sizes: Vec<(usize, usize)> = if quick { vec![(1_000, 3), (10_000, 3)] } else { SIZES.to_vec() };
    let exe = std::env::current_exe().unwrap();
    let started = Instant::now();
    let mut rows = Vec::new();
    let mut lines = Vec::new();

    // Switchyard, log off and on, and the bare floor (chain only: a spawned task and a channel message per step).
    let mut kinds: Vec<(&str, &str)> = Vec::new();
    for shape in SHAPES {
        for mode in MODES {
            kinds.push((shape, mode));
        }
    }
    kinds.push(("chain", "floor"));
    for (shape, mode) in kinds {
        let mut at: Vec<(usize, Value)> = Vec::new();
        for &(n, reps) in &sizes {
            // Interleave the runs of a size with nothing else running in this process.
            let runs: Vec<Value> = (0..reps).map_while(|_| child(&exe, mode, shape, n)).collect();
            if runs.len() < reps {
                eprintln!("{shape} {mode} {n}: stopped after {:?}; larger sizes not measured", CHILD_TIMEOUT);
                break;
            }
            let med = |key: &str| median(runs.iter().map(|r| r[key].as_f64().unwrap_or(0.0)).collect());
            let m = json!({
                "steps": runs[0]["steps"], "wall_ms": med("wall_ms"), "cpu_ms": med("cpu_ms"),
                "peak_rss_mb": med("peak_rss_mb"), "runtime_ms": med("runtime_ms"), "store_ms": med("store_ms"),
                "validate_ms": med("validate_ms"), "runs": reps,
                "wall_ms_all": runs.iter().map(|r| r["wall_ms"].clone()).collect::<Vec<_>>(),
            });
            lines.push(json!({"engine": "switchyard", "shape": shape, "log": mode, "nodes": n, "measured": m}));
            at.push((n, m));
        }
        let row = slopes("switchyard", shape, mode, &at);
        lines.push(row.clone());
        rows.push(row);
    }

    // LangGraph, same shapes, same machine, same run.
    let lg = langgraph(quick);
    rows.extend(lg.iter().cloned());
    lines.extend(lg);

    // The rest: the journal's cost, validation, a code step's.
    let extra = extras(&exe);

    print_table(&rows);
    for l in lines.iter().chain(extra.iter()) {
        println!("{l}");
    }
    let find = |engine: &str, shape: &str, log: &str| {
        rows.iter().find(|r| r["engine"] == engine && r["shape"] == shape && r["log"] == log).cloned()
    };
    let per = |r: &Option<Value>| r.as_ref().and_then(|r| r["per_step_us"].as_f64());
    let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => json!(round(a / b)),
        _ => Value::Null,
    };
    let (on, off) = (find("switchyard", "chain", "on"), find("switchyard", "chain", "off"));
    let summary = json!({
        "summary": true,
        "chain_on_per_step_us": per(&on), "chain_off_per_step_us": per(&off),
        "chain_on_linearity": on.as_ref().map(|r| r["linearity"].clone()),
        "chain_off_linearity": off.as_ref().map(|r| r["linearity"].clone()),
        "chain_on_10k_peak_rss_mb": on.as_ref().map(|r| r["peak_rss_mb_10k"].clone()),
        "langgraph_plain_over_chain_off": ratio(per(&find("langgraph", "chain", "plain")), per(&off)),
        "langgraph_sqlite_over_chain_on": ratio(per(&find("langgraph", "chain", "sqlite")), per(&on)),
        "chain_off_over_floor": ratio(per(&off), per(&find("switchyard", "chain", "floor"))),
        "bench_s": round(started.elapsed().as_secs_f64()),
    });
    println!("{summary}");
}

/// One measurement in a fresh process; `None` when it ran past `CHILD_TIMEOUT`.
fn child(exe: &PathBuf, kind: &str, shape: &str, n: usize) -> Option<Value> {
    let mut c = Command::new(exe)
        .args(["--one", kind, shape, &n.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t = Instant::now();
    loop {
        if c.try_wait().unwrap().is_some() {
            break;
        }
        if t.elapsed() > CHILD_TIMEOUT {
            let _ = c.kill();
            let _ = c.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = c.wait_with_output().unwrap();
    assert!(out.status.success(), "{kind} {shape} {n}: {}", String::from_utf8_lossy(&out.stderr));
    Some(serde_json::from_slice(&out.stdout).unwrap())
}

/// The marginal cost per step between sizes, the fixed cost (the intercept) and how linear it is.
fn slopes(engine: &str, shape: &str, log: &str, at: &[(usize, Value)]) -> Value {
    let f = |v: &Value, k: &str| v[k].as_f64().unwrap_or(f64::NAN);
    let slope = |i: usize, key: &str| -> Option<f64> {
        let (a, b) = (&at.get(i)?.1, &at.get(i + 1)?.1);
        Some((f(b, key) - f(a, key)) * 1000.0 / (f(b, "steps") - f(a, "steps")))
    };
    let (lo, hi) = (slope(0, "wall_ms"), slope(1, "wall_ms"));
    let (clo, chi) = (slope(0, "cpu_ms"), slope(1, "cpu_ms"));
    // The headline per-step figure is the slope over the widest span measured.
    let span = |key: &str| -> Option<f64> {
        let (a, b) = (&at.first()?.1, &at.last()?.1);
        (at.len() > 1).then(|| (f(b, key) - f(a, key)) * 1000.0 / (f(b, "steps") - f(a, "steps")))
    };
    let fixed = lo.map(|s| f(&at[0].1, "wall_ms") - s * f(&at[0].1, "steps") / 1000.0);
    let ten = at.iter().find(|(n, _)| *n == 10_000).map(|(_, m)| m.clone()).unwrap_or(Value::Null);
    json!({
        "engine": engine, "shape": shape, "log": log,
        "per_step_us": span("wall_ms").map(round), "per_step_cpu_us": span("cpu_ms").map(round),
        "slope_1k_10k_us": lo.map(round), "slope_10k_100k_us": hi.map(round),
        "cpu_slope_1k_10k_us": clo.map(round), "cpu_slope_10k_100k_us": chi.map(round),
        "linearity": match (lo, hi) { (Some(lo), Some(hi)) => json!(round(hi / lo)), _ => Value::Null },
        "fixed_ms": fixed.map(round),
        "runtime_ms": ten["runtime_ms"], "store_ms": ten["store_ms"], "validate_ms": ten["validate_ms"],
        "peak_rss_mb_10k": ten["peak_rss_mb"],
        "sizes": at.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
    })
}

/// LangGraph on the same shapes: plain (no checkpointer) at 1,000 and 10,000 steps, and with its SQLite
/// checkpointer (durable, the peer of our log) at 500 and 1,500 (it is ~10× slower). Not measured when its venv
/// cannot be set up (no network): the rows say so.
fn langgraph(quick: bool) -> Vec<Value> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let anchors = std::env::var("SWITCHYARD_BENCH_ANCHORS")
        .map(PathBuf::from)
        .unwrap_or_else(|_| root.join("../shared/bench-anchors"));
    let python = Command::new("bash")
        .arg(root.join("bench/langgraph-python.sh"))
        .stderr(Stdio::inherit())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    let not_measured = |shape: &str, log: &str, why: &str| json!({"engine": "langgraph", "shape": shape, "log": log, "per_step_us": null, "not_measured": why});
    let mut rows = Vec::new();
    let Some(python) = python.filter(|_| anchors.join("lg_bench.py").exists()) else {
        let why = "LangGraph could not be set up (bench/langgraph-python.sh) or the anchors are missing";
        for shape in SHAPES {
            rows.push(not_measured(shape, "plain", why));
        }
        rows.push(not_measured("chain", "sqlite", why));
        return rows;
    };
    let run = |script: &str, args: &[String]| -> Option<Value> {
        let out = Command::new(&python).arg(anchors.join(script)).args(args).output().ok()?;
        if !out.status.success() {
            eprintln!("langgraph {script} {args:?}: {}", String::from_utf8_lossy(&out.stderr));
            return None;
        }
        serde_json::from_slice(&out.stdout).ok()
    };
    let (small, large) = if quick { (300, 1_000) } else { (1_000, 10_000) };
    for shape in SHAPES {
        let one = |n: usize| {
            let args = ["--shape", shape, "--n", &n.to_string(), "--runs", "3"].map(String::from);
            run("lg_bench.py", &args).map(|v| {
                let steps = v["steps"].as_f64().unwrap();
                let ms = v["median_ms"].as_f64().unwrap();
                let cpu = v["cpu_median_ms"].as_f64().unwrap();
                json!({"steps": steps, "wall_ms": ms, "cpu_ms": cpu, "peak_rss_mb": v["peak_rss_mb"]})
            })
        };
        match (one(small), one(large)) {
            (Some(a), Some(b)) => rows.push(slopes("langgraph", shape, "plain", &[(small, a), (large, b)])),
            _ => rows.push(not_measured(shape, "plain", "lg_bench.py failed")),
        }
    }
    let (small, large) = if quick { (200, 600) } else { (500, 1_500) };
    let durable = |n: usize| {
        let args = ["--shape", "chain", "--n", &n.to_string(), "--saver", "sqlite", "--runs", "2"].map(String::from);
        run("lg_durable.py", &args).map(|v| {
            let ms = v["median_ms"].as_f64().unwrap();
            let cpu = v["per_step_cpu_us"].as_f64().unwrap() * n as f64 / 1000.0;
            json!({"steps": n, "wall_ms": ms, "cpu_ms": cpu, "peak_rss_mb": v["peak_rss_mb"]})
        })
    };
    match (durable(small), durable(large)) {
        (Some(a), Some(b)) => rows.push(slopes("langgraph", "chain", "sqlite", &[(small, a), (large, b)])),
        _ => rows.push(not_measured("chain", "sqlite", "lg_durable.py failed")),
    }
    rows
}

fn print_table(rows: &[Value]) {
    let cell = |v: &Value| match v {
        Value::Null => "-".to_string(),
        Value::Number(n) => format!("{:.2}", n.as_f64().unwrap()),
        other => other.to_string(),
    };
    println!(
        "{:<10} {:<7} {:<6} {:>10} {:>10} {:>10} {:>11} {:>8} {:>9} {:>10}",
        "engine", "shape", "log", "us/step", "cpu us", "1k-10k", "10k-100k", "linear", "fixed ms", "rss@10k MB"
    );
    for r in rows {
        println!(
            "{:<10} {:<7} {:<6} {:>10} {:>10} {:>10} {:>11} {:>8} {:>9} {:>10}",
            r["engine"].as_str().unwrap(),
            r["shape"].as_str().unwrap(),
            r["log"].as_str().unwrap(),
            if r["not_measured"].is_string() { "not measured".to_string() } else { cell(&r["per_step_us"]) },
            cell(&r["per_step_cpu_us"]),
            cell(&r["slope_1k_10k_us"]),
            cell(&r["slope_10k_100k_us"]),
            cell(&r["linearity"]),
            cell(&r["fixed_ms"]),
            cell(&r["peak_rss_mb_10k"]),
        );
    }
    println!(
        "us/step: marginal wall time per step (slope between the smallest and largest size; LangGraph plain 1k-10k, \
         sqlite 500-1.5k); cpu us: the same in CPU time (all threads); linear: slope 10k-100k over 1k-10k; fixed ms: \
         the intercept. Medians of 5 runs (3 at 100k), each a fresh process."
    );
}

/// The journal's cost (agent_turns, log off and on), validating 100,000 nodes, and a code step with a warm worker.
fn extras(exe: &PathBuf) -> Vec<Value> {
    let mut out = Vec::new();
    let best = |kind: &str, shape: &str, n: usize| -> Value {
        (0..3)
            .filter_map(|_| child(exe, kind, shape, n))
            .min_by(|a, b| a["wall_ms"].as_f64().unwrap().total_cmp(&b["wall_ms"].as_f64().unwrap()))
            .unwrap()
    };
    let (off, on) = (best("off", "agent_turns", 20), best("on", "agent_turns", 20));
    let per = |v: &Value| round(v["wall_ms"].as_f64().unwrap() * 1000.0 / v["steps"].as_f64().unwrap());
    out.push(json!({"shape": "agent_turns", "turns": 20, "per_step_us": per(&off), "logged_per_step_us": per(&on)}));
    let v = best("off", "validate", 100_000);
    out.push(json!({"shape": "validate", "nodes": 100_000, "wall_ms": v["wall_ms"]}));
    // A code step's cost with its worker warm: (a chain of 201 steps - a chain of 1) / 200.
    for shape in ["code_python", "code_javascript"] {
        let (one, many) = (best("off", shape, 1), best("off", shape, 201));
        let ms = |v: &Value| v["wall_ms"].as_f64().unwrap();
        out.push(json!({
            "shape": shape, "first_step_ms": round(ms(&one)), "warm_per_step_us": round((ms(&many) - ms(&one)) * 5.0),
        }));
    }
    out
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    round(if v.len() % 2 == 1 { v[m] } else { (v[m - 1] + v[m]) / 2.0 })
}

fn round(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// CPU time of the whole process (every thread), in milliseconds.
fn cpu_ms() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid pointer to a timespec, and a clock every Linux has.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 * 1000.0 + ts.tv_nsec as f64 / 1e6
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
    let script = Answers::default();
    match shape {
        "chain" | "validate" => {
            for i in 0..n {
                wf.nodes.push(agent(format!("n{i}")));
                let from = if i == 0 { "start".to_string() } else { format!("n{}", i - 1) };
                wf.edges.push(Edge::new(from, format!("n{i}")));
            }
        }
        "fanout" => {
            wf.nodes.push(agent("join".into()));
            for i in 0..n {
                let id = format!("b{i}");
                wf.nodes.push(agent(id.clone()));
                wf.edges.push(Edge::new("start", id.clone()));
                wf.edges.push(Edge::new(id, "join"));
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

/// One run of a shape: its wall and CPU time from launch to outcome, and its fixed costs measured apart.
fn engine(shape: &str, n: usize, logged: bool) -> Value {
    let (wf, script) = build(shape, n);
    let t = Instant::now();
    let report = validate(&wf, &Options::default());
    let validate_ms = ms(t.elapsed());
    assert!(report.is_ok());
    if shape == "validate" {
        return json!({"wall_ms": validate_ms, "steps": wf.nodes.len()});
    }
    let t = Instant::now();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let runtime_ms = ms(t.elapsed());
    rt.block_on(async {
        let script = Arc::new(script);
        let dir = tempfile::tempdir().unwrap();
        let options = RunOptions { run_id: Some(run::new_run_id()), ..RunOptions::default() };
        let mut claim = None;
        let t = Instant::now();
        let log = if logged {
            let store = Arc::new(RunStore::open(&dir.path().join("runs.sqlite")).unwrap());
            let new = NewRun {
                id: options.run_id.as_deref().unwrap(),
                workflow: &wf,
                workflow_ref: None,
                answers_path: None,
                options: &options,
                eval_id: None,
                origin: Default::default(),
                version: None,
            };
            claim = Some(store.create(&new).unwrap());
            Some(store as Arc<dyn RunLog>)
        } else {
            None
        };
        let store_ms = ms(t.elapsed());
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
            children: None,
        };
        let wf = Arc::new(wf);
        let (t, cpu) = (Instant::now(), cpu_ms());
        let outcome =
            run::launch(run::Launch::fresh(wf, options), runtime).expect("a fresh run launches").finish().await;
        drop(claim);
        let (wall, cpu) = (ms(t.elapsed()), cpu_ms() - cpu);
        assert_eq!(outcome.result.status, RunStatus::Completed, "{:?}", outcome.result.error);
        assert_eq!(outcome.log_error, None);
        // A turn and a tool call are the steps of a conversation.
        let steps = if shape == "agent_turns" { n * 2 } else { outcome.result.trace.steps.len() };
        json!({
            "wall_ms": round(wall), "cpu_ms": round(cpu), "steps": steps,
            "runtime_ms": round(runtime_ms), "store_ms": round(store_ms), "validate_ms": round(validate_ms),
        })
    })
}

/// The bare loop the engine is measured against: one spawned task and one channel message per step.
fn floor(_shape: &str, n: usize) -> Value {
    let steps = n + 1;
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<usize>();
        let (t, cpu) = (Instant::now(), cpu_ms());
        for i in 0..steps {
            let tx = tx.clone();
            tokio::spawn(async move { tx.send(i).unwrap() });
            rx.recv().await.unwrap();
        }
        json!({"wall_ms": round(ms(t.elapsed())), "cpu_ms": round(cpu_ms() - cpu), "steps": steps})
    })
}
