//! Real model providers behind the model interface: an OpenAI-compatible client (OpenAI, Ollama, llama.cpp, vLLM,
//! LM Studio…) and an Anthropic Messages client. Providers are configured outside workflow files, in a settings file
//! in the user's config directory; a node names `provider/model`. Keys are read from the environment at call time and
//! never written to files, logs or events.

mod anthropic;
pub(crate) mod http;
mod openai;
mod settings;

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;

use crate::model::{ExecuteRequest, Model, ModelError, ModelOutput, NodeIo, RouteAnswer, RouteRequest};

pub use anthropic::Anthropic;
pub use http::Limits;
pub use openai::{OpenAi, StructuredMode};
pub use settings::{ProviderConfig, ProviderKind, Settings, SettingsError, SettingsProblem};

/// The id of the provider that exists with no settings at all: an OpenAI-compatible server on this machine.
pub const LOCAL: &str = "local";

/// Where a local server is looked for when `local` is not configured: Ollama, then llama.cpp's server.
pub const LOCAL_CANDIDATES: [&str; 2] = ["http://127.0.0.1:11434/v1", "http://127.0.0.1:8080/v1"];

/// All configured providers as one model: a request goes to the provider its `provider/model` names.
pub struct Providers {
    clients: BTreeMap<String, Arc<dyn Model>>,
}

impl Providers {
    pub fn new(settings: &Settings) -> Providers {
        let mut clients: BTreeMap<String, Arc<dyn Model>> = BTreeMap::new();
        for p in settings.effective_providers() {
            let client: Arc<dyn Model> = match p.kind {
                ProviderKind::Openai => Arc::new(OpenAi::new(&p, settings.limits.clone())),
                ProviderKind::Anthropic => Arc::new(Anthropic::new(&p, settings.limits.clone())),
            };
            clients.insert(p.id.clone(), client);
        }
        Providers { clients }
    }

    fn client(&self, model: Option<&str>, node: &str) -> Result<&Arc<dyn Model>, ModelError> {
        let model = model.ok_or_else(|| {
            ModelError::fatal(format!(
                "`{node}` names no model and there is no default: set `model` on the node, `defaults.model` on the workflow, or pass --model"
            ))
        })?;
        let provider = model.split_once('/').map_or(model, |(p, _)| p);
        self.clients.get(provider).ok_or_else(|| {
            ModelError::fatal(format!(
                "provider `{provider}` (model `{model}`) is not configured; add it to the settings"
            ))
        })
    }

    /// Asks each provider whether it answers: `(id, Ok(detail) | Err(why))`.
    pub async fn check(settings: &Settings) -> Vec<(String, Result<String, String>)> {
        let mut out = Vec::new();
        for p in settings.effective_providers() {
            let status = match p.kind {
                ProviderKind::Openai => OpenAi::new(&p, settings.limits.clone()).check().await,
                ProviderKind::Anthropic => Anthropic::new(&p, settings.limits.clone()).check().await,
            };
            out.push((p.id, status));
        }
        out
    }
}

#[async_trait]
impl Model for Providers {
    async fn execute(&self, request: &ExecuteRequest<'_>, io: &dyn NodeIo) -> Result<ModelOutput, ModelError> {
        self.client(request.model, request.node)?.execute(request, io).await
    }

    async fn route(&self, request: &RouteRequest<'_>, io: &dyn NodeIo) -> Result<RouteAnswer, ModelError> {
        self.client(request.model, request.node)?.route(request, io).await
    }
}

/// The model name after the provider id (`openai/gpt-4.1-mini` → `gpt-4.1-mini`), or the provider's default.
pub(crate) fn model_name(model: Option<&str>, default: Option<&str>, provider: &str) -> Result<String, ModelError> {
    match model.and_then(|m| m.split_once('/')).map(|(_, name)| name) {
        Some(name) if !name.is_empty() => Ok(name.to_string()),
        _ => default.map(str::to_string).ok_or_else(|| {
            ModelError::fatal(format!("no model named for provider `{provider}` and it has no default_model"))
        }),
    }
}

/// The user message: the rendered prompt, with the context appended to plain instructions (so prompts written for
/// SWEny, which gives the model the context implicitly, work as they do there).
pub(crate) fn user_message(request: &ExecuteRequest<'_>) -> String {
    let mut text = request.prompt.to_string();
    if request.plain_instruction {
        let context = request.scope.context_json();
        if context.as_object().is_some_and(|o| o.len() > 1 || o.get("input").is_some_and(|i| !i.is_null())) {
            text.push_str("\n\nContext (the workflow input and earlier results):\n```json\n");
            text.push_str(&serde_json::to_string_pretty(&context).unwrap_or_default());
            text.push_str("\n```");
        }
    }
    if let Some(problem) = request.repair {
        text.push_str(&format!(
            "\n\nYour previous answer did not match the required JSON Schema ({problem}). Answer again with only a JSON object that matches it."
        ));
    }
    text
}

/// Parses JSON from a model, tolerating what small models often emit: raw control characters (newlines, tabs)
/// inside strings, which strict JSON forbids. Anything else must be valid JSON.
pub(crate) fn parse_model_json(text: &str) -> Result<serde_json::Value, serde_json::Error> {
    serde_json::from_str(text.trim()).or_else(|first| {
        let mut fixed = String::with_capacity(text.len() + 16);
        let (mut in_string, mut escaped) = (false, false);
        for c in text.trim().chars() {
            match c {
                _ if escaped => {
                    escaped = false;
                    fixed.push(c);
                }
                '\\' if in_string => {
                    escaped = true;
                    fixed.push(c);
                }
                '"' => {
                    in_string = !in_string;
                    fixed.push(c);
                }
                '\n' if in_string => fixed.push_str("\\n"),
                '\r' if in_string => fixed.push_str("\\r"),
                '\t' if in_string => fixed.push_str("\\t"),
                c if in_string && (c as u32) < 0x20 => fixed.push_str(&format!("\\u{:04x}", c as u32)),
                c => fixed.push(c),
            }
        }
        serde_json::from_str(&fixed).map_err(|_| first)
    })
}

/// The question put to the model when it routes, with the choices spelled out.
pub(crate) fn route_prompt(request: &RouteRequest<'_>) -> String {
    let mut text = format!(
        "{}\n\nContext:\n```json\n{}\n```\n\nChoices:\n",
        request.question,
        serde_json::to_string_pretty(request.context).unwrap_or_default()
    );
    for c in request.choices {
        text.push_str(&format!("- {}: {}\n", c.id, c.description));
    }
    text.push_str("\nAnswer with a JSON object {\"choice\": \"<one of the choice ids>\"}.");
    text
}

pub(crate) fn route_schema(request: &RouteRequest<'_>) -> serde_json::Value {
    let ids: Vec<&str> = request.choices.iter().map(|c| c.id.as_str()).collect();
    serde_json::json!({
        "type": "object",
        "properties": {"choice": {"type": "string", "enum": ids}},
        "required": ["choice"],
        "additionalProperties": false
    })
}

/// Reads a routing answer strictly: a JSON `{"choice": id}` naming a valid id; else exactly one valid id mentioned
/// in the text; else the answer as given, which the executor reports as an invalid route target. Never the first.
pub(crate) fn parse_route_answer(text: &str, request: &RouteRequest<'_>) -> RouteAnswer {
    let ids: Vec<&str> = request.choices.iter().map(|c| c.id.as_str()).collect();
    let trimmed = text.trim();
    if let Ok(value) = serde_json::from_str::<serde_json::Value>(trimmed) {
        if let Some(choice) = value.get("choice").and_then(|c| c.as_str()) {
            if ids.contains(&choice) {
                return RouteAnswer { choice: choice.to_string(), note: None };
            }
        }
    }
    if ids.contains(&trimmed) {
        return RouteAnswer { choice: trimmed.to_string(), note: None };
    }
    let mentioned: Vec<&str> = ids.iter().copied().filter(|id| mentions(trimmed, id)).collect();
    if let [only] = mentioned.as_slice() {
        return RouteAnswer { choice: only.to_string(), note: Some("read from the model's free-text answer".into()) };
    }
    let shown: String = trimmed.chars().take(80).collect();
    RouteAnswer { choice: shown, note: Some("the model named no single valid choice".into()) }
}

/// Whether `id` appears in `text` as a whole word.
fn mentions(text: &str, id: &str) -> bool {
    let is_word = |c: char| c.is_alphanumeric() || c == '_' || c == '-';
    text.match_indices(id).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + id.len()..].chars().next();
        !before.is_some_and(is_word) && !after.is_some_and(is_word)
    })
}

#[cfg(test)]
mod tests {
    use super::parse_model_json;
    use serde_json::json;

    #[test]
    fn model_json_tolerates_raw_control_characters_inside_strings_only() {
        assert_eq!(parse_model_json("{\"a\": \"line one\nline\ttwo\"}").unwrap(), json!({"a": "line one\nline\ttwo"}));
        assert_eq!(parse_model_json(" {\"q\": \"say \\\"hi\\\"\n\"}\n").unwrap(), json!({"q": "say \"hi\"\n"}));
        assert_eq!(parse_model_json("{\n  \"ok\": true\n}").unwrap(), json!({"ok": true}));
        assert!(parse_model_json("{\"a\": }").is_err());
        assert!(parse_model_json("not json").is_err());
    }
}
