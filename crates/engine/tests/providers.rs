//! Provider clients against a local server that misbehaves on purpose, and the Anthropic client against recorded
//! request/response pairs of its documented wire format. Each failure ends as SEMANTICS §4 says, retries show in
//! events, and no test waits longer than its own timeouts.

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::http::{Reply, TestServer};
use support::workflow;
use switchyard_engine::events::{Event, EventKind};
use switchyard_engine::log::Collector;
use switchyard_engine::providers::{
    discover_default_model, DefaultSource, Limits, ProviderConfig, ProviderKind, Providers, Settings, StructuredMode,
};
use switchyard_engine::result::RunStatus;
use switchyard_engine::run::{Outcome, RunOptions, Runtime};

fn settings(kind: ProviderKind, url: &str, limits: Limits, mode: Option<StructuredMode>) -> Settings {
    Settings {
        providers: vec![ProviderConfig {
            id: "p".into(),
            kind,
            base_url: Some(url.into()),
            api_key_env: Some("SWITCHYARD_TEST_KEY".into()),
            default_model: None,
            structured_output: mode,
            max_tokens: None,
        }],
        default_model: None,
        limits,
        ..Settings::default()
    }
}

fn fast_limits() -> Limits {
    Limits {
        retries: 2,
        backoff_ms: 10,
        timeout_ms: 5_000,
        read_timeout_ms: 5_000,
        connect_timeout_ms: 1_000,
        max_tool_turns: 4,
    }
}

const ONE_AGENT: &str = "nodes:
  - {id: start, type: start}
  - {id: a, type: agent, model: p/m1, system_prompt: be brief, user_prompt: 'Say hi to {{ input.name }}'}
edges:
  - {from: start, to: a}";

async fn run_with(settings: &Settings, yaml: &str, input: Value) -> (Outcome, Vec<Event>) {
    std::env::set_var("SWITCHYARD_TEST_KEY", "sk-test-123");
    let collector = Collector::default();
    let runtime = Runtime {
        model: Arc::new(Providers::new(settings)),
        answers: None,
        log: None,
        observers: vec![Arc::new(collector.clone())],
        code: Default::default(),
        mcp: Default::default(),
        children: None,
    };
    let outcome = support::run_to_pause(
        Arc::new(workflow(yaml)),
        RunOptions { input: Some(input), ..Default::default() },
        runtime,
    )
    .await;
    (outcome, collector.events())
}

fn retry_notices(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Log { log_type, content, .. } if log_type == "llm_error" => content.as_str().map(str::to_string),
            _ => None,
        })
        .filter(|m| m.contains("retry") || m.contains("using"))
        .collect()
}

fn progress(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::NodeProgress { message, .. } => Some(message.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn openai_streams_text_as_progress_and_records_usage() {
    let server = TestServer::start(vec![Reply::openai_stream(&["Hel", "lo ", "Ada"])]).await;
    let (outcome, events) =
        run_with(&settings(ProviderKind::Openai, &server.url, fast_limits(), None), ONE_AGENT, json!({"name": "Ada"}))
            .await;
    assert_eq!(outcome.result.status, RunStatus::Completed);
    assert_eq!(outcome.result.node("a").unwrap().data, json!({"text": "Hello Ada"}));
    assert_eq!(progress(&events), ["Hel", "lo ", "Ada"]);
    let usage = events.iter().find_map(|e| match &e.kind {
        EventKind::NodeExit { node, usage, .. } if node == "a" => usage.clone(),
        _ => None,
    });
    assert_eq!(usage.map(|u| (u.input_tokens, u.output_tokens)), Some((11, 3)));
    let request = &server.requests()[0];
    assert_eq!(request.path, "/chat/completions");
    assert_eq!(request.header("authorization"), Some("Bearer sk-test-123"));
    assert_eq!(request.body["model"], "m1");
    assert_eq!(request.body["stream"], true);
    assert_eq!(request.body["messages"][0], json!({"role": "system", "content": "be brief"}));
    assert_eq!(request.body["messages"][1], json!({"role": "user", "content": "Say hi to Ada"}));
    let log = serde_json::to_string(&events).unwrap();
    assert!(!log.contains("sk-test-123"), "keys never appear in events");
}

#[tokio::test]
async fn a_429_is_retried_after_retry_after() {
    let server = TestServer::start(vec![
        Reply::Body {
            status: 429,
            headers: vec![("retry-after", "1".into())],
            body: "{\"error\": \"slow down\"}".into(),
        },
        Reply::openai_stream(&["ok"]),
    ])
    .await;
    let (outcome, events) =
        run_with(&settings(ProviderKind::Openai, &server.url, fast_limits(), None), ONE_AGENT, json!({})).await;
    assert_eq!(outcome.result.status, RunStatus::Completed);
    let notices = retry_notices(&events);
    assert_eq!(notices.len(), 1);
    assert!(notices[0].contains("HTTP 429") && notices[0].contains("in 1000 ms"), "Retry-After honoured: {notices:?}");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn three_5xx_answers_exhaust_the_retries_and_fail_the_node() {
    let server = TestServer::start(vec![Reply::text(503, "{\"error\": \"overloaded\"}")]).await;
    let (outcome, events) =
        run_with(&settings(ProviderKind::Openai, &server.url, fast_limits(), None), ONE_AGENT, json!({})).await;
    assert_eq!(outcome.result.status, RunStatus::Failed);
    let error = outcome.result.node("a").unwrap().error.unwrap();
    assert!(error.starts_with("p: HTTP 503") && error.contains("after 3 attempts"), "{error}");
    assert_eq!(retry_notices(&events).len(), 2);
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn a_server_that_never_answers_times_out() {
    let server = TestServer::start(vec![Reply::Hang]).await;
    let limits = Limits { timeout_ms: 300, read_timeout_ms: 300, retries: 1, ..fast_limits() };
    let started = Instant::now();
    let (outcome, events) =
        run_with(&settings(ProviderKind::Openai, &server.url, limits, None), ONE_AGENT, json!({})).await;
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(outcome.result.status, RunStatus::Failed);
    assert!(outcome.result.node("a").unwrap().error.unwrap().contains("timed out"));
    assert_eq!(retry_notices(&events).len(), 1, "a timeout is transient");
}

#[tokio::test]
async fn a_401_fails_at_once_and_says_which_key() {
    let server = TestServer::start(vec![Reply::text(401, "{\"error\": {\"message\": \"Incorrect API key\"}}")]).await;
    let (outcome, events) =
        run_with(&settings(ProviderKind::Openai, &server.url, fast_limits(), None), ONE_AGENT, json!({})).await;
    let error = outcome.result.node("a").unwrap().error.unwrap();
    assert!(error.contains("HTTP 401") && error.contains("$SWITCHYARD_TEST_KEY"), "{error}");
    assert!(retry_notices(&events).is_empty(), "no retry on 4xx");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn malformed_json_is_a_clear_error_naming_the_provider() {
    let server = TestServer::start(vec![Reply::text(200, "{\"choices\": [oops")]).await;
    let (outcome, _) =
        run_with(&settings(ProviderKind::Openai, &server.url, fast_limits(), None), ROUTING, json!({})).await;
    let error = outcome.result.error.unwrap();
    assert!(error.contains("p: malformed JSON"), "{error}");

    let bad_chunk = Reply::Sse { events: vec!["data: {\"choices\": [\n\n".into()], cut_after: None };
    let server = TestServer::start(vec![bad_chunk]).await;
    let (outcome, _) =
        run_with(&settings(ProviderKind::Openai, &server.url, fast_limits(), None), ONE_AGENT, json!({})).await;
    let error = outcome.result.node("a").unwrap().error.unwrap();
    assert!(error.contains("p: malformed JSON in the stream"), "{error}");
}

#[tokio::test]
async fn a_stream_cut_midway_fails_cleanly_or_is_retried_when_nothing_was_shown() {
    let Reply::Sse { events: full, .. } = Reply::openai_stream(&["partial ", "answer"]) else { unreachable!() };
    // Cut after the first delta: something was shown, so the node fails cleanly.
    let server = TestServer::start(vec![Reply::Sse { events: full.clone(), cut_after: Some(1) }]).await;
    let (outcome, events) =
        run_with(&settings(ProviderKind::Openai, &server.url, fast_limits(), None), ONE_AGENT, json!({})).await;
    assert_eq!(outcome.result.status, RunStatus::Failed);
    let error = outcome.result.node("a").unwrap().error.unwrap();
    assert!(error.contains("stream"), "{error}");
    assert_eq!(progress(&events), ["partial "]);
    assert_eq!(server.requests().len(), 1);

    // Cut before anything was shown: retried, then it succeeds.
    let server = TestServer::start(vec![
        Reply::Sse { events: full.clone(), cut_after: Some(0) },
        Reply::Sse { events: full, cut_after: None },
    ])
    .await;
    let (outcome, events) =
        run_with(&settings(ProviderKind::Openai, &server.url, fast_limits(), None), ONE_AGENT, json!({})).await;
    assert_eq!(outcome.result.status, RunStatus::Completed);
    assert_eq!(outcome.result.node("a").unwrap().data, json!({"text": "partial answer"}));
    assert_eq!(retry_notices(&events).len(), 1);
}

#[tokio::test]
async fn cancelling_aborts_the_request_at_once() {
    let server = TestServer::start(vec![Reply::Hang]).await;
    let limits = Limits { timeout_ms: 600_000, read_timeout_ms: 600_000, ..fast_limits() };
    std::env::set_var("SWITCHYARD_TEST_KEY", "sk-test-123");
    let collector = Collector::default();
    let runtime = Runtime {
        model: Arc::new(Providers::new(&settings(ProviderKind::Openai, &server.url, limits, None))),
        answers: None,
        log: None,
        observers: vec![Arc::new(collector.clone())],
        code: Default::default(),
        mcp: Default::default(),
        children: None,
    };
    let handle = support::start_live(Arc::new(workflow(ONE_AGENT)), RunOptions::default(), runtime);
    while server.requests().is_empty() {
        tokio::task::yield_now().await;
    }
    let started = Instant::now();
    handle.cancel();
    let outcome = tokio::time::timeout(Duration::from_secs(5), handle.finish()).await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(1));
    assert_eq!(outcome.result.status, RunStatus::Cancelled);
    assert_eq!(outcome.result.node("a").unwrap().error.as_deref(), Some("cancelled"));
}

const TYPED_AGENT: &str = "nodes:
  - {id: start, type: start}
  - {id: a, type: agent, model: p/m1, user_prompt: classify, output_schema: {type: object, properties: {label: {type: string}}, required: [label]}}
edges:
  - {from: start, to: a}";

#[tokio::test]
async fn structured_output_steps_down_when_the_server_refuses_json_schema() {
    // llama-cpp-python answers an OpenAI `json_schema` response_format with HTTP 500.
    let refusal = Reply::text(500, "{\"error\": \"response_format: only text or json_object supported\"}");
    let server = TestServer::start(vec![refusal, Reply::openai_stream(&["{\"label\": ", "\"bug\"}"])]).await;
    let (outcome, events) =
        run_with(&settings(ProviderKind::Openai, &server.url, fast_limits(), None), TYPED_AGENT, json!({})).await;
    assert_eq!(outcome.result.status, RunStatus::Completed, "{:?}", outcome.result.error);
    assert_eq!(outcome.result.node("a").unwrap().data, json!({"label": "bug"}));
    let requests = server.requests();
    assert_eq!(requests[0].body["response_format"]["type"], "json_schema");
    assert_eq!(requests[1].body["response_format"]["type"], "json_object");
    assert_eq!(requests[1].body["response_format"]["schema"]["required"], json!(["label"]));
    assert!(retry_notices(&events).iter().any(|n| n.contains("JsonObject")));
}

#[tokio::test]
async fn forced_tool_mode_and_tool_loops_over_openai() {
    // Structured output through a forced `respond` call.
    let call = |name: &str, args: &str| {
        let chunk = json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": name, "arguments": args}}]}, "finish_reason": null}]});
        let done = json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]});
        Reply::Sse {
            events: vec![format!("data: {chunk}\n\n"), format!("data: {done}\n\n"), "data: [DONE]\n\n".into()],
            cut_after: None,
        }
    };
    let server = TestServer::start(vec![call("respond", "{\"label\": \"feature\"}")]).await;
    let s = settings(ProviderKind::Openai, &server.url, fast_limits(), Some(StructuredMode::Tool));
    let (outcome, _) = run_with(&s, TYPED_AGENT, json!({})).await;
    assert_eq!(outcome.result.node("a").unwrap().data, json!({"label": "feature"}));
    let body = &server.requests()[0].body;
    assert_eq!(body["tool_choice"], json!({"type": "function", "function": {"name": "respond"}}));
    assert_eq!(body["tools"][0]["function"]["parameters"]["required"], json!(["label"]));

    // A subagent called as a tool (forced in the first turn: `call_first`), its result sent back, then the final
    // answer, chosen freely.
    let parent = "nodes:
  - {id: start, type: start}
  - {id: planner, type: agent, model: p/m1, user_prompt: plan, tools: {subagents: true, call_first: helper}}
  - {id: helper, type: agent, model: p/m1, description: Knows facts}
edges:
  - {from: start, to: planner}
  - {from: planner, to: helper, handle: subagent}";
    let server = TestServer::start(vec![
        call("helper", "{\"message\": \"what is X?\"}"),
        Reply::openai_stream(&["X is 42"]),
        Reply::openai_stream(&["plan: use 42"]),
    ])
    .await;
    let (outcome, events) =
        run_with(&settings(ProviderKind::Openai, &server.url, fast_limits(), None), parent, json!({})).await;
    assert_eq!(outcome.result.status, RunStatus::Completed, "{:?}", outcome.result.error);
    let planner = outcome.result.node("planner").unwrap();
    assert_eq!(planner.data, json!({"text": "plan: use 42"}));
    assert_eq!(planner.tool_calls[0].output, Some(json!("X is 42")));
    let requests = server.requests();
    assert_eq!(requests[0].body["tools"][0]["function"]["name"], "helper");
    assert_eq!(requests[0].body["tool_choice"], json!({"type": "function", "function": {"name": "helper"}}));
    assert_eq!(requests[2].body["tool_choice"], "auto", "only the first turn is forced");
    assert_eq!(requests[1].body["messages"].as_array().unwrap().last().unwrap()["content"], "what is X?");
    let last = requests[2].body["messages"].as_array().unwrap().clone();
    assert_eq!(last[last.len() - 1], json!({"role": "tool", "tool_call_id": "call_1", "content": "X is 42"}));
    let kinds: Vec<&str> = events.iter().map(|e| e.kind.type_name()).filter(|t| t.starts_with("tool:")).collect();
    assert_eq!(kinds, ["tool:call", "tool:result"]);
}

#[tokio::test]
async fn a_tool_name_repeated_in_every_chunk_is_read_once() {
    // llama-cpp-python repeats `function.name` in each streamed chunk of a forced call.
    let chunk = |args: &str| {
        let c = json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_0", "type": "function", "function": {"name": "respond", "arguments": args}}]}, "finish_reason": null}]});
        format!("data: {c}\n\n")
    };
    let done = json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]});
    let events = vec![chunk("{\"label\""), chunk(": \"bug\"}"), format!("data: {done}\n\n"), "data: [DONE]\n\n".into()];
    let server = TestServer::start(vec![Reply::Sse { events, cut_after: None }]).await;
    let s = settings(ProviderKind::Openai, &server.url, fast_limits(), Some(StructuredMode::Tool));
    let (outcome, _) = run_with(&s, TYPED_AGENT, json!({})).await;
    assert_eq!(outcome.result.node("a").unwrap().data, json!({"label": "bug"}));
}

/// `a` is pinned; only the routing decision after it calls the provider.
const ROUTING: &str = "nodes:
  - {id: start, type: start}
  - {id: a, type: agent, model: p/m1, pinned: {x: 1}}
  - {id: b, type: agent, pinned: {}}
  - {id: c, type: agent, pinned: {}}
edges:
  - {from: start, to: a}
  - {from: a, to: b, when: go b}
  - {from: a, to: c, when: go c}";

#[tokio::test]
async fn the_tokens_a_routing_call_used_reach_the_route_event_of_the_routing_node() {
    let reply = Reply::json(
        200,
        &json!({"choices": [{"message": {"role": "assistant", "content": "{\"choice\": \"b\"}"}}], "usage": {"prompt_tokens": 31, "completion_tokens": 7, "prompt_tokens_details": {"cached_tokens": 20}}}),
    );
    let server = TestServer::start(vec![reply]).await;
    let (outcome, events) =
        run_with(&settings(ProviderKind::Openai, &server.url, fast_limits(), None), ROUTING, json!({})).await;
    assert_eq!(outcome.result.status, RunStatus::Completed, "{:?}", outcome.result.error);
    let usage: Vec<_> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Route { from, usage, .. } if from == "a" => Some(usage.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(usage.len(), 1);
    // Of the 31 input tokens, 20 were read from the prompt cache (priced apart where the price table says).
    assert_eq!(usage[0].as_ref().map(|u| (u.input_tokens, u.output_tokens, u.cached_input_tokens)), Some((31, 7, 20)));
    let routed = events.iter().find(|e| matches!(&e.kind, EventKind::Route { from, .. } if from == "a")).unwrap();
    let json = serde_json::to_value(routed).unwrap();
    assert_eq!(json["usage"], json!({"inputTokens": 31, "outputTokens": 7, "cachedInputTokens": 20}));
}

#[tokio::test]
async fn routing_is_strict_and_never_takes_the_first_choice_silently() {
    let answer =
        |content: &str| Reply::json(200, &json!({"choices": [{"message": {"role": "assistant", "content": content}}]}));
    let cases = [
        ("{\"choice\": \"c\"}", Some("c")),
        ("I think c is right.", Some("c")),
        ("either b or c", None),
        ("{\"choice\": \"z\"}", None),
    ];
    for (content, expected) in cases {
        let server = TestServer::start(vec![answer(content)]).await;
        let (outcome, _) =
            run_with(&settings(ProviderKind::Openai, &server.url, fast_limits(), None), ROUTING, json!({})).await;
        let edge = outcome.result.trace.edges.iter().find(|e| e.from == "a").unwrap();
        match expected {
            Some(target) => assert_eq!(edge.to, target, "{content}"),
            None => {
                assert_eq!(edge.to, "(end)", "{content}");
                assert!(edge.reason.contains("invalid route target"), "{}", edge.reason);
            }
        }
        let body = &server.requests()[0].body;
        assert_eq!(body["response_format"]["json_schema"]["schema"]["properties"]["choice"]["enum"], json!(["b", "c"]));
    }
}

fn anthropic_stream(blocks: &[Value], stop_reason: &str) -> Reply {
    let mut events = vec![(
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "usage": {"input_tokens": 25, "cache_read_input_tokens": 100, "output_tokens": 1}}}),
    )];
    for (i, block) in blocks.iter().enumerate() {
        if let Some(text) = block.get("text") {
            events.push((
                "content_block_start",
                json!({"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}}),
            ));
            for piece in text.as_str().unwrap().split_inclusive(' ') {
                events.push((
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": i, "delta": {"type": "text_delta", "text": piece}}),
                ));
            }
        } else {
            events.push(("content_block_start", json!({"type": "content_block_start", "index": i, "content_block": {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}})));
            let input = block["input"].to_string();
            let (a, b) = input.split_at(input.len() / 2);
            for part in [a, b] {
                events.push(("content_block_delta", json!({"type": "content_block_delta", "index": i, "delta": {"type": "input_json_delta", "partial_json": part}})));
            }
        }
        events.push(("content_block_stop", json!({"type": "content_block_stop", "index": i})));
    }
    events.push(("ping", json!({"type": "ping"})));
    events.push(("message_delta", json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null}, "usage": {"output_tokens": 15}})));
    events.push(("message_stop", json!({"type": "message_stop"})));
    Reply::Sse {
        events: events.into_iter().map(|(name, data)| format!("event: {name}\ndata: {data}\n\n")).collect(),
        cut_after: None,
    }
}

#[tokio::test]
async fn anthropic_requests_match_the_wire_format_and_streams_parse() {
    let server = TestServer::start(vec![anthropic_stream(&[json!({"text": "Hello there Ada"})], "end_turn")]).await;
    let (outcome, events) = run_with(
        &settings(ProviderKind::Anthropic, &server.url, fast_limits(), None),
        ONE_AGENT,
        json!({"name": "Ada"}),
    )
    .await;
    assert_eq!(outcome.result.status, RunStatus::Completed, "{:?}", outcome.result.error);
    assert_eq!(outcome.result.node("a").unwrap().data, json!({"text": "Hello there Ada"}));
    assert_eq!(progress(&events), ["Hello ", "there ", "Ada"]);
    let request = &server.requests()[0];
    assert_eq!(request.path, "/v1/messages");
    assert_eq!(request.header("x-api-key"), Some("sk-test-123"));
    assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
    let body = &request.body;
    assert_eq!(body["model"], "m1");
    assert_eq!(body["max_tokens"], 4096);
    assert_eq!(body["system"], "be brief");
    assert_eq!(body["stream"], true);
    assert_eq!(body["messages"], json!([{"role": "user", "content": "Say hi to Ada"}]));
    assert!(body.get("tools").is_none() && body.get("tool_choice").is_none());
    let usage = events.iter().find_map(|e| match &e.kind {
        EventKind::NodeExit { usage, .. } => usage.clone(),
        _ => None,
    });
    // Anthropic counts the tokens read from the cache apart from `input_tokens`: input counts them all.
    assert_eq!(usage.map(|u| (u.input_tokens, u.output_tokens, u.cached_input_tokens)), Some((125, 15, 100)));
}

#[tokio::test]
async fn anthropic_structured_output_is_a_forced_tool_call_and_tools_loop() {
    let server = TestServer::start(vec![anthropic_stream(
        &[json!({"type": "tool_use", "id": "toolu_1", "name": "respond", "input": {"label": "bug"}})],
        "tool_use",
    )])
    .await;
    let (outcome, _) =
        run_with(&settings(ProviderKind::Anthropic, &server.url, fast_limits(), None), TYPED_AGENT, json!({})).await;
    assert_eq!(outcome.result.node("a").unwrap().data, json!({"label": "bug"}));
    let body = &server.requests()[0].body;
    assert_eq!(body["tool_choice"], json!({"type": "tool", "name": "respond"}));
    assert_eq!(body["tools"][0]["name"], "respond");
    assert_eq!(body["tools"][0]["input_schema"]["required"], json!(["label"]));

    let parent = "nodes:
  - {id: start, type: start}
  - {id: planner, type: agent, model: p/m1, user_prompt: plan, tools: {subagents: true, web_search: true}}
  - {id: helper, type: agent, model: p/m1, description: Knows facts}
edges:
  - {from: start, to: planner}
  - {from: planner, to: helper, handle: subagent}";
    let server = TestServer::start(vec![
        anthropic_stream(
            &[
                json!({"text": "Let me ask. "}),
                json!({"type": "tool_use", "id": "toolu_9", "name": "helper", "input": {"message": "X?"}}),
            ],
            "tool_use",
        ),
        anthropic_stream(&[json!({"text": "X is 42"})], "end_turn"),
        anthropic_stream(&[json!({"text": "Plan uses 42"})], "end_turn"),
    ])
    .await;
    let (outcome, _) =
        run_with(&settings(ProviderKind::Anthropic, &server.url, fast_limits(), None), parent, json!({})).await;
    assert_eq!(outcome.result.status, RunStatus::Completed, "{:?}", outcome.result.error);
    assert_eq!(outcome.result.node("planner").unwrap().data, json!({"text": "Plan uses 42"}));
    let requests = server.requests();
    let tools: Vec<&str> =
        requests[0].body["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(tools, ["web_search", "helper"]);
    assert_eq!(requests[0].body["tools"][0]["type"], "web_search_20250305");
    let messages = requests[2].body["messages"].as_array().unwrap();
    assert_eq!(messages[1]["role"], "assistant");
    assert_eq!(
        messages[1]["content"][1],
        json!({"type": "tool_use", "id": "toolu_9", "name": "helper", "input": {"message": "X?"}})
    );
    assert_eq!(
        messages[2]["content"][0],
        json!({"type": "tool_result", "tool_use_id": "toolu_9", "content": "X is 42", "is_error": false})
    );
}

#[tokio::test]
async fn anthropic_routes_through_a_forced_choice_and_reports_stream_errors() {
    let reply = Reply::json(
        200,
        &json!({"content": [{"type": "tool_use", "id": "t", "name": "choose", "input": {"choice": "b"}}], "stop_reason": "tool_use"}),
    );
    let server = TestServer::start(vec![reply]).await;
    let (outcome, _) =
        run_with(&settings(ProviderKind::Anthropic, &server.url, fast_limits(), None), ROUTING, json!({})).await;
    assert_eq!(outcome.result.trace.edges[1].to, "b");
    assert_eq!(server.requests()[0].body["tool_choice"], json!({"type": "tool", "name": "choose"}));

    let error_event = Reply::Sse {
        events: vec!["event: error\ndata: {\"type\": \"error\", \"error\": {\"type\": \"overloaded_error\", \"message\": \"Overloaded\"}}\n\n".into()],
        cut_after: None,
    };
    let server = TestServer::start(vec![error_event]).await;
    let (outcome, _) =
        run_with(&settings(ProviderKind::Anthropic, &server.url, fast_limits(), None), ONE_AGENT, json!({})).await;
    let error = outcome.result.node("a").unwrap().error.unwrap();
    assert!(error.contains("Overloaded"), "{error}");
}

#[tokio::test]
async fn the_default_model_comes_from_the_settings_else_the_first_model_a_local_server_lists_else_none() {
    let server = TestServer::start(vec![Reply::json(
        200,
        &json!({"object": "list", "data": [{"id": "tiny-model", "object": "model"}, {"id": "other"}]}),
    )])
    .await;
    let local = |url: &str| Settings {
        providers: vec![ProviderConfig {
            id: "local".into(),
            kind: ProviderKind::Openai,
            base_url: Some(url.into()),
            api_key_env: None,
            default_model: None,
            structured_output: None,
            max_tokens: None,
        }],
        ..Settings::default()
    };
    let found = discover_default_model(&local(&format!("{}/v1", server.url))).await;
    assert_eq!(found.model.as_deref(), Some("local/tiny-model"));
    assert_eq!(found.source, DefaultSource::Local);
    assert!(found.detail.contains(&server.url), "{}", found.detail);
    assert_eq!(server.requests()[0].path, "/v1/models");

    let configured = Settings { default_model: Some("p/m1".into()), ..local(&server.url) };
    let found = discover_default_model(&configured).await;
    assert_eq!((found.model.as_deref(), found.source), (Some("p/m1"), DefaultSource::Settings));
    assert_eq!(server.requests().len(), 1, "the settings' default needs no server");

    // Nothing listens: none, saying where it looked, well within the probe's 1.5 s.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", closed.local_addr().unwrap());
    drop(closed);
    let started = Instant::now();
    let found = discover_default_model(&local(&url)).await;
    assert_eq!((found.model, found.source), (None, DefaultSource::None));
    assert!(found.detail.contains(&url), "{}", found.detail);
    assert!(started.elapsed() < Duration::from_millis(1600));
    // A server that never answers is given up on after 1.5 s.
    let hanging = TestServer::start(vec![Reply::Hang]).await;
    let started = Instant::now();
    let found = discover_default_model(&local(&hanging.url)).await;
    assert_eq!(found.source, DefaultSource::None);
    assert!(started.elapsed() < Duration::from_millis(2500), "{:?}", started.elapsed());
}

#[tokio::test]
async fn a_templated_model_name_is_rendered_when_the_node_runs() {
    let server = TestServer::start(vec![Reply::openai_stream(&["ok"])]).await;
    let yaml = "nodes:
  - {id: start, type: start}
  - {id: a, type: agent, model: 'p/{{ input.size }}', user_prompt: hi}
  - {id: b, type: agent, model: '{{ input.elsewhere }}', user_prompt: hi}
edges:
  - {from: start, to: a}
  - {from: a, to: b}";
    let input = json!({"size": "m-large", "elsewhere": "nowhere/x"});
    let (outcome, _) = run_with(&settings(ProviderKind::Openai, &server.url, fast_limits(), None), yaml, input).await;
    assert_eq!(server.requests()[0].body["model"], "m-large");
    // The name a run renders is checked then: a provider this machine lacks fails the node, naming it.
    assert_eq!(outcome.result.status, RunStatus::Failed);
    let error = outcome.result.error.as_deref().unwrap();
    assert!(error.contains("nowhere") && error.contains("`b`"), "{error}");
}
