//! A client of a Switchyard server (`switchyard serve`, docs/server.md): the app's commands over its command route
//! (`POST /api/commands/NAME`) and a run's events over its event stream (`GET /api/runs/ID/events`). The desktop
//! shell lists, follows and decides a server's runs through it; the web app reaches the same routes from the browser.
//!
//! Invariants: the token comes from the environment variable the settings name and goes only into the
//! `Authorization` header (never into an error, a log line or an event); a server's refusal keeps the server's code.

use std::time::Duration;

use futures::StreamExt;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::events::Event;
use crate::providers::ServerConfig;

/// Why a request to a server failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum RemoteError {
    #[error("the server at {url} does not answer: {detail}")]
    Unreachable { url: String, detail: String },
    #[error("${var} is not set: it should hold a token for the server at {url}")]
    NoToken { var: String, url: String },
    /// The server refused, with its own code.
    #[error("{message}")]
    Refused { code: String, message: String },
    #[error("the server at {url} answered something that is not Switchyard's: {detail}")]
    Unreadable { url: String, detail: String },
}

impl RemoteError {
    pub fn code(&self) -> &str {
        match self {
            RemoteError::Unreachable { .. } => "SERVER_UNREACHABLE",
            RemoteError::NoToken { .. } => "SERVER_NO_TOKEN",
            RemoteError::Refused { code, .. } => code,
            RemoteError::Unreadable { .. } => "SERVER_UNREADABLE",
        }
    }
}

/// A server, with the token to reach it.
#[derive(Clone)]
pub struct Remote {
    url: String,
    token: String,
    http: reqwest::Client,
}

impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Remote").field("url", &self.url).finish_non_exhaustive()
    }
}

impl Remote {
    /// The server the settings name, with the token from the variable they name.
    pub fn new(config: &ServerConfig) -> Result<Remote, RemoteError> {
        let url = config.url.trim().trim_end_matches('/').to_string();
        let token =
            config.token().ok_or_else(|| RemoteError::NoToken { var: config.token_env.clone(), url: url.clone() })?;
        crate::net::install_crypto();
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .build()
            .map_err(|e| RemoteError::Unreachable { url: url.clone(), detail: e.to_string() })?;
        Ok(Remote { url, token, http })
    }

    /// `HOST:PORT`, as people name the server.
    pub fn host(&self) -> &str {
        self.url.split_once("://").map_or(&self.url, |(_, rest)| rest)
    }

    /// The app's command `name` with `args` (named as the generated client names them: `{"runId": …}`), on the
    /// server: its value, or the server's refusal with its code.
    pub async fn call<T: DeserializeOwned>(&self, name: &str, args: Value) -> Result<T, RemoteError> {
        let unreachable = |e: reqwest::Error| RemoteError::Unreachable { url: self.url.clone(), detail: e.to_string() };
        let response = self
            .http
            .post(format!("{}/api/commands/{name}", self.url))
            .bearer_auth(&self.token)
            .timeout(Duration::from_secs(30))
            .json(&args)
            .send()
            .await
            .map_err(unreachable)?;
        let status = response.status();
        let body: Value = response.json().await.map_err(|e| self.unreadable(e.to_string()))?;
        if !status.is_success() {
            let text = |k: &str| body.get(k).and_then(Value::as_str).map(str::to_string);
            return match (text("code"), text("message")) {
                (Some(code), Some(message)) => Err(RemoteError::Refused { code, message }),
                _ => Err(self.unreadable(format!("status {status} without a code"))),
            };
        }
        serde_json::from_value(body).map_err(|e| self.unreadable(e.to_string()))
    }

    /// Sends run `run`'s events numbered after `after` to `send`, a batch per arrival, as the server writes them;
    /// reconnects after the last event received when the connection drops (the server restarted), until the run
    /// ends, the server says it has no such run or refuses the token, `send` returns false, or `stop` says so.
    /// What `session::follow` promises a follower, over HTTP: each event once, in order, numbered after the last one
    /// delivered, and the end only after the last (the server's stream is `session::follow`, which reads the run's
    /// status before its events). The browser's transport (`ui/src/transport`) follows the same stream the same way.
    pub async fn follow(
        &self,
        run: &str,
        after: u64,
        mut send: impl FnMut(Vec<Event>) -> bool,
        stop: impl Fn() -> bool,
    ) {
        let mut last = after;
        while !stop() {
            let url = format!("{}/api/runs/{run}/events?after={last}", self.url);
            if let Ok(response) = self.http.get(url).bearer_auth(&self.token).send().await {
                let status = response.status().as_u16();
                if status == 401 || status == 404 {
                    return;
                }
                if response.status().is_success() {
                    use eventsource_stream::Eventsource;
                    let mut batches = response.bytes_stream().eventsource().ready_chunks(256);
                    while let Some(items) = batches.next().await {
                        let mut events = Vec::new();
                        let mut ended = false;
                        for item in items {
                            let Ok(sse) = item else { break };
                            if sse.event == "end" {
                                ended = true;
                            } else if let Ok(event) = serde_json::from_str::<Event>(&sse.data) {
                                // Each once, in order: what a stream sends again (not after the last) is not news.
                                if event.seq > last {
                                    last = event.seq;
                                    events.push(event);
                                }
                            }
                        }
                        if (!events.is_empty() && !send(events)) || ended || stop() {
                            return;
                        }
                    }
                }
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }

    fn unreadable(&self, detail: String) -> RemoteError {
        RemoteError::Unreadable { url: self.url.clone(), detail }
    }
}
