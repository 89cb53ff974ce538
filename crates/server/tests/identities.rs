//! Identities against a real PostgreSQL (`pg_cluster.rs`), a real listening server and a real worker: three tokens
//! start, decide and cancel runs, and each run's row (the API's run views, History's list) and its log (its events)
//! name who did each.

#[path = "../../engine/tests/support/pg_cluster.rs"]
mod pg_cluster;

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use switchyard_engine::events::{Event, EventKind};
use switchyard_engine::result::RunStatus;
use switchyard_engine::store::postgres::team::{new_token, Scope};
use switchyard_engine::store::postgres::PgStore;

const GATE: &str = "switchyard: 1
name: gate
triggers:
  - {webhook: open}
nodes:
  - {id: start, type: start}
  - {id: review, type: approval}
edges: [{from: start, to: review}]
";

struct Team {
    url: String,
    store: PgStore,
    client: reqwest::Client,
    tokens: std::collections::BTreeMap<&'static str, String>,
    _folder: tempfile::TempDir,
}

impl Team {
    /// A server serving `gate`, one worker, and tokens for alice (run), bob (decide) and carol (admin).
    async fn start(name: &str) -> Team {
        switchyard_engine::net::install_crypto();
        let db = pg_cluster::database(name);
        let store = tokio::task::spawn_blocking(move || PgStore::open(&db).unwrap()).await.unwrap();
        let folder = tempfile::tempdir().unwrap();
        std::fs::write(folder.path().join("gate.yaml"), GATE).unwrap();
        let mut tokens = std::collections::BTreeMap::new();
        for (name, scope) in [("alice", Scope::Run), ("bob", Scope::Decide), ("carol", Scope::Admin)] {
            let (token, hash) = new_token();
            store.create_scoped_token(name, &hash, scope, None).await.unwrap();
            tokens.insert(name, token);
        }
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        drop(listener);
        let options = switchyard_server::Options {
            listen: addr,
            workflows: folder.path().to_path_buf(),
            answers: None,
            ui: None,
            retention: None,
        };
        tokio::spawn(switchyard_server::serve(store.clone(), options, Arc::new(|_| {}), std::future::pending()));
        let worker = switchyard_engine::worker::Options {
            jobs: 2,
            poll: Duration::from_millis(200),
            grace: Duration::from_secs(1),
            allow_code: false,
        };
        tokio::spawn(switchyard_engine::worker::work(store.clone(), worker, Arc::new(|_| {}), std::future::pending()));
        let url = format!("http://{addr}");
        let client = reqwest::Client::new();
        while client.get(format!("{url}/healthz")).send().await.is_err() {
            tokio::task::yield_now().await;
        }
        Team { url, store, client, tokens, _folder: folder }
    }

    async fn send(&self, who: &str, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut request = self.client.request(method, format!("{}{path}", self.url)).bearer_auth(&self.tokens[who]);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.unwrap();
        (response.status().as_u16(), response.json().await.unwrap_or(Value::Null))
    }

    async fn post(&self, who: &str, path: &str, body: Value) -> (u16, Value) {
        self.send(who, reqwest::Method::POST, path, Some(body)).await
    }

    async fn get(&self, who: &str, path: &str) -> Value {
        let (status, answer) = self.send(who, reqwest::Method::GET, path, None).await;
        assert_eq!(status, 200, "{path}: {answer}");
        answer
    }

    /// Waits, following the run's row in the store (each change a worker commits), until its status is `status`.
    async fn until(&self, run: &str, status: &str) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let row = self.store.get(run).await.unwrap();
            if row.status.as_str() == status {
                return;
            }
            assert!(Instant::now() < deadline, "run {run} is still {} after 30 s, not {status}", row.status.as_str());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn events(&self, run: &str) -> Vec<Event> {
        self.store.events_after(run, 0, 1000).await.unwrap()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_tokens_decide_cancel_and_start_and_each_runs_history_the_api_and_its_log_name_who() {
    let team = Team::start("identities").await;

    // alice starts two runs through the API, and one through the webhook; each waits for review.
    let mut runs = Vec::new();
    for _ in 0..2 {
        let (status, started) = team.post("alice", "/api/runs", json!({"workflow": "gate"})).await;
        assert_eq!(status, 201, "{started}");
        runs.push(started["id"].as_str().unwrap().to_string());
    }
    let hook = team.client.post(format!("{}/hooks/open", team.url)).bearer_auth(&team.tokens["alice"]).body("{}");
    let delivered: Value = hook.send().await.unwrap().json().await.unwrap();
    let hooked = delivered["id"].as_str().unwrap().to_string();
    let (approved, cancelled) = (runs[0].clone(), runs[1].clone());
    for run in [&approved, &cancelled, &hooked] {
        team.until(run, "paused").await;
    }

    // bob approves the first, with a note; carol cancels the second.
    let decide = json!({"node": "review", "decision": "approve", "note": "ship it"});
    let (status, answer) = team.post("bob", &format!("/api/runs/{approved}/decisions"), decide).await;
    assert_eq!((status, &answer["kept"]), (202, &json!(true)), "{answer}");
    let (status, answer) =
        team.send("carol", reqwest::Method::POST, &format!("/api/runs/{cancelled}/cancel"), None).await;
    assert_eq!((status, &answer["asked"]), (202, &json!(true)), "{answer}");
    team.until(&approved, "completed").await;
    team.until(&cancelled, "cancelled").await;

    // The run's log: the decision names bob, with his note; the cancellation's end names carol.
    let received: Vec<_> = team
        .events(&approved)
        .await
        .into_iter()
        .filter_map(|e| match e.kind {
            EventKind::ApprovalReceived { node, note, by, .. } => Some((node, note, by)),
            _ => None,
        })
        .collect();
    assert_eq!(received, [("review".to_string(), "ship it".to_string(), Some("bob".to_string()))]);
    let ended: Vec<_> = team
        .events(&cancelled)
        .await
        .into_iter()
        .filter_map(|e| match e.kind {
            EventKind::WorkflowEnd { status, by, .. } if status != RunStatus::Paused => Some((status, by)),
            _ => None,
        })
        .collect();
    assert_eq!(ended, [(RunStatus::Cancelled, Some("carol".to_string()))]);

    // The API's run: who started it and how, and who cancelled it; the approval's event names bob.
    let shown = team.get("bob", &format!("/api/runs/{approved}")).await;
    assert_eq!(shown["run"]["origin"], json!({"via": "api", "by": "alice"}), "{shown}");
    assert_eq!(shown["run"]["cancelledBy"], Value::Null);
    let shown = team.get("alice", &format!("/api/runs/{cancelled}")).await;
    assert_eq!(shown["run"]["cancelledBy"], json!("carol"), "{shown}");

    // The API's list, as `switchyard runs --json` prints it, and History's (the app's `list_runs`).
    let listed = team.get("alice", "/api/runs").await;
    let (status, history) = team.post("alice", "/api/commands/list_runs", json!({})).await;
    assert_eq!(status, 200, "{history}");
    for list in [&listed, &history] {
        let who = |id: &str| {
            let run = list.as_array().unwrap().iter().find(|r| r["id"] == id).unwrap_or_else(|| panic!("{id}: {list}"));
            (run["origin"].clone(), run["cancelledBy"].clone())
        };
        assert_eq!(who(&approved), (json!({"via": "api", "by": "alice"}), Value::Null));
        assert_eq!(who(&cancelled), (json!({"via": "api", "by": "alice"}), json!("carol")));
        assert_eq!(who(&hooked), (json!({"via": "webhook", "by": "open"}), Value::Null));
    }

    // The app's commands name their caller too: carol decides the webhook's run by command, and it says so.
    let args = json!({"runId": hooked, "node": "review", "decision": "reject", "note": ""});
    let (status, answer) = team.post("carol", "/api/commands/decide", args).await;
    assert_eq!(status, 200, "{answer}");
    team.until(&hooked, "completed").await;
    let by: Vec<_> = team
        .events(&hooked)
        .await
        .into_iter()
        .filter_map(|e| match e.kind {
            EventKind::ApprovalReceived { by, .. } => Some(by),
            _ => None,
        })
        .collect();
    assert_eq!(by, [Some("carol".to_string())]);
}
