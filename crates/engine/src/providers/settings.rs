//! The user's settings file: model providers, the default model and call limits. Settings that [`Settings::check`]
//! finds problems in are never written ([`Settings::save`] refuses) and never used ([`Settings::load`] fails naming
//! the file and line), so what one session saves the next can always read. Writes are atomic (a temporary file
//! renamed over the old one), so a crash never leaves half a file.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};

use super::http::Limits;
use super::LOCAL;
use crate::format::{explain, strip_location};

#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// Chat completions at `{base_url}/chat/completions`.
    Openai,
    /// Messages at `{base_url}/v1/messages`.
    Anthropic,
}

#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    /// What nodes write before the slash: `openai/gpt-4.1-mini`.
    pub id: String,
    pub kind: ProviderKind,
    /// The API root, e.g. `https://api.openai.com/v1`; each kind has a default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// The environment variable holding the API key (never the key itself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// Model used when a node names only the provider's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_model: Option<String>,
    /// How to ask for structured output; adapted automatically when the server refuses one (OpenAI-compatible).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_output: Option<super::StructuredMode>,
    /// Most tokens per answer (OpenAI-compatible: sent as `max_tokens`; Anthropic: default 4096).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
}

/// The user's settings: providers, the default model, and call limits.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    #[serde(default)]
    pub providers: Vec<ProviderConfig>,
    /// `provider/model` used when neither the node nor the workflow names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_model: Option<String>,
    #[serde(default)]
    pub limits: Limits,
    /// MCP servers agents may use, by name: `{command, args, env, cwd}` or `{url, headers}` — the `mcpServers` shape
    /// (that key is accepted too), so a list from another tool can be pasted (docs/tools.md).
    #[serde(default, alias = "mcpServers", skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub mcp_servers: std::collections::BTreeMap<String, crate::mcp::McpServerConfig>,
    /// What models cost, by `provider/model`: US dollars per million input and output tokens. Evaluations report
    /// the cost of each case from it (docs/evals.md).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub prices: std::collections::BTreeMap<String, Price>,
    /// A Switchyard server (`switchyard serve`) whose runs the app lists, follows and decides beside this computer's
    /// (docs/server.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<ServerConfig>,
}

/// A Switchyard server to connect to: its address, and the environment variable that holds a token for it (the
/// token itself is never written to the settings, as no key is).
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    /// `http://HOST:PORT`, as `switchyard serve --listen` (or a proxy in front of it) answers.
    pub url: String,
    /// The variable holding a token made with `switchyard token create NAME`, e.g. `SWITCHYARD_TOKEN`.
    pub token_env: String,
}

impl ServerConfig {
    /// The token, from the environment.
    pub fn token(&self) -> Option<String> {
        std::env::var(&self.token_env).ok().filter(|t| !t.trim().is_empty())
    }
}

/// A model's price (`usage::Price`: a run keeps its models' prices, so the type lives with what costs a run).
pub use crate::usage::Price;

/// One thing wrong with settings, located by field so the settings dialog can mark it.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SettingsProblem {
    /// The field, as a path: `providers[1].id`, `providers[0].base_url`, `default_model`, `limits.timeout_ms`.
    pub field: String,
    /// Stable SCREAMING_SNAKE code, e.g. `DUPLICATE_PROVIDER_ID`.
    pub code: String,
    /// What is wrong and what to do.
    pub message: String,
}

impl SettingsProblem {
    fn new(field: impl Into<String>, code: &str, message: impl Into<String>) -> SettingsProblem {
        SettingsProblem { field: field.into(), code: code.into(), message: message.into() }
    }
}

impl fmt::Display for SettingsProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} [{}]", self.field, self.message, self.code)
    }
}

/// Why settings could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error("{}: cannot read the settings: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: invalid settings: {message}", at(path, *line, *column))]
    Parse { path: PathBuf, line: Option<usize>, column: Option<usize>, message: String },
    #[error("{}: {}", at(path, *line, None), list(problems))]
    Invalid { path: PathBuf, line: Option<usize>, problems: Vec<SettingsProblem> },
    #[error("settings not saved: {}", list(problems))]
    Refused { problems: Vec<SettingsProblem> },
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl SettingsError {
    /// Stable SCREAMING_SNAKE code of the failure.
    pub fn code(&self) -> &'static str {
        match self {
            SettingsError::Read { .. } => "SETTINGS_UNREADABLE",
            SettingsError::Parse { .. } => "SETTINGS_PARSE_ERROR",
            SettingsError::Invalid { .. } | SettingsError::Refused { .. } => "SETTINGS_INVALID",
            SettingsError::Write { .. } => "SETTINGS_UNWRITABLE",
        }
    }

    /// The problems [`Settings::check`] found, when that is why.
    pub fn problems(&self) -> &[SettingsProblem] {
        match self {
            SettingsError::Invalid { problems, .. } | SettingsError::Refused { problems } => problems,
            _ => &[],
        }
    }

    /// The line of the settings file the failure is on, when known.
    pub fn line(&self) -> Option<usize> {
        match self {
            SettingsError::Parse { line, .. } | SettingsError::Invalid { line, .. } => *line,
            _ => None,
        }
    }
}

fn at(path: &Path, line: Option<usize>, column: Option<usize>) -> String {
    match (line, column) {
        (Some(l), Some(c)) => format!("{}:{l}:{c}", path.display()),
        (Some(l), None) => format!("{}:{l}", path.display()),
        _ => path.display().to_string(),
    }
}

fn list(problems: &[SettingsProblem]) -> String {
    problems.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
}

impl Settings {
    /// `$SWITCHYARD_HOME/settings.yaml`, else `$XDG_CONFIG_HOME/switchyard/settings.yaml`, else `~/.config/…`.
    pub fn default_path() -> PathBuf {
        crate::files::settings_dir().join("settings.yaml")
    }

    /// Everything that would make these settings unusable or unreadable, in field order: provider ids that are
    /// empty, malformed or used twice; base URLs that are not http(s) URLs; `api_key_env` values that are not
    /// environment variable names; a default model that is not `provider/model` or names an unknown provider; limits
    /// that must be positive and are not. Empty when the settings can be saved and used.
    pub fn check(&self) -> Vec<SettingsProblem> {
        let mut problems = Vec::new();
        for (name, server) in &self.mcp_servers {
            if name.trim().is_empty() || name.contains('/') || name.contains(crate::mcp::SEPARATOR) {
                problems.push(SettingsProblem::new(
                    format!("mcp_servers.{name}"),
                    "INVALID_MCP_SERVER_NAME",
                    format!(
                        "MCP server name `{name}` must be non-empty, without `/` or `__` (agents write server/tool)"
                    ),
                ));
            }
            match server {
                crate::mcp::McpServerConfig::Stdio(s) if s.command.trim().is_empty() => {
                    problems.push(SettingsProblem::new(
                        format!("mcp_servers.{name}.command"),
                        "EMPTY_MCP_COMMAND",
                        "give the command that starts the server, e.g. `npx`",
                    ))
                }
                crate::mcp::McpServerConfig::Http(h) => {
                    if let Err(why) = check_url(&h.url) {
                        problems.push(SettingsProblem::new(
                            format!("mcp_servers.{name}.url"),
                            "INVALID_MCP_URL",
                            format!(
                                "url `{}` {why}; write the server's endpoint, e.g. `http://127.0.0.1:8000/mcp`",
                                h.url
                            ),
                        ));
                    }
                }
                _ => {}
            }
        }
        for (i, p) in self.providers.iter().enumerate() {
            let field = |name: &str| format!("providers[{i}].{name}");
            if p.id.trim().is_empty() {
                problems.push(SettingsProblem::new(
                    field("id"),
                    "EMPTY_PROVIDER_ID",
                    "give the provider an id, e.g. `openai`; nodes name it before the slash",
                ));
            } else if p.id.contains('/') || p.id.chars().any(char::is_whitespace) {
                problems.push(SettingsProblem::new(
                    field("id"),
                    "INVALID_PROVIDER_ID",
                    format!("provider id `{}` must contain no `/` and no spaces, e.g. `openai`", p.id),
                ));
            } else if let Some(first) = self.providers[..i].iter().position(|q| q.id == p.id) {
                problems.push(SettingsProblem::new(
                    field("id"),
                    "DUPLICATE_PROVIDER_ID",
                    format!(
                        "provider id `{}` is already used by providers[{first}]; give each provider its own id",
                        p.id
                    ),
                ));
            }
            if let Some(url) = &p.base_url {
                if let Err(why) = check_url(url) {
                    problems.push(SettingsProblem::new(
                        field("base_url"),
                        "INVALID_BASE_URL",
                        format!("base_url `{url}` {why}; write the API root, e.g. `https://api.openai.com/v1`, or leave it empty for the default"),
                    ));
                }
            }
            if let Some(var) = &p.api_key_env {
                if !is_env_name(var) {
                    problems.push(SettingsProblem::new(
                        field("api_key_env"),
                        "INVALID_API_KEY_ENV",
                        format!("api_key_env `{var}` is not an environment variable name (letters, digits and `_`, not starting with a digit), e.g. `OPENAI_API_KEY`; it names the variable holding the key, never the key"),
                    ));
                }
            }
            if p.default_model.as_deref().is_some_and(|m| m.trim().is_empty()) {
                problems.push(SettingsProblem::new(
                    field("default_model"),
                    "INVALID_DEFAULT_MODEL",
                    "the provider's default_model is empty; name a model or remove it",
                ));
            }
            if p.max_tokens == Some(0) {
                problems.push(SettingsProblem::new(
                    field("max_tokens"),
                    "INVALID_LIMIT",
                    "max_tokens must be at least 1",
                ));
            }
        }
        if let Some(server) = &self.server {
            if let Err(why) = check_url(&server.url) {
                problems.push(SettingsProblem::new(
                    "server.url",
                    "INVALID_SERVER_URL",
                    format!("url `{}` {why}; write the server's address, e.g. `http://127.0.0.1:8080`", server.url),
                ));
            }
            if !is_env_name(&server.token_env) {
                problems.push(SettingsProblem::new(
                    "server.token_env",
                    "INVALID_TOKEN_ENV",
                    format!("token_env `{}` is not an environment variable name (letters, digits and `_`, not starting with a digit), e.g. `SWITCHYARD_TOKEN`; it names the variable holding the token, never the token", server.token_env),
                ));
            }
        }
        for (model, price) in &self.prices {
            let valid = |v: f64| v.is_finite() && v >= 0.0;
            if !model.contains('/') {
                problems.push(SettingsProblem::new(
                    format!("prices.{model}"),
                    "INVALID_PRICE",
                    format!("`{model}` is not a `provider/model` reference, e.g. `openai/gpt-4.1-mini`"),
                ));
            } else if !valid(price.input) || !valid(price.output) || !price.cached_input.is_none_or(valid) {
                problems.push(SettingsProblem::new(
                    format!("prices.{model}"),
                    "INVALID_PRICE",
                    "a price is US dollars per million tokens: zero or more",
                ));
            }
        }
        if let Some(model) = &self.default_model {
            match model.split_once('/') {
                Some((provider, name)) if !provider.is_empty() && !name.is_empty() => {
                    let known = self.provider_ids();
                    if !known.iter().any(|id| id == provider) {
                        problems.push(SettingsProblem::new(
                            "default_model",
                            "UNKNOWN_DEFAULT_PROVIDER",
                            format!("default_model `{model}` names provider `{provider}`, which is not configured (configured: {}); add it or pick one of them", known.join(", ")),
                        ));
                    }
                }
                _ => problems.push(SettingsProblem::new(
                    "default_model",
                    "INVALID_DEFAULT_MODEL",
                    format!("default_model `{model}` must be written `provider/model`, e.g. `local/smollm2-135m`"),
                )),
            }
        }
        let l = &self.limits;
        for (name, value) in [
            ("connect_timeout_ms", l.connect_timeout_ms),
            ("timeout_ms", l.timeout_ms),
            ("read_timeout_ms", l.read_timeout_ms),
            ("max_tool_turns", u64::from(l.max_tool_turns)),
        ] {
            if value == 0 {
                problems.push(SettingsProblem::new(
                    format!("limits.{name}"),
                    "INVALID_LIMIT",
                    format!("limits.{name} must be at least 1"),
                ));
            }
        }
        problems
    }

    /// Reads settings; a missing file is the empty default (the built-in `local` provider only). Settings with
    /// problems are an error naming the file and the line of the first problem.
    pub fn load(path: &Path) -> Result<Settings, SettingsError> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Settings::default()),
            Err(source) => return Err(SettingsError::Read { path: path.to_path_buf(), source }),
        };
        let settings: Settings = serde_yaml::from_str(&text).map_err(|e| {
            let loc = e.location();
            SettingsError::Parse {
                path: path.to_path_buf(),
                line: loc.as_ref().map(|l| l.line()),
                column: loc.as_ref().map(|l| l.column()),
                message: explain(&strip_location(&e.to_string())),
            }
        })?;
        let problems = settings.check();
        if let Some(first) = problems.first() {
            let line = line_of(&text, &first.field);
            return Err(SettingsError::Invalid { path: path.to_path_buf(), line, problems });
        }
        Ok(settings)
    }

    /// Writes the settings atomically, creating the directory; writes nothing when [`Settings::check`] finds
    /// problems.
    pub fn save(&self, path: &Path) -> Result<(), SettingsError> {
        let problems = self.check();
        if !problems.is_empty() {
            return Err(SettingsError::Refused { problems });
        }
        let text = serde_yaml::to_string(self).expect("settings serialize");
        crate::files::write_atomically(path, text.as_bytes())
            .map_err(|source| SettingsError::Write { path: path.to_path_buf(), source })
    }

    /// The providers nodes may name: the configured ones plus the built-in `local`.
    pub fn provider_ids(&self) -> Vec<String> {
        self.effective_providers().into_iter().map(|p| p.id).collect()
    }

    /// The configured providers with the built-in `local` added when it is not configured.
    pub fn effective_providers(&self) -> Vec<ProviderConfig> {
        let mut all = self.providers.clone();
        if !all.iter().any(|p| p.id == LOCAL) {
            all.push(ProviderConfig {
                id: LOCAL.into(),
                kind: ProviderKind::Openai,
                base_url: None,
                api_key_env: None,
                default_model: None,
                structured_output: None,
                max_tokens: None,
            });
        }
        all
    }
}

/// Why a base URL is unusable, if it is.
fn check_url(url: &str) -> Result<(), String> {
    let parsed = reqwest::Url::parse(url.trim()).map_err(|e| format!("is not a URL ({e})"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!("must start with http:// or https:// (not {}://)", parsed.scheme()));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err("has no host".into());
    }
    Ok(())
}

/// `[A-Za-z_][A-Za-z0-9_]*`.
fn is_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

// ---- finding the line of a field

const FOUND: &str = "switchyard: field found";

/// One step of a field path: a mapping key or a sequence index.
#[derive(Debug, PartialEq)]
enum Step<'a> {
    Key(&'a str),
    Index(usize),
}

/// `providers[1].base_url` → `[Key(providers), Index(1), Key(base_url)]`.
fn steps(field: &str) -> Vec<Step<'_>> {
    let mut out = Vec::new();
    for part in field.split('.') {
        let (key, mut rest) = part.split_once('[').map_or((part, ""), |(k, r)| (k, r));
        if !key.is_empty() {
            out.push(Step::Key(key));
        }
        while let Some((index, after)) = rest.split_once(']') {
            if let Ok(i) = index.parse() {
                out.push(Step::Index(i));
            }
            rest = after.strip_prefix('[').unwrap_or(after);
        }
    }
    out
}

/// The line where `field` is written in the YAML `text`, found by the YAML parser itself: a deserializer that
/// walks to the field and stops there with an error, whose location the parser reports.
fn line_of(text: &str, field: &str) -> Option<usize> {
    let steps = steps(field);
    match Locate(&steps).deserialize(serde_yaml::Deserializer::from_str(text)) {
        Err(e) if e.to_string().contains(FOUND) => e.location().map(|l| l.line()),
        _ => None,
    }
}

/// Walks to the field its steps name; errors there (see [`line_of`]).
struct Locate<'s, 'a>(&'s [Step<'a>]);

impl<'de> DeserializeSeed<'de> for Locate<'_, '_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        if self.0.is_empty() {
            // Refused by the value's own deserializer, so the error carries the value's position.
            return d.deserialize_any(Found);
        }
        d.deserialize_any(self)
    }
}

/// Refuses any value (every `visit_*` keeps its default), with a message [`line_of`] recognizes.
struct Found;

impl<'de> Visitor<'de> for Found {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(FOUND)
    }
}

impl<'de> Visitor<'de> for Locate<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a mapping or a sequence")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            match self.0.first() {
                Some(Step::Key(k)) if *k == key => return map.next_value_seed(Locate(&self.0[1..])),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0;
        loop {
            let found = matches!(self.0.first(), Some(Step::Index(n)) if *n == i);
            if found {
                return seq.next_element_seed(Locate(&self.0[1..])).map(|_| ());
            }
            if seq.next_element::<IgnoredAny>()?.is_none() {
                return Ok(());
            }
            i += 1;
        }
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn provider(id: &str) -> ProviderConfig {
        ProviderConfig {
            id: id.into(),
            kind: ProviderKind::Openai,
            base_url: None,
            api_key_env: None,
            default_model: None,
            structured_output: None,
            max_tokens: None,
        }
    }

    fn with(providers: Vec<ProviderConfig>) -> Settings {
        Settings { providers, ..Settings::default() }
    }

    /// `(field, code)` of each problem.
    fn found(settings: &Settings) -> Vec<(String, String)> {
        settings.check().into_iter().map(|p| (p.field, p.code)).collect()
    }

    fn one(field: &str, code: &str) -> Vec<(String, String)> {
        vec![(field.to_string(), code.to_string())]
    }

    #[test]
    fn good_settings_have_no_problems() {
        let mut openai = provider("openai");
        openai.base_url = Some("https://api.openai.com/v1".into());
        openai.api_key_env = Some("OPENAI_API_KEY".into());
        let mut lm = provider("lm_studio-2");
        lm.base_url = Some("http://127.0.0.1:1234/v1".into());
        lm.api_key_env = Some("_KEY2".into());
        let settings = Settings { default_model: Some("local/smollm2-135m".into()), ..with(vec![openai, lm]) };
        assert_eq!(settings.check(), vec![]);
        assert_eq!(Settings::default().check(), vec![]);
    }

    #[test]
    fn a_server_needs_an_http_url_and_the_name_of_the_variable_holding_its_token() {
        let server = |url: &str, token_env: &str| Settings {
            server: Some(ServerConfig { url: url.into(), token_env: token_env.into() }),
            ..Settings::default()
        };
        assert_eq!(found(&server("http://127.0.0.1:8080", "SWITCHYARD_TOKEN")), vec![]);
        assert_eq!(found(&server("127.0.0.1:8080", "SWITCHYARD_TOKEN")), one("server.url", "INVALID_SERVER_URL"));
        let pasted = server("https://sy.example.com", "sy_4f1c0a");
        assert_eq!(found(&pasted), vec![], "a name that could be a variable is taken as one");
        let token = server("https://sy.example.com", "sy_4f1c-0a");
        assert_eq!(found(&token), one("server.token_env", "INVALID_TOKEN_ENV"));
        assert!(token.check()[0].message.contains("never the token"));
    }

    #[test]
    fn a_provider_id_used_twice_is_a_problem_on_the_second() {
        let settings = with(vec![provider("openai"), provider("local"), provider("openai")]);
        assert_eq!(found(&settings), one("providers[2].id", "DUPLICATE_PROVIDER_ID"));
        assert!(settings.check()[0].message.contains("providers[0]"));
    }

    #[test]
    fn an_empty_or_malformed_provider_id_is_a_problem() {
        assert_eq!(found(&with(vec![provider("  ")])), one("providers[0].id", "EMPTY_PROVIDER_ID"));
        assert_eq!(found(&with(vec![provider("open/ai")])), one("providers[0].id", "INVALID_PROVIDER_ID"));
        assert_eq!(found(&with(vec![provider("open ai")])), one("providers[0].id", "INVALID_PROVIDER_ID"));
    }

    #[test]
    fn a_base_url_must_be_an_http_url_with_a_host() {
        for bad in ["not a url", "ftp://example.com", "http://", "localhost:8080", ""] {
            let mut p = provider("p");
            p.base_url = Some(bad.into());
            assert_eq!(found(&with(vec![p])), one("providers[0].base_url", "INVALID_BASE_URL"), "{bad:?}");
        }
    }

    #[test]
    fn api_key_env_must_be_a_variable_name() {
        for bad in ["sk-live-123", "1KEY", "MY KEY", "", "KEY$"] {
            let mut p = provider("p");
            p.api_key_env = Some(bad.into());
            assert_eq!(found(&with(vec![p])), one("providers[0].api_key_env", "INVALID_API_KEY_ENV"), "{bad:?}");
        }
    }

    #[test]
    fn the_default_model_must_be_provider_slash_model_of_a_known_provider() {
        let model = |m: &str| Settings { default_model: Some(m.into()), ..with(vec![provider("openai")]) };
        assert_eq!(found(&model("gpt-5")), one("default_model", "INVALID_DEFAULT_MODEL"));
        assert_eq!(found(&model("openai/")), one("default_model", "INVALID_DEFAULT_MODEL"));
        assert_eq!(found(&model("anthropic/claude")), one("default_model", "UNKNOWN_DEFAULT_PROVIDER"));
        assert_eq!(found(&model("openai/gpt-5")), vec![]);
        assert_eq!(found(&model("local/smollm2")), vec![], "the built-in local provider is always known");
        let mut p = provider("p");
        p.default_model = Some(" ".into());
        assert_eq!(found(&with(vec![p])), one("providers[0].default_model", "INVALID_DEFAULT_MODEL"));
    }

    #[test]
    fn limits_that_must_be_positive_are_problems_at_zero() {
        let mut settings = Settings::default();
        settings.limits.timeout_ms = 0;
        settings.limits.max_tool_turns = 0;
        settings.limits.retries = 0; // no retries is a choice, not a problem
        settings.limits.backoff_ms = 0;
        assert_eq!(
            found(&settings),
            vec![
                ("limits.timeout_ms".to_string(), "INVALID_LIMIT".to_string()),
                ("limits.max_tool_turns".to_string(), "INVALID_LIMIT".to_string())
            ]
        );
        let mut p = provider("p");
        p.max_tokens = Some(0);
        assert_eq!(found(&with(vec![p])), one("providers[0].max_tokens", "INVALID_LIMIT"));
    }

    #[test]
    fn a_price_is_of_a_provider_slash_model_and_never_negative() {
        let priced = |model: &str, input: f64| Settings {
            prices: [(model.to_string(), Price { input, output: 1.0, cached_input: None })].into(),
            ..Settings::default()
        };
        assert_eq!(found(&priced("gpt-5", 1.0)), one("prices.gpt-5", "INVALID_PRICE"));
        assert_eq!(found(&priced("openai/gpt-5", -1.0)), one("prices.openai/gpt-5", "INVALID_PRICE"));
        assert_eq!(found(&priced("openai/gpt-5", f64::NAN)), one("prices.openai/gpt-5", "INVALID_PRICE"));
        assert_eq!(found(&priced("openai/gpt-5", 0.0)), vec![], "free is a price");
        let mut settings = priced("openai/gpt-5", 1.0);
        settings.prices.get_mut("openai/gpt-5").unwrap().cached_input = Some(-0.5);
        assert_eq!(found(&settings), one("prices.openai/gpt-5", "INVALID_PRICE"));
        let usage = crate::result::Usage { input_tokens: 1_000_000, output_tokens: 500_000, cached_input_tokens: 0 };
        assert_eq!(Price { input: 2.0, output: 8.0, cached_input: None }.cost(&usage), 6.0);
        // Cached input at its own price; at the input price when the table gives none.
        let cached = crate::result::Usage { cached_input_tokens: 600_000, ..usage };
        assert_eq!(Price { input: 2.0, output: 8.0, cached_input: Some(0.5) }.cost(&cached), 0.8 + 0.3 + 4.0);
        assert_eq!(Price { input: 2.0, output: 8.0, cached_input: None }.cost(&cached), 6.0);
    }

    #[test]
    fn load_names_the_file_and_the_line_of_the_first_problem() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.yaml");
        let text = "providers:\n  - id: openai\n    kind: openai\n  - id: local\n    kind: openai\n    base_url: not a url\n  - {id: openai, kind: anthropic}\n";
        std::fs::write(&path, text).unwrap();
        let err = Settings::load(&path).unwrap_err();
        assert_eq!(err.code(), "SETTINGS_INVALID");
        assert_eq!(err.line(), Some(6), "{err}");
        let fields: Vec<&str> = err.problems().iter().map(|p| p.field.as_str()).collect();
        assert_eq!(fields, ["providers[1].base_url", "providers[2].id"]);
        let shown = err.to_string();
        assert!(shown.starts_with(&format!("{}:6: providers[1].base_url: ", path.display())), "{shown}");
        assert!(shown.contains("DUPLICATE_PROVIDER_ID"), "{shown}");
    }

    #[test]
    fn load_names_the_file_and_line_of_a_parse_error_and_a_missing_file_is_the_default() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.yaml");
        assert_eq!(Settings::load(&path).unwrap(), Settings::default());
        std::fs::write(&path, "providers:\n  - {id: local, kind: openai, base_ur: x}\n").unwrap();
        let err = Settings::load(&path).unwrap_err();
        assert_eq!((err.code(), err.line()), ("SETTINGS_PARSE_ERROR", Some(2)));
        assert!(err.to_string().contains("did you mean `base_url`"), "{err}");
        assert!(err.to_string().starts_with(&path.display().to_string()), "{err}");
    }

    #[test]
    fn an_unreadable_file_is_a_read_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let err = Settings::load(dir.path()).unwrap_err(); // a directory cannot be read as a file
        assert_eq!(err.code(), "SETTINGS_UNREADABLE");
        assert!(err.to_string().contains(&dir.path().display().to_string()), "{err}");
        assert!(err.problems().is_empty() && err.line().is_none());
    }

    #[test]
    fn the_line_of_a_field_is_found_in_block_and_flow_style() {
        let text = "default_model: x\nlimits:\n  timeout_ms: 0\nproviders:\n  - {id: a, kind: openai}\n  - id: b\n    kind: openai\n    api_key_env: 'sk-1'\n";
        assert_eq!(line_of(text, "default_model"), Some(1));
        assert_eq!(line_of(text, "limits.timeout_ms"), Some(3));
        assert_eq!(line_of(text, "providers[0].id"), Some(5));
        assert_eq!(line_of(text, "providers[1].api_key_env"), Some(8));
        assert_eq!(line_of(text, "providers[2].id"), None);
        assert_eq!(line_of(text, "limits.retries"), None, "a default not written in the file has no line");
        assert_eq!(steps("providers[12].base_url"), [Step::Key("providers"), Step::Index(12), Step::Key("base_url")]);
    }

    #[test]
    fn save_refuses_settings_with_problems_and_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.yaml");
        let bad = with(vec![provider("a"), provider("a")]);
        let err = bad.save(&path).unwrap_err();
        assert_eq!(err.code(), "SETTINGS_INVALID");
        assert_eq!(err.problems().len(), 1);
        assert!(!path.exists());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "no temporary file left behind");
    }

    #[test]
    fn save_replaces_the_file_atomically_and_reports_where_it_cannot_write() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested/settings.yaml");
        with(vec![provider("a")]).save(&path).unwrap();
        with(vec![provider("b")]).save(&path).unwrap();
        assert_eq!(Settings::load(&path).unwrap(), with(vec![provider("b")]));
        assert_eq!(std::fs::read_dir(path.parent().unwrap()).unwrap().count(), 1, "only the settings file remains");
        let blocked = dir.path().join("file");
        std::fs::write(&blocked, "").unwrap();
        let err = Settings::default().save(&blocked.join("settings.yaml")).unwrap_err();
        assert_eq!(err.code(), "SETTINGS_UNWRITABLE");
        assert!(err.to_string().contains("settings.yaml"), "{err}");
    }

    #[test]
    fn whatever_save_accepts_loads_back_unchanged() {
        // Seeded variations over awkward but valid values: YAML-significant characters, numbers and booleans as
        // strings, unicode, every optional field on and off.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.yaml");
        let words =
            ["openai", "yes", "no", "null", "1.5", "0x1F", "#x", "a: b", "'q'", "\"dq\"", "ü-ß", "~", "-", "[x]"];
        let urls = ["http://127.0.0.1:11434/v1", "https://api.example.com/v1?x=1#f", "https://ü.example/ä b"];
        let mut rng = fastrand::Rng::with_seed(7);
        let mut saved = 0;
        for case in 0..300 {
            let n = rng.usize(0..4);
            let providers: Vec<ProviderConfig> = (0..n)
                .map(|i| ProviderConfig {
                    id: format!("{}{i}", words[rng.usize(..words.len())]),
                    kind: if rng.bool() { ProviderKind::Openai } else { ProviderKind::Anthropic },
                    base_url: rng.bool().then(|| urls[rng.usize(..urls.len())].to_string()),
                    api_key_env: rng.bool().then(|| format!("KEY_{case}")),
                    default_model: rng.bool().then(|| words[rng.usize(..words.len())].to_string()),
                    structured_output: None,
                    max_tokens: rng.bool().then(|| rng.u32(1..100_000)),
                })
                .collect();
            let default_model = match (rng.bool(), providers.first()) {
                (true, Some(p)) => Some(format!("{}/{}", p.id, words[rng.usize(..words.len())])),
                (true, None) => Some("local/m".into()),
                _ => None,
            };
            let mut settings = Settings { providers, default_model, limits: Limits::default(), ..Settings::default() };
            settings.limits.retries = rng.u32(0..5);
            match settings.save(&path) {
                Ok(()) => {
                    assert_eq!(Settings::load(&path).unwrap(), settings, "case {case}");
                    saved += 1;
                }
                Err(e) => assert!(!e.problems().is_empty(), "case {case}: {e}"),
            }
        }
        assert!(saved > 200, "only {saved} of the cases were valid");
    }
}
