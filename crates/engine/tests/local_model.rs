//! Integration against a REAL local model: llama.cpp's OpenAI-compatible server (llama-cpp-python) serving
//! SmolLM2-135M-Instruct. `npm test` starts it (scripts/test.sh, scripts/local-model.sh) and runs these with
//! `--ignored` and `SWITCHYARD_TEST_LLM_URL` set. The model is tiny: these assert protocol and shape, never quality.

mod support;

use std::sync::Arc;

use support::workflow;
use switchyard_engine::events::{Event, EventKind};
use switchyard_engine::log::Collector;
use switchyard_engine::providers::{Limits, ProviderConfig, ProviderKind, Providers, Settings, StructuredMode};
use switchyard_engine::result::RunStatus;
use switchyard_engine::run::{Outcome, RunOptions, Runtime};

fn settings(mode: Option<StructuredMode>) -> Settings {
    let url = std::env::var("SWITCHYARD_TEST_LLM_URL")
        .expect("SWITCHYARD_TEST_LLM_URL must point at a local OpenAI-compatible server: run `npm test`");
    Settings {
        providers: vec![ProviderConfig {
            id: "local".into(),
            kind: ProviderKind::Openai,
            base_url: Some(url),
            api_key_env: None,
            default_model: None,
            structured_output: mode,
            max_tokens: Some(48),
        }],
        default_model: None,
        limits: Limits { timeout_ms: 120_000, ..Limits::default() },
        ..Settings::default()
    }
}

async fn run_local(yaml: &str, mode: Option<StructuredMode>) -> (Outcome, Vec<Event>) {
    run_local_with(yaml, mode, Default::default()).await
}

async fn run_local_with(
    yaml: &str,
    mode: Option<StructuredMode>,
    mcp: Arc<switchyard_engine::mcp::McpSessions>,
) -> (Outcome, Vec<Event>) {
    let collector = Collector::default();
    let runtime = Runtime {
        model: Arc::new(Providers::new(&settings(mode))),
        answers: None,
        log: None,
        observers: vec![Arc::new(collector.clone())],
        code: Default::default(),
        mcp,
        children: None,
    };
    let outcome = support::run_to_pause(Arc::new(workflow(yaml)), RunOptions::default(), runtime).await;
    (outcome, collector.events())
}

#[tokio::test]
#[ignore = "needs a local model server; `npm test` starts one"]
async fn a_plain_agent_streams_non_empty_text() {
    let (outcome, events) = run_local(
        "nodes:
  - {id: start, type: start, initial_input: Name three colors.}
  - {id: a, type: agent, model: local/smollm2-135m, system_prompt: Answer briefly.}
edges:
  - {from: start, to: a}",
        None,
    )
    .await;
    assert_eq!(outcome.result.status, RunStatus::Completed, "{:?}", outcome.result.error);
    let text = outcome.result.node("a").unwrap().data["text"].as_str().unwrap().to_string();
    assert!(!text.trim().is_empty());
    let deltas: Vec<&str> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::NodeProgress { message, .. } => Some(message.as_str()),
            _ => None,
        })
        .collect();
    assert!(deltas.len() >= 2, "streamed as several deltas: {deltas:?}");
    assert_eq!(deltas.concat(), text, "the deltas are the answer");
    // Usage in a stream is whatever the server sends: llama-cpp-python 0.3.36 ignores `stream_options` and sends
    // none (docs/providers.md); a server that sends it has it on `node:exit`, and nothing is made up otherwise.
    let usage = events.iter().find_map(|e| match &e.kind {
        EventKind::NodeExit { node, usage, .. } if node == "a" => Some(usage.clone()),
        _ => None,
    });
    if let Some(Some(usage)) = usage {
        assert!(usage.input_tokens > 0 && usage.output_tokens > 0, "{usage:?}");
    }
}

const TYPED: &str = "nodes:
  - {id: start, type: start, initial_input: 'The sky is blue.'}
  - {id: a, type: agent, model: local/smollm2-135m, user_prompt: 'Give the color named in: {{ PREVIOUS_OUTPUT }}', output_schema: {type: object, properties: {color: {type: string}}, required: [color]}}
edges:
  - {from: start, to: a}";

#[tokio::test]
#[ignore = "needs a local model server; `npm test` starts one"]
async fn an_output_schema_yields_data_that_validates() {
    let (outcome, events) = run_local(TYPED, None).await;
    assert_eq!(outcome.result.status, RunStatus::Completed, "{:?}", outcome.result.error);
    let data = outcome.result.node("a").unwrap().data;
    assert!(data["color"].is_string(), "{data}");
    // llama-cpp-python refuses `json_schema`; the client stepped down and said so.
    let stepped = events.iter().any(|e| matches!(&e.kind, EventKind::Log { content, .. } if content.as_str().is_some_and(|c| c.contains("using JsonObject"))));
    assert!(stepped);
}

#[tokio::test]
#[ignore = "needs a local model server; `npm test` starts one"]
async fn a_forced_tool_call_returns_structured_arguments() {
    let (outcome, _) = run_local(TYPED, Some(StructuredMode::Tool)).await;
    assert_eq!(outcome.result.status, RunStatus::Completed, "{:?}", outcome.result.error);
    assert!(outcome.result.node("a").unwrap().data["color"].is_string());
}

#[tokio::test]
#[ignore = "needs a local model server; `npm test` starts one"]
async fn natural_language_routing_picks_a_valid_choice_and_reports_the_tokens_it_used() {
    let (outcome, events) = run_local(
        "nodes:
  - {id: start, type: start, initial_input: 'Tests failed: 3 errors.'}
  - {id: check, type: agent, model: local/smollm2-135m, pinned: {tests: failed}}
  - {id: fix, type: agent, pinned: {text: fixing}}
  - {id: ship, type: agent, pinned: {text: shipping}}
edges:
  - {from: start, to: check}
  - {from: check, to: fix, when: the tests failed}
  - {from: check, to: ship, when: the tests passed}",
        None,
    )
    .await;
    assert_eq!(outcome.result.status, RunStatus::Completed, "{:?}", outcome.result.error);
    let edge = outcome.result.trace.edges.iter().find(|e| e.from == "check").unwrap();
    assert!(["fix", "ship"].contains(&edge.to.as_str()), "a valid choice id: {edge:?}");
    assert!(!edge.reason.contains("invalid"), "{edge:?}");
    // The routing call is not streamed, so even llama-cpp-python (which streams no usage) reports its tokens; they
    // belong to the routing node, on its route event.
    let usage = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::Route { from, usage, .. } if from == "check" => usage.clone(),
            _ => None,
        })
        .expect("the route event after `check` carries the routing call's usage");
    assert!(usage.input_tokens > 0 && usage.output_tokens > 0, "{usage:?}");
}

/// The real model calls a tool of a real MCP server (tests/mcp/server.py over stdio): forced in its first turn with
/// `call_first`, as llama.cpp does not call tools on its own (`tool_choice: auto` answers in text). Needs both the
/// model server and the `mcp` package (`SWITCHYARD_TEST_MCP_PYTHON`); `npm test` provides them.
#[tokio::test]
#[ignore = "needs a local model server and a python with the `mcp` package; `npm test` starts them"]
async fn the_local_model_calls_an_mcp_tool_and_answers_with_its_result() {
    use switchyard_engine::mcp::{McpServerConfig, McpSessions, StdioServer};
    let python = std::env::var("SWITCHYARD_TEST_MCP_PYTHON")
        .expect("SWITCHYARD_TEST_MCP_PYTHON must name a python with the `mcp` package: run `npm test`");
    let server = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/server.py");
    let config = McpServerConfig::Stdio(StdioServer {
        command: python,
        args: vec![server.display().to_string(), "stdio".into()],
        env: Default::default(),
        cwd: None,
        timeout_seconds: None,
    });
    let yaml = "nodes:
  - {id: start, type: start, initial_input: What is 2 plus 3?}
  - id: a
    type: agent
    model: local/smollm2-135m
    system_prompt: Use the add tool, then answer briefly.
    tools: {mcp: [calc/add], call_first: calc/add}
edges:
  - {from: start, to: a}";
    let sessions = Arc::new(McpSessions::new([("calc".to_string(), config)]));
    let (outcome, events) = run_local_with(yaml, None, sessions).await;
    assert_eq!(outcome.result.status, RunStatus::Completed, "{:?}", outcome.result.error);
    let node = outcome.result.node("a").unwrap();
    let call = node.tool_calls.first().expect("the model called the tool");
    assert_eq!(call.tool, "calc__add");
    // Whatever numbers the tiny model chose, the result is the real server's sum of them.
    let (a, b) = (call.input["a"].as_i64(), call.input["b"].as_i64());
    assert!(a.is_some() && b.is_some(), "grammar-constrained arguments: {}", call.input);
    assert_eq!(call.output, Some(serde_json::json!({"result": a.unwrap() + b.unwrap()})), "{call:?}");
    assert!(events
        .iter()
        .any(|e| matches!(&e.kind, EventKind::ToolResult { tool, error: None, .. } if tool == "calc__add")));
    assert!(node.data["text"].is_string(), "then a final answer: {}", node.data);
}
