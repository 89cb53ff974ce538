//! OpenAI-compatible chat completions: OpenAI itself and every local server that speaks its protocol (Ollama,
//! llama.cpp, vLLM, LM Studio). Streams text as `node:progress`, runs tool-calling loops, and asks for structured
//! output in the best way the server accepts, stepping down when it refuses one: `json_schema`, then `json_object`
//! with a schema (llama.cpp's grammar-constrained JSON), then a forced function call.

use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tokio::sync::OnceCell;

use super::http::{excerpt, Failure, Http, Limits, Refused};
use super::{
    model_name, parse_model_json, parse_route_answer, route_prompt, route_schema, user_message, ProviderConfig, LOCAL,
    LOCAL_CANDIDATES,
};
use crate::model::{ExecuteRequest, Model, ModelError, ModelOutput, NodeIo, RouteAnswer, RouteRequest};
use crate::result::Usage;

/// How structured output is requested.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StructuredMode {
    /// `response_format: {type: json_schema}` (OpenAI, vLLM, recent llama.cpp).
    JsonSchema,
    /// `response_format: {type: json_object, schema}` (llama-cpp-python, Ollama).
    JsonObject,
    /// A forced call of a function whose parameters are the schema.
    Tool,
}

impl StructuredMode {
    fn from_u8(v: u8) -> StructuredMode {
        match v {
            0 => StructuredMode::JsonSchema,
            1 => StructuredMode::JsonObject,
            _ => StructuredMode::Tool,
        }
    }

    fn next(self) -> Option<StructuredMode> {
        match self {
            StructuredMode::JsonSchema => Some(StructuredMode::JsonObject),
            StructuredMode::JsonObject => Some(StructuredMode::Tool),
            StructuredMode::Tool => None,
        }
    }
}

const RESPOND: &str = "respond";
const CHOOSE: &str = "choose";

pub struct OpenAi {
    http: Http,
    id: String,
    configured_base: Option<String>,
    base: OnceCell<String>,
    key_env: Option<String>,
    default_model: Option<String>,
    max_tokens: Option<u32>,
    mode: AtomicU8,
}

impl OpenAi {
    pub fn new(config: &ProviderConfig, limits: Limits) -> OpenAi {
        let configured_base =
            config.base_url.clone().map(|b| b.trim_end_matches('/').to_string()).or_else(|| match config.id == LOCAL {
                // An unconfigured `local`: the server $SWITCHYARD_LOCAL_URL names, else the first candidate that answers.
                true => super::local_url_from_env(),
                false => Some("https://api.openai.com/v1".to_string()),
            });
        OpenAi {
            http: Http::new(&config.id, limits),
            id: config.id.clone(),
            configured_base,
            base: OnceCell::new(),
            key_env: config.api_key_env.clone(),
            default_model: config.default_model.clone(),
            max_tokens: config.max_tokens,
            mode: AtomicU8::new(config.structured_output.unwrap_or(StructuredMode::JsonSchema) as u8),
        }
    }

    /// The API root; for an unconfigured `local`, the first of Ollama's and llama.cpp's ports that answers.
    async fn base(&self) -> Result<&str, ModelError> {
        self.base
            .get_or_try_init(|| async {
                if let Some(base) = &self.configured_base {
                    return Ok(base.clone());
                }
                for candidate in LOCAL_CANDIDATES {
                    let probe = self.http.client.get(format!("{candidate}/models")).timeout(Duration::from_millis(1500));
                    if probe.send().await.is_ok_and(|r| r.status().is_success()) {
                        return Ok(candidate.to_string());
                    }
                }
                Err(self.http.error(format!(
                    "no local model server answers at {}; start Ollama or llama.cpp's server, or set base_url for `local` in the settings (or ${})",
                    LOCAL_CANDIDATES.join(" or "),
                    super::LOCAL_URL_ENV
                )))
            })
            .await
            .map(String::as_str)
    }

    /// The API key, read from its environment variable at call time (never stored).
    fn api_key(&self) -> Result<Option<String>, ModelError> {
        match &self.key_env {
            None => Ok(None),
            Some(env) => match std::env::var(env) {
                Ok(key) if !key.is_empty() => Ok(Some(key)),
                _ => Err(self.http.error(format!("the API key variable ${env} is not set"))),
            },
        }
    }

    fn authorize(&self, rb: reqwest::RequestBuilder) -> Result<reqwest::RequestBuilder, ModelError> {
        Ok(match self.api_key()? {
            Some(key) => rb.bearer_auth(key),
            None => rb,
        })
    }

    /// Whether the server answers, and which models it lists.
    pub async fn check(&self) -> Result<String, super::CheckError> {
        let base = self.base().await.map_err(|e| e.message)?;
        let rb = self
            .authorize(self.http.client.get(format!("{base}/models")).timeout(Duration::from_secs(5)))
            .map_err(|e| e.message)?;
        let resp = rb.send().await.map_err(|e| format!("{base}: {e}"))?;
        if !resp.status().is_success() {
            return Err(format!("{base}: HTTP {}", resp.status().as_u16()).into());
        }
        let body: Value = resp.json().await.map_err(|e| format!("{base}: {e}"))?;
        let names: Vec<&str> = super::model_ids(&body).take(5).collect();
        Ok(format!(
            "{base} answers; models: {}",
            if names.is_empty() { "none listed".into() } else { names.join(", ") }
        ))
    }

    fn mode(&self) -> StructuredMode {
        StructuredMode::from_u8(self.mode.load(Ordering::Relaxed))
    }

    /// Whether a refusal is about the structured-output request, so a simpler one may work.
    fn refuses_format(status: u16, body: &str) -> bool {
        status >= 400 && ["response_format", "json_schema", "json_object", "grammar"].iter().any(|k| body.contains(k))
    }

    /// Posts a chat completion; on a refused `response_format`, steps down one mode (remembered for this server).
    async fn post(
        &self,
        io: &dyn NodeIo,
        body: impl Fn(StructuredMode) -> Value,
        structured: bool,
    ) -> Result<reqwest::Response, ModelError> {
        let base = self.base().await?.to_string();
        let key = self.api_key()?;
        loop {
            let mode = self.mode();
            let payload = body(mode);
            let result = self
                .http
                .send_filtered(
                    io,
                    |status, text| structured && Self::refuses_format(status, text),
                    || {
                        let rb = self.http.client.post(format!("{base}/chat/completions")).json(&payload);
                        match &key {
                            Some(k) => rb.bearer_auth(k),
                            None => rb,
                        }
                    },
                )
                .await;
            match result {
                Ok(resp) => return Ok(resp),
                Err(Failure::Refused(r)) if structured && Self::refuses_format(r.status, &r.body) => {
                    match mode.next() {
                        Some(next) => {
                            io.retry_notice(&format!(
                                "{}: the server refused {mode:?} structured output (HTTP {}); using {next:?}",
                                self.id, r.status
                            ));
                            self.mode.store(next as u8, Ordering::Relaxed);
                        }
                        None => return Err(self.http.refused(&r, self.key_env.as_deref())),
                    }
                }
                Err(Failure::Refused(r)) => return Err(self.refused(&r)),
                Err(Failure::Error(e)) => return Err(e),
            }
        }
    }

    fn refused(&self, r: &Refused) -> ModelError {
        self.http.refused(r, self.key_env.as_deref())
    }

    /// One streamed turn: text deltas go out as progress; tool calls and usage are collected.
    async fn stream_turn(&self, io: &dyn NodeIo, resp: reqwest::Response) -> Result<Turn, StreamFailure> {
        let mut turn = Turn::default();
        let mut events = self.http.events(resp);
        let mut finished = false;
        while let Some(event) = events.next().await {
            let event = event.map_err(|e| StreamFailure { error: e, emitted: turn.emitted })?;
            let Some(data) = event.data else {
                finished = true;
                break;
            };
            if let Some(err) = data.get("error") {
                return Err(StreamFailure {
                    error: self.http.error(format!("error in the stream: {}", excerpt(&err.to_string()))),
                    emitted: turn.emitted,
                });
            }
            // Sent in a last chunk when asked with `stream_options.include_usage` (OpenAI, vLLM, llama.cpp's
            // llama-server, Ollama); llama-cpp-python 0.3.36 ignores the option and streams no usage at all.
            if let Some(u) = data.get("usage").and_then(openai_usage) {
                turn.usage = Some(u);
            }
            let Some(choice) = data["choices"].get(0) else { continue };
            let delta = &choice["delta"];
            if let Some(text) = delta["content"].as_str().filter(|t| !t.is_empty()) {
                io.progress(text);
                turn.text.push_str(text);
                turn.emitted = true;
            }
            for call in delta["tool_calls"].as_array().into_iter().flatten() {
                let index = call["index"].as_u64().unwrap_or(0) as usize;
                if turn.calls.len() <= index {
                    turn.calls.resize_with(index + 1, Default::default);
                }
                let slot = &mut turn.calls[index];
                if let Some(id) = call["id"].as_str() {
                    slot.id = id.to_string();
                }
                // OpenAI sends the name once; llama-cpp-python repeats it in every chunk. Either way, the first wins.
                if let Some(name) = call["function"]["name"].as_str().filter(|_| slot.name.is_empty()) {
                    slot.name = name.to_string();
                }
                if let Some(args) = call["function"]["arguments"].as_str() {
                    slot.arguments.push_str(args);
                }
                turn.emitted = true;
            }
            if choice["finish_reason"].is_string() {
                finished = true;
            }
        }
        if !finished {
            return Err(StreamFailure {
                error: self.http.error("the stream ended before the answer was complete"),
                emitted: turn.emitted,
            });
        }
        Ok(turn)
    }
}

/// An OpenAI `usage` object (`prompt_tokens`, `completion_tokens`, and the prompt tokens read from the cache in
/// `prompt_tokens_details.cached_tokens`), when it is one.
fn openai_usage(u: &Value) -> Option<Usage> {
    u.is_object().then(|| Usage {
        input_tokens: u["prompt_tokens"].as_u64().unwrap_or(0),
        output_tokens: u["completion_tokens"].as_u64().unwrap_or(0),
        cached_input_tokens: u["prompt_tokens_details"]["cached_tokens"].as_u64().unwrap_or(0),
    })
}

#[derive(Default, Serialize, Deserialize)]
struct Turn {
    text: String,
    calls: Vec<CallAcc>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    usage: Option<Usage>,
    #[serde(skip)]
    emitted: bool,
}

#[derive(Default, Clone, Serialize, Deserialize)]
struct CallAcc {
    id: String,
    name: String,
    arguments: String,
}

struct StreamFailure {
    error: ModelError,
    emitted: bool,
}

fn function(name: &str, description: &str, parameters: &Value) -> Value {
    json!({"type": "function", "function": {"name": name, "description": description, "parameters": parameters}})
}

fn structured_fields(body: &mut Value, mode: StructuredMode, schema: &Value, tool_name: &str) {
    match mode {
        StructuredMode::JsonSchema => {
            body["response_format"] =
                json!({"type": "json_schema", "json_schema": {"name": "output", "schema": schema}});
        }
        StructuredMode::JsonObject => {
            body["response_format"] = json!({"type": "json_object", "schema": schema});
        }
        StructuredMode::Tool => {
            let tools = body["tools"].as_array().cloned().unwrap_or_default();
            let mut tools = tools;
            tools.push(function(tool_name, "Give the answer.", schema));
            body["tools"] = Value::Array(tools);
            body["tool_choice"] = json!({"type": "function", "function": {"name": tool_name}});
        }
    }
}

#[async_trait]
impl Model for OpenAi {
    async fn execute(&self, request: &ExecuteRequest<'_>, io: &dyn NodeIo) -> Result<ModelOutput, ModelError> {
        let model = model_name(request.model, self.default_model.as_deref(), &self.id)?;
        let mut messages = Vec::new();
        if !request.system_prompt.trim().is_empty() {
            messages.push(json!({"role": "system", "content": request.system_prompt}));
        }
        messages.push(json!({"role": "user", "content": user_message(request)}));
        // Web search is not part of chat completions; subagents are offered as functions.
        let tools: Vec<Value> = request
            .tools
            .iter()
            .filter(|t| t.name != "web_search")
            .map(|t| function(&t.name, &t.description, &t.parameters))
            .collect();
        let mut usage: Option<Usage> = None;
        let max_turns = self.http.limits.max_tool_turns.max(1);
        for turn_index in 0..max_turns {
            let build = |mode: StructuredMode| {
                let mut body = json!({"model": model, "messages": messages, "stream": true, "stream_options": {"include_usage": true}});
                if let Some(effort) = request.reasoning_effort {
                    body["reasoning_effort"] = serde_json::to_value(effort).unwrap();
                }
                if let Some(max) = self.max_tokens {
                    body["max_tokens"] = json!(max);
                }
                if !tools.is_empty() {
                    body["tools"] = Value::Array(tools.clone());
                    body["tool_choice"] = json!("auto");
                }
                if let Some(schema) = request.output_schema {
                    structured_fields(&mut body, mode, schema, RESPOND);
                }
                if let Some(first) = request.first_tool.filter(|_| turn_index == 0) {
                    body["tool_choice"] = json!({"type": "function", "function": {"name": first}});
                }
                body
            };
            // What decides the answer, for the journal: the same messages to the same model with the same tools
            // and schema get the same answer back on a resume.
            let asked = json!({
                "model": model, "messages": messages, "tools": tools, "schema": request.output_schema,
                "effort": request.reasoning_effort, "first": request.first_tool.filter(|_| turn_index == 0),
            });
            let call = async {
                let mut attempt = 0;
                let turn = loop {
                    let resp = self.post(io, build, request.output_schema.is_some()).await?;
                    match self.stream_turn(io, resp).await {
                        Ok(turn) => break turn,
                        // A stream that breaks before anything was shown is retried; after, it is a clean failure.
                        Err(f) if !f.emitted && attempt < self.http.limits.retries => {
                            attempt += 1;
                            let wait = self.http.backoff(attempt);
                            io.retry_notice(&format!(
                                "{}; retry {attempt} of {} in {} ms",
                                f.error.message,
                                self.http.limits.retries,
                                wait.as_millis()
                            ));
                            tokio::time::sleep(wait).await;
                        }
                        Err(f) => return Err(f.error),
                    }
                };
                Ok(serde_json::to_value(&turn).expect("a turn is JSON"))
            };
            let answer = io.turn(&asked, Box::pin(call)).await?;
            let turn: Turn = serde_json::from_value(answer)
                .map_err(|e| ModelError::fatal(format!("a journaled model turn is not readable: {e}")))?;
            if let Some(u) = turn.usage {
                usage.get_or_insert_with(Usage::default).add(&u);
            }
            if let Some(respond) = turn.calls.iter().find(|c| c.name == RESPOND) {
                // Arguments that do not parse go back as text, so the engine's schema repair turn can ask again.
                return Ok(match parse_model_json(&respond.arguments) {
                    Ok(data) => ModelOutput { data: Some(data), text: None, usage },
                    Err(_) => ModelOutput { data: None, text: Some(respond.arguments.clone()), usage },
                });
            }
            if turn.calls.is_empty() {
                let data = match request.output_schema {
                    Some(_) => parse_model_json(&turn.text).ok(),
                    None => None,
                };
                let text = data.is_none().then_some(turn.text);
                return Ok(ModelOutput { data, text, usage });
            }
            let calls: Vec<Value> = turn
                .calls
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    let id = if c.id.is_empty() { format!("call_{i}") } else { c.id.clone() };
                    json!({"id": id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}})
                })
                .collect();
            // Content is a string even when empty: OpenAI accepts "" beside tool calls, and llama.cpp's server
            // refuses null there.
            messages.push(json!({"role": "assistant", "content": turn.text, "tool_calls": calls}));
            for (call, spec) in turn.calls.iter().zip(&calls) {
                let input: Value =
                    serde_json::from_str(&call.arguments).unwrap_or_else(|_| json!({"message": call.arguments}));
                let content = match io.call_tool(&call.name, input).await {
                    Ok(Value::String(s)) => s,
                    Ok(v) => v.to_string(),
                    Err(e) => format!("error: {e}"),
                };
                messages.push(json!({"role": "tool", "tool_call_id": spec["id"], "content": content}));
            }
        }
        Err(self.http.error(format!("the tool-calling loop did not finish within {max_turns} turns")))
    }

    async fn route(&self, request: &RouteRequest<'_>, io: &dyn NodeIo) -> Result<RouteAnswer, ModelError> {
        let model = model_name(request.model, self.default_model.as_deref(), &self.id)?;
        let schema = route_schema(request);
        let prompt = route_prompt(request);
        let build = |mode: StructuredMode| {
            let mut body = json!({
                "model": model,
                "messages": [
                    {"role": "system", "content": "You decide which way a workflow goes. Answer only with the JSON object asked for."},
                    {"role": "user", "content": prompt},
                ],
                "temperature": 0,
                "stream": false,
                "max_tokens": 64,
            });
            structured_fields(&mut body, mode, &schema, CHOOSE);
            body
        };
        let resp = self.post(io, build, true).await?;
        let body = self.http.json(resp).await?;
        // Not streamed, so the answer carries usage even from servers that send none in streams (llama-cpp-python).
        let usage = openai_usage(&body["usage"]);
        let message = &body["choices"][0]["message"];
        let text = message["tool_calls"][0]["function"]["arguments"]
            .as_str()
            .or_else(|| message["content"].as_str())
            .ok_or_else(|| {
            self.http.error(format!("the routing answer has no content: {}", excerpt(&body.to_string())))
        })?;
        Ok(RouteAnswer { usage, ..parse_route_answer(text, request) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_journaled_turn_reads_in_the_last_run_tab_as_the_model_answered_it() {
        let call = CallAcc { id: "call_1".into(), name: "s__find".into(), arguments: "{\"q\":\"disk\"}".into() };
        let turn = Turn {
            text: "Looking it up.".into(),
            calls: vec![call],
            usage: Some(Usage { input_tokens: 100, output_tokens: 20, cached_input_tokens: 0 }),
            emitted: true,
        };
        let (text, calls, tokens) = crate::views::turn_said(&serde_json::to_value(&turn).unwrap());
        assert_eq!(text, "Looking it up.");
        assert_eq!(calls, [crate::views::AskedCall { name: "s__find".into(), arguments: json!({"q": "disk"}) }]);
        assert_eq!(tokens, Some(120));
        let silent = Turn { text: "done".into(), ..Turn::default() };
        assert_eq!(crate::views::turn_said(&serde_json::to_value(&silent).unwrap()).2, None, "no usage, no count");
    }
}
