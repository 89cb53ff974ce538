//! TEA files that do their work: `run:` bodies executed (Python, Lua), `while_loop` with TEA's semantics and load
//! errors, `llm.call` as an agent, dict-method conditions, list `to:` edges, dynamic-parallel load errors, and the
//! public fixtures run end to end with consent and no answers file.

mod support;

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use support::*;
use switchyard_engine::format::{self, Format};
use switchyard_engine::result::RunStatus;
use switchyard_engine::{NodeType, Workflow};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/the_edge_agent")
}

fn tea(text: &str) -> (Workflow, Vec<String>) {
    let loaded = format::load_str(text, None, None).unwrap_or_else(|e| panic!("does not import: {e}"));
    assert_eq!(loaded.format, Format::Tea);
    (loaded.workflow, loaded.notes)
}

fn state(ran: &Ran) -> Value {
    Value::Object(ran.result().state.clone())
}

#[tokio::test]
async fn the_public_tea_fixtures_run_their_code_and_end_with_their_documented_state() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("parallel_fanout.yaml", json!({"count": 6})),
        ("goto_parity_test.yaml", json!({"should_continue": true, "result": "processed"})),
        ("simple_workflow.yaml", json!({"result": "processed: none", "output": "processed: none - done"})),
    ];
    for (file, expected) in cases {
        let wf = format::load_file(&fixtures().join(file), None).unwrap().workflow;
        let ran = run_code(&wf, "", Some(json!({})), dir.path()).await;
        assert_eq!(ran.result().status, RunStatus::Completed, "{file}: {:?}", ran.result().error);
        let s = state(&ran);
        for (key, value) in expected.as_object().unwrap() {
            assert_eq!(&s[key], value, "{file}: state.{key} in {s}");
        }
    }
}

#[tokio::test]
async fn the_seed_documents_examples_run_their_bodies() {
    // Seed 004's conditional goto by score and its retry loop, with the helper functions they call defined inline.
    let (wf, _) = tea(r#"name: scored
nodes:
  - name: validate
    run: |
      score = len(state["input"]) / 10
      return {"score": score}
    goto:
      - if: "state.score > 0.9"
        to: high_confidence
      - if: "state.score > 0.5"
        to: medium_confidence
      - to: low_confidence
  - name: high_confidence
    run: |
      return {"path": "high"}
    goto: __end__
  - name: medium_confidence
    run: |
      return {"path": "medium"}
  - name: low_confidence
    run: |
      return {"path": "low"}
"#);
    let dir = tempfile::tempdir().unwrap();
    // As the document's example is written, medium_confidence has no goto, so it chains on to low_confidence.
    for (input, ran_through, path) in [
        ("abcdefghijk", vec!["validate", "high_confidence"], "high"),
        ("abcdefg", vec!["validate", "medium_confidence", "low_confidence"], "low"),
        ("abc", vec!["validate", "low_confidence"], "low"),
    ] {
        let ran = run_code(&wf, "", Some(json!({"input": input})), dir.path()).await;
        let steps: Vec<&str> =
            ran.ran().into_iter().filter(|n| !n.starts_with("start") && !n.contains("goto")).collect();
        assert_eq!(steps, ran_through, "{input}");
        assert_eq!(state(&ran)["path"], path, "{input}");
    }
    let (wf, _) = tea(r#"name: retry
nodes:
  - name: retry_step
    run: |
      attempts = state.get("attempts", 0) + 1
      status = "ok" if attempts >= 3 else "error"
      return {"status": status, "attempts": attempts}
    goto:
      - if: "state.status == 'error' and state.attempts < 3"
        to: retry_step
      - if: "state.status == 'ok'"
        to: success
      - to: failure
  - name: success
    run: |
      return {"final": "success"}
    goto: __end__
  - name: failure
    run: |
      return {"final": "failed"}
    goto: __end__
"#);
    let ran = run_code(&wf, "", Some(json!({})), dir.path()).await;
    assert_eq!((state(&ran)["attempts"].clone(), state(&ran)["final"].clone()), (json!(3), json!("success")));
}

#[tokio::test]
async fn a_while_loop_repeats_its_body_while_the_condition_holds_and_stops_at_max_iterations() {
    let text = |max: u32| {
        format!(
            r#"name: loop
nodes:
  - name: init
    run: |
      return {{"n": 0, "log": []}}
  - name: grow
    type: while_loop
    condition: "state.n < 5"
    max_iterations: {max}
    body:
      - name: add
        run: |
          return {{"n": state["n"] + 1}}
      - name: note
        language: lua
        run: |
          local log = state.log
          table.insert(log, state.n)
          return {{ log = log }}
  - name: after
    run: |
      return {{"done": state["n"]}}
"#
        )
    };
    let dir = tempfile::tempdir().unwrap();
    let (wf, _) = tea(&text(10));
    assert_eq!(wf.node("grow").unwrap().node_type, NodeType::If);
    let ran = run_code(&wf, "", Some(json!({})), dir.path()).await;
    assert_eq!(ran.result().status, RunStatus::Completed, "{:?}", ran.result().error);
    assert_eq!(state(&ran)["log"], json!([1, 2, 3, 4, 5]));
    assert_eq!(state(&ran)["done"], 5, "the condition failed after five passes; the loop went on to `after`");
    // TEA exits the loop normally after max_iterations passes, even when the condition still holds.
    let (wf, _) = tea(&text(2));
    let ran = run_code(&wf, "", Some(json!({})), dir.path()).await;
    assert_eq!(ran.result().status, RunStatus::Completed, "{:?}", ran.result().error);
    assert_eq!(state(&ran)["done"], 2);
}

#[test]
fn while_loops_are_refused_as_tea_refuses_them() {
    let body = "    body:\n      - name: b\n        run: return {}\n";
    let cases = [
        (format!("    max_iterations: 3\n{body}"), "TEA_WHILE_WITHOUT_CONDITION", "requires 'condition'"),
        (format!("    condition: state.x\n{body}"), "TEA_WHILE_WITHOUT_MAX_ITERATIONS", "requires 'max_iterations'"),
        (
            format!("    condition: state.x\n    max_iterations: 1001\n{body}"),
            "TEA_WHILE_INVALID_MAX_ITERATIONS",
            "between 1-1000, got 1001",
        ),
        (format!("    condition: state.x\n    max_iterations: 0\n{body}"), "TEA_WHILE_INVALID_MAX_ITERATIONS", "got 0"),
        (
            format!("    condition: state.x\n    max_iterations: many\n{body}"),
            "TEA_WHILE_INVALID_MAX_ITERATIONS",
            "got \"many\"",
        ),
        (
            "    condition: state.x\n    max_iterations: 3\n    body: []\n".into(),
            "TEA_WHILE_EMPTY_BODY",
            "at least one node",
        ),
        (
            "    condition: state.x\n    max_iterations: 3\n    body:\n      - name: inner\n        type: while_loop\n"
                .into(),
            "TEA_NESTED_WHILE",
            "contains nested while_loop 'inner'",
        ),
    ];
    for (fields, code, says) in cases {
        let text = format!("name: t\nnodes:\n  - name: w\n    type: while_loop\n{fields}");
        let e = format::load_str(&text, None, Some(Path::new("loop.yaml"))).unwrap_err();
        assert_eq!(e.code, code, "{text}");
        assert!(e.to_string().contains(says) && e.to_string().contains("'w'"), "{e}");
    }
}

#[tokio::test]
async fn conditions_use_python_dict_methods_as_teas_jinja_does() {
    let (wf, _) = tea(r#"name: dict
nodes:
  - name: a
    run: |
      return {"score": 7}
    goto:
      - if: "state.get('score', 0) > 5 and 'score' in state.keys() and state.get('missing') is none"
        to: high
      - to: low
  - name: high
    run: |
      return {"path": "high"}
    goto: __end__
  - name: low
    run: |
      return {"path": "low"}
"#);
    let ran = run_code(&wf, "", Some(json!({})), tempfile::tempdir().unwrap().path()).await;
    assert_eq!(state(&ran)["path"], "high");
}

#[tokio::test]
async fn an_edge_to_a_list_of_nodes_starts_them_in_parallel() {
    let (wf, _) = tea(r#"name: fan
nodes:
  - name: split
    run: |
      return {"started": True}
  - name: left
    run: |
      return {"left": 1}
  - name: right
    run: |
      return {"right": 2}
  - name: join
    fan_in: true
    run: |
      return {"sum": sum(r.state.get("left", 0) + r.state.get("right", 0) for r in parallel_results)}
edges:
  - {from: __start__, to: split}
  - {from: split, to: [left, right], type: parallel, fan_in: join}
  - {from: left, to: join}
  - {from: right, to: join}
  - {from: join, to: __end__}
"#);
    let ran = run_code(&wf, "", Some(json!({})), tempfile::tempdir().unwrap().path()).await;
    assert_eq!(ran.result().status, RunStatus::Completed, "{:?}", ran.result().error);
    assert_eq!(state(&ran)["sum"], 3);
    assert_eq!(ran.result().node("join").unwrap().data, json!({"sum": 3}));
}

#[tokio::test]
async fn llm_call_is_an_agent_with_its_prompt_and_other_actions_fail_saying_they_are_not_supported() {
    let (wf, notes) = tea(r#"name: llm
nodes:
  - name: ask
    uses: llm.call
    with:
      provider: openai
      model: gpt-4o-mini
      messages:
        - {role: system, content: "You are terse."}
        - {role: user, content: "Summarize {{ state.topic }}"}
  - name: fetch
    uses: http.get
    with: {url: "https://example.com"}
"#);
    let ask = wf.node("ask").unwrap();
    assert_eq!(ask.node_type, NodeType::Agent);
    assert_eq!(ask.system_prompt.as_deref(), Some("You are terse."));
    assert_eq!(ask.user_prompt.as_deref(), Some("Summarize {{ state.topic }}"));
    assert_eq!(ask.model.as_deref(), Some("openai/gpt-4o-mini"));
    assert!(notes.iter().any(|n| n.contains("`http.get` is not supported yet")), "{notes:?}");
    let ran = run_code(
        &wf,
        "nodes: {ask: {text: 'short'}}",
        Some(json!({"topic": "rust"})),
        tempfile::tempdir().unwrap().path(),
    )
    .await;
    assert_eq!(ran.model.executes()[0].1, "Summarize rust");
    assert_eq!(ran.data("ask"), json!({"text": "short"}));
    assert!(ran.error("fetch").contains("TEA action `http.get` is not supported yet"), "{}", ran.error("fetch"));
}

#[test]
fn llm_call_parameters_an_agent_has_no_field_for_are_each_a_note_naming_the_node_and_the_parameter() {
    let (wf, notes) = tea(r#"name: llm
nodes:
  - name: ask
    uses: llm.call
    with: {model: openai/gpt-4o-mini, prompt: hi, temperature: 0.2, max_tokens: 100, backend: ollama, seed: 7}
"#);
    assert_eq!(wf.node("ask").unwrap().model.as_deref(), Some("openai/gpt-4o-mini"));
    for (param, why) in [
        ("temperature", "provider's default temperature"),
        ("max_tokens", "not capped"),
        ("backend", "the model its `model` names"),
        ("seed", "no such setting"),
    ] {
        let said = notes.iter().find(|n| n.contains(&format!("parameter `{param}` is not used")));
        let said = said.unwrap_or_else(|| panic!("a note names `{param}`: {notes:?}"));
        assert!(said.starts_with("node `ask`: `llm.call` parameter") && said.contains(why), "{said}");
    }
    for used in ["prompt", "model"] {
        assert!(!notes.iter().any(|n| n.contains(&format!("`{used}` is not used"))), "{notes:?}");
    }
}

#[test]
fn dynamic_parallel_load_errors_are_teas() {
    let node = |extra: &str| {
        format!("name: t\nnodes:\n  - name: p\n    type: dynamic_parallel\n    items: state.xs\n    fan_in: c\n{extra}  - name: c\n    run: return {{}}\n")
    };
    for (extra, code, says) in [
        (
            "    max_concurrency: -1\n    action: {uses: llm.call}\n",
            "TEA_INVALID_MAX_CONCURRENCY",
            "max_concurrency must be positive integer, got -1",
        ),
        ("    max_concurrency: 2.5\n    action: {uses: llm.call}\n", "TEA_INVALID_MAX_CONCURRENCY", "got 2.5"),
        ("    action: {with: {prompt: hi}}\n", "TEA_ACTION_WITHOUT_USES", "action requires 'uses' field"),
    ] {
        let e = format::load_str(&node(extra), None, None).unwrap_err();
        assert_eq!(e.code, code, "{extra}");
        assert!(e.to_string().contains(says), "{e}");
    }
    let (wf, _) = tea(&node(
        "    max_concurrency: 3\n    action:\n      uses: llm.call\n      with: {prompt: 'Look at {{ state.item }}'}\n",
    ));
    let p = wf.node("p").unwrap();
    assert_eq!((p.node_type, p.user_prompt.as_deref()), (NodeType::Agent, Some("Look at {{ item }}")));
    assert_eq!(p.for_each.as_ref().unwrap().concurrency, Some(3));
    // As TEA reads it: 0 is unset (then `parallel_config`'s), and a template is resolved only when TEA runs.
    for (extra, concurrency, noted) in [
        ("    max_concurrency: 0\n    action: {uses: llm.call}\n", 4, false),
        ("    max_concurrency: 0\n    parallel_config: {max_concurrency: 2}\n    action: {uses: llm.call}\n", 2, false),
        ("    max_concurrency: '{{ state.n }}'\n    action: {uses: llm.call}\n", 4, true),
    ] {
        let (wf, notes) = tea(&node(extra));
        assert_eq!(wf.node("p").unwrap().for_each.as_ref().unwrap().concurrency, Some(concurrency), "{extra}");
        assert_eq!(notes.iter().any(|n| n.contains("resolved only when TEA runs")), noted, "{notes:?}");
    }
}

#[tokio::test]
async fn action_is_teas_other_spelling_of_uses_with_params_for_with() {
    let (wf, notes) = tea(r#"name: chat
nodes:
  - name: chat
    action: llm.chat
    params:
      provider: ollama
      model: llama3
      prompt: "{{ state.question }}"
      system: Be brief.
    outputs:
      answer: "{{ action_result.content }}"
  - name: remember
    action: memory.store
    params: {key: last}
  - name: noop
    action: {with: {x: 1}}
"#);
    let chat = wf.node("chat").unwrap();
    assert_eq!(chat.node_type, NodeType::Agent);
    assert_eq!(chat.user_prompt.as_deref(), Some("{{ state.question }}"));
    assert_eq!(chat.system_prompt.as_deref(), Some("Be brief."));
    assert_eq!(chat.model.as_deref(), Some("ollama/llama3"));
    assert!(notes.iter().any(|n| n.contains("node `chat`: `outputs`") && n.contains("not mapped")), "{notes:?}");
    assert!(notes.iter().any(|n| n.contains("`memory.store` is not supported yet")), "{notes:?}");
    assert!(notes.iter().any(|n| n.contains("node `noop`: its `action` names no `uses`")), "{notes:?}");
    let ran = run_code(
        &wf,
        "nodes: {chat: {text: 'Paris'}}",
        Some(json!({"question": "Capital of France?"})),
        tempfile::tempdir().unwrap().path(),
    )
    .await;
    assert_eq!(ran.model.executes()[0].1, "Capital of France?");
    assert_eq!(ran.data("chat"), json!({"text": "Paris"}));
    assert!(
        ran.error("remember").contains("TEA action `memory.store` is not supported yet"),
        "{}",
        ran.error("remember")
    );
    // Neither a name nor a {uses} map: refused, saying what `action` takes.
    let e = format::load_str("name: t\nnodes:\n  - name: a\n    action: [llm.call]\n", None, None).unwrap_err();
    assert_eq!(e.code, "TEA_INVALID_ACTION");
    assert!(e.to_string().contains("must name an action"), "{e}");
}

#[tokio::test]
async fn without_consent_no_tea_body_runs() {
    let wf = format::load_file(&fixtures().join("parallel_fanout.yaml"), None).unwrap().workflow;
    let dir = tempfile::tempdir().unwrap();
    let code = switchyard_engine::code::Code { dir: Some(dir.path().into()), ..Default::default() };
    let ran = run_code_with(&wf, "", Some(json!({})), code).await;
    assert_eq!(ran.result().status, RunStatus::Failed);
    assert!(ran.error("start_node").contains("consent"));
    let refused = ran.result().node("start_node").unwrap();
    assert_eq!(refused.error_code.as_deref(), Some("CODE_NEEDS_CONSENT"));
    assert!(ran.result().node("branch_1").is_none(), "nothing after the refused step ran");
}

#[tokio::test]
async fn initial_state_is_the_input_of_a_run_given_none_so_the_readmes_tea_example_asks_its_question() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/tea/files/examples/llm/local-chat.yaml");
    let loaded = format::load_file(&path, None).unwrap();
    assert!(loaded.notes.iter().any(|n| n.contains("initial_state") && n.contains("replaces")), "{:?}", loaded.notes);
    let ran = run_code(&loaded.workflow, "nodes: {chat: {text: '4'}}", None, tempfile::tempdir().unwrap().path()).await;
    assert_eq!(ran.result().status, RunStatus::Completed, "{:?}", ran.result().error);
    assert_eq!(ran.model.executes()[0].1, "What is 2+2? Please respond with just the number.");
    // An input given replaces it whole, as the note says.
    let ran = run_code(
        &loaded.workflow,
        "nodes: {chat: {text: '6'}}",
        Some(json!({"question": "And 3+3?"})),
        tempfile::tempdir().unwrap().path(),
    )
    .await;
    assert_eq!(ran.model.executes()[0].1, "And 3+3?");
}
