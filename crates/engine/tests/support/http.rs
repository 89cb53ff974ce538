//! A tiny HTTP server on 127.0.0.1 that answers each request with the next scripted reply, so provider tests can
//! misbehave on purpose (429, 5xx, hangs, malformed JSON, streams cut mid-way) and record what clients sent.
#![allow(dead_code)]

use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

#[derive(Clone, Debug)]
pub enum Reply {
    /// A complete response.
    Body { status: u16, headers: Vec<(&'static str, String)>, body: String },
    /// A server-sent event stream; `cut_after` closes the connection after that many events, mid-body.
    Sse { events: Vec<String>, cut_after: Option<usize> },
    /// Reads the request and never answers.
    Hang,
}

impl Reply {
    pub fn json(status: u16, body: &Value) -> Reply {
        Reply::Body { status, headers: vec![("content-type", "application/json".into())], body: body.to_string() }
    }

    pub fn text(status: u16, body: &str) -> Reply {
        Reply::Body { status, headers: vec![("content-type", "application/json".into())], body: body.to_string() }
    }

    /// An OpenAI-style stream of text deltas, ending with a finish reason, usage and `[DONE]`.
    pub fn openai_stream(pieces: &[&str]) -> Reply {
        let mut events: Vec<String> = pieces
            .iter()
            .map(|p| {
                serde_json::json!({"choices": [{"index": 0, "delta": {"content": p}, "finish_reason": null}]})
                    .to_string()
            })
            .collect();
        events.push(serde_json::json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}).to_string());
        events.push(
            serde_json::json!({"choices": [], "usage": {"prompt_tokens": 11, "completion_tokens": pieces.len()}})
                .to_string(),
        );
        events.push("[DONE]".into());
        Reply::Sse { events: events.into_iter().map(|e| format!("data: {e}\n\n")).collect(), cut_after: None }
    }

    /// An OpenAI-style stream of one tool call (`name` with `arguments`), ending with a finish reason and usage.
    pub fn openai_tool_call(id: &str, name: &str, arguments: &Value) -> Reply {
        let call = serde_json::json!({"index": 0, "id": id, "type": "function",
            "function": {"name": name, "arguments": arguments.to_string()}});
        let events = [
            serde_json::json!({"choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": null}]}),
            serde_json::json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
            serde_json::json!({"choices": [], "usage": {"prompt_tokens": 20, "completion_tokens": 5}}),
        ];
        let mut events: Vec<String> = events.iter().map(|e| format!("data: {e}\n\n")).collect();
        events.push("data: [DONE]\n\n".into());
        Reply::Sse { events, cut_after: None }
    }
}

/// Decides each reply from the request and its number (from 0), for a server that answers what it is asked.
pub type Responder = Arc<dyn Fn(&Recorded, usize) -> Reply + Send + Sync>;

#[derive(Clone, Debug)]
pub struct Recorded {
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

pub struct TestServer {
    pub url: String,
    pub requests: Arc<Mutex<Vec<Recorded>>>,
}

impl TestServer {
    /// Serves `replies` in order, one per request; the last one repeats.
    pub async fn start(replies: Vec<Reply>) -> TestServer {
        TestServer::answering(Arc::new(move |_, served| replies.get(served).or(replies.last()).cloned().unwrap())).await
    }

    /// Answers each request with what `respond` makes of it.
    pub async fn answering(respond: Responder) -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let recorded = requests.clone();
        tokio::spawn(async move {
            let mut served = 0usize;
            loop {
                let Ok((mut socket, _)) = listener.accept().await else { return };
                // Replies are written in pieces (a head, then events): without this, Nagle's algorithm holds each
                // piece until the client acknowledges the last, which it delays (~40 ms a reply).
                let _ = socket.set_nodelay(true);
                let (at, respond) = (served, respond.clone());
                served += 1;
                let recorded = recorded.clone();
                tokio::spawn(async move {
                    let Some(request) = read_request(&mut socket).await else { return };
                    let reply = respond(&request, at);
                    recorded.lock().unwrap().push(request);
                    match reply {
                        Reply::Hang => {
                            let mut sink = [0u8; 64];
                            let _ = socket.read(&mut sink).await; // until the client goes away
                        }
                        Reply::Body { status, headers, body } => {
                            let mut head = format!(
                                "HTTP/1.1 {status} X\r\ncontent-length: {}\r\nconnection: close\r\n",
                                body.len()
                            );
                            for (k, v) in headers {
                                head.push_str(&format!("{k}: {v}\r\n"));
                            }
                            head.push_str("\r\n");
                            let _ = socket.write_all(head.as_bytes()).await;
                            let _ = socket.write_all(body.as_bytes()).await;
                        }
                        Reply::Sse { events, cut_after } => {
                            let total: usize = events.iter().map(String::len).sum();
                            let head = format!(
                                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {total}\r\nconnection: close\r\n\r\n"
                            );
                            let _ = socket.write_all(head.as_bytes()).await;
                            for (i, e) in events.iter().enumerate() {
                                if cut_after == Some(i) {
                                    break;
                                }
                                let _ = socket.write_all(e.as_bytes()).await;
                                let _ = socket.flush().await;
                            }
                        }
                    }
                    let _ = socket.shutdown().await;
                });
            }
        });
        TestServer { url, requests }
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }
}

async fn read_request(socket: &mut tokio::net::TcpStream) -> Option<Recorded> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let header_end = loop {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..header_end]).to_string();
    let mut lines = head.lines();
    let path = lines.next()?.split_whitespace().nth(1)?.to_string();
    let headers: Vec<(String, String)> =
        lines.filter_map(|l| l.split_once(':').map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))).collect();
    let length: usize = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    while buf.len() < header_end + length {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let body = serde_json::from_slice(&buf[header_end..]).unwrap_or(Value::Null);
    Some(Recorded { path, headers, body })
}
