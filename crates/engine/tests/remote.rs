//! The client of a Switchyard server (`remote`) against a real socket that answers as a server would, and as
//! things that are not a server do: every way a request can fail reaches the caller with its code, and a followed
//! run's event stream is taken up again after the last event received when the connection drops. The client against
//! the real `switchyard serve` is driven end to end by e2e/server.test.mjs.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use switchyard_engine::events::Event;
use switchyard_engine::providers::ServerConfig;
use switchyard_engine::remote::{Remote, RemoteError};

/// A listener that answers each connection with the next of `answers` (raw HTTP), and keeps each request's first
/// line and headers.
fn answering(answers: Vec<String>) -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let heard = seen.clone();
    std::thread::spawn(move || {
        for (stream, answer) in listener.incoming().zip(answers) {
            let mut stream = stream.unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut head = String::new();
            let mut length = 0;
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap();
                }
                if line == "\r\n" {
                    break;
                }
                head.push_str(&line);
            }
            let mut body = vec![0; length];
            std::io::Read::read_exact(&mut reader, &mut body).unwrap();
            heard.lock().unwrap().push(format!("{head}\n{}", String::from_utf8_lossy(&body)));
            stream.write_all(answer.as_bytes()).unwrap();
        }
    });
    (url, seen)
}

fn json_answer(status: &str, body: &Value) -> String {
    let body = body.to_string();
    format!(
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
}

fn sse_answer(events: &[u64], end: bool) -> String {
    let mut body = String::new();
    for seq in events {
        let event = json!({"seq": seq, "run": "r1", "ts": "", "type": "node:enter", "node": "a", "iteration": 1, "instruction": ""});
        body.push_str(&format!("id: {seq}\nevent: node:enter\ndata: {event}\n\n"));
    }
    if end {
        body.push_str("event: end\ndata: {}\n\n");
    }
    format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
}

fn remote(url: &str, var: &str) -> Remote {
    std::env::set_var(var, "sy_secret-token");
    Remote::new(&ServerConfig { url: url.into(), token_env: var.into() }).unwrap()
}

#[tokio::test]
async fn a_command_is_posted_with_its_arguments_and_the_token_and_answers_with_the_servers_value() {
    let (url, seen) = answering(vec![json_answer("200 OK", &json!([{"id": "r1"}]))]);
    let runs: Value = remote(&url, "SY_TEST_TOKEN_A").call("list_runs", json!({"a": 1})).await.unwrap();
    assert_eq!(runs, json!([{"id": "r1"}]));
    let request = seen.lock().unwrap()[0].clone();
    assert!(request.starts_with("POST /api/commands/list_runs HTTP/1.1"), "{request}");
    assert!(request.to_ascii_lowercase().contains("authorization: bearer sy_secret-token"), "{request}");
    assert!(request.ends_with("{\"a\":1}"), "{request}");
}

#[tokio::test]
async fn a_refusal_keeps_the_servers_code_and_message() {
    let refusal = json!({"code": "NOT_PENDING", "message": "run `r1` does not wait for `review`"});
    let (url, _) = answering(vec![json_answer("409 Conflict", &refusal)]);
    let e = remote(&url, "SY_TEST_TOKEN_B").call::<Value>("decide", json!({})).await.unwrap_err();
    assert_eq!((e.code(), e.to_string()), ("NOT_PENDING", "run `r1` does not wait for `review`".to_string()));
}

#[tokio::test]
async fn an_answer_that_is_not_a_switchyard_servers_is_server_unreadable() {
    let page = "HTTP/1.1 502 Bad Gateway\r\ncontent-type: text/html\r\ncontent-length: 12\r\nconnection: close\r\n\r\n<h1>502</h1>".to_string();
    let (url, _) = answering(vec![page, json_answer("500 Internal Server Error", &json!({"error": "x"}))]);
    let remote = remote(&url, "SY_TEST_TOKEN_C");
    let e = remote.call::<Value>("list_runs", json!({})).await.unwrap_err();
    assert_eq!(e.code(), "SERVER_UNREADABLE", "{e}");
    let e = remote.call::<Value>("list_runs", json!({})).await.unwrap_err();
    assert_eq!(e.code(), "SERVER_UNREADABLE", "{e}");
    assert!(e.to_string().contains("without a code"), "{e}");
}

#[tokio::test]
async fn a_server_that_does_not_answer_is_server_unreachable_naming_its_address() {
    let free = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let url = format!("http://{free}");
    let e = remote(&url, "SY_TEST_TOKEN_D").call::<Value>("list_runs", json!({})).await.unwrap_err();
    assert_eq!(e.code(), "SERVER_UNREACHABLE");
    assert!(e.to_string().contains(&url), "{e}");
}

#[test]
fn a_token_variable_that_is_not_set_is_server_no_token_naming_the_variable() {
    std::env::remove_var("SY_TEST_TOKEN_UNSET");
    let config = ServerConfig { url: "http://127.0.0.1:9".into(), token_env: "SY_TEST_TOKEN_UNSET".into() };
    let e = Remote::new(&config).unwrap_err();
    assert!(matches!(e, RemoteError::NoToken { .. }));
    assert_eq!(e.code(), "SERVER_NO_TOKEN");
    assert!(e.to_string().contains("$SY_TEST_TOKEN_UNSET"), "{e}");
}

#[tokio::test]
async fn a_followed_run_is_taken_up_after_the_last_event_received_when_its_stream_drops_and_ends_with_the_run() {
    let (url, seen) = answering(vec![sse_answer(&[4, 5], false), sse_answer(&[6], true)]);
    let remote = remote(&url, "SY_TEST_TOKEN_E");
    let mut got: Vec<Vec<u64>> = Vec::new();
    remote
        .follow(
            "r1",
            3,
            |events: Vec<Event>| {
                got.push(events.iter().map(|e| e.seq).collect());
                true
            },
            || false,
        )
        .await;
    assert_eq!(got.concat(), [4, 5, 6]);
    let requests: Vec<String> = seen.lock().unwrap().iter().map(|r| r.lines().next().unwrap().to_string()).collect();
    assert_eq!(requests, ["GET /api/runs/r1/events?after=3 HTTP/1.1", "GET /api/runs/r1/events?after=5 HTTP/1.1"]);
}

#[tokio::test]
async fn a_followed_run_gives_each_event_once_when_a_stream_sends_again_what_was_received() {
    let (url, _seen) =
        answering(vec![sse_answer(&[4, 5], false), sse_answer(&[5, 6], false), sse_answer(&[3, 7], true)]);
    let remote = remote(&url, "SY_TEST_TOKEN_G");
    let mut got: Vec<u64> = Vec::new();
    remote
        .follow(
            "r1",
            3,
            |events: Vec<Event>| {
                got.extend(events.iter().map(|e| e.seq));
                true
            },
            || false,
        )
        .await;
    assert_eq!(got, [4, 5, 6, 7]);
}

#[tokio::test]
async fn following_stops_when_the_server_has_no_such_run() {
    let missing = json!({"code": "NO_SUCH_RUN", "message": "no run `r9`"});
    let (url, seen) = answering(vec![json_answer("404 Not Found", &missing)]);
    let mut calls = 0;
    remote(&url, "SY_TEST_TOKEN_F")
        .follow(
            "r9",
            0,
            |_| {
                calls += 1;
                true
            },
            || false,
        )
        .await;
    assert_eq!((calls, seen.lock().unwrap().len()), (0, 1), "it returned after one request, delivering nothing");
}
