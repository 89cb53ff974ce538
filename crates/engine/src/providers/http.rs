//! The HTTP policy every provider shares: connect and overall timeouts, retries with exponential backoff and jitter
//! on timeouts, 429 (honouring `Retry-After`) and 5xx, no retry on other 4xx, and errors that name the provider.
//! Cancellation needs nothing here: the executor drops the future, which aborts the request at once.

use std::collections::HashMap;
use std::time::Duration;

use futures::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::model::{ModelError, NodeIo};

/// Limits on each model call, from the settings file.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    #[cfg_attr(feature = "specta", specta(type = u32))]
    pub connect_timeout_ms: u64,
    /// The whole call, streaming included.
    #[cfg_attr(feature = "specta", specta(type = u32))]
    pub timeout_ms: u64,
    /// Longest silence while a response streams.
    #[cfg_attr(feature = "specta", specta(type = u32))]
    pub read_timeout_ms: u64,
    /// Retries of a transient failure (so `retries + 1` attempts).
    pub retries: u32,
    /// First backoff; doubled per retry, with up to 50% jitter.
    #[cfg_attr(feature = "specta", specta(type = u32))]
    pub backoff_ms: u64,
    /// Most model turns in one tool-calling loop.
    pub max_tool_turns: u32,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            connect_timeout_ms: 5_000,
            timeout_ms: 300_000,
            read_timeout_ms: 60_000,
            retries: 3,
            backoff_ms: 500,
            max_tool_turns: 8,
        }
    }
}

/// The process's HTTP client for these timeouts, built once. Building one loads the TLS roots (tens of
/// milliseconds), and every run makes its providers afresh: shared, runs also share its connection pool.
fn client_for(limits: &Limits) -> reqwest::Client {
    /// Connect, read and overall timeouts, in milliseconds.
    type Timeouts = (u64, u64, u64);
    static CLIENTS: std::sync::OnceLock<std::sync::Mutex<HashMap<Timeouts, reqwest::Client>>> =
        std::sync::OnceLock::new();
    let timeouts = (limits.connect_timeout_ms, limits.read_timeout_ms, limits.timeout_ms);
    let mut clients = CLIENTS.get_or_init(Default::default).lock().unwrap();
    clients
        .entry(timeouts)
        .or_insert_with(|| {
            crate::net::install_crypto();
            reqwest::Client::builder()
                .connect_timeout(Duration::from_millis(timeouts.0))
                .read_timeout(Duration::from_millis(timeouts.1))
                .timeout(Duration::from_millis(timeouts.2))
                .build()
                .expect("an HTTP client with rustls builds")
        })
        .clone()
}

/// One provider's HTTP client and policy.
pub(crate) struct Http {
    pub client: reqwest::Client,
    pub limits: Limits,
    /// Names the provider in every error.
    pub provider: String,
}

/// A request that failed in a way the caller may handle (e.g. a refused `response_format`).
pub(crate) struct Refused {
    pub status: u16,
    pub body: String,
}

pub(crate) enum Failure {
    Refused(Refused),
    Error(ModelError),
}

impl From<ModelError> for Failure {
    fn from(e: ModelError) -> Failure {
        Failure::Error(e)
    }
}

impl Http {
    pub fn new(provider: &str, limits: Limits) -> Http {
        Http { client: client_for(&limits), limits, provider: provider.to_string() }
    }

    pub fn error(&self, message: impl std::fmt::Display) -> ModelError {
        ModelError::fatal(format!("{}: {message}", self.provider))
    }

    /// Sends `build()` until it succeeds or fails for good. A 4xx other than 429 is returned as `Refused` so the
    /// caller can adapt (or report it); transient failures are retried here, each retry announced through `io`.
    pub async fn send(
        &self,
        io: &dyn NodeIo,
        build: impl Fn() -> reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, Failure> {
        self.send_filtered(io, |_, _| false, build).await
    }

    /// As `send`, but a response that `refuse(status, body)` picks out is returned as `Refused` at once, even a
    /// 5xx (some servers answer an unsupported `response_format` with HTTP 500).
    pub async fn send_filtered(
        &self,
        io: &dyn NodeIo,
        refuse: impl Fn(u16, &str) -> bool,
        build: impl Fn() -> reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, Failure> {
        let mut attempt = 0;
        loop {
            let (problem, wait) = match build().send().await {
                Ok(resp) if resp.status().is_success() => return Ok(resp),
                Ok(resp) => {
                    let status = resp.status().as_u16();
                    let retry_after = resp
                        .headers()
                        .get(reqwest::header::RETRY_AFTER)
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.trim().parse::<f64>().ok())
                        .map(|s| Duration::from_millis((s * 1000.0) as u64));
                    let body = resp.text().await.unwrap_or_default();
                    if (status == 429 || status >= 500) && !refuse(status, &body) {
                        (format!("HTTP {status}: {}", excerpt(&body)), retry_after)
                    } else {
                        return Err(Failure::Refused(Refused { status, body }));
                    }
                }
                Err(e) if e.is_timeout() => ("timed out".to_string(), None),
                Err(e) if e.is_connect() => (format!("cannot connect ({})", root_cause(&e)), None),
                Err(e) => (format!("request failed ({})", root_cause(&e)), None),
            };
            if attempt >= self.limits.retries {
                return Err(Failure::Error(ModelError::fatal(format!(
                    "{}: {problem} (gave up after {} attempts)",
                    self.provider,
                    attempt + 1
                ))));
            }
            attempt += 1;
            let wait = wait.unwrap_or_else(|| self.backoff(attempt));
            io.retry_notice(&format!(
                "{}: {problem}; retry {attempt} of {} in {} ms",
                self.provider,
                self.limits.retries,
                wait.as_millis()
            ));
            tokio::time::sleep(wait).await;
        }
    }

    /// Exponential backoff with up to 50% jitter.
    pub fn backoff(&self, attempt: u32) -> Duration {
        let base = self.limits.backoff_ms.saturating_mul(1 << (attempt - 1).min(16));
        Duration::from_millis(base + fastrand::u64(0..=base / 2))
    }

    /// Turns a refused request into an error that says what to do.
    pub fn refused(&self, r: &Refused, key_env: Option<&str>) -> ModelError {
        let hint = match r.status {
            401 | 403 => match key_env {
                Some(env) => format!("; check the API key in ${env}"),
                None => "; this provider needs an API key: set api_key_env in the settings".to_string(),
            },
            404 => "; check the base_url and the model name".to_string(),
            _ => String::new(),
        };
        self.error(format!("HTTP {}: {}{hint}", r.status, excerpt(&r.body)))
    }

    /// Reads a JSON body, naming the provider when it is not JSON.
    pub async fn json(&self, resp: reqwest::Response) -> Result<Value, ModelError> {
        let text =
            resp.text().await.map_err(|e| self.error(format!("reading the response failed: {}", root_cause(&e))))?;
        serde_json::from_str(&text)
            .map_err(|e| self.error(format!("malformed JSON in the response ({e}): {}", excerpt(&text))))
    }

    /// Server-sent events of a streaming response, each parsed as JSON (`[DONE]` ends the stream).
    pub fn events(
        &self,
        resp: reqwest::Response,
    ) -> impl futures::Stream<Item = Result<SseEvent, ModelError>> + Send + Unpin + '_ {
        use eventsource_stream::Eventsource;
        Box::pin(resp.bytes_stream().eventsource().map(move |item| {
            match item {
                Err(e) => Err(self.error(format!("the stream broke: {e}"))),
                Ok(ev) if ev.data.trim() == "[DONE]" => Ok(SseEvent { event: ev.event, data: None }),
                Ok(ev) => serde_json::from_str(&ev.data)
                    .map(|data| SseEvent { event: ev.event, data: Some(data) })
                    .map_err(|e| self.error(format!("malformed JSON in the stream ({e}): {}", excerpt(&ev.data)))),
            }
        }))
    }
}

pub(crate) struct SseEvent {
    /// The SSE `event:` name (Anthropic uses it; OpenAI leaves it `message`).
    pub event: String,
    /// `None` for OpenAI's `[DONE]`.
    pub data: Option<Value>,
}

pub(crate) fn excerpt(text: &str) -> String {
    let one_line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() > 300 {
        format!("{}…", one_line.chars().take(300).collect::<String>())
    } else {
        one_line
    }
}

fn root_cause(e: &reqwest::Error) -> String {
    let mut source: &dyn std::error::Error = e;
    while let Some(s) = source.source() {
        source = s;
    }
    source.to_string()
}
