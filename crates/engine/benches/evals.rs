//! `npm run bench:evals` (bench/evals.sh): how fast an evaluation suite runs when every node is answered (the
//! offline case CI runs): 1,000 cases of a ten-node workflow, each with an input of its own and three expectations,
//! through `eval::run` as `switchyard eval --offline` calls it (no provider is set up: answers stand in for every
//! model). Prints one JSON line: cases per second, and the tokens the cases used.

use std::time::Instant;

use serde_json::json;
use switchyard_engine::eval::{self, Options, Suite, Verdict};

const CASES: usize = 1_000;
const AGENTS: usize = 9;

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let mut workflow = String::from("switchyard: 1\nname: ten\nnodes:\n  - {id: start, type: start}\n");
    let mut edges = String::from("edges:\n");
    let mut answers = String::from("nodes:\n");
    for i in 1..=AGENTS {
        workflow
            .push_str(&format!("  - {{id: a{i}, type: agent, user_prompt: 'step {i}: {{{{ PREVIOUS_OUTPUT }}}}'}}\n"));
        let from = if i == 1 { "start".to_string() } else { format!("a{}", i - 1) };
        edges.push_str(&format!("  - {{from: {from}, to: a{i}}}\n"));
        answers.push_str(&format!("  a{i}: {{text: 'answer {i}'}}\n"));
    }
    std::fs::write(dir.path().join("ten.yaml"), workflow + &edges).unwrap();
    std::fs::write(dir.path().join("ten.script.yaml"), answers).unwrap();
    let mut evals = String::from("workflow: ten.yaml\ncases:\n");
    for c in 0..CASES {
        evals.push_str(&format!(
            "  - id: case-{c}\n    input: request {c}\n    answers: ten.script.yaml\n    expect:\n      - {{node: a9, contains: answer 9}}\n      - {{node: a1, regex: '^answer'}}\n      - {{status: completed}}\n"
        ));
    }
    let path = dir.path().join("ten.evals.yaml");
    std::fs::write(&path, evals).unwrap();

    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let jobs = std::thread::available_parallelism().map_or(2, |n| n.get()) * 4;
    let started = Instant::now();
    let suite = Suite::load(&path).unwrap();
    let options = Options { offline: true, jobs, ..Options::default() };
    let (reports, _) = runtime.block_on(eval::run(&suite, &options, |_| {})).unwrap();
    let wall = started.elapsed().as_secs_f64();
    let passed = reports.iter().filter(|r| r.verdict == Verdict::Passed).count();
    let tokens: u64 = reports.iter().flat_map(|r| &r.attempts).map(|a| a.tokens).sum();
    assert_eq!(passed, CASES, "every case passes");
    println!(
        "{}",
        json!({
            "shape": "evals_all_answered",
            "cases": CASES,
            "nodes": AGENTS + 1,
            "jobs": jobs,
            "wall_ms": (wall * 1000.0).round(),
            "cases_per_s": (CASES as f64 / wall).round(),
            "tokens": tokens,
        })
    );
}
