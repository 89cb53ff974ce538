//! A bounded fuzzer of the HTTP API against a real server on a real PostgreSQL (`pg_cluster.rs`): a few hundred
//! requests from a seeded generator over every route `/openapi.json` lists, with good and bad tokens, bodies, path
//! segments and headers (NUL characters, bytes that are not UTF-8, huge bodies and ids, file references). Every
//! answer must come (no panic drops a connection), none may be a 5xx, every failure must be `{code, message}`, and
//! no answer may hold a file the request named. `SWITCHYARD_FUZZ_SEED=N` replays one seed.

#[path = "../../engine/tests/support/pg_cluster.rs"]
mod pg_cluster;

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use switchyard_engine::store::postgres::team::new_token;
use switchyard_engine::store::postgres::PgStore;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const GATE: &str = "switchyard: 1
name: gate
triggers:
  - {webhook: open}
  - {webhook: keyed, secret_env: SWITCHYARD_FUZZ_SECRET}
input_schema: {type: object}
nodes:
  - {id: start, type: start}
  - {id: review, type: approval}
edges: [{from: start, to: review}]
";

/// xorshift64*: the same requests for the same seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
}

/// One request, as bytes on the wire.
struct Request {
    method: String,
    target: String,
    headers: Vec<(String, Vec<u8>)>,
    body: Vec<u8>,
}

/// An answer: its status, its content type and its body (none kept for an event stream, which is left open).
struct Answer {
    status: u16,
    content_type: String,
    body: String,
}

/// Sends `request` over a plain TCP connection (so that any bytes go as they are), reading while it writes: a server
/// may answer before it has read a body it refuses.
async fn send(addr: &str, request: &Request) -> Result<Answer, String> {
    let stream = tokio::net::TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
    let (mut reader, mut writer) = stream.into_split();
    let mut wire =
        format!("{} {} HTTP/1.1\r\nHost: fuzz\r\nConnection: close\r\n", request.method, request.target).into_bytes();
    for (name, value) in &request.headers {
        wire.extend_from_slice(name.as_bytes());
        wire.extend_from_slice(b": ");
        wire.extend_from_slice(value);
        wire.extend_from_slice(b"\r\n");
    }
    wire.extend_from_slice(format!("Content-Length: {}\r\n\r\n", request.body.len()).as_bytes());
    wire.extend_from_slice(&request.body);
    let writing = tokio::spawn(async move {
        let _ = writer.write_all(&wire).await;
        writer // kept open until the answer is read: a half-closed connection is given up by the server
    });
    let mut got = Vec::new();
    let mut buffer = [0u8; 16384];
    let read = async {
        loop {
            let n = reader.read(&mut buffer).await.map_err(|e| e.to_string())?;
            if n == 0 {
                return Ok::<_, String>(());
            }
            got.extend_from_slice(&buffer[..n]);
            let text = String::from_utf8_lossy(&got);
            if let Some((head, body)) = text.split_once("\r\n\r\n") {
                let head = head.to_ascii_lowercase();
                if head.contains("content-type: text/event-stream") {
                    return Ok(()); // a stream stays open: its answer is its head
                }
                let length =
                    head.lines().find_map(|l| l.strip_prefix("content-length: ")?.trim().parse::<usize>().ok());
                if length.is_some_and(|l| body.len() >= l) {
                    return Ok(());
                }
            }
        }
    };
    let outcome = tokio::time::timeout(Duration::from_secs(10), read).await;
    writing.abort();
    outcome.map_err(|_| "no answer within 10 s".to_string())??;
    let text = String::from_utf8_lossy(&got).to_string();
    let (head, body) = text.split_once("\r\n\r\n").ok_or_else(|| format!("no answer (connection closed): {text:?}"))?;
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).ok_or_else(|| format!("no status: {head}"))?;
    let content_type = head
        .lines()
        .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-type: ").map(str::to_string))
        .unwrap_or_default();
    Ok(Answer { status, content_type, body: body.to_string() })
}

/// `../`s from the server's working folder (this test's) up to the root, then `file`.
fn reaching(file: &std::path::Path) -> String {
    let up = std::env::current_dir().unwrap().components().count() - 1;
    format!("{}{}", "../".repeat(up), file.display().to_string().trim_start_matches('/'))
}

/// Text a field may get.
fn text(rng: &mut Rng, secret: &str) -> String {
    match rng.below(12) {
        0 => String::new(),
        1 => "a\u{0}b".into(),
        2 => "\u{0}".into(),
        3 => "x".repeat(rng.below(70_000)),
        4 => secret.to_string(),
        5 => "../../../../../../etc/passwd".into(),
        6 => "{{ secrets }} {% raw %}".into(),
        7 => "é😀\u{202e}\u{fffd}".into(),
        8 => "review".into(),
        9 => "approve".into(),
        10 => "gate".into(),
        _ => format!("k{}", rng.next()),
    }
}

/// A JSON value, `depth` deep at most.
fn value(rng: &mut Rng, secret: &str, depth: usize) -> Value {
    match rng.below(if depth == 0 { 6 } else { 9 }) {
        0 => Value::Null,
        1 => json!(rng.chance(50)),
        2 => json!(rng.next()),
        3 => json!(-(rng.below(1000) as i64)),
        4 => json!(1e308),
        5 => Value::String(text(rng, secret)),
        6 => Value::Array((0..rng.below(4)).map(|_| value(rng, secret, depth - 1)).collect()),
        _ => {
            let mut map = serde_json::Map::new();
            for _ in 0..rng.below(5) {
                map.insert(text(rng, secret), value(rng, secret, depth - 1));
            }
            Value::Object(map)
        }
    }
}

/// Documents whose file references name the secret file or a system file.
fn documents(secret: &str) -> Vec<String> {
    vec![
        format!("id: f\nname: F\nentry: a\nnodes:\n  a: {{name: A, instruction: '{secret}'}}\nedges: []\n"),
        format!("id: f\nname: F\nentry: a\nnodes:\n  a: {{name: A, instruction: {{file: '{secret}'}}}}\nedges: []\n"),
        "id: f\nname: F\nentry: a\nnodes:\n  a: {name: A, instruction: ../../../../../../etc/passwd}\nedges: []\n"
            .into(),
        format!(
            "name: e\nversion: 0.1.0\nstate: {{schema: {{}}}}\ngraph:\n  nodes:\n    - {{id: a, kind: agent, prompt: \
             '{secret}'}}\n  edges: []\n"
        ),
        "switchyard: 1\nname: s\ninput_schema: {$ref: 'file:///etc/passwd'}\nnodes: [{id: start, type: start}]\n"
            .into(),
    ]
}

/// A command's arguments, the shapes the app sends and others.
fn arguments(rng: &mut Rng, secret: &str, run: &str) -> Value {
    let documents = documents(secret);
    let workflow = json!({"switchyard": 1, "name": text(rng, secret), "nodes": [{"id": "start", "type": "start"},
        {"id": "x", "type": "script", "language": "python", "module": secret}], "edges": []});
    match rng.below(8) {
        0 => {
            let other = text(rng, secret);
            json!({"runId": rng.pick(&[run.to_string(), other]).clone()})
        }
        1 => json!({"runId": run, "node": text(rng, secret), "decision": text(rng, secret), "note": text(rng, secret)}),
        2 => json!({"text": rng.pick(&documents).clone(), "format": rng.pick(&[json!(null), json!("sweny"),
            json!("openexpertise"), json!("nope")]).clone()}),
        3 => json!({"workflow": workflow}),
        4 => json!({"request": {"workflow": workflow, "workflowPath": secret, "input": value(rng, secret, 3)}}),
        5 => {
            let other = text(rng, secret);
            json!({"path": rng.pick(&[secret.to_string(), "/etc/passwd".into(), other]).clone()})
        }
        6 => json!({"workflow": text(rng, secret)}),
        _ => value(rng, secret, 3),
    }
}

/// A path segment: a real id or name, or something else.
fn segment(rng: &mut Rng, real: &str) -> String {
    match rng.below(11) {
        0..=3 => real.to_string(),
        4 => "%00".into(),
        5 => "a%00b".into(),
        6 => "%FF%FE".into(),
        7 => "%C3%28".into(),
        8 => "x".repeat(10_000),
        9 => "..%2F..%2F..%2Fetc%2Fpasswd".into(),
        _ => "%E2%80%AE%F0%9F%98%80".into(),
    }
}

/// Every command of the app (the server answers some, refuses the rest), and one it does not have.
fn commands() -> Vec<&'static str> {
    switchyard_api::COMMANDS.iter().copied().chain(["no_such"]).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_few_hundred_requests_of_every_shape_get_an_answer_none_a_5xx_every_failure_code_and_message() {
    std::env::set_var("SWITCHYARD_FUZZ_SECRET", "s3cret");
    let db = pg_cluster::database("fuzz");
    let store = tokio::task::spawn_blocking(move || PgStore::open(&db).unwrap()).await.unwrap();
    let folder = tempfile::tempdir().unwrap();
    std::fs::write(folder.path().join("gate.yaml"), GATE).unwrap();
    let ui = tempfile::tempdir().unwrap();
    std::fs::write(ui.path().join("index.html"), "<html>the app</html>").unwrap();
    let private = tempfile::tempdir().unwrap();
    let secret_file = private.path().join("secret.md");
    std::fs::write(&secret_file, "fuzz-secret-7f3a").unwrap();
    let secret = reaching(&secret_file);
    let (token, hash) = new_token();
    store.create_token("fuzz", &hash).await.unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let options = switchyard_server::Options {
        listen: addr,
        workflows: folder.path().to_path_buf(),
        answers: None,
        ui: Some(ui.path().to_path_buf()),
        retention: None,
    };
    tokio::spawn(switchyard_server::serve(store.clone(), options, Arc::new(|_| {}), std::future::pending()));
    let addr = addr.to_string();
    let get = |target: &str, auth: bool| Request {
        method: "GET".into(),
        target: target.into(),
        headers: if auth { vec![("Authorization".into(), format!("Bearer {token}").into_bytes())] } else { vec![] },
        body: Vec::new(),
    };
    let mut openapi = None;
    for _ in 0..400 {
        if let Ok(answer) = send(&addr, &get("/openapi.json", false)).await {
            openapi = Some(serde_json::from_str::<Value>(&answer.body).unwrap());
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let openapi = openapi.expect("the server answers");
    // Every route the document lists, with its methods.
    let mut routes: Vec<(String, String)> = Vec::new();
    for (path, item) in openapi["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys().filter(|m| *m != "parameters") {
            routes.push((method.to_uppercase(), path.clone()));
        }
    }
    assert!(routes.len() >= 9, "{routes:?}");
    // A run to name.
    let start = Request {
        method: "POST".into(),
        target: "/api/runs".into(),
        headers: vec![
            ("Authorization".into(), format!("Bearer {token}").into_bytes()),
            ("Content-Type".into(), b"application/json".to_vec()),
        ],
        body: br#"{"workflow": "gate", "input": {}}"#.to_vec(),
    };
    let started = send(&addr, &start).await.unwrap();
    assert_eq!(started.status, 201, "{}", started.body);
    let run = serde_json::from_str::<Value>(&started.body).unwrap()["id"].as_str().unwrap().to_string();

    let seed: u64 = std::env::var("SWITCHYARD_FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5eed_2026);
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let began = Instant::now();
    let mut sent = 0;
    let mut statuses = std::collections::BTreeMap::<u16, usize>::new();
    while sent < 400 && began.elapsed() < Duration::from_secs(20) {
        let (method, path) = rng.pick(&routes).clone();
        let method =
            if rng.chance(8) { rng.pick(&["PUT", "DELETE", "PATCH", "OPTIONS", "FOO"]).to_string() } else { method };
        let mut target = path.clone();
        for (name, real) in [("{id}", run.as_str()), ("{name}", "")] {
            if target.contains(name) {
                let real = if path.starts_with("/hooks") {
                    rng.pick(&["open", "keyed", "nope"]).to_string()
                } else if path.contains("commands") {
                    rng.pick(&commands()).to_string()
                } else {
                    real.to_string()
                };
                target = target.replace(name, &segment(&mut rng, &real));
            }
        }
        let query = match rng.below(8) {
            0 => "?limit=18446744073709551615",
            1 => "?after=9223372036854775808",
            2 => "?limit=-1&after=x",
            3 => "?after=%00",
            4 => "?limit=%FF",
            _ => "",
        };
        target.push_str(query);
        let mut headers: Vec<(String, Vec<u8>)> = Vec::new();
        let auth: Vec<u8> = match rng.below(12) {
            0 => Vec::new(),
            1 => b"Bearer sy_not_a_token".to_vec(),
            2 => b"Bearer \xff\xfe".to_vec(),
            3 => format!("Bearer {}", "t".repeat(5000)).into_bytes(),
            _ => format!("Bearer {token}").into_bytes(),
        };
        if !auth.is_empty() {
            headers.push(("Authorization".into(), auth));
        }
        if rng.chance(70) {
            let kinds: [&[u8]; 3] = [b"application/json", b"text/plain", b"application/json; charset=\xff"];
            headers.push(("Content-Type".into(), rng.pick(&kinds).to_vec()));
        }
        if rng.chance(30) {
            let lasts: [&[u8]; 6] = [b"3", b"18446744073709551615", b"-1", b"\xff", b"abc", b""];
            headers.push(("Last-Event-ID".into(), rng.pick(&lasts).to_vec()));
        }
        if rng.chance(30) {
            let keys: [&[u8]; 4] = [b"k-1", b"cl\xc3\xa9", b"\xff\xfe", b""];
            let key = rng.pick(&keys).to_vec();
            let key = if rng.chance(10) { vec![b'k'; 3000] } else { key };
            headers.push(("Idempotency-Key".into(), key));
        }
        if rng.chance(20) {
            let signature = rng.pick(&["sha256=00", "sha256=zz", "nothex"]).to_string();
            headers.push(("X-Switchyard-Signature".into(), signature.into_bytes()));
        }
        let body: Vec<u8> = match rng.below(10) {
            0 => Vec::new(),
            1 => b"{not json".to_vec(),
            2 => b"\xff\xfe\x00\x01".to_vec(),
            3 if rng.chance(25) => vec![b' '; 3 * 1024 * 1024],
            4 => json!({"workflow": text(&mut rng, &secret), "input": value(&mut rng, &secret, 3)})
                .to_string()
                .into_bytes(),
            5 => json!({"node": text(&mut rng, &secret), "decision": text(&mut rng, &secret),
                "note": text(&mut rng, &secret)})
            .to_string()
            .into_bytes(),
            6 => format!("[{}]", "[".repeat(200) + &"]".repeat(200)).into_bytes(),
            _ => arguments(&mut rng, &secret, &run).to_string().into_bytes(),
        };
        let request = Request { method: method.clone(), target: target.clone(), headers, body };
        let said = format!("seed {seed}, request {sent}: {method} {}", target.chars().take(120).collect::<String>());
        let answer = send(&addr, &request).await.unwrap_or_else(|e| panic!("{said}: {e}"));
        *statuses.entry(answer.status).or_default() += 1;
        assert!(answer.status < 500, "{said}: {} {}", answer.status, answer.body);
        assert!(
            !answer.body.contains("fuzz-secret-7f3a") && !answer.body.contains("root:x:0:0"),
            "{said}: a file the request named was read: {}",
            answer.body
        );
        if answer.status >= 400 {
            assert!(answer.content_type.starts_with("application/json"), "{said}: {} {}", answer.status, answer.body);
            let failure: Value =
                serde_json::from_str(&answer.body).unwrap_or_else(|e| panic!("{said}: {e}: {}", answer.body));
            let fields: Vec<_> = failure.as_object().map(|o| o.keys().cloned().collect()).unwrap_or_default();
            assert_eq!(fields, ["code", "message"], "{said}: {}", answer.body);
            assert!(failure["code"].is_string() && failure["message"].is_string(), "{said}: {}", answer.body);
        }
        sent += 1;
    }
    assert!(sent >= 200, "only {sent} requests in the time given");
    // Still serving, and the store still lists every run.
    let listed = send(&addr, &get("/api/runs?limit=1000", true)).await.unwrap();
    assert_eq!(listed.status, 200, "{}", listed.body);
    eprintln!("fuzz: seed {seed}, {sent} requests in {} ms: {statuses:?}", began.elapsed().as_millis());
}
