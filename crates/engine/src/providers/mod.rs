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
use serde::Serialize;

use crate::model::{ExecuteRequest, Model, ModelError, ModelOutput, NodeIo, RouteAnswer, RouteRequest};

pub use anthropic::Anthropic;
pub use http::Limits;
pub use openai::{OpenAi, StructuredMode};
pub use settings::{Price, ProviderConfig, ProviderKind, ServerConfig, Settings, SettingsError, SettingsProblem};

/// The id of the provider that exists with no settings at all: an OpenAI-compatible server on this machine.
pub const LOCAL: &str = "local";

/// Where a local server is looked for when `local` is not configured: Ollama, then llama.cpp's server.
pub const LOCAL_CANDIDATES: [&str; 2] = ["http://127.0.0.1:11434/v1", "http://127.0.0.1:8080/v1"];

/// The environment variable naming the API root of the local model server (`http://127.0.0.1:8080/v1`), for a
/// `local` provider the settings do not configure: like Ollama's `OLLAMA_HOST`, it points every run on this machine
/// at a server without editing settings.
pub const LOCAL_URL_ENV: &str = "SWITCHYARD_LOCAL_URL";

/// The longest a default-model probe waits for one candidate server.
const PROBE_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(1500);

/// `$SWITCHYARD_LOCAL_URL` as an API root, when it is set and not empty.
pub(crate) fn local_url_from_env() -> Option<String> {
    std::env::var(LOCAL_URL_ENV).ok().map(|u| u.trim().trim_end_matches('/').to_string()).filter(|u| !u.is_empty())
}

/// Where the model that agents naming none use came from.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DefaultSource {
    /// The settings' `default_model`.
    Settings,
    /// The first model a local server lists.
    Local,
    /// No default could be found.
    None,
}

/// The model used by agents that name none, when neither the node, the workflow nor the run names one.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DefaultModel {
    /// `provider/model`, or none.
    pub model: Option<String>,
    pub source: DefaultSource,
    /// Where it was found (`the local server at http://…`), or where it was looked for and why nothing answered.
    pub detail: String,
}

/// Finds the default model with no configuration: the settings' `default_model`; else the first model that the
/// `local` provider's server lists (`GET {base}/models`), asking its `base_url` in the settings, else
/// `$SWITCHYARD_LOCAL_URL`, else [`LOCAL_CANDIDATES`] in turn, each for at most 1.5 s; else none, saying where it
/// looked.
pub async fn discover_default_model(settings: &Settings) -> DefaultModel {
    if let Some(model) = &settings.default_model {
        return DefaultModel {
            model: Some(model.clone()),
            source: DefaultSource::Settings,
            detail: "the settings' default_model".into(),
        };
    }
    let local = settings.effective_providers().into_iter().find(|p| p.id == LOCAL).expect("local is always there");
    if local.kind != ProviderKind::Openai {
        return DefaultModel {
            model: None,
            source: DefaultSource::None,
            detail: "no default_model in the settings, and the `local` provider is not OpenAI-compatible".into(),
        };
    }
    let bases: Vec<String> = match local.base_url.as_deref().map(|b| b.trim_end_matches('/').to_string()) {
        Some(base) => vec![base],
        None => match local_url_from_env() {
            Some(base) => vec![base],
            None => LOCAL_CANDIDATES.iter().map(|c| c.to_string()).collect(),
        },
    };
    crate::net::install_crypto();
    let client = reqwest::Client::builder().timeout(PROBE_TIMEOUT).build().expect("an HTTP client with rustls builds");
    let key = local.api_key_env.as_deref().and_then(|env| std::env::var(env).ok()).filter(|k| !k.is_empty());
    let mut why = Vec::new();
    for base in &bases {
        let mut rb = client.get(format!("{base}/models"));
        if let Some(key) = &key {
            rb = rb.bearer_auth(key);
        }
        let listed = match rb.send().await {
            Ok(resp) if resp.status().is_success() => resp.json::<serde_json::Value>().await.map_err(|e| e.to_string()),
            Ok(resp) => Err(format!("HTTP {}", resp.status().as_u16())),
            Err(e) if e.is_timeout() => Err("no answer within 1.5 s".into()),
            Err(e) if e.is_connect() => Err("nothing listens".into()),
            Err(e) => Err(e.to_string()),
        };
        let first = listed.and_then(|body| {
            // The provider's own default model, when the server answers; else the first model it lists.
            local.default_model.clone().or_else(|| first_model_id(&body)).ok_or_else(|| "it lists no models".into())
        });
        match first {
            Ok(id) => {
                return DefaultModel {
                    model: Some(format!("{LOCAL}/{id}")),
                    source: DefaultSource::Local,
                    detail: format!("the local model server at {base}"),
                }
            }
            Err(e) => why.push(format!("{base} ({e})")),
        }
    }
    DefaultModel {
        model: None,
        source: DefaultSource::None,
        detail: format!("no default_model in the settings, and no local model server answers: {}", why.join(", ")),
    }
}

/// The model ids of an OpenAI `GET /models` answer (`{"data": [{"id": …}]}`; Ollama's `{"models": [{"name": …}]}` too).
pub(crate) fn model_ids(body: &serde_json::Value) -> impl Iterator<Item = &str> {
    let listed = body["data"].as_array().into_iter().flatten().filter_map(|m| m["id"].as_str());
    let ollama = body["models"].as_array().into_iter().flatten().filter_map(|m| m["name"].as_str());
    listed.chain(ollama).filter(|id| !id.trim().is_empty())
}

/// The first model id a `GET /models` answer lists.
fn first_model_id(body: &serde_json::Value) -> Option<String> {
    model_ids(body).next().map(str::to_string)
}

message_error!(
    /// Why a provider does not answer a check (`switchyard providers`, the Settings dialog's Test): its server cannot
    /// be reached, refuses the key, or lists no models.
    CheckError
);

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
                "`{node}` has no model, and there is no default model: none is named on the node, the workflow, the run or in the settings, and no model server answers on this machine"
            ))
            .with_code("NO_MODEL")
        })?;
        let provider = model.split_once('/').map_or(model, |(p, _)| p);
        self.clients.get(provider).ok_or_else(|| {
            ModelError::fatal(format!(
                "provider `{provider}` (model `{model}`) is not configured; add it to the settings"
            ))
            .with_code("UNKNOWN_PROVIDER")
        })
    }

    /// Asks each provider whether it answers: `(id, Ok(detail) | Err(why))`.
    pub async fn check(settings: &Settings) -> Vec<(String, Result<String, CheckError>)> {
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
                return RouteAnswer { choice: choice.to_string(), note: None, usage: None };
            }
        }
    }
    if ids.contains(&trimmed) {
        return RouteAnswer { choice: trimmed.to_string(), note: None, usage: None };
    }
    let mentioned: Vec<&str> = ids.iter().copied().filter(|id| mentions(trimmed, id)).collect();
    if let [only] = mentioned.as_slice() {
        return RouteAnswer {
            choice: only.to_string(),
            note: Some("read from the model's free-text answer".into()),
            usage: None,
        };
    }
    let shown: String = trimmed.chars().take(80).collect();
    RouteAnswer { choice: shown, note: Some("the model named no single valid choice".into()), usage: None }
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
