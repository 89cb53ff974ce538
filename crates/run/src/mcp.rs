//! MCP servers as tools for agents (docs/tools.md). The settings name servers (`mcp_servers:`, the widely used
//! `mcpServers` shape); an agent's `tools.mcp` picks servers (`github`: every tool) or single tools
//! (`github/create_issue`); the model sees each tool as `server__tool` with its description and input schema, untouched.
//!
//! The client is the official Rust SDK (`rmcp`) kept behind [`ToolServer`], so the rest of the engine never sees it.
//! A run starts a server on first use ([`McpSessions`]), keeps it for the run and stops it when the run ends: a stdio
//! server's process is killed with it, an HTTP session is closed. A tool error is the tool's result for the model
//! (SEMANTICS §4), not a node failure; every call has a timeout.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

/// How long a server may take to start and answer `initialize`, and a tool call to return, unless configured.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// What separates the server from the tool in the names the model sees: `github__create_issue`.
pub const SEPARATOR: &str = "__";

/// The key of a tool call's `_meta` that carries its idempotency key (`crate::journal::idempotency_key`).
pub const IDEMPOTENCY_META: &str = "switchyard/idempotencyKey";
/// The HTTP header a `tools/call` to a server over HTTP carries the same key in, besides the `_meta`:
/// `Idempotency-Key` (header names are case-insensitive; the `http` crate writes them in lower case).
pub const IDEMPOTENCY_HEADER: &str = "idempotency-key";

/// One server in the settings: a command to start (stdio) or a URL (streamable HTTP). `env` and `headers` values
/// may name environment variables as `${NAME}`, read when the server starts, so secrets never sit in the file.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum McpServerConfig {
    Stdio(StdioServer),
    Http(HttpServer),
}

#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StdioServer {
    pub command: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Seconds a start or a tool call may take (default 60).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<u32>,
}

#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpServer {
    pub url: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<u32>,
}

impl McpServerConfig {
    pub fn timeout(&self) -> Duration {
        let seconds = match self {
            McpServerConfig::Stdio(s) => s.timeout_seconds,
            McpServerConfig::Http(h) => h.timeout_seconds,
        };
        seconds.map_or(DEFAULT_TIMEOUT, |s| Duration::from_secs(s.into()))
    }
}

/// A tool a server offers.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct McpTool {
    pub name: String,
    pub description: String,
    /// The tool's JSON Schema for its input, as the server gave it.
    #[cfg_attr(feature = "specta", specta(type = specta_typescript::Any))]
    pub input_schema: Value,
    /// The server marks it as changing its environment (`destructiveHint`, or not `readOnlyHint`).
    pub destructive: bool,
}

/// Why a server or a tool could not be used. Messages name the server and say what to do.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum McpError {
    #[error("MCP server `{0}` is not configured; add it under mcp_servers in the settings")]
    Unknown(String),
    #[error("MCP server `{server}` did not start: {reason}")]
    Start { server: String, reason: String },
    #[error("MCP server `{server}`: {reason}")]
    Failed { server: String, reason: String },
    #[error("MCP server `{server}`: `{tool}` did not answer within {seconds} s")]
    TimedOut { server: String, tool: String, seconds: u64 },
}

/// A server, as the engine uses it. `rmcp` is behind this trait and nowhere else.
#[async_trait]
pub trait ToolServer: Send + Sync {
    /// Every tool, following pagination.
    async fn tools(&self) -> Result<Vec<McpTool>, McpError>;
    /// Calls a tool; `Err` when the call itself failed, `Ok(Err)` when the tool reported an error.
    /// Calls `tool`; `key` is the call's idempotency key (`crate::journal::idempotency_key`), sent in the request's
    /// `_meta` as `switchyard/idempotencyKey` (and over HTTP as the `Idempotency-Key` header too): a call made again
    /// after a crash carries the same key.
    async fn call(&self, tool: &str, input: Value, key: Option<&str>) -> Result<Result<Value, String>, McpError>;
}

message_error!(
    /// A `${NAME}` in an MCP server's settings that cannot be expanded: the variable is not set, or the `${` is not
    /// closed.
    ExpandError
);

/// Replaces `${NAME}` with the variable's value; a variable that is not set is an error naming it.
pub fn expand(text: &str) -> Result<String, ExpandError> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("${") {
        out.push_str(&rest[..at]);
        let Some(end) = rest[at..].find('}') else {
            return Err(ExpandError(format!("`{text}` has an unclosed ${{")));
        };
        let name = &rest[at + 2..at + end];
        let value = std::env::var(name).map_err(|_| format!("the environment variable {name} is not set"))?;
        out.push_str(&value);
        rest = &rest[at + end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

mod client {
    //! The `rmcp` client behind [`ToolServer`].
    use super::*;
    use futures::stream::BoxStream;
    use reqwest::header::{HeaderName, HeaderValue};
    use rmcp::model::{CallToolRequestParams, ClientJsonRpcMessage, ClientRequest, JsonRpcMessage};
    use rmcp::service::RunningService;
    use rmcp::transport::streamable_http_client::{
        SseError, StreamableHttpClient, StreamableHttpClientTransportConfig, StreamableHttpError,
        StreamableHttpPostResponse, StreamableHttpResponseLimits,
    };
    use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
    use rmcp::{RoleClient, ServiceExt};
    use sse_stream::Sse;

    /// The HTTP client of a streamable HTTP server: rmcp's reqwest client (no idle connections kept, same-origin
    /// 307/308 redirects followed, as rmcp's own), which also sends each `tools/call` request's idempotency key
    /// (`_meta` `switchyard/idempotencyKey`) as the `Idempotency-Key` header, so a server (or a proxy in front of
    /// it) that dedupes by header sees it without reading the body.
    #[derive(Clone)]
    pub struct KeyedHttp(reqwest::Client);

    impl KeyedHttp {
        fn new() -> KeyedHttp {
            let same_origin = reqwest::redirect::Policy::custom(|attempt| {
                let keeps_body = matches!(
                    attempt.status(),
                    reqwest::StatusCode::TEMPORARY_REDIRECT | reqwest::StatusCode::PERMANENT_REDIRECT
                );
                let same = attempt.previous().first().is_some_and(|first| first.origin() == attempt.url().origin());
                if !keeps_body || !same {
                    attempt.stop()
                } else if attempt.previous().len() > 10 {
                    attempt.error("exceeded 10 redirects")
                } else {
                    attempt.follow()
                }
            });
            let client = reqwest::Client::builder()
                .pool_max_idle_per_host(0)
                .redirect(same_origin)
                .build()
                .expect("a reqwest client with these settings builds");
            KeyedHttp(client)
        }
    }

    /// The idempotency key of a `tools/call` request, as a header value.
    fn idempotency_header(message: &ClientJsonRpcMessage) -> Option<HeaderValue> {
        let JsonRpcMessage::Request(request) = message else { return None };
        let ClientRequest::CallToolRequest(call) = &request.request else { return None };
        let key = call.params.meta.as_ref()?.get(IDEMPOTENCY_META)?.as_str()?;
        HeaderValue::from_str(key).ok()
    }

    fn with_key(
        message: &ClientJsonRpcMessage,
        mut headers: HashMap<HeaderName, HeaderValue>,
    ) -> HashMap<HeaderName, HeaderValue> {
        if let Some(key) = idempotency_header(message) {
            headers.insert(HeaderName::from_static(IDEMPOTENCY_HEADER), key);
        }
        headers
    }

    impl StreamableHttpClient for KeyedHttp {
        type Error = reqwest::Error;

        async fn post_message(
            &self,
            uri: Arc<str>,
            message: ClientJsonRpcMessage,
            session_id: Option<Arc<str>>,
            auth_header: Option<String>,
            custom_headers: HashMap<HeaderName, HeaderValue>,
        ) -> Result<StreamableHttpPostResponse, StreamableHttpError<reqwest::Error>> {
            let headers = with_key(&message, custom_headers);
            self.0.post_message(uri, message, session_id, auth_header, headers).await
        }

        async fn post_message_with_max_sse_event_size(
            &self,
            uri: Arc<str>,
            message: ClientJsonRpcMessage,
            session_id: Option<Arc<str>>,
            auth_header: Option<String>,
            custom_headers: HashMap<HeaderName, HeaderValue>,
            max_sse_event_size: usize,
        ) -> Result<StreamableHttpPostResponse, StreamableHttpError<reqwest::Error>> {
            let headers = with_key(&message, custom_headers);
            self.0
                .post_message_with_max_sse_event_size(
                    uri,
                    message,
                    session_id,
                    auth_header,
                    headers,
                    max_sse_event_size,
                )
                .await
        }

        async fn post_message_with_response_limits(
            &self,
            uri: Arc<str>,
            message: ClientJsonRpcMessage,
            session_id: Option<Arc<str>>,
            auth_header: Option<String>,
            custom_headers: HashMap<HeaderName, HeaderValue>,
            limits: StreamableHttpResponseLimits,
        ) -> Result<StreamableHttpPostResponse, StreamableHttpError<reqwest::Error>> {
            let headers = with_key(&message, custom_headers);
            self.0.post_message_with_response_limits(uri, message, session_id, auth_header, headers, limits).await
        }

        async fn delete_session(
            &self,
            uri: Arc<str>,
            session_id: Arc<str>,
            auth_header: Option<String>,
            custom_headers: HashMap<HeaderName, HeaderValue>,
        ) -> Result<(), StreamableHttpError<reqwest::Error>> {
            self.0.delete_session(uri, session_id, auth_header, custom_headers).await
        }

        async fn get_stream(
            &self,
            uri: Arc<str>,
            session_id: Option<Arc<str>>,
            last_event_id: Option<String>,
            auth_header: Option<String>,
            custom_headers: HashMap<HeaderName, HeaderValue>,
        ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<reqwest::Error>> {
            self.0.get_stream(uri, session_id, last_event_id, auth_header, custom_headers).await
        }

        async fn get_stream_with_max_sse_event_size(
            &self,
            uri: Arc<str>,
            session_id: Option<Arc<str>>,
            last_event_id: Option<String>,
            auth_header: Option<String>,
            custom_headers: HashMap<HeaderName, HeaderValue>,
            max_sse_event_size: usize,
        ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<reqwest::Error>> {
            self.0
                .get_stream_with_max_sse_event_size(
                    uri,
                    session_id,
                    last_event_id,
                    auth_header,
                    custom_headers,
                    max_sse_event_size,
                )
                .await
        }
    }

    pub struct RmcpServer {
        name: String,
        timeout: Duration,
        client: RunningService<RoleClient, ()>,
    }

    pub async fn connect(name: &str, config: &McpServerConfig) -> Result<RmcpServer, McpError> {
        let start = |reason: String| McpError::Start { server: name.to_string(), reason };
        let timeout = config.timeout();
        let connecting = async {
            match config {
                McpServerConfig::Stdio(s) => {
                    let mut command = tokio::process::Command::new(&s.command);
                    command.args(&s.args);
                    for (k, v) in &s.env {
                        command.env(k, expand(v).map_err(|e| start(format!("env {k}: {e}")))?);
                    }
                    if let Some(cwd) = &s.cwd {
                        command.current_dir(PathBuf::from(cwd));
                    }
                    // What the server writes on stderr is its own business; it is not shown as ours.
                    let (transport, _) =
                        TokioChildProcess::builder(command).stderr(std::process::Stdio::null()).spawn().map_err(
                            |e| start(format!("`{}` cannot be started ({e}); is it installed and on PATH?", s.command)),
                        )?;
                    ().serve(transport).await.map_err(|e| start(e.to_string()))
                }
                McpServerConfig::Http(h) => {
                    let mut headers = HashMap::new();
                    for (k, v) in &h.headers {
                        let value = expand(v).map_err(|e| start(format!("header {k}: {e}")))?;
                        let header = k.parse().map_err(|_| start(format!("`{k}` is not a valid header name")))?;
                        let value = value.parse().map_err(|_| start(format!("header {k}: not a valid value")))?;
                        headers.insert(header, value);
                    }
                    crate::net::install_crypto();
                    let mut config = StreamableHttpClientTransportConfig::with_uri(h.url.as_str());
                    config.custom_headers = headers;
                    let transport = StreamableHttpClientTransport::with_client(KeyedHttp::new(), config);
                    ().serve(transport).await.map_err(|e| start(format!("{} ({e})", h.url)))
                }
            }
        };
        let client = tokio::time::timeout(timeout, connecting)
            .await
            .map_err(|_| start(format!("no answer within {} s", timeout.as_secs())))??;
        Ok(RmcpServer { name: name.to_string(), timeout, client })
    }

    #[async_trait]
    impl ToolServer for RmcpServer {
        async fn tools(&self) -> Result<Vec<McpTool>, McpError> {
            let failed = |reason: String| McpError::Failed { server: self.name.clone(), reason };
            let tools = tokio::time::timeout(self.timeout, self.client.list_all_tools())
                .await
                .map_err(|_| failed(format!("tools/list did not answer within {} s", self.timeout.as_secs())))?
                .map_err(|e| failed(format!("tools/list failed: {e}")))?;
            Ok(tools
                .into_iter()
                .map(|t| {
                    let annotations = t.annotations.as_ref();
                    let read_only = annotations.and_then(|a| a.read_only_hint).unwrap_or(false);
                    let destructive = annotations.and_then(|a| a.destructive_hint).unwrap_or(!read_only);
                    McpTool {
                        name: t.name.to_string(),
                        description: t.description.map(|d| d.to_string()).unwrap_or_default(),
                        input_schema: Value::Object((*t.input_schema).clone()),
                        destructive: destructive && !read_only,
                    }
                })
                .collect())
        }

        async fn call(&self, tool: &str, input: Value, key: Option<&str>) -> Result<Result<Value, String>, McpError> {
            let mut params = CallToolRequestParams::new(tool.to_string());
            if let Some(key) = key {
                let meta = Map::from_iter([(IDEMPOTENCY_META.to_string(), Value::String(key.to_string()))]);
                params.meta = Some(meta.into());
            }
            match input {
                Value::Object(arguments) => params = params.with_arguments(arguments),
                Value::Null => {}
                other => params = params.with_arguments(Map::from_iter([("input".to_string(), other)])),
            }
            let result = tokio::time::timeout(self.timeout, self.client.call_tool(params))
                .await
                .map_err(|_| McpError::TimedOut {
                    server: self.name.clone(),
                    tool: tool.to_string(),
                    seconds: self.timeout.as_secs(),
                })?
                .map_err(|e| McpError::Failed { server: self.name.clone(), reason: format!("`{tool}` failed: {e}") })?;
            let text: Vec<String> = result.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect();
            let text = text.join("\n");
            if result.is_error == Some(true) {
                return Ok(Err(if text.is_empty() { format!("`{tool}` reported an error") } else { text }));
            }
            Ok(Ok(match result.structured_content {
                Some(structured) => structured,
                None => serde_json::from_str::<Value>(&text).unwrap_or(Value::String(text)),
            }))
        }
    }
}

/// Starts a server and lists its tools: what `switchyard mcp` and the settings' "test" do.
pub async fn probe(name: &str, config: &McpServerConfig) -> Result<Vec<McpTool>, McpError> {
    let server = client::connect(name, config).await?;
    server.tools().await
}

/// A started server and the tools it listed.
type Started = Result<(Arc<dyn ToolServer>, Vec<McpTool>), McpError>;

/// The servers of one run: started on first use, kept for the run, stopped when it ends (when this is dropped).
#[derive(Default)]
pub struct McpSessions {
    configs: BTreeMap<String, McpServerConfig>,
    started: tokio::sync::Mutex<HashMap<String, Started>>,
}

impl McpSessions {
    pub fn new(configs: impl IntoIterator<Item = (String, McpServerConfig)>) -> McpSessions {
        McpSessions { configs: configs.into_iter().collect(), started: Default::default() }
    }

    pub fn is_configured(&self, server: &str) -> bool {
        self.configs.contains_key(server)
    }

    /// The server, started on first use, and its tools. A server that failed to start is not tried again in the run.
    async fn server(&self, name: &str) -> Started {
        let mut started = self.started.lock().await;
        if let Some(known) = started.get(name) {
            return known.clone();
        }
        let config = self.configs.get(name).ok_or_else(|| McpError::Unknown(name.to_string()))?;
        let result = async {
            let server = client::connect(name, config).await?;
            let tools = server.tools().await?;
            Ok((Arc::new(server) as Arc<dyn ToolServer>, tools))
        }
        .await;
        started.insert(name.to_string(), result.clone());
        result
    }

    /// The tools an agent's `tools.mcp` entry offers: every tool of `server`, or `server/tool`.
    pub async fn tools_for(&self, entry: &str) -> Result<Vec<(String, McpTool)>, McpError> {
        let (server, only) = match entry.split_once('/') {
            Some((server, tool)) => (server, Some(tool)),
            None => (entry, None),
        };
        let (_, tools) = self.server(server).await?;
        let chosen: Vec<(String, McpTool)> =
            tools.into_iter().filter(|t| only.is_none_or(|o| o == t.name)).map(|t| (server.to_string(), t)).collect();
        if let (Some(tool), true) = (only, chosen.is_empty()) {
            return Err(McpError::Failed { server: server.to_string(), reason: format!("it has no tool `{tool}`") });
        }
        Ok(chosen)
    }

    /// What `server` said about `tool` when it was listed (starting the server if it has not started).
    pub async fn tool(&self, server: &str, tool: &str) -> Option<McpTool> {
        let (_, tools) = self.server(server).await.ok()?;
        tools.into_iter().find(|t| t.name == tool)
    }

    /// Calls `tool` of `server`, with the call's idempotency key when it has one.
    pub async fn call(
        &self,
        server: &str,
        tool: &str,
        input: Value,
        key: Option<&str>,
    ) -> Result<Result<Value, String>, McpError> {
        let (live, _) = self.server(server).await?;
        live.call(tool, input, key).await
    }
}

/// The tools of the configured servers a workflow names single tools of (`server/tool` in an agent's `tools.mcp` or
/// `call_first`), for validation (`UNKNOWN_MCP_TOOL`): those servers are started and listed, at once; one that does
/// not start is left out (the run warns about it).
pub async fn list_named(
    workflow: &crate::document::Workflow,
    configs: &BTreeMap<String, McpServerConfig>,
) -> BTreeMap<String, Vec<String>> {
    let named: std::collections::BTreeSet<&str> = workflow
        .nodes
        .iter()
        .filter_map(|n| n.tools.as_ref())
        .flat_map(|t| t.mcp.iter().chain(t.call_first.iter()))
        .filter_map(|entry| entry.split_once('/').map(|(server, _)| server))
        .filter(|server| configs.contains_key(*server))
        .collect();
    let listed = futures::future::join_all(named.into_iter().map(|server| async move {
        let tools = probe(server, &configs[server]).await.ok()?;
        Some((server.to_string(), tools.into_iter().map(|t| t.name).collect::<Vec<_>>()))
    }))
    .await;
    listed.into_iter().flatten().collect()
}

/// The name the model sees for a server's tool.
pub fn exposed_name(server: &str, tool: &str) -> String {
    format!("{server}{SEPARATOR}{tool}")
}

/// A tool name as the model or an answers file writes it (`server__tool` or `server/tool`), split; `None` when it is
/// not an MCP tool name.
pub fn split_name(name: &str) -> Option<(&str, &str)> {
    name.split_once('/').or_else(|| name.split_once(SEPARATOR))
}

/// A tool's result as the model is given it.
pub fn result_json(result: &Result<Value, String>) -> Value {
    match result {
        Ok(v) => v.clone(),
        Err(e) => json!({ "error": e }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mcp_servers_json_shape_reads_as_stdio_or_http() {
        let servers: BTreeMap<String, McpServerConfig> = serde_json::from_value(json!({
            "files": {"command": "npx", "args": ["-y", "server"], "env": {"TOKEN": "${GITHUB_TOKEN}"}},
            "remote": {"url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}
        }))
        .unwrap();
        assert!(matches!(servers["files"], McpServerConfig::Stdio(_)));
        assert!(matches!(servers["remote"], McpServerConfig::Http(_)));
        assert!(serde_json::from_value::<McpServerConfig>(json!({"command": "x", "typo": 1})).is_err());
    }

    #[test]
    fn variables_are_expanded_and_a_missing_one_is_named() {
        std::env::set_var("SWITCHYARD_MCP_TEST_VALUE", "abc");
        assert_eq!(expand("Bearer ${SWITCHYARD_MCP_TEST_VALUE}!").unwrap(), "Bearer abc!");
        assert!(expand("${SWITCHYARD_MCP_TEST_MISSING}").unwrap_err().contains("SWITCHYARD_MCP_TEST_MISSING"));
        assert_eq!(split_name("github__create_issue"), Some(("github", "create_issue")));
        assert_eq!(split_name("github/create_issue"), Some(("github", "create_issue")));
        assert_eq!(split_name("plain"), None);
    }
}
