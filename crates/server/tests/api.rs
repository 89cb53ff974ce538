//! The HTTP API's refusals and answers against a real PostgreSQL (`pg_cluster.rs`: a throwaway cluster for this test
//! binary, one database per test) and a real listening server: every error path a client can hit answers
//! `{code, message}` with its status. The whole server under load and faults is `scripts/server-acceptance.py`.

#[path = "../../engine/tests/support/pg_cluster.rs"]
mod pg_cluster;

use std::sync::Arc;

use serde_json::{json, Value};
use switchyard_engine::log::LogItem;
use switchyard_engine::result::RunStatus;
use switchyard_engine::store::postgres::team::new_token;
use switchyard_engine::store::postgres::{PgStore, Wait};

const GATE: &str = "switchyard: 1
name: gate
triggers:
  - {webhook: open}
  - {webhook: signed, secret_env: SWITCHYARD_TEST_UNSET_SECRET}
  - {webhook: keyed, secret_env: SWITCHYARD_TEST_SET_SECRET}
input_schema: {type: object, anyOf: [{required: [n]}, {required: [body]}]}
nodes:
  - {id: start, type: start}
  - {id: review, type: approval}
edges: [{from: start, to: review}]
";

struct Server {
    url: String,
    /// The database's URL.
    db: String,
    token: String,
    store: PgStore,
    _folder: tempfile::TempDir,
    _ui: tempfile::TempDir,
    client: reqwest::Client,
    /// What the server logged.
    log: Arc<std::sync::Mutex<Vec<String>>>,
}

impl Server {
    async fn start(name: &str) -> Server {
        Server::start_with(name, None).await
    }

    /// A server that prunes as `retention` says.
    async fn start_with(name: &str, retention: Option<switchyard_server::retention::Retention>) -> Server {
        std::env::set_var("SWITCHYARD_TEST_SET_SECRET", "s3cret");
        let db = pg_cluster::database(name);
        let opened = db.clone();
        let store = tokio::task::spawn_blocking(move || PgStore::open(&opened).unwrap()).await.unwrap();
        let folder = tempfile::tempdir().unwrap();
        // The web app, served beside the API (`serve --ui`): its page never stands in for an API route.
        let ui = tempfile::tempdir().unwrap();
        std::fs::write(ui.path().join("index.html"), "<html>the app</html>").unwrap();
        std::fs::write(folder.path().join("gate.yaml"), GATE).unwrap();
        std::fs::write(folder.path().join("broken.yaml"), "switchyard: 1\nname: broken\nnodes: []\n").unwrap();
        // A file of another system (The Edge Agent), served as it is read.
        let tea = "name: tea-flow\nnodes:\n  - name: tidy\n    run: |\n      return {done = true}\n\
                   edges:\n  - {from: __start__, to: tidy}\n  - {from: tidy, to: __end__}\n";
        std::fs::write(folder.path().join("tea-flow.yaml"), tea).unwrap();
        let unfit = GATE.replace("name: gate", "name: nightly").replace(
            "  - {webhook: open}\n  - {webhook: signed, secret_env: SWITCHYARD_TEST_UNSET_SECRET}",
            "  - {schedule: nightly, cron: '0 3 * * *', input: {m: 1}}",
        );
        std::fs::write(folder.path().join("nightly.yaml"), unfit).unwrap();
        let (token, hash) = new_token();
        store.create_token("test", &hash).await.unwrap();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        drop(listener);
        let options = switchyard_server::Options {
            listen: addr,
            workflows: folder.path().to_path_buf(),
            answers: None,
            ui: Some(ui.path().to_path_buf()),
            retention,
        };
        let log = Arc::new(std::sync::Mutex::new(Vec::new()));
        let heard = log.clone();
        let report = Arc::new(move |line: String| heard.lock().unwrap().push(line));
        tokio::spawn(switchyard_server::serve(store.clone(), options, report, std::future::pending()));
        let url = format!("http://{addr}");
        switchyard_engine::net::install_crypto();
        let client = reqwest::Client::new();
        for _ in 0..200 {
            if client.get(format!("{url}/healthz")).send().await.is_ok() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(25)).await;
        }
        Server { url, db, token, store, _folder: folder, _ui: ui, client, log }
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>, token: bool) -> (u16, Value) {
        let mut request = self.client.request(method, format!("{}{path}", self.url));
        if token {
            request = request.bearer_auth(&self.token);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    async fn get(&self, path: &str) -> (u16, Value) {
        self.call(reqwest::Method::GET, path, None, true).await
    }

    /// The app's command `name`, as the browser calls it.
    async fn command(&self, name: &str, args: Value) -> (u16, Value) {
        self.post(&format!("/api/commands/{name}"), args).await
    }

    async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        self.call(reqwest::Method::POST, path, Some(body), true).await
    }
}

/// The log item of a run's event asking for a decision on `node`, as a worker writes it.
fn approval_requested(run: &str, seq: u64, node: &str) -> LogItem {
    let event = json!({"seq": seq, "run": run, "ts": "2026-11-25T12:00:00.000Z", "type": "approval:requested",
        "node": node, "message": "Ship it?", "previousOutput": ""});
    LogItem::Event(serde_json::from_value(event).unwrap())
}

fn code(answer: &Value) -> &str {
    answer["code"].as_str().unwrap_or_else(|| panic!("no code in {answer}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_says_what_it_serves_and_refuses_what_it_cannot_do_with_a_code() {
    let server = Server::start("api_refusals").await;

    let (status, openapi) = server.call(reqwest::Method::GET, "/openapi.json", None, false).await;
    assert_eq!(status, 200);
    for path in [
        "/api/runs",
        "/api/runs/{id}/events",
        "/api/runs/{id}/decisions",
        "/api/workflows/{name}/versions",
        "/api/workers",
        "/hooks/{name}",
    ] {
        assert!(openapi["paths"][path].is_object(), "{path} is documented");
    }
    let (status, answer) = server.call(reqwest::Method::GET, "/api/runs", None, false).await;
    assert_eq!((status, code(&answer)), (401, "UNAUTHORIZED"));

    let (status, served) = server.get("/api/workflows").await;
    assert_eq!(status, 200);
    assert_eq!(served["workflows"][0]["name"], "gate");
    assert_eq!(served["workflows"][0]["webhooks"], json!(["open", "signed", "keyed"]));
    let problems = served["problems"].as_array().unwrap();
    assert!(problems[0][0].as_str().unwrap().ends_with("broken.yaml"), "{served}");
    assert!(problems[1][0].as_str().unwrap().ends_with("nightly.yaml"), "{served}");
    assert!(problems[1][1].as_str().unwrap().contains("schedule `nightly`: its input does not fit"), "{served}");
    let names: Vec<_> = served["workflows"].as_array().unwrap().iter().map(|w| w["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["gate", "tea-flow"], "{served}");

    let (status, answer) = server.post("/api/runs", json!({"workflow": "nope"})).await;
    assert_eq!((status, code(&answer)), (404, "NO_SUCH_WORKFLOW"));
    let (status, answer) = server.post("/api/runs", json!({"workflow": "gate", "input": {"m": 1}})).await;
    assert_eq!((status, code(&answer)), (422, "INPUT_MISMATCH"), "{answer}");
    let (status, answer) = server.post("/api/runs", json!({"workflow": "gate", "extra": 1})).await;
    assert_eq!((status, code(&answer)), (422, "INVALID_BODY"), "{answer}");
    assert!(answer["message"].as_str().unwrap().contains("send JSON of the shape /openapi.json gives"), "{answer}");
    let raw = server.client.post(format!("{}/api/runs", server.url)).bearer_auth(&server.token).body("{}");
    let response = raw.send().await.unwrap();
    assert_eq!(response.status().as_u16(), 415);
    assert_eq!(response.json::<Value>().await.unwrap()["code"], "INVALID_BODY");
    let (status, answer) = server.get("/api/runs?limit=many").await;
    assert_eq!((status, code(&answer)), (400, "INVALID_QUERY"));
    assert!(answer["message"].as_str().unwrap().ends_with("/openapi.json gives this route's parameters"), "{answer}");
    let (status, answer) = server.get("/api/runs/nope").await;
    assert_eq!((status, code(&answer)), (404, "NO_SUCH_RUN"));
    let (status, answer) = server.get("/api/runs/nope/events").await;
    assert_eq!((status, code(&answer)), (404, "NO_SUCH_RUN"));

    // A run parked at its approval (as a worker leaves it): decisions are checked, kept once.
    let (status, started) = server.post("/api/runs", json!({"workflow": "gate", "input": {"n": 1}})).await;
    assert_eq!(status, 201, "{started}");
    let id = started["id"].as_str().unwrap().to_string();
    let store = server.store.clone();
    let run = id.clone();
    tokio::task::spawn_blocking(move || {
        let (_, epoch) = store.claim_ready("w", std::time::Duration::from_secs(60)).wait().unwrap().unwrap();
        let asked = approval_requested(&run, 1, "review");
        let paused = LogItem::Status { status: RunStatus::Paused, pending: vec!["review".into()] };
        store.write_batch(&run, epoch, &[asked, paused]).wait().unwrap();
        store.release(&run, epoch, None).wait().unwrap();
    })
    .await
    .unwrap();
    let decide = |node: &str, decision: &str| json!({"node": node, "decision": decision});
    let (status, answer) = server.post(&format!("/api/runs/{id}/decisions"), decide("review", "maybe")).await;
    assert_eq!((status, code(&answer)), (422, "INVALID_DECISION"));
    let (status, answer) = server.post(&format!("/api/runs/{id}/decisions"), decide("start", "approve")).await;
    assert_eq!((status, code(&answer)), (409, "NOT_PENDING"));
    assert!(answer["message"].as_str().unwrap().contains("it waits for review"), "{answer}");
    let (status, answer) = server.post(&format!("/api/runs/{id}/decisions"), decide("review", "approve")).await;
    assert_eq!((status, &answer["kept"]), (202, &json!(true)));
    let (status, answer) = server.post(&format!("/api/runs/{id}/decisions"), decide("review", "reject")).await;
    assert_eq!((status, &answer["kept"]), (202, &json!(false)), "decided once");
    let (status, listed) = server.get("/api/runs?limit=1").await;
    assert_eq!((status, listed.as_array().unwrap().len(), &listed[0]["id"]), (200, 1, &json!(id)), "{listed}");
    assert_eq!(listed[0]["pending"], json!(["review"]));
    let (status, answer) = server.post(&format!("/api/runs/{id}/cancel"), json!({})).await;
    assert_eq!((status, &answer["asked"]), (202, &json!(true)));
    let (status, answer) = server.post("/api/runs/nope/cancel", json!({})).await;
    assert_eq!((status, code(&answer)), (404, "NO_SUCH_RUN"));

    // Webhooks: an unknown one is named only to a token holder; a signed one whose secret the server lacks says so.
    let hook = |name: &str, token: bool| {
        let request = server.client.post(format!("{}/hooks/{name}", server.url)).body("{\"n\": 2}");
        if token {
            request.bearer_auth(&server.token)
        } else {
            request
        }
    };
    let answer = hook("nope", false).send().await.unwrap();
    assert_eq!(answer.status().as_u16(), 401);
    let answer: Value = answer.json().await.unwrap();
    assert!(answer["message"].as_str().unwrap().contains("check the hook's name in the URL"), "{answer}");
    let answer = hook("nope", true).send().await.unwrap();
    assert_eq!(
        (answer.status().as_u16(), answer.json::<Value>().await.unwrap()["code"].clone()),
        (404, json!("NO_SUCH_HOOK"))
    );
    let answer = hook("signed", true).send().await.unwrap();
    assert_eq!(answer.status().as_u16(), 500);
    assert_eq!(answer.json::<Value>().await.unwrap()["code"], "HOOK_SECRET_MISSING");
    let answer = hook("open", false).send().await.unwrap();
    assert_eq!(answer.status().as_u16(), 401, "an unsigned hook needs a token");
    let first = hook("open", true).header("Idempotency-Key", "k").send().await.unwrap();
    assert_eq!(first.status().as_u16(), 202);
    let first: Value = first.json().await.unwrap();
    let again: Value = hook("open", true).header("Idempotency-Key", "k").send().await.unwrap().json().await.unwrap();
    assert_eq!((&again["id"], &again["new"], &first["new"]), (&first["id"], &json!(false), &json!(true)));
    let bad = server.client.post(format!("{}/hooks/open", server.url)).bearer_auth(&server.token).body("not json");
    let bad = bad.send().await.unwrap();
    assert_eq!(bad.status().as_u16(), 422);

    // A signed hook takes `sha256=HEX` of the exact body, and nothing else.
    let body = "{\"n\": 3}";
    let signature = switchyard_server::hooks::sign("s3cret", body.as_bytes());
    let signed = |value: &str| {
        let request = server.client.post(format!("{}/hooks/keyed", server.url)).body(body);
        request.header("X-Switchyard-Signature", value.to_string()).send()
    };
    assert_eq!(signed(&signature).await.unwrap().status().as_u16(), 202);
    let bare = signature.trim_start_matches("sha256=");
    assert_eq!(signed(bare).await.unwrap().status().as_u16(), 401, "no prefix, no delivery");
    let wrong = switchyard_server::hooks::sign("guess", body.as_bytes());
    assert_eq!(signed(&wrong).await.unwrap().status().as_u16(), 401);

    // Routes that do not exist, and methods a route does not take, answer with a code too.
    let (status, answer) = server.get("/api/nothing-here").await;
    assert_eq!((status, code(&answer)), (404, "NO_SUCH_ROUTE"));
    let (status, answer) = server.post("/api/nothing-here", json!({})).await;
    assert_eq!((status, code(&answer)), (404, "NO_SUCH_ROUTE"), "not the web app's page, nor a wrong method");
    let page = server.client.get(format!("{}/?workflow=gate", server.url)).send().await.unwrap().text().await.unwrap();
    assert_eq!(page, "<html>the app</html>", "`/` is the web app's page");
    for path in ["/history", "/foo.php", "/index.htm", "/assets/nothing.js"] {
        let (status, answer) = server.get(path).await;
        assert_eq!((status, code(&answer)), (404, "NO_SUCH_PAGE"), "{path} is no page: never the app answering 200");
    }
    let (status, answer) = server.call(reqwest::Method::DELETE, "/api/runs", None, true).await;
    assert_eq!((status, code(&answer)), (405, "METHOD_NOT_ALLOWED"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_apps_commands_answer_over_http_as_the_desktop_shell_does_and_refuse_what_belongs_to_a_desktop() {
    let server = Server::start("api_commands").await;

    let (status, answer) = server.call(reqwest::Method::POST, "/api/commands/list_runs", Some(json!({})), false).await;
    assert_eq!((status, code(&answer)), (401, "UNAUTHORIZED"), "commands need a token as every route does");

    let (status, specs) = server.command("node_types", json!({})).await;
    assert_eq!(status, 200);
    assert!(specs.as_array().unwrap().iter().any(|s| s["type"] == "approval"), "{specs}");

    // The served workflow, opened by name (the page's `?workflow=`, sent with each command) and then by its file, as
    // the window opens a file.
    let (status, opened) = server.command("startup_file?workflow=gate", json!({})).await;
    assert_eq!(status, 200, "{opened}");
    let path = opened["path"].as_str().unwrap().to_string();
    assert!(path.ends_with("gate.yaml"), "{opened}");
    let (status, document) = server.command("open_file", json!({ "path": path })).await;
    assert_eq!(
        (status, &document["workflow"]["name"], &document["format"]),
        (200, &json!("gate"), &json!("switchyard"))
    );
    let (_, tea) = server.command("startup_file?workflow=tea-flow", json!({})).await;
    let (status, tea) = server.command("open_file", json!({ "path": tea["path"] })).await;
    assert_eq!((status, &tea["format"]), (200, &json!("tea")), "a served file says the format it was read as: {tea}");
    let (status, answer) = server.command("open_file", json!({ "path": "/etc/passwd" })).await;
    assert_eq!((status, code(&answer)), (404, "NO_SUCH_WORKFLOW"), "only served workflows are opened");
    let (status, answer) = server.command("startup_file?workflow=nope", json!({})).await;
    assert_eq!((status, code(&answer)), (404, "NO_SUCH_WORKFLOW"), "an unknown name in the address is said so");
    let (status, answer) = server.command("startup_file?workflow=gate&workflow=tea-flow", json!({})).await;
    assert_eq!((status, code(&answer)), (400, "INVALID_QUERY"), "a page names one workflow: {answer}");
    let raw = server.client.post(format!("{}/api/commands/list_runs", server.url)).bearer_auth(&server.token);
    let answer: Value = raw.body("{not json").send().await.unwrap().json().await.unwrap();
    assert_eq!(code(&answer), "INVALID_BODY", "{answer}");
    // A browser is shown no code: a step's module is a path, and the server reads no file for a caller.
    let script = json!({"switchyard": 1, "name": "s", "nodes": [{"id": "start", "type": "start"},
        {"id": "x", "type": "script", "language": "python", "module": "/etc/passwd"}],
        "edges": [{"from": "start", "to": "x"}]});
    let (status, consent) = server.command("code_consent", json!({ "workflow": script, "workflowPath": null })).await;
    assert_eq!((status, &consent["steps"], &consent["trusted"]), (200, &json!([]), &json!(true)), "{consent}");
    assert!(!consent.to_string().contains("root:"), "{consent}");

    // Run: the served document starts a run; a changed canvas is refused, never run as if saved.
    let workflow = document["workflow"].clone();
    let request =
        |workflow: &Value| json!({ "request": { "workflow": workflow, "workflowPath": path, "input": {"n": 1} } });
    let mut changed = workflow.clone();
    changed["nodes"][1]["id"] = json!("check");
    changed["edges"][0]["to"] = json!("check");
    let (status, answer) = server.command("start_run", request(&changed)).await;
    assert_eq!((status, code(&answer)), (409, "CHANGED_HERE"), "{answer}");
    assert!(answer["message"].as_str().unwrap().contains("undo them"), "{answer}");
    let mut from_node = request(&workflow);
    from_node["request"]["fromNode"] = json!("review");
    let (status, answer) = server.command("start_run", from_node).await;
    assert_eq!((status, code(&answer)), (404, "NOT_ON_SERVER"), "{answer}");
    // A fork (the desktop's Last run tab) is refused the same way, saying where it can be done.
    let mut fork = request(&workflow);
    fork["request"]["fork"] = json!({"run": "r1", "node": "review", "turn": null, "answer": "yes"});
    let (status, answer) = server.command("start_run", fork).await;
    assert_eq!((status, code(&answer)), (404, "NOT_ON_SERVER"), "{answer}");
    assert!(answer["message"].as_str().unwrap().contains("--fork"), "{answer}");
    // Where the cards are drawn is no change: a canvas lays out a file without positions, and people move cards.
    let mut moved = workflow.clone();
    moved["nodes"][0]["position"] = json!({"x": 999.0, "y": -5.0});
    let (status, id) = server.command("start_run", request(&moved)).await;
    assert_eq!(status, 200, "{id}");
    let id = id.as_str().unwrap().to_string();

    let (status, runs) = server.command("list_runs", json!({})).await;
    assert_eq!(
        (status, &runs[0]["id"], &runs[0]["status"], &runs[0]["live"]),
        (200, &json!(id), &json!("ready"), &json!(false))
    );
    let (status, run) = server.command("open_run", json!({ "runId": id })).await;
    assert_eq!((status, &run["row"]["id"], &run["document"]["workflow"]["name"]), (200, &json!(id), &json!("gate")));
    let (status, answer) = server.command("open_run", json!({ "runId": "nope" })).await;
    assert_eq!((status, code(&answer)), (404, "NO_SUCH_RUN"));
    // The Last run tab's Conversation: a run no agent has worked in yet has no turns; an unknown run is said so.
    let (status, turns) = server.command("run_turns", json!({ "runId": id })).await;
    assert_eq!((status, turns), (200, json!({})));
    let (status, answer) = server.command("run_turns", json!({ "runId": "nope" })).await;
    assert_eq!((status, code(&answer)), (404, "NO_SUCH_RUN"));
    // Its events, awaited from the store as the event stream reads them: none before a worker takes it.
    let (status, events) = server.command("run_events", json!({ "runId": id })).await;
    assert_eq!((status, events), (200, json!([])));
    let (status, answer) = server.command("open_run", json!({ "run": id })).await;
    assert_eq!((status, code(&answer)), (422, "INVALID_BODY"), "{answer}");
    assert!(answer["message"].as_str().unwrap().contains("open_run"), "{answer}");

    // A decision through the command is the decision the route keeps: checked the same way.
    let (status, answer) =
        server.command("decide", json!({ "runId": id, "node": "review", "decision": "approve", "note": "" })).await;
    assert_eq!((status, code(&answer)), (409, "NOT_PENDING"), "the run has not reached its approval: {answer}");
    let (status, answer) =
        server.command("decide", json!({ "runId": id, "node": "review", "decision": "maybe", "note": "" })).await;
    assert_eq!((status, code(&answer)), (422, "INVALID_DECISION"));
    let (status, answer) = server.command("cancel_run", json!({ "runId": id })).await;
    assert_eq!((status, answer), (200, Value::Null));
    let row = server.store.requests(&id).await.unwrap();
    assert!(row.cancel, "the cancellation was kept for the worker");

    // What belongs to a person's own machine is refused, saying where to do it.
    for (name, hint) in [
        ("save_file", "edit them there"),
        ("save_settings", "their own settings file"),
        ("resume_run", "open the run to follow it"),
        ("run_evals", "switchyard eval"),
        ("no_such_command", "the desktop app has it"),
    ] {
        let (status, answer) = server.command(name, json!({})).await;
        assert_eq!((status, code(&answer)), (404, "NOT_ON_SERVER"), "{name}");
        assert!(answer["message"].as_str().unwrap().contains(hint), "{name}: {answer}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decision_sent_again_after_its_worker_took_the_first_is_not_kept_for_a_round_no_one_asked_about() {
    let server = Server::start("decision_again").await;
    let (status, started) = server.post("/api/runs", json!({"workflow": "gate", "input": {"n": 1}})).await;
    assert_eq!(status, 201, "{started}");
    let id = started["id"].as_str().unwrap().to_string();
    let minute = std::time::Duration::from_secs(60);
    let (store, run) = (server.store.clone(), id.clone());
    tokio::task::spawn_blocking(move || {
        let (_, epoch) = store.claim_ready("w", minute).wait().unwrap().unwrap();
        let paused = LogItem::Status { status: RunStatus::Paused, pending: vec!["review".into()] };
        store.write_batch(&run, epoch, &[approval_requested(&run, 1, "review"), paused]).wait().unwrap();
        store.release(&run, epoch, None).wait().unwrap();
    })
    .await
    .unwrap();
    let approve = json!({"node": "review", "decision": "approve"});
    let (status, answer) = server.post(&format!("/api/runs/{id}/decisions"), approve.clone()).await;
    assert_eq!((status, &answer["kept"]), (202, &json!(true)));

    // A worker takes the woken run and applies the decision: its input is written, but the row still lists the
    // approval as pending (the worker has not said the run's status since). This is where a second send landed
    // in the next round, which the run never reached: every worker that took the run afterwards stopped on it.
    let (store, run) = (server.store.clone(), id.clone());
    tokio::task::spawn_blocking(move || {
        let (_, epoch) = store.claim_ready("w", minute).wait().unwrap().unwrap();
        let decided = json!({"seq": 2, "input": "decided", "node": "review",
            "decision": {"decision": "approve", "note": ""}, "immediate": false});
        store.write_batch(&run, epoch, &[LogItem::Input(serde_json::from_value(decided).unwrap())]).wait().unwrap();
        assert_eq!(store.get(&run).wait().unwrap().pending, vec!["review".to_string()], "the row lags behind the log");
    })
    .await
    .unwrap();
    let (status, answer) = server.post(&format!("/api/runs/{id}/decisions"), approve).await;
    assert_eq!((status, &answer["kept"]), (202, &json!(false)), "decided once: {answer}");
    let kept = server.store.requests(&id).await.unwrap();
    let rounds: Vec<_> = kept.decisions.iter().map(|k| (k.node.as_str(), k.round)).collect();
    assert_eq!(rounds, [("review", 0)], "one decision, for the round that was asked");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prune_a_webhook_runs_run_goes_its_key_stays_and_a_late_redelivery_starts_nothing() {
    // Pruning often, so that the test waits for the prune rather than an hour.
    let retention = switchyard_server::retention::Retention {
        runs: chrono::TimeDelta::days(30),
        keys: chrono::TimeDelta::days(90),
        every: std::time::Duration::from_millis(50),
    };
    let server = Server::start_with("prune_redelivery", Some(retention)).await;
    let deliver = || {
        let request = server.client.post(format!("{}/hooks/open", server.url)).bearer_auth(&server.token);
        request.header("Idempotency-Key", "ticket-4711").body("{\"n\": 1}").send()
    };
    let first = deliver().await.unwrap();
    assert_eq!(first.status().as_u16(), 202);
    let id = first.json::<Value>().await.unwrap()["id"].as_str().unwrap().to_string();
    // A worker runs it to its end; it ended 40 days ago.
    let (store, run) = (server.store.clone(), id.clone());
    tokio::task::spawn_blocking(move || {
        let (_, epoch) = store.claim_ready("w", std::time::Duration::from_secs(60)).wait().unwrap().unwrap();
        let done = LogItem::Status { status: RunStatus::Completed, pending: vec![] };
        store.write_batch(&run, epoch, &[approval_requested(&run, 1, "review"), done]).wait().unwrap();
        store.release(&run, epoch, None).wait().unwrap();
    })
    .await
    .unwrap();
    pg_cluster::sql(&server.db, &format!("UPDATE runs SET ended_at = now() - interval '40 days' WHERE id = '{id}'"));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while server.get(&format!("/api/runs/{id}")).await.0 != 404 {
        assert!(std::time::Instant::now() < deadline, "the server never pruned the run");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(server.store.events(&id).await.unwrap().is_empty(), "its events went with it");
    // The prune says what it removed once its transaction is committed, which is when the run reads as gone: the
    // line may come a moment after the 404.
    let said_it = |said: &[String]| {
        said.iter().any(|l| l.starts_with("pruned 1 run that ended before ") && l.contains("with 1 event"))
    };
    loop {
        let said = server.log.lock().unwrap().clone();
        if said_it(&said) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the prune never said what it removed: {said:?}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }

    let late = deliver().await.unwrap();
    assert_eq!(late.status().as_u16(), 200, "nothing was started, so nothing is accepted");
    let late: Value = late.json().await.unwrap();
    assert_eq!((&late["id"], &late["new"], &late["pruned"]), (&json!(id), &json!(false), &json!(true)), "{late}");
    let message = late["message"].as_str().unwrap();
    assert!(message.contains("`ticket-4711`") && message.contains("pruned") && message.contains("starts nothing"));
    let (_, runs) = server.get("/api/runs").await;
    assert_eq!(runs.as_array().map(Vec::len), Some(0), "the late redelivery started no run: {runs}");
    assert_eq!(pg_cluster::sql(&server.db, "SELECT count(*) FROM deliveries"), 1, "its key is kept");
}

/// `../`s from the server's working folder (this test's) up to the root, then `file`: a reference in a document that
/// reaches `file` when read against the working folder.
fn reaching(file: &std::path::Path) -> String {
    let up = std::env::current_dir().unwrap().components().count() - 1;
    format!("{}{}", "../".repeat(up), file.display().to_string().trim_start_matches('/'))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_document_a_request_sends_never_makes_the_server_read_a_file_it_names() {
    let server = Server::start("api_no_file_read").await;
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("secret.md");
    std::fs::write(&secret, "the server's secret words").unwrap();
    let reference = reaching(&secret);
    let sweny = format!(
        "id: f\nname: F\nentry: a\nnodes:\n  a: {{name: A, instruction: '{reference}'}}\n  \
         b: {{name: B, instruction: {{file: '{reference}'}}}}\n  c: {{name: C, instruction: ../../../../etc/passwd}}\n\
         edges: [{{from: a, to: b}}, {{from: b, to: c}}]\n"
    );
    let experience = format!(
        "name: e\nversion: 0.1.0\nstate: {{schema: {{}}}}\ngraph:\n  nodes:\n    - {{id: a, kind: agent, prompt: \
         '{reference}'}}\n    - {{id: c, kind: agent, prompt: ../../../../etc/passwd}}\n  edges: []\n"
    );
    for (format, text, nodes) in [("sweny", &sweny, &["a", "b", "c"][..]), ("openexpertise", &experience, &["a", "c"])]
    {
        for forced in [None, Some(format)] {
            let (status, opened) = server.command("parse_document", json!({ "text": text, "format": forced })).await;
            assert_eq!(status, 200, "{opened}");
            let all = opened.to_string();
            assert!(!all.contains("secret words") && !all.contains("root:"), "a file was read: {all}");
            let nodes_of = opened["workflow"]["nodes"].as_array().unwrap();
            for id in nodes {
                let node = nodes_of.iter().find(|n| n["id"] == *id).unwrap();
                assert!(node["user_prompt"].as_str().unwrap().contains("../"), "the reference is kept: {node}");
            }
            let notes = opened["notes"].as_array().unwrap();
            assert!(notes.iter().any(|n| n.as_str().unwrap().contains("not read")), "a note says so: {notes:?}");
        }
    }

    // The other places a request's text could become a path: a schema's `$ref`, a step's module (not shown,
    // `code_consent` above), a run's file (only served files are opened or run).
    let schema = json!({"switchyard": 1, "name": "s", "input_schema": {"$ref": "file:///etc/passwd"},
        "nodes": [{"id": "start", "type": "start"}], "edges": []});
    let (status, report) = server.command("validate", json!({ "workflow": schema, "scripted": true })).await;
    assert_eq!(status, 200, "{report}");
    assert!(!report.to_string().contains("root:"), "{report}");
    // A workflow node's child is found relative to the open file: a path the request names is never read.
    std::fs::write(dir.path().join("child.yaml"), "switchyard: 1\nname: the server's secret child\nnodes: []\n")
        .unwrap();
    let parent = json!({"switchyard": 1, "name": "p", "nodes": [{"id": "start", "type": "start"},
        {"id": "inner", "type": "workflow", "workflow": "child.yaml"}], "edges": [{"from": "start", "to": "inner"}]});
    let beside = dir.path().join("parent.yaml").display().to_string();
    let asked = json!({ "workflow": parent, "scripted": true, "workflowPath": beside });
    let (status, report) = server.command("validate", asked).await;
    assert_eq!(status, 200, "{report}");
    let codes: Vec<&str> = report["warnings"].as_array().unwrap().iter().filter_map(|f| f["code"].as_str()).collect();
    assert!(codes.contains(&"CHILD_NOT_CHECKED"), "{report}");
    assert!(!report.to_string().contains("secret child") && report["errors"] == json!([]), "{report}");
    let workflow = json!({"switchyard": 1, "name": "x", "nodes": [{"id": "start", "type": "start"}], "edges": []});
    let run = json!({ "request": { "workflow": workflow, "workflowPath": "../../../../etc/passwd" } });
    let (status, answer) = server.command("start_run", run).await;
    assert_eq!((status, code(&answer)), (404, "NO_SUCH_WORKFLOW"), "{answer}");
}

/// The log items of a worker that took run `id`, wrote an approval's request holding a NUL character (a model's or a
/// script's output may), and holds the run still.
async fn worker_writes_a_nul(server: &Server, id: &str) -> i64 {
    let (store, run) = (server.store.clone(), id.to_string());
    tokio::task::spawn_blocking(move || {
        let (_, epoch) = store.claim_ready("w", std::time::Duration::from_secs(60)).wait().unwrap().unwrap();
        let event = json!({"seq": 1, "run": run, "ts": "2026-11-25T12:00:00.000Z", "type": "approval:requested",
            "node": "review", "message": "Ship \u{0}it?", "previousOutput": "a\u{0}b"});
        let asked = LogItem::Event(serde_json::from_value(event).unwrap());
        store.write_batch(&run, epoch, &[asked]).wait().unwrap();
        epoch
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nul_character_is_refused_at_the_door_and_no_run_holding_one_breaks_the_listing_or_its_decisions() {
    let server = Server::start("api_nul").await;
    let nul = |status: u16, answer: &Value, field: &str| {
        assert_eq!((status, code(answer)), (422, "NUL_CHARACTER"), "{answer}");
        assert!(answer["message"].as_str().unwrap().contains(field), "names {field}: {answer}");
    };
    let (status, answer) =
        server.post("/api/runs", json!({"workflow": "gate", "input": {"n": 1, "t": ["x\u{0}"]}})).await;
    nul(status, &answer, "input.t[0]");
    let (status, answer) = server.post("/api/runs", json!({"workflow": "gate", "input": {"n": 1, "k\u{0}": 1}})).await;
    nul(status, &answer, "a key of `input`");
    let delivery = server.client.post(format!("{}/hooks/open", server.url)).bearer_auth(&server.token);
    let answer = delivery.body("{\"n\": \"\\u0000\"}").send().await.unwrap();
    let status = answer.status().as_u16();
    nul(status, &answer.json().await.unwrap(), "input.body.n");
    for path in ["/api/runs/%00", "/api/runs/a%00b/events"] {
        let (status, answer) = server.get(path).await;
        nul(status, &answer, "`id`");
    }
    for path in ["/api/runs/%00/decisions", "/api/runs/%00/cancel"] {
        let (status, answer) = server.post(path, json!({"node": "review", "decision": "approve"})).await;
        nul(status, &answer, "`id`");
    }
    let (status, answer) = server.command("open_run", json!({ "runId": "\u{0}" })).await;
    nul(status, &answer, "arguments.runId");
    let (status, runs) = server.get("/api/runs").await;
    assert_eq!((status, runs.as_array().map(Vec::len)), (200, Some(0)), "nothing was recorded: {runs}");

    let (status, started) = server.post("/api/runs", json!({"workflow": "gate", "input": {"n": 1}})).await;
    assert_eq!(status, 201, "{started}");
    let id = started["id"].as_str().unwrap().to_string();
    let decisions = format!("/api/runs/{id}/decisions");
    let (status, answer) = server.post(&decisions, json!({"node": "rev\u{0}iew", "decision": "approve"})).await;
    nul(status, &answer, "`node`");
    let (status, answer) =
        server.post(&decisions, json!({"node": "review", "decision": "approve", "note": "\u{0}"})).await;
    nul(status, &answer, "`note`");

    // A worker's event may hold one: the run is listed while it runs, and its approval is decided.
    let epoch = worker_writes_a_nul(&server, &id).await;
    let (status, runs) = server.get("/api/runs").await;
    assert_eq!((status, &runs[0]["id"], &runs[0]["status"]), (200, &json!(id), &json!("running")), "{runs}");
    let (status, shown) = server.get(&format!("/api/runs/{id}")).await;
    assert_eq!(status, 200, "{shown}");
    let (store, run) = (server.store.clone(), id.clone());
    tokio::task::spawn_blocking(move || {
        let paused = LogItem::Status { status: RunStatus::Paused, pending: vec!["review".into()] };
        store.write_batch(&run, epoch, &[paused]).wait().unwrap();
        store.release(&run, epoch, None).wait().unwrap();
    })
    .await
    .unwrap();
    let (status, answer) = server.post(&decisions, json!({"node": "review", "decision": "approve"})).await;
    assert_eq!((status, &answer["kept"]), (202, &json!(true)), "{answer}");
    let (status, answer) = server.post(&format!("/api/runs/{id}/cancel"), json!({})).await;
    assert_eq!(status, 202, "{answer}");
    let (status, _) = server.get("/api/runs").await;
    assert_eq!(status, 200);
}

/// Sends `head` (a request's line and headers, without the blank line) and `body` over a plain TCP connection, reading
/// the answer while it writes: a server may answer (and close) before it has read a body it refuses, which an HTTP
/// client reports as a broken pipe instead of the answer. The status and the body as JSON.
async fn raw(server: &Server, head: &str, body: Vec<u8>) -> (u16, Value) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = server.url.trim_start_matches("http://").to_string();
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut reader, mut writer) = stream.into_split();
    let request = format!("{head}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len());
    let said = head.lines().next().unwrap_or_default().to_string();
    let writing = tokio::spawn(async move {
        // Writing stops at the first error: the server answered and closed.
        if writer.write_all(request.as_bytes()).await.is_ok() {
            let _ = writer.write_all(&body).await;
        }
        // Kept open until the answer is read: a connection half closed before its answer is given up by the server.
        writer
    });
    let mut answer = Vec::new();
    let _ = reader.read_to_end(&mut answer).await;
    writing.abort();
    let answer = String::from_utf8_lossy(&answer).to_string();
    let status =
        answer.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("{said}: no status: {answer}"));
    let (headers, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    assert!(headers.to_ascii_lowercase().contains("content-type: application/json"), "{answer}");
    (status, serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {answer}")))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_before_a_handler_runs_are_code_and_message_too_and_a_body_is_read_only_from_a_known_sender() {
    let server = Server::start("api_door").await;
    let huge = || vec![b' '; 3 * 1024 * 1024];
    let post = |path: &str, token: bool| {
        let auth = if token { format!("\r\nAuthorization: Bearer {}", server.token) } else { String::new() };
        format!("POST {path} HTTP/1.1\r\nHost: switchyard\r\nContent-Type: application/json{auth}")
    };
    for path in ["/api/commands/list_runs", "/hooks/open", "/api/runs"] {
        let (status, answer) = raw(&server, &post(path, false), huge()).await;
        assert_eq!((status, code(&answer)), (401, "UNAUTHORIZED"), "{path}: the sender first");
        let (status, answer) = raw(&server, &post(path, true), huge()).await;
        assert_eq!((status, code(&answer)), (413, "BODY_TOO_LARGE"), "{path}: {answer}");
        assert!(answer["message"].as_str().unwrap().contains("2 MiB"), "{answer}");
    }
    // A signed hook's signature is over its body: that one is read (up to the limit) to check it.
    let (status, answer) = raw(&server, &post("/hooks/keyed", false), huge()).await;
    assert_eq!((status, code(&answer)), (413, "BODY_TOO_LARGE"));

    for (method, path) in [
        ("GET", "/api/runs/%FF"),
        ("GET", "/api/runs/%C3%28/events"),
        ("POST", "/api/runs/%FF/cancel"),
        ("POST", "/api/commands/%FE"),
    ] {
        let head = format!("{method} {path} HTTP/1.1\r\nHost: switchyard\r\nAuthorization: Bearer {}", server.token);
        let (status, answer) = raw(&server, &head, b"{}".to_vec()).await;
        assert_eq!((status, code(&answer)), (400, "INVALID_PATH"), "{path}: {answer}");
    }
    let (status, answer) = raw(&server, &post("/hooks/%FF", false), b"{}".to_vec()).await;
    assert_eq!((status, code(&answer)), (400, "INVALID_PATH"), "{answer}");
    // What a file service refuses (the web app's folder takes no POST) is said the same way.
    let (status, answer) = raw(&server, &post("/history", false), b"{}".to_vec()).await;
    assert_eq!((status, code(&answer)), (405, "METHOD_NOT_ALLOWED"), "{answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconnection_names_an_event_it_has_or_is_refused_and_an_idempotency_key_is_never_ignored() {
    let server = Server::start("api_headers").await;
    let (status, started) = server.post("/api/runs", json!({"workflow": "gate", "input": {"n": 1}})).await;
    assert_eq!(status, 201, "{started}");
    let events = format!("{}/api/runs/{}/events", server.url, started["id"].as_str().unwrap());
    let follow = |last: Option<&[u8]>, query: &str| {
        let request = server.client.get(format!("{events}{query}")).bearer_auth(&server.token);
        match last {
            Some(v) => request.header("Last-Event-ID", reqwest::header::HeaderValue::from_bytes(v).unwrap()),
            None => request,
        }
        .send()
    };
    for last in
        [&b"9223372036854775808"[..], b"18446744073709551615", b"99999999999999999999999", b"abc", b"-1", b"\xff"]
    {
        let answer = follow(Some(last), "").await.unwrap();
        assert_eq!(answer.status().as_u16(), 400, "{last:?}");
        let answer: Value = answer.json().await.unwrap();
        assert_eq!(code(&answer), "INVALID_HEADER", "{answer}");
        assert!(answer["message"].as_str().unwrap().starts_with("Last-Event-ID"), "{answer}");
    }
    for after in ["9223372036854775808", "18446744073709551616", "x"] {
        let answer = follow(None, &format!("?after={after}")).await.unwrap();
        assert_eq!(answer.status().as_u16(), 400, "{after}");
        assert_eq!(code(&answer.json().await.unwrap()), "INVALID_QUERY");
    }
    let answer = follow(Some(b"9223372036854775807"), "").await.unwrap();
    assert_eq!(answer.status().as_u16(), 200, "the last number an event can have is one");

    let deliver = |key: &[u8]| {
        let request = server.client.post(format!("{}/hooks/open", server.url)).bearer_auth(&server.token);
        request
            .header("Idempotency-Key", reqwest::header::HeaderValue::from_bytes(key).unwrap())
            .body("{\"n\": 1}")
            .send()
    };
    let first: Value = deliver("clé-1".as_bytes()).await.unwrap().json().await.unwrap();
    let again: Value = deliver("clé-1".as_bytes()).await.unwrap().json().await.unwrap();
    assert_eq!((&first["new"], &again["new"], &again["id"]), (&json!(true), &json!(false), &first["id"]), "{again}");
    for key in [&b"\xff\xfe"[..], &[b'k'; 2000][..]] {
        let answer = deliver(key).await.unwrap();
        assert_eq!(answer.status().as_u16(), 400);
        let answer: Value = answer.json().await.unwrap();
        assert_eq!(code(&answer), "INVALID_HEADER", "{answer}");
        assert!(answer["message"].as_str().unwrap().starts_with("idempotency-key"), "{answer}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_whose_database_session_ends_under_it_is_told_to_try_again_and_the_retry_is_kept() {
    let server = Server::start("api_pg_ended").await;
    let url = server.db.clone();
    let (locker, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    locker.batch_execute("BEGIN; LOCK TABLE runs IN ACCESS EXCLUSIVE MODE").await.unwrap();
    let delivery = || {
        let request = server.client.post(format!("{}/hooks/open", server.url)).bearer_auth(&server.token);
        request.header("Idempotency-Key", "restart-1").body("{\"n\": 1}").send()
    };
    let first = tokio::spawn(delivery());
    // The server's session waits for the lock; it is ended as a restart ends it ("terminating connection due to
    // administrator command").
    let waiting = "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'";
    let pid: i32 = loop {
        if let Some(row) = locker.query_opt(waiting, &[]).await.unwrap() {
            break row.get(0);
        }
        tokio::task::yield_now().await;
    };
    let (ender, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    ender.execute("SELECT pg_terminate_backend($1)", &[&pid]).await.unwrap();
    let answer = first.await.unwrap().unwrap();
    assert_eq!(answer.status().as_u16(), 503);
    let answer: Value = answer.json().await.unwrap();
    assert_eq!(code(&answer), "PG_CONNECT", "{answer}");
    locker.batch_execute("ROLLBACK").await.unwrap();
    let again = delivery().await.unwrap();
    let status = again.status().as_u16();
    let again: Value = again.json().await.unwrap();
    assert_eq!(status, 202, "the sender's retry starts the run: {again}");
    assert_eq!(again["new"], json!(true), "the first delivery kept nothing: {again}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openapi_document_passes_a_real_validator_and_runs_are_listed_as_the_cli_lists_them() {
    let server = Server::start("api_openapi").await;
    let (status, openapi) = server.call(reqwest::Method::GET, "/openapi.json", None, false).await;
    assert_eq!(status, 200);
    let parameter = |path: &str, name: &str| {
        let parameters = openapi["paths"][path]["get"]["parameters"].as_array().unwrap();
        parameters.iter().find(|p| p["name"] == name).unwrap_or_else(|| panic!("{path} {name}")).clone()
    };
    assert_eq!(
        (parameter("/api/runs", "limit")["in"].clone(), parameter("/api/runs", "limit")["required"].clone()),
        (json!("query"), json!(false))
    );
    assert_eq!(parameter("/api/runs/{id}/events", "after")["in"], "query");

    let python = std::process::Command::new("bash")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/openapi-python.sh"))
        .output()
        .unwrap();
    assert!(python.status.success(), "scripts/openapi-python.sh: {}", String::from_utf8_lossy(&python.stderr));
    let python = String::from_utf8(python.stdout).unwrap().trim().to_string();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("openapi.json");
    std::fs::write(&file, openapi.to_string()).unwrap();
    let validated = std::process::Command::new(python)
        .args([
            "-c",
            "import sys; from openapi_spec_validator import validate; from openapi_spec_validator.readers \
                      import read_from_filename; validate(read_from_filename(sys.argv[1])[0]); print('valid')",
        ])
        .arg(&file)
        .output()
        .unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&validated.stdout), String::from_utf8_lossy(&validated.stderr));
    assert!(validated.status.success() && said.trim() == "valid", "openapi-spec-validator: {said}");

    // `GET /api/runs` lists what `switchyard runs --json` prints: `workflow` is the file, `name` the workflow's name.
    let (status, _) = server.post("/api/runs", json!({"workflow": "gate", "input": {"n": 1}})).await;
    assert_eq!(status, 201);
    let (status, runs) = server.get("/api/runs").await;
    assert_eq!(status, 200);
    let row = runs[0].as_object().unwrap();
    let keys: Vec<_> = row.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "id",
            "workflow",
            "name",
            "status",
            "started",
            "durationMs",
            "pending",
            "tokens",
            "cost",
            "costText",
            "priced",
            "eval",
            "origin",
            "cancelledBy",
            "version",
            "queue",
            "ahead",
            "waiting",
            "parent"
        ]
    );
    assert_eq!(row["origin"], json!({"via": "api", "by": "test"}), "started by the test's token: {runs}");
    assert_eq!(row["parent"], Value::Null, "a run started through the API is nobody's child");
    // `with_children` asks for a workflow's runs with their children (a gate run has none).
    let (_, own) = server.get("/api/runs?workflow=gate").await;
    let (status, family) = server.get("/api/runs?workflow=gate&with_children=true").await;
    let ids = |runs: &Value| runs.as_array().unwrap().iter().map(|r| r["id"].clone()).collect::<Vec<_>>();
    assert_eq!((status, ids(&family)), (200, ids(&own)));
    assert!(!ids(&own).is_empty(), "{own}");
    assert!(row["workflow"].as_str().unwrap().ends_with("gate.yaml"), "{runs}");
    assert_eq!(row["name"], "gate");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_run_shows_the_version_of_the_served_workflow_it_ran_and_the_versions_are_listed_newest_first() {
    let server = Server::start("run_versions").await;
    let (status, before) = server.post("/api/runs", json!({"workflow": "gate", "input": {"n": 1}})).await;
    assert_eq!((status, &before["version"]), (201, &json!(1)), "{before}");

    // The file is edited: the registry reads the folder again (every couple of seconds) and serves version 2.
    let edited = GATE.replace("name: gate\n", "name: gate\ndescription: Now with a description.\n");
    std::fs::write(server._folder.path().join("gate.yaml"), edited).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    loop {
        let (_, served) = server.get("/api/workflows").await;
        if served["workflows"][0]["version"] == json!(2) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "version 2 is never served: {served}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let (status, after) = server.post("/api/runs", json!({"workflow": "gate", "input": {"n": 2}})).await;
    assert_eq!((status, &after["version"]), (201, &json!(2)), "{after}");

    // Each run keeps the version it started from, in its view and in the listing.
    for (started, version) in [(&before, 1), (&after, 2)] {
        let (status, shown) = server.get(&format!("/api/runs/{}", started["id"].as_str().unwrap())).await;
        assert_eq!((status, &shown["run"]["version"]), (200, &json!(version)), "{shown}");
    }
    let (_, runs) = server.get("/api/runs?workflow=gate").await;
    let listed: Vec<_> = runs.as_array().unwrap().iter().map(|r| (r["id"].clone(), r["version"].clone())).collect();
    assert_eq!(listed, [(after["id"].clone(), json!(2)), (before["id"].clone(), json!(1))], "{runs}");

    let (status, versions) = server.get("/api/workflows/gate/versions").await;
    assert_eq!(status, 200, "{versions}");
    let numbers: Vec<_> = versions.as_array().unwrap().iter().map(|v| v["version"].clone()).collect();
    assert_eq!(numbers, [json!(2), json!(1)], "newest first: {versions}");
    let newest = versions[0].as_object().unwrap();
    assert_eq!(newest.keys().map(String::as_str).collect::<Vec<_>>(), ["version", "hash", "path", "registeredAt"]);
    assert!(newest["path"].as_str().unwrap().ends_with("gate.yaml"), "{versions}");
    assert_ne!(versions[0]["hash"], versions[1]["hash"], "{versions}");
    assert!(newest["registeredAt"].as_str().unwrap().ends_with('Z'), "{versions}");

    // A read token may list them; a name never served is a 404 that says how to find the served ones.
    let (token, hash) = new_token();
    server
        .store
        .create_scoped_token("reader", &hash, switchyard_engine::store::postgres::team::Scope::Read, None)
        .await
        .unwrap();
    let read = server.client.get(format!("{}/api/workflows/gate/versions", server.url)).bearer_auth(&token);
    assert_eq!(read.send().await.unwrap().status().as_u16(), 200);
    let (status, answer) = server.get("/api/workflows/nope/versions").await;
    assert_eq!((status, code(&answer)), (404, "NO_SUCH_WORKFLOW"), "{answer}");
    assert!(answer["message"].as_str().unwrap().contains("GET /api/workflows lists them"), "{answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_are_listed_a_page_at_a_time_filtered_and_found_by_the_short_ids_history_shows() {
    let server = Server::start("api_find_runs").await;
    let mut started = Vec::new();
    for n in 0..23 {
        let (status, run) = server.post("/api/runs", json!({"workflow": "gate", "input": {"n": n}})).await;
        assert_eq!(status, 201, "{run}");
        started.push(run["id"].as_str().unwrap().to_string());
    }
    // One run cancelled (as a worker ends it), so that a status filter has something to tell apart.
    let cancelled = started[5].clone();
    let store = server.store.clone();
    let id = cancelled.clone();
    tokio::task::spawn_blocking(move || {
        use switchyard_engine::store::Store;
        let claim = store.claim(&id).unwrap();
        let status = LogItem::Status { status: RunStatus::Cancelled, pending: vec![] };
        Arc::new(store.clone()).run_log(&claim).write_batch(&id, &[status]).unwrap();
    })
    .await
    .unwrap();

    let ids = |page: &Value| -> Vec<String> {
        page.as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap().to_string()).collect()
    };
    let (status, all) = server.get("/api/runs?limit=1000").await;
    assert_eq!(status, 200);
    let all = ids(&all);
    assert_eq!(all.len(), 23);
    assert_eq!(all.iter().rev().cloned().collect::<Vec<_>>(), started, "newest first");

    // Pages of 5, each after the last run of the one before, tell every run once, in order.
    let (mut paged, mut before) = (Vec::new(), String::new());
    loop {
        let (status, page) = server.get(&format!("/api/runs?limit=5{before}")).await;
        assert_eq!(status, 200, "{page}");
        let page = ids(&page);
        paged.extend(page.clone());
        if page.len() < 5 {
            break;
        }
        before = format!("&before={}", page.last().unwrap());
    }
    assert_eq!(paged, all);

    // Filters.
    let (_, found) = server.get("/api/runs?status=cancelled&workflow=gate").await;
    assert_eq!(ids(&found), [cancelled.as_str()]);
    let (_, found) = server.get("/api/runs?status=ready,cancelled&limit=1000").await;
    assert_eq!(ids(&found).len(), 23);
    let (_, found) = server.get("/api/runs?workflow=nobody").await;
    assert_eq!(found, json!([]));
    let (_, found) = server.get("/api/runs?since=1h&limit=1000").await;
    assert_eq!(ids(&found).len(), 23, "every run started in the last hour");
    let (_, found) = server.get("/api/runs?until=2h").await;
    assert_eq!(found, json!([]), "none before two hours ago");
    let short = &cancelled[..8];
    let (_, found) = server.get(&format!("/api/runs?id={short}")).await;
    assert_eq!(ids(&found), [cancelled.as_str()]);
    let (_, found) = server.get(&format!("/api/runs?search={}", short.to_uppercase())).await;
    assert_eq!(ids(&found), [cancelled.as_str()], "search: the beginning of an id, in any case");
    let (_, found) = server.get("/api/runs?search=GAT&status=cancelled").await;
    assert_eq!(ids(&found), [cancelled.as_str()], "or part of the workflow's name");
    for (query, status) in
        [("status=finished", 400), ("since=yesterday", 400), ("limit=1001", 400), ("before=no-such-run", 404)]
    {
        let (got, answer) = server.get(&format!("/api/runs?{query}")).await;
        assert_eq!(got, status, "{query}: {answer}");
        assert!(!code(&answer).is_empty());
    }

    // A short id names its run in every route that takes one.
    let (status, shown) = server.get(&format!("/api/runs/{short}")).await;
    assert_eq!((status, shown["run"]["id"].as_str()), (200, Some(cancelled.as_str())), "{shown}");
    let (status, asked) = server.post(&format!("/api/runs/{short}/cancel"), json!({})).await;
    assert_eq!((status, &asked["asked"]), (202, &json!(false)), "it has ended: {asked}");
    // A prefix of several runs' ids is refused, naming them.
    let mut prefix = String::new();
    'find: for len in 1..8 {
        for id in &all {
            let p = &id[..len];
            if all.iter().filter(|other| other.starts_with(p)).count() > 1 {
                prefix = p.to_string();
                break 'find;
            }
        }
    }
    let (status, refused) = server.get(&format!("/api/runs/{prefix}")).await;
    assert_eq!((status, code(&refused)), (409, "AMBIGUOUS_RUN_ID"), "{refused}");
    let named = all.iter().filter(|id| id.starts_with(&prefix)).take(5);
    for id in named {
        assert!(refused["message"].as_str().unwrap().contains(id.as_str()), "{refused}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_run_gets_the_requests_headers_and_query_beside_its_body_and_never_a_secret() {
    let server = Server::start("api_hook_request").await;
    let input = |id: String| {
        let store = server.store.clone();
        async move { store.load(&id).await.unwrap().options.input.unwrap() }
    };
    // JSON, with a query and headers; the token never reaches the run.
    let answer = server
        .client
        .post(format!("{}/hooks/open?ref=main&tag=a&tag=b%20c", server.url))
        .bearer_auth(&server.token)
        .header("X-GitHub-Event", "issues")
        .header("Cookie", "session=secret")
        .header("Content-Type", "application/json")
        .body("{\"n\": 1, \"action\": \"opened\"}")
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status().as_u16(), 202);
    let run: Value = answer.json().await.unwrap();
    let given = input(run["id"].as_str().unwrap().to_string()).await;
    assert_eq!(given["body"], json!({"n": 1, "action": "opened"}));
    assert_eq!(given["query"], json!({"ref": "main", "tag": ["a", "b c"]}));
    let headers = given["headers"].as_object().unwrap();
    assert_eq!(headers["x-github-event"], "issues", "names lower-cased: {given}");
    assert_eq!(headers["content-type"], "application/json");
    for secret in ["authorization", "cookie"] {
        assert!(!headers.contains_key(secret), "{secret} is left out: {given}");
    }
    assert!(!given.to_string().contains(&server.token), "the token is nowhere in the input");

    // Form fields, signed: the signature is not given to the run either.
    let form = "n=2&title=printer+on+fire&emoji=%F0%9F%94%A5";
    let answer = server
        .client
        .post(format!("{}/hooks/keyed", server.url))
        .header("Content-Type", "application/x-www-form-urlencoded")
        .header("X-Hub-Signature-256", switchyard_server::hooks::sign("s3cret", form.as_bytes()))
        .body(form)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status().as_u16(), 202);
    let run: Value = answer.json().await.unwrap();
    let given = input(run["id"].as_str().unwrap().to_string()).await;
    assert_eq!(given["body"], json!({"n": "2", "title": "printer on fire", "emoji": "🔥"}));
    assert_eq!(given["query"], json!({}));
    assert!(!given["headers"].as_object().unwrap().contains_key("x-hub-signature-256"), "{given}");

    // GitHub's ping, signed as GitHub signs it, is answered 200 and starts no run.
    let (_, before) = server.get("/api/runs").await;
    let ping = "{\"zen\": \"Keep it logically awesome.\", \"hook_id\": 1}";
    let answer = server
        .client
        .post(format!("{}/hooks/keyed", server.url))
        .header("X-GitHub-Event", "ping")
        .header("X-GitHub-Delivery", "ping-1")
        .header("X-Hub-Signature-256", switchyard_server::hooks::sign("s3cret", ping.as_bytes()))
        .body(ping)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status().as_u16(), 200);
    let pong: Value = answer.json().await.unwrap();
    assert_eq!(pong["pong"], true, "{pong}");
    let (_, after) = server.get("/api/runs").await;
    let ids = |runs: &Value| runs.as_array().unwrap().iter().map(|r| r["id"].clone()).collect::<Vec<_>>();
    assert_eq!(ids(&before), ids(&after), "a ping starts no run");
    // A ping with a wrong signature is refused as any delivery is.
    let wrong = server
        .client
        .post(format!("{}/hooks/keyed", server.url))
        .header("X-GitHub-Event", "ping")
        .header("X-Hub-Signature-256", switchyard_server::hooks::sign("guess", ping.as_bytes()))
        .body(ping)
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status().as_u16(), 401);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_need_a_token_and_parse_with_prometheus_own_text_format_parser() {
    let server = Server::start("api_metrics").await;
    for n in 0..3 {
        let (status, _) = server.post("/api/runs", json!({"workflow": "gate", "input": {"n": n}})).await;
        assert_eq!(status, 201);
    }
    let (status, _) = server.get("/api/runs/no-such-run").await;
    assert_eq!(status, 404);
    let (status, refused) = server.call(reqwest::Method::GET, "/metrics", None, false).await;
    assert_eq!((status, code(&refused)), (401, "UNAUTHORIZED"), "{refused}");
    let answer = server.client.get(format!("{}/metrics", server.url)).bearer_auth(&server.token).send().await.unwrap();
    assert_eq!(answer.status().as_u16(), 200);
    assert!(answer.headers()["content-type"].to_str().unwrap().starts_with("text/plain; version=0.0.4"));
    let text = answer.text().await.unwrap();

    let python = std::process::Command::new("bash")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/prometheus-python.sh"))
        .output()
        .unwrap();
    assert!(python.status.success(), "scripts/prometheus-python.sh: {}", String::from_utf8_lossy(&python.stderr));
    let python = String::from_utf8(python.stdout).unwrap().trim().to_string();
    // Each sample as `name{labels} value`, as the parser read it (it fails on anything out of format).
    let parse = "import sys, json; from prometheus_client.parser import text_string_to_metric_families as p\n\
                 print(json.dumps([[f.name, f.type, s.name, s.labels, s.value] for f in p(sys.stdin.read()) \
                 for s in f.samples]))";
    let mut child = std::process::Command::new(python)
        .args(["-c", parse])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let parsed = child.wait_with_output().unwrap();
    assert!(parsed.status.success(), "{}\n{text}", String::from_utf8_lossy(&parsed.stderr));
    let samples: Vec<(String, String, String, Value, f64)> = serde_json::from_slice(&parsed.stdout).unwrap();
    let value = |sample: &str, labels: Value| {
        samples
            .iter()
            .find(|(_, _, name, l, _)| name == sample && *l == labels)
            .map(|s| s.4)
            .unwrap_or_else(|| panic!("no {sample} {labels} in\n{text}"))
    };
    assert_eq!(value("switchyard_runs", json!({"status": "ready"})), 3.0);
    assert_eq!(value("switchyard_runs", json!({"status": "failed"})), 0.0);
    assert_eq!(value("switchyard_queue_depth", json!({})), 3.0);
    assert_eq!(value("switchyard_run_claims_total", json!({})), 0.0);
    assert_eq!(value("switchyard_decisions_total", json!({})), 0.0);
    assert_eq!(value("switchyard_live_lease_holders", json!({})), 0.0);
    assert_eq!(value("switchyard_http_requests_total", json!({"route": "/api/runs", "code": "201"})), 3.0);
    assert_eq!(value("switchyard_http_requests_total", json!({"route": "/api/runs/{id}", "code": "404"})), 1.0);
    assert!(samples.iter().any(|s| s.0 == "switchyard_run_claims" && s.1 == "counter"), "counters are typed");

    // Paths that are no route are 404, never the app's page: as `{code, message}`.
    for path in ["/foo.php", "/api/nope", "/metrics/x"] {
        let (status, answer) = server.get(path).await;
        assert_eq!(status, 404, "{path}: {answer}");
        assert!(!code(&answer).is_empty());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tokens_scope_bounds_what_it_may_do_and_an_expired_or_rotated_token_is_refused() {
    use switchyard_engine::store::postgres::team::{Rotated, Scope};
    let server = Server::start("token_scopes").await;
    let mut tokens = std::collections::BTreeMap::new();
    for (name, scope, expires) in [
        ("reader", Scope::Read, None),
        ("runner", Scope::Run, None),
        ("decider", Scope::Decide, None),
        ("gone", Scope::Admin, Some(0)),
    ] {
        let (token, hash) = new_token();
        server.store.create_scoped_token(name, &hash, scope, expires).await.unwrap();
        tokens.insert(name, token);
    }
    let send = |token: &str, method: reqwest::Method, path: &str, body: Option<Value>| {
        let mut request = server.client.request(method, format!("{}{path}", server.url)).bearer_auth(token);
        if let Some(body) = body {
            request = request.json(&body);
        }
        async move {
            let response = request.send().await.unwrap();
            (response.status().as_u16(), response.json::<Value>().await.unwrap_or(Value::Null))
        }
    };
    let start = || Some(json!({"workflow": "gate", "input": {"n": 1}}));
    let post = reqwest::Method::POST;

    // read: reads, and nothing more, by any route (the API's or the app's commands).
    let (status, _) = send(&tokens["reader"], reqwest::Method::GET, "/api/runs", None).await;
    assert_eq!(status, 200);
    let (status, answer) = send(&tokens["reader"], post.clone(), "/api/runs", start()).await;
    assert_eq!((status, code(&answer)), (403, "INSUFFICIENT_SCOPE"), "{answer}");
    let said = answer["message"].as_str().unwrap();
    assert!(said.contains("`reader`") && said.contains("--scope run"), "{said}");

    // run: starts runs, but neither decides nor cancels them.
    let (status, started) = send(&tokens["runner"], post.clone(), "/api/runs", start()).await;
    assert_eq!(status, 201, "{started}");
    let run = started["id"].as_str().unwrap().to_string();
    let decide = Some(json!({"node": "review", "decision": "approve"}));
    let (status, answer) = send(&tokens["runner"], post.clone(), &format!("/api/runs/{run}/decisions"), decide).await;
    assert_eq!((status, code(&answer)), (403, "INSUFFICIENT_SCOPE"), "{answer}");
    let (status, answer) = send(&tokens["runner"], post.clone(), &format!("/api/runs/{run}/cancel"), None).await;
    assert_eq!((status, code(&answer)), (403, "INSUFFICIENT_SCOPE"), "{answer}");
    let by_command = Some(json!({"runId": run}));
    let (status, answer) = send(&tokens["runner"], post.clone(), "/api/commands/cancel_run", by_command.clone()).await;
    assert_eq!((status, code(&answer)), (403, "INSUFFICIENT_SCOPE"), "{answer}");

    // decide: cancels.
    let (status, answer) = send(&tokens["decider"], post.clone(), "/api/commands/cancel_run", by_command).await;
    assert_eq!(status, 200, "{answer}");

    // Expired: refused as a revoked token is, saying when it expired.
    let (status, answer) = send(&tokens["gone"], reqwest::Method::GET, "/api/runs", None).await;
    assert_eq!((status, code(&answer)), (401, "UNAUTHORIZED"), "{answer}");
    assert!(answer["message"].as_str().unwrap().contains("expired"), "{answer}");

    // Rotated: the old value is refused from the next request on; the new one does what the old one did.
    let (fresh, hash) = new_token();
    assert_eq!(server.store.rotate_token("runner", &hash, None).await.unwrap(), Rotated::Yes);
    let (status, _) = send(&tokens["runner"], reqwest::Method::GET, "/api/runs", None).await;
    assert_eq!(status, 401);
    let (status, answer) = send(&fresh, post.clone(), "/api/runs", start()).await;
    assert_eq!(status, 201, "{answer}");
    assert_eq!(server.store.rotate_token("nobody", &hash, None).await.unwrap(), Rotated::NoSuchToken);
    // An expired token is not rotated into a value refused at once: only with a new lifetime.
    let (revived, hash) = new_token();
    let refused = server.store.rotate_token("gone", &hash, None).await.unwrap();
    assert!(matches!(refused, Rotated::Expired { .. }), "{refused:?}");
    assert!(server.store.tokens().await.unwrap().iter().any(|t| t.name == "gone" && t.expired && !t.revoked));
    assert_eq!(server.store.rotate_token("gone", &hash, Some(3600)).await.unwrap(), Rotated::Yes);
    let (status, _) = send(&revived, reqwest::Method::GET, "/api/runs", None).await;
    assert_eq!(status, 200);

    // The list says each one's scope, expiry and last use (never the tokens).
    let listed = server.store.tokens().await.unwrap();
    let row = |name: &str| listed.iter().find(|t| t.name == name).unwrap().clone();
    assert_eq!((row("reader").scope, row("reader").last_used.is_some()), (Scope::Read, true));
    assert!(row("gone").expires.is_some() && !row("gone").expired && row("gone").last_used.is_some(), "{listed:?}");
    assert_eq!((row("decider").scope, row("decider").expires.clone()), (Scope::Decide, None));
    assert_eq!(row("test").scope, Scope::Admin, "a token made without a scope may do everything");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runs_view_lists_the_child_runs_its_workflow_nodes_started_with_their_status() {
    let server = Server::start("run_children").await;
    let (status, parent) = server.post("/api/runs", json!({"workflow": "gate", "input": {"n": 1}})).await;
    assert_eq!(status, 201, "{parent}");
    let parent = parent["id"].as_str().unwrap().to_string();
    let (_, shown) = server.get(&format!("/api/runs/{parent}")).await;
    assert_eq!(shown["children"], json!([]), "none yet: {shown}");

    // A child run, as a worker running the parent's `workflow` node `fan` submits it, for its item 2.
    let workflow = switchyard_engine::format::load_str(GATE, None, None).unwrap().workflow;
    let link = switchyard_engine::run::ParentLink {
        run: parent.clone(),
        node: "fan".into(),
        iteration: 1,
        item: Some(2),
        call: None,
    };
    let options = switchyard_engine::run::RunOptions { parent: Some(link), ..Default::default() };
    let child = switchyard_engine::store::NewRun {
        id: "child-of-fan",
        workflow: &workflow,
        workflow_ref: None,
        answers_path: None,
        options: &options,
        eval_id: None,
        origin: Default::default(),
        version: None,
    };
    server.store.submit(&child).await.unwrap();
    let (status, shown) = server.get(&format!("/api/runs/{}", &parent[..8])).await;
    assert_eq!(status, 200, "{shown}");
    assert_eq!(
        shown["children"],
        json!([{"id": "child-of-fan", "node": "fan", "iteration": 1, "item": 2, "status": "ready"}]),
        "{shown}"
    );
}
