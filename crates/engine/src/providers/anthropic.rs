//! Anthropic Messages API: streamed text as `node:progress`, tool use for subagents, structured output and routing
//! through a forced tool call (the API's way to constrain an answer to a schema).

use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::http::{excerpt, Failure, Http, Limits};
use super::{
    model_name, parse_model_json, parse_route_answer, route_prompt, route_schema, user_message, ProviderConfig,
};
use crate::model::{ExecuteRequest, Model, ModelError, ModelOutput, NodeIo, RouteAnswer, RouteRequest};
use crate::result::Usage;

/// The API version header value this client speaks.
pub const API_VERSION: &str = "2023-06-01";
const MAX_TOKENS: u32 = 4096;
const RESPOND: &str = "respond";
const CHOOSE: &str = "choose";

pub struct Anthropic {
    http: Http,
    id: String,
    base: String,
    key_env: String,
    default_model: Option<String>,
    max_tokens: u32,
}

impl Anthropic {
    pub fn new(config: &ProviderConfig, limits: Limits) -> Anthropic {
        Anthropic {
            http: Http::new(&config.id, limits),
            id: config.id.clone(),
            base: config
                .base_url
                .clone()
                .unwrap_or_else(|| "https://api.anthropic.com".into())
                .trim_end_matches('/')
                .to_string(),
            key_env: config.api_key_env.clone().unwrap_or_else(|| "ANTHROPIC_API_KEY".into()),
            default_model: config.default_model.clone(),
            max_tokens: config.max_tokens.unwrap_or(MAX_TOKENS),
        }
    }

    fn key(&self) -> Result<String, ModelError> {
        std::env::var(&self.key_env)
            .ok()
            .filter(|k| !k.is_empty())
            .ok_or_else(|| self.http.error(format!("the API key variable ${} is not set", self.key_env)))
    }

    pub async fn check(&self) -> Result<String, super::CheckError> {
        let key = self.key().map_err(|e| e.message)?;
        let resp = self
            .http
            .client
            .get(format!("{}/v1/models", self.base))
            .header("x-api-key", key)
            .header("anthropic-version", API_VERSION)
            .timeout(Duration::from_secs(5))
            .send()
            .await
            .map_err(|e| format!("{}: {e}", self.base))?;
        match resp.status().as_u16() {
            200 => Ok(format!("{} answers", self.base)),
            s => Err(format!("{}: HTTP {s}", self.base).into()),
        }
    }

    async fn post(&self, io: &dyn NodeIo, body: &Value) -> Result<reqwest::Response, ModelError> {
        let key = self.key()?;
        let url = format!("{}/v1/messages", self.base);
        match self
            .http
            .send(io, || {
                self.http
                    .client
                    .post(&url)
                    .header("x-api-key", &key)
                    .header("anthropic-version", API_VERSION)
                    .json(body)
            })
            .await
        {
            Ok(resp) => Ok(resp),
            Err(Failure::Refused(r)) => Err(self.http.refused(&r, Some(&self.key_env))),
            Err(Failure::Error(e)) => Err(e),
        }
    }

    /// One streamed turn: the assistant's content blocks, the stop reason and usage.
    async fn stream_turn(&self, io: &dyn NodeIo, resp: reqwest::Response) -> Result<Turn, (ModelError, bool)> {
        let mut turn = Turn::default();
        let mut events = self.http.events(resp);
        let mut stopped = false;
        while let Some(event) = events.next().await {
            let event = event.map_err(|e| (e, turn.emitted))?;
            let Some(data) = event.data else { continue };
            match data["type"].as_str().unwrap_or(event.event.as_str()) {
                "message_start" => {
                    turn.usage = anthropic_usage(&data["message"]["usage"]);
                }
                "content_block_start" => {
                    let block = &data["content_block"];
                    turn.blocks.push(match block["type"].as_str() {
                        Some("tool_use") => Block::Tool {
                            id: block["id"].as_str().unwrap_or_default().to_string(),
                            name: block["name"].as_str().unwrap_or_default().to_string(),
                            json: String::new(),
                        },
                        _ => Block::Text(String::new()),
                    });
                }
                "content_block_delta" => {
                    let delta = &data["delta"];
                    match (delta["type"].as_str(), turn.blocks.last_mut()) {
                        (Some("text_delta"), Some(Block::Text(text))) => {
                            let piece = delta["text"].as_str().unwrap_or_default();
                            io.progress(piece);
                            text.push_str(piece);
                            turn.emitted = true;
                        }
                        (Some("input_json_delta"), Some(Block::Tool { json, .. })) => {
                            json.push_str(delta["partial_json"].as_str().unwrap_or_default());
                            turn.emitted = true;
                        }
                        _ => {}
                    }
                }
                "message_delta" => {
                    turn.stop_reason = data["delta"]["stop_reason"].as_str().map(str::to_string);
                    if let Some(out) = data["usage"]["output_tokens"].as_u64() {
                        turn.usage.output_tokens = out;
                    }
                }
                "message_stop" => stopped = true,
                "error" => {
                    let message = data["error"]["message"].as_str().unwrap_or("unknown error").to_string();
                    return Err((self.http.error(format!("error in the stream: {message}")), turn.emitted));
                }
                _ => {}
            }
        }
        if !stopped {
            return Err((self.http.error("the stream ended before the answer was complete"), turn.emitted));
        }
        Ok(turn)
    }
}

#[derive(Default, Serialize, Deserialize)]
struct Turn {
    blocks: Vec<Block>,
    stop_reason: Option<String>,
    usage: Usage,
    #[serde(skip)]
    emitted: bool,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
enum Block {
    Text(String),
    Tool { id: String, name: String, json: String },
}

impl Block {
    fn to_content(&self) -> Value {
        match self {
            Block::Text(t) => json!({"type": "text", "text": t}),
            Block::Tool { id, name, json } => {
                json!({"type": "tool_use", "id": id, "name": name, "input": serde_json::from_str::<Value>(json).unwrap_or(json!({}))})
            }
        }
    }
}

#[async_trait]
impl Model for Anthropic {
    async fn execute(&self, request: &ExecuteRequest<'_>, io: &dyn NodeIo) -> Result<ModelOutput, ModelError> {
        let model = model_name(request.model, self.default_model.as_deref(), &self.id)?;
        let mut messages = vec![json!({"role": "user", "content": user_message(request)})];
        let mut tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| match t.name.as_str() {
                "web_search" => json!({"type": "web_search_20250305", "name": "web_search", "max_uses": 5}),
                _ => json!({"name": t.name, "description": t.description, "input_schema": t.parameters}),
            })
            .collect();
        if let Some(schema) = request.output_schema {
            tools.push(json!({"name": RESPOND, "description": "Give the final answer.", "input_schema": schema}));
        }
        let mut usage = Usage::default();
        let max_turns = self.http.limits.max_tool_turns.max(1);
        for turn_index in 0..max_turns {
            let mut body = json!({"model": model, "max_tokens": self.max_tokens, "messages": messages, "stream": true});
            if !request.system_prompt.trim().is_empty() {
                body["system"] = json!(request.system_prompt);
            }
            if !tools.is_empty() {
                body["tools"] = Value::Array(tools.clone());
            }
            // With a schema and no other tool to call (or the last turn), the answer is forced through `respond`.
            if request.output_schema.is_some() && (tools.len() == 1 || turn_index + 1 == max_turns) {
                body["tool_choice"] = json!({"type": "tool", "name": RESPOND});
            }
            if let Some(first) = request.first_tool.filter(|_| turn_index == 0) {
                body["tool_choice"] = json!({"type": "tool", "name": first});
            }
            // What decides the answer, for the journal: the whole request (model, messages, tools, tool choice).
            let asked = body.clone();
            let call = async {
                let mut attempt = 0;
                let turn = loop {
                    let resp = self.post(io, &body).await?;
                    match self.stream_turn(io, resp).await {
                        Ok(turn) => break turn,
                        Err((e, false)) if attempt < self.http.limits.retries => {
                            attempt += 1;
                            let wait = self.http.backoff(attempt);
                            io.retry_notice(&format!(
                                "{}; retry {attempt} of {} in {} ms",
                                e.message,
                                self.http.limits.retries,
                                wait.as_millis()
                            ));
                            tokio::time::sleep(wait).await;
                        }
                        Err((e, _)) => return Err(e),
                    }
                };
                Ok(serde_json::to_value(&turn).expect("a turn is JSON"))
            };
            let answer = io.turn(&asked, Box::pin(call)).await?;
            let turn: Turn = serde_json::from_value(answer)
                .map_err(|e| ModelError::fatal(format!("a journaled model turn is not readable: {e}")))?;
            usage.add(&turn.usage);
            if let Some(Block::Tool { json, .. }) =
                turn.blocks.iter().find(|b| matches!(b, Block::Tool { name, .. } if name == RESPOND))
            {
                // Input that does not parse goes back as text, so the engine's schema repair turn can ask again.
                return Ok(match parse_model_json(json) {
                    Ok(data) => ModelOutput { data: Some(data), text: None, usage: Some(usage) },
                    Err(_) => ModelOutput { data: None, text: Some(json.clone()), usage: Some(usage) },
                });
            }
            let calls: Vec<(&str, &str, &str)> = turn
                .blocks
                .iter()
                .filter_map(|b| match b {
                    Block::Tool { id, name, json } if name != "web_search" => {
                        Some((id.as_str(), name.as_str(), json.as_str()))
                    }
                    _ => None,
                })
                .collect();
            if calls.is_empty() || turn.stop_reason.as_deref() != Some("tool_use") {
                let text: String = turn
                    .blocks
                    .iter()
                    .filter_map(|b| if let Block::Text(t) = b { Some(t.as_str()) } else { None })
                    .collect();
                let data = request.output_schema.and_then(|_| parse_model_json(&text).ok());
                return Ok(ModelOutput { text: data.is_none().then_some(text), data, usage: Some(usage) });
            }
            messages.push(
                json!({"role": "assistant", "content": turn.blocks.iter().map(Block::to_content).collect::<Vec<_>>()}),
            );
            let mut results = Vec::new();
            for (id, name, input) in calls {
                let input: Value = serde_json::from_str(input).unwrap_or(json!({}));
                let (content, is_error) = match io.call_tool(name, input).await {
                    Ok(Value::String(s)) => (s, false),
                    Ok(v) => (v.to_string(), false),
                    Err(e) => (e, true),
                };
                results
                    .push(json!({"type": "tool_result", "tool_use_id": id, "content": content, "is_error": is_error}));
            }
            messages.push(json!({"role": "user", "content": results}));
        }
        Err(self.http.error(format!("the tool-calling loop did not finish within {max_turns} turns")))
    }

    async fn route(&self, request: &RouteRequest<'_>, io: &dyn NodeIo) -> Result<RouteAnswer, ModelError> {
        let model = model_name(request.model, self.default_model.as_deref(), &self.id)?;
        let body = json!({
            "model": model,
            "max_tokens": 256,
            "system": "You decide which way a workflow goes.",
            "messages": [{"role": "user", "content": route_prompt(request)}],
            "tools": [{"name": CHOOSE, "description": "Pick the choice whose condition holds.", "input_schema": route_schema(request)}],
            "tool_choice": {"type": "tool", "name": CHOOSE},
        });
        let resp = self.post(io, &body).await?;
        let answer = self.http.json(resp).await?;
        let content = answer["content"].as_array().cloned().unwrap_or_default();
        let usage = answer["usage"].is_object().then(|| anthropic_usage(&answer["usage"]));
        if let Some(tool) = content.iter().find(|b| b["type"] == "tool_use") {
            return Ok(RouteAnswer { usage, ..parse_route_answer(&tool["input"].to_string(), request) });
        }
        let text: String = content.iter().filter_map(|b| b["text"].as_str()).collect();
        if text.is_empty() {
            return Err(self
                .http
                .error(format!("the routing answer has no content: {}", excerpt(&answer.to_string()))));
        }
        Ok(RouteAnswer { usage, ..parse_route_answer(&text, request) })
    }
}

/// An Anthropic `usage` object. Its `input_tokens` leave out the tokens read from and written to the prompt cache:
/// they are added, so that input counts every token sent, as OpenAI's does, and the part read from the cache is
/// kept apart for its price.
fn anthropic_usage(u: &Value) -> Usage {
    let n = |field: &str| u[field].as_u64().unwrap_or(0);
    let cached = n("cache_read_input_tokens");
    Usage {
        input_tokens: n("input_tokens").saturating_add(cached).saturating_add(n("cache_creation_input_tokens")),
        output_tokens: n("output_tokens"),
        cached_input_tokens: cached,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_journaled_turn_reads_in_the_last_run_tab_as_the_model_answered_it() {
        let turn = Turn {
            blocks: vec![
                Block::Text("Looking it up.".into()),
                Block::Tool { id: "toolu_1".into(), name: "s__find".into(), json: "{\"q\":\"disk\"}".into() },
            ],
            stop_reason: Some("tool_use".into()),
            usage: Usage { input_tokens: 30, output_tokens: 4, cached_input_tokens: 10 },
            emitted: true,
        };
        let (text, calls, tokens) = crate::views::turn_said(&serde_json::to_value(&turn).unwrap());
        assert_eq!(text, "Looking it up.");
        assert_eq!(calls, [crate::views::AskedCall { name: "s__find".into(), arguments: json!({"q": "disk"}) }]);
        assert_eq!(tokens, Some(34));
    }
}
