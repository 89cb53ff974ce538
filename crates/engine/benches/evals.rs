//! `npm run bench:evals`: how fast an evaluation suite runs when its model calls are answered from the record
//! (change-aware replay, docs/evals.md): 1,000 cases of a ten-node workflow (nine agents in a chain), each with an
//! input of its own and three expectations, through `eval::run` as `switchyard eval` calls it. The models are an
//! OpenAI-compatible server on 127.0.0.1 that counts requests (it answers every call alike, as a model whose answer
//! an edit does not change). Prints one JSON line per pass:
//! - `record`: online, nothing recorded yet: every call goes to the server and is recorded;
//! - `all_reused`: offline, every call answered from the record: the target is ≥ 1,000 cases/s and 0 model calls;
//! - `one_node_changed`: one agent's prompt edited, online: that agent is asked again in each case; the nodes after
//!   it read the same answer, so they are reused.

#[path = "../tests/support/http.rs"]
mod http;

use std::time::Instant;

use serde_json::json;
use switchyard_engine::eval::{self, Options, Suite, Verdict};

const CASES: usize = 1_000;
const AGENTS: usize = 9;
const EDITED: usize = 5;

fn workflow(edited: bool) -> String {
    let mut text =
        String::from("switchyard: 1\nname: ten\ndefaults: {model: fake/m}\nnodes:\n  - {id: start, type: start}\n");
    let mut edges = String::from("edges:\n");
    for i in 1..=AGENTS {
        let care = if edited && i == EDITED { ", carefully" } else { "" };
        text.push_str(&format!("  - {{id: a{i}, type: agent, user_prompt: 'step {i}{care} of {{{{ input }}}}: {{{{ PREVIOUS_OUTPUT }}}}'}}\n"));
        let from = if i == 1 { "start".to_string() } else { format!("a{}", i - 1) };
        edges.push_str(&format!("  - {{from: {from}, to: a{i}}}\n"));
    }
    text + &edges
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let server = runtime.block_on(http::TestServer::start(vec![http::Reply::openai_stream(&["the answer"])]));
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("settings.yaml"),
        format!("providers:\n  - {{id: fake, kind: openai, base_url: \"{}/v1\"}}\ndefault_model: fake/m\n", server.url),
    )
    .unwrap();
    std::env::set_var("SWITCHYARD_HOME", home.path());

    let dir = tempfile::tempdir().unwrap();
    let wf = dir.path().join("ten.yaml");
    std::fs::write(&wf, workflow(false)).unwrap();
    let mut evals = String::from("workflow: ten.yaml\ncases:\n");
    for c in 0..CASES {
        evals.push_str(&format!(
            "  - id: case-{c}\n    input: request {c}\n    expect:\n      - {{node: a9, contains: the answer}}\n      - {{node: a1, regex: '^the'}}\n      - {{status: completed}}\n"
        ));
    }
    let path = dir.path().join("ten.evals.yaml");
    std::fs::write(&path, evals).unwrap();
    let jobs = std::thread::available_parallelism().map_or(2, |n| n.get()) * 4;

    let pass = |shape: &str, offline: bool| {
        let asked_before = server.requests().len();
        let started = Instant::now();
        let cpu_before = cpu_seconds();
        let suite = Suite::load(&path).unwrap();
        let options = Options { offline, jobs, ..Options::default() };
        let (reports, calls) = runtime.block_on(eval::run(&suite, &options, |_| {})).unwrap();
        let wall = started.elapsed().as_secs_f64();
        let cpu = cpu_seconds() - cpu_before;
        let passed = reports.iter().filter(|r| r.verdict == Verdict::Passed).count();
        assert_eq!(
            passed,
            CASES,
            "{shape}: every case passes: {:?}",
            reports.iter().find(|r| r.verdict != Verdict::Passed)
        );
        let asked = server.requests().len() - asked_before;
        assert_eq!(asked as u64, calls.model_calls, "{shape}: the server saw what the report counts");
        println!(
            "{}",
            json!({
                "shape": format!("evals_{shape}"),
                "cases": CASES,
                "nodes": AGENTS + 1,
                "jobs": jobs,
                "wall_ms": (wall * 1000.0).round(),
                "cases_per_s": (CASES as f64 / wall).round(),
                // The process's CPU time in the pass (every thread), and cases per CPU second: on a machine others
                // load, wall time depends on them, CPU time much less.
                "cpu_ms": (cpu * 1000.0).round(),
                "cases_per_cpu_s": (CASES as f64 / cpu).round(),
                "model_calls": calls.model_calls,
                "reused": calls.reused,
                "tokens_saved": calls.tokens_saved,
            })
        );
        calls
    };

    let recorded = pass("record", false);
    assert_eq!(recorded.model_calls, (CASES * AGENTS) as u64);
    let reused = pass("all_reused", true);
    assert_eq!(reused.model_calls, 0);
    std::fs::write(&wf, workflow(true)).unwrap();
    let changed = pass("one_node_changed", false);
    assert_eq!(changed.model_calls, CASES as u64, "the edited agent, once per case");
}

/// The CPU time this process has used, every thread, user and system (Linux: /proc/self/stat, in clock ticks of
/// 1/100 s).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat.rsplit(')').next().unwrap_or("").split_whitespace().collect();
    // After the command's closing parenthesis: state is field 3, utime 14 and stime 15 (from 1).
    let ticks = |i: usize| fields.get(i - 3).and_then(|f| f.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(14) + ticks(15)) / 100.0
}
