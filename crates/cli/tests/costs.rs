//! What a served run cost, the same whoever looks: a real `switchyard serve` and `switchyard worker` over a real
//! PostgreSQL (`pg_cluster.rs`), a fake OpenAI-compatible model on 127.0.0.1 that reports the tokens it used, and
//! three settings files with three different price tables — the server's, the worker's and the viewer's. The run keeps
//! the server's prices when it starts; the API, History's list (the app's `list_runs`), `switchyard runs` and
//! `switchyard show` all give its cost from them, as one number written one way, and a change to the server's prices
//! afterwards changes only the runs started after it.
#![cfg(feature = "postgres")]

#[path = "../../engine/tests/support/http.rs"]
mod http;
#[path = "../../engine/tests/support/pg_cluster.rs"]
mod pg_cluster;
mod support;

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const PRICED: &str = "switchyard: 1
name: priced
nodes:
  - {id: start, type: start}
  - {id: ask, type: agent, model: fake/m, user_prompt: Say hello}
edges: [{from: start, to: ask}]
";

/// A settings file: the fake provider at `model`, and `fake/m` at these prices (US dollars per million tokens).
fn settings(home: &Path, model: &str, input: f64, output: f64) {
    let text = format!(
        "providers:\n  - {{id: fake, kind: openai, base_url: \"{model}/v1\"}}\nprices:\n  fake/m: {{input: {input}, output: {output}}}\n"
    );
    std::fs::write(home.join("settings.yaml"), text).unwrap();
}

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

struct Served {
    db: String,
    viewer: tempfile::TempDir,
    server: tempfile::TempDir,
    addr: String,
    token: String,
    _processes: Vec<Killed>,
    _folders: Vec<tempfile::TempDir>,
}

impl Served {
    /// The command line as the viewer runs it: its own settings, the server's database.
    fn viewer(&self, args: &[&str]) -> Output {
        command(self.viewer.path(), &self.db).args(args).output().unwrap()
    }

    /// `METHOD PATH` on the server with the token: the status and the JSON answer.
    fn http(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut stream = std::net::TcpStream::connect(&self.addr).unwrap();
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        let request = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.addr,
            self.token,
            body.len()
        );
        stream.write_all(request.as_bytes()).unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        let (head, body) = answer.split_once("\r\n\r\n").unwrap_or_else(|| panic!("{method} {path}: {answer}"));
        let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap();
        let body = if head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
            unchunked(body)
        } else {
            body.to_string()
        };
        (status, serde_json::from_str(&body).unwrap_or(Value::Null))
    }

    fn get(&self, path: &str) -> Value {
        let (status, answer) = self.http("GET", path, None);
        assert_eq!(status, 200, "{path}: {answer}");
        answer
    }

    /// A run of `priced` started through the API, once it has completed: its id.
    fn start(&self) -> String {
        let (status, started) = self.http("POST", "/api/runs", Some(json!({"workflow": "priced"})));
        assert_eq!(status, 201, "{started}");
        let id = started["id"].as_str().unwrap().to_string();
        self.until_completed(&id);
        id
    }

    fn until_completed(&self, id: &str) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let shown = self.get(&format!("/api/runs/{id}"));
            match shown["run"]["status"].as_str() {
                Some("completed") => return,
                Some("failed" | "cancelled") => panic!("the run did not complete: {shown}"),
                _ => {}
            }
            assert!(Instant::now() < deadline, "run {id} has not completed after 60 s: {shown}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The cost of run `id` as each view gives it: (where, the number, the text, which prices).
    fn costs(&self, id: &str) -> Vec<(String, Value, Value, Value)> {
        let of = |list: &Value| {
            list.as_array().unwrap().iter().find(|r| r["id"] == id).unwrap_or_else(|| panic!("{id}: {list}")).clone()
        };
        let said = |r: &Value| (r["cost"].clone(), r["costText"].clone(), r["priced"].clone());
        let mut costs = Vec::new();
        let mut add = |place: &str, (cost, text, priced): (Value, Value, Value)| {
            costs.push((place.to_string(), cost, text, priced));
        };
        add("GET /api/runs", said(&of(&self.get("/api/runs"))));
        add("GET /api/runs/ID", said(&self.get(&format!("/api/runs/{id}"))["run"]));
        // History's list (its arguments: none, or a filter, as the command list now has them).
        let (status, history) = match self.http("POST", "/api/commands/list_runs", Some(json!({}))) {
            (200, history) => (200, history),
            _ => self.http("POST", "/api/commands/list_runs", Some(json!({"filter": {}}))),
        };
        assert_eq!(status, 200, "{history}");
        add("History (list_runs)", said(&of(&history)));
        let (status, opened) = self.http("POST", "/api/commands/open_run", Some(json!({"runId": id})));
        assert_eq!(status, 200, "{opened}");
        add("the run's view (open_run)", said(&opened["row"]));
        let (code, listed) = support::json_output(&["runs", "--json"], self.viewer(&["runs", "--json"]));
        assert_eq!(code, 0, "{listed}");
        add("switchyard runs --json", said(&of(&listed)));
        let (code, shown) = support::json_output(&["show", id, "--json"], self.viewer(&["show", id, "--json"]));
        assert_eq!(code, 0, "{shown}");
        add("switchyard show --json", said(&shown));
        costs
    }

    /// What `switchyard runs` and `switchyard show` print of run `id`.
    fn printed(&self, id: &str) -> (String, String) {
        let text = |out: Output| {
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            String::from_utf8(out.stdout).unwrap()
        };
        let runs = text(self.viewer(&["runs"]));
        let line = runs.lines().find(|l| l.starts_with(id)).unwrap_or_else(|| panic!("{id}: {runs}")).to_string();
        (line, text(self.viewer(&["show", id])).lines().next().unwrap_or_default().to_string())
    }
}

fn unchunked(body: &str) -> String {
    let (mut out, mut rest) = (String::new(), body);
    while let Some((size, after)) = rest.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if size == 0 {
            break;
        }
        out.push_str(&after[..size]);
        rest = after[size..].trim_start_matches("\r\n");
    }
    out
}

fn command(home: &Path, db: &str) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_switchyard"));
    command
        .env("SWITCHYARD_HOME", home)
        .env("SWITCHYARD_DB", db)
        .env("SWITCHYARD_LOCAL_URL", "http://127.0.0.1:9/v1")
        .stdin(Stdio::null());
    command
}

/// The server (its settings at `model`'s prices $2 and $8), a worker (its own, at $7 and $7), and a viewer (its own,
/// at $500 and $500).
fn serve(name: &str, model: &str) -> Served {
    let db = pg_cluster::database(name);
    let (server, worker, viewer, workflows) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    settings(server.path(), model, 2.0, 8.0);
    settings(worker.path(), model, 7.0, 7.0);
    settings(viewer.path(), model, 500.0, 500.0);
    support::write_file(workflows.path(), "priced.yaml", PRICED);
    let out = command(server.path(), &db).args(["token", "create", "alice", "--scope", "admin"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let token = String::from_utf8(out.stdout).unwrap().trim().to_string();
    let mut processes = Vec::new();
    // A free port: one the system gave, taken again by the server; another when someone took it meanwhile.
    let addr = loop {
        let addr = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().to_string();
        let mut serve = command(server.path(), &db)
            .args(["serve", "--listen", &addr, "--workflows"])
            .arg(workflows.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        let answered = loop {
            if std::net::TcpStream::connect(&addr).is_ok() {
                break true;
            }
            if serve.try_wait().unwrap().is_some() || Instant::now() > deadline {
                break false;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        if answered {
            processes.push(Killed(serve));
            break addr;
        }
        let _ = serve.kill();
        let _ = serve.wait();
    };
    let worker_process =
        command(worker.path(), &db).args(["worker"]).stdout(Stdio::null()).stderr(Stdio::null()).spawn();
    processes.push(Killed(worker_process.unwrap()));
    Served { db, viewer, server, addr, token, _processes: processes, _folders: vec![worker, workflows] }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_served_runs_cost_is_the_servers_price_the_same_number_everywhere_and_later_prices_leave_it_alone() {
    let replies: Vec<http::Reply> = (0..16).map(|n| http::Reply::openai_stream(&[&format!("hello {n}")])).collect();
    let model = http::TestServer::start(replies).await;
    let url = model.url.clone();
    // The model answers on this runtime; everything else is processes and blocking requests.
    tokio::task::spawn_blocking(move || {
        let served = serve("costs", &url);
        let first = served.start();
        // One call: 11 input tokens at the server's $2 and 1 output token at its $8 per million.
        let costs = served.costs(&first);
        for (place, cost, text, priced) in &costs {
            assert_eq!(
                (cost, text, priced),
                (&json!(0.00003), &json!("$0.00003"), &json!("kept")),
                "{place}: {costs:?}"
            );
        }
        // Two front ends print the one text the engine wrote.
        let (line, show) = served.printed(&first);
        assert!(line.contains(" $0.00003 "), "switchyard runs: {line}");
        assert!(show.contains(", 12 tokens, $0.00003)"), "switchyard show: {show}");
        // The kept prices are the server's, for the models the run can use.
        let shown = served.get(&format!("/api/runs/{first}"));
        assert_eq!(shown["run"]["prices"], json!({"fake/m": {"input": 2.0, "output": 8.0}}), "{shown}");

        // The server's prices change: the run keeps its cost; a run started now is costed at the new prices.
        settings(served.server.path(), &url, 1000.0, 1000.0);
        assert_eq!(served.costs(&first), costs, "a price changed after the run changed what it cost");
        let second = served.start();
        for (place, cost, text, _) in served.costs(&second) {
            assert_eq!((cost, text), (json!(0.012), json!("$0.012")), "{place}");
        }

        // A run recorded before runs kept their prices (its options without them) is priced by whoever looks, with
        // their settings now, and says so.
        let old = served.start();
        let db = served.db.clone();
        tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
            let (client, connection) = tokio_postgres::connect(&db, tokio_postgres::NoTls).await.unwrap();
            tokio::spawn(connection);
            let sql = "UPDATE runs SET options = (options::jsonb - 'prices')::json WHERE id = $1";
            assert_eq!(client.execute(sql, &[&old]).await.unwrap(), 1);
        });
        let costs = served.costs(&old);
        for (place, cost, text, priced) in &costs {
            // The server's settings ($1000) for its views, the viewer's ($500) for the command line's.
            let expected = if place.starts_with("switchyard") { (0.006, "$0.006") } else { (0.012, "$0.012") };
            assert_eq!((cost, text, priced), (&json!(expected.0), &json!(expected.1), &json!("current")), "{place}");
        }
        let (line, show) = served.printed(&old);
        assert!(line.contains(" $0.006* "), "switchyard runs: {line}");
        assert!(show.contains(", 12 tokens, $0.006, priced with your current settings)"), "switchyard show: {show}");
    })
    .await
    .unwrap();
    drop(model);
}
