//! Change-aware replay, counted at the wire: a suite runs against an OpenAI-compatible server on 127.0.0.1 that
//! counts requests; its calls are recorded; a second run makes none; editing one prompt of a ten-node workflow calls
//! the model for that node and for the node whose inputs its new answer changed, and for nothing else. Offline, a
//! call with no record fails its case, saying so. One test in its own binary: it sets the settings' home.

mod support;

use support::http::{Reply, TestServer};
use switchyard_engine::eval::{self, Options, Suite, Verdict};
use switchyard_engine::session;
use switchyard_engine::store::RunStore;

fn workflow(third_prompt: &str) -> String {
    let mut text =
        String::from("switchyard: 1\nname: ten\ndefaults: {model: fake/m}\nnodes:\n  - {id: start, type: start}\n");
    let mut edges = String::from("edges:\n");
    for i in 1..=8 {
        let prompt = if i == 3 { third_prompt.to_string() } else { format!("Task {i} for {{{{ input }}}}") };
        text.push_str(&format!("  - {{id: a{i}, type: agent, user_prompt: '{prompt}'}}\n"));
        edges.push_str(&format!("  - {{from: start, to: a{i}}}\n  - {{from: a{i}, to: sum}}\n"));
    }
    let reads: Vec<String> = (1..=8).map(|i| format!("{{{{ a{i}.text }}}}")).collect();
    text.push_str(&format!("  - {{id: sum, type: agent, user_prompt: 'Sum up: {}'}}\n", reads.join(" ")));
    text + &edges
}

#[tokio::test]
async fn editing_one_prompt_calls_the_model_for_that_node_and_what_its_answer_changed_only() {
    // Every request gets an answer of its own, so a node that runs again answers differently.
    let replies: Vec<Reply> = (0..64).map(|n| Reply::openai_stream(&[&format!("answer {n}")])).collect();
    let server = TestServer::start(replies).await;
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("settings.yaml"),
        format!(
            "providers:\n  - {{id: fake, kind: openai, base_url: \"{}/v1\"}}\ndefault_model: fake/m\nprices:\n  fake/m: {{input: 2.0, output: 8.0}}\n",
            server.url
        ),
    )
    .unwrap();
    std::env::set_var("SWITCHYARD_HOME", home.path());

    let dir = tempfile::tempdir().unwrap();
    let wf = dir.path().join("ten.yaml");
    std::fs::write(&wf, workflow("Task 3 for {{ input }}")).unwrap();
    let evals = dir.path().join("ten.evals.yaml");
    std::fs::write(
        &evals,
        "workflow: ten.yaml\ncases:\n  - {id: sums-up, input: the report, expect: [{node: sum, contains: answer}, {max_cost: 0.001}]}\n",
    )
    .unwrap();
    let run_with = |offline: bool, repeat: u32| {
        let suite = Suite::load(&evals).unwrap();
        async move { eval::run(&suite, &Options { offline, repeat, ..Options::default() }, |_| {}).await.unwrap() }
    };
    let run = |offline: bool| run_with(offline, 1);
    // An evaluation kept in a run store, as `switchyard eval` and the app's Evals tab keep theirs.
    let store = std::sync::Arc::new(RunStore::open(&dir.path().join("runs.sqlite")).unwrap());
    let evaluate_kept = |baseline: bool| {
        let (suite, store) = (Suite::load(&evals).unwrap(), store.clone());
        async move {
            let last = if baseline { eval::kept::last(&store, &suite.path).unwrap() } else { None };
            let options = Options { store: Some((store, eval::kept::new_id())), ..Options::default() };
            eval::kept::evaluate(&suite, &options, last, |_| {}).await.unwrap()
        }
    };

    let kept = evaluate_kept(false).await;
    let (first, calls) = (kept.cases.clone(), kept.calls);
    assert_eq!(first[0].verdict, Verdict::Passed, "{:?}", first[0].shown());
    assert_eq!((calls.model_calls, calls.reused), (9, 0), "nine agents, each asked once");
    assert_eq!(server.requests().len(), 9);
    // Each call used 11 input and 1 output tokens, at $2 and $8 per million: $0.00003 a call.
    let cost = first[0].shown().cost.unwrap();
    assert!((cost - 9.0 * 0.00003).abs() < 1e-12, "{cost}");
    let recorded = dir.path().join("ten.evals.calls.json");
    let text = std::fs::read_to_string(&recorded).unwrap();
    assert_eq!(text.matches("\"node\":").count(), 9, "{text}");
    assert!(!text.contains(&server.url), "the record keeps answers, not settings");
    // The case's run is kept with what its calls used, priced at the settings' prices, and marked as the case of
    // the evaluation it was; the report is kept under the evaluation's id.
    let run_id = first[0].shown().run_id.clone().expect("a kept evaluation keeps its cases' runs");
    let row = session::row(&store, &run_id).unwrap();
    assert_eq!((row.tokens, row.eval.as_deref()), (9 * 12, kept.id.as_deref()));
    assert_eq!(row.usage["fake/m"].input_tokens, 9 * 11);
    assert!((row.cost.unwrap() - 9.0 * 0.00003).abs() < 1e-12, "{:?}", row.cost);
    let (last_id, _) = eval::kept::last(&store, &evals).unwrap().unwrap();
    assert_eq!(Some(last_id), kept.id);

    let (again, calls) = run(false).await;
    assert_eq!(again[0].verdict, Verdict::Passed);
    assert_eq!((calls.model_calls, calls.reused), (0, 9), "nothing changed: nothing is asked");
    assert_eq!(calls.tokens_saved, 9 * 12, "each recorded answer used 11 + 1 tokens");
    assert_eq!(again[0].shown().cost, Some(0.0), "reused answers cost nothing");
    assert_eq!(server.requests().len(), 9);

    // One prompt changes: that node is asked again; its new answer changes what `sum` reads, so `sum` is too.
    std::fs::write(&wf, workflow("Task 3, done carefully, for {{ input }}")).unwrap();
    let compared = evaluate_kept(true).await;
    let (edited, calls) = (compared.cases.clone(), compared.calls);
    // Compared with the first evaluation: the case still passes; the edited node and the one reading it changed.
    let comparison = compared.comparison.as_ref().expect("compared with the last evaluation");
    assert_eq!((comparison.regressed, comparison.unchanged), (0, 1));
    assert_eq!(comparison.cases[0].changed_nodes, ["a3", "sum"]);
    let a3 = comparison.cases[0].nodes.iter().find(|n| n.node == "a3").unwrap();
    assert_eq!(a3.change, eval::NodeVerdict::Changed);
    assert_ne!(a3.before, a3.after);
    let a1 = comparison.cases[0].nodes.iter().find(|n| n.node == "a1").unwrap();
    assert_eq!((a1.change, &a1.before), (eval::NodeVerdict::Unchanged, &a1.after));
    assert_eq!(edited[0].verdict, Verdict::Passed);
    assert_eq!((calls.model_calls, calls.reused), (2, 7), "a3 and sum run; the other seven are reused");
    let asked: Vec<String> = server.requests()[9..].iter().map(|r| r.body["messages"].to_string()).collect();
    assert_eq!(asked.len(), 2);
    assert!(
        asked.iter().any(|m| m.contains("done carefully")) && asked.iter().any(|m| m.contains("Sum up")),
        "{asked:?}"
    );
    let pruned = std::fs::read_to_string(&recorded).unwrap();
    assert_eq!(pruned.matches("\"node\":").count(), 9, "the calls of the old prompt are dropped: {pruned}");

    // Offline, the same workflow replays from the record: the model named by the settings' default is in the keys.
    let (offline, calls) = run(true).await;
    assert_eq!(offline[0].verdict, Verdict::Passed, "{:?}", offline[0].shown());
    assert_eq!((calls.model_calls, calls.reused), (0, 9));

    // Offline, a call with no record fails the case, saying which node and what to do; nothing is asked, and the
    // record keeps every call (a case that stopped early did not ask for them all).
    std::fs::write(&wf, workflow("Task 3, twice as carefully, for {{ input }}")).unwrap();
    let (offline, _) = run(true).await;
    assert_eq!(offline[0].verdict, Verdict::Error);
    let error = offline[0].shown().error.clone().unwrap();
    assert_eq!(error.code, "OFFLINE_UNRECORDED");
    assert!(error.message.contains("`a3`") && error.message.contains("run without --offline"), "{}", error.message);
    assert!(error.message.contains("changed since it was recorded"), "a3 was recorded before: {}", error.message);
    assert_eq!(server.requests().len(), 11);
    assert_eq!(std::fs::read_to_string(&recorded).unwrap(), pruned, "an offline run that failed changes no record");

    // Repeats ask the models each time, but offline never: without a record to answer, the case could not run.
    let (repeated, calls) = run_with(true, 2).await;
    assert_eq!(repeated[0].verdict, Verdict::Error);
    let error = repeated[0].shown().error.clone().unwrap();
    assert_eq!(error.code, "OFFLINE_UNRECORDED");
    assert!(error.message.contains("--repeat above 1"), "{}", error.message);
    assert_eq!(calls.model_calls, 0);
    assert_eq!(server.requests().len(), 11, "offline, nothing reaches the model server");

    // Online, each repeat asks every model again, counted; the record neither answers nor changes.
    let (repeated, calls) = run_with(false, 2).await;
    assert_eq!(repeated[0].attempts.len(), 2);
    assert_eq!((calls.model_calls, calls.reused), (18, 0), "nine agents, twice");
    assert_eq!(server.requests().len(), 29);
    assert_eq!(std::fs::read_to_string(&recorded).unwrap(), pruned, "repeats record nothing");
}
