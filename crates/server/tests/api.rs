//! The HTTP API's refusals and answers against a real PostgreSQL (`pg_cluster.rs`: a throwaway cluster for this test
//! binary, one database per test) and a real listening server: every error path a client can hit answers
//! `{code, message}` with its status. The whole server under load and faults is `scripts/server-acceptance.py`.

#[path = "../../engine/tests/support/pg_cluster.rs"]
mod pg_cluster;

use std::sync::Arc;

use serde_json::{json, Value};
use switchyard_engine::log::LogItem;
use switchyard_engine::postgres::team::new_token;
use switchyard_engine::postgres::PgStore;
use switchyard_engine::result::RunStatus;

const GATE: &str = "switchyard: 1
name: gate
triggers:
  - {webhook: open}
  - {webhook: signed, secret_env: SWITCHYARD_TEST_UNSET_SECRET}
  - {webhook: keyed, secret_env: SWITCHYARD_TEST_SET_SECRET}
input_schema: {type: object, required: [n]}
nodes:
  - {id: start, type: start}
  - {id: review, type: approval}
edges: [{from: start, to: review}]
";

struct Server {
    url: String,
    token: String,
    store: PgStore,
    _folder: tempfile::TempDir,
    _ui: tempfile::TempDir,
    client: reqwest::Client,
}

impl Server {
    async fn start(name: &str) -> Server {
        std::env::set_var("SWITCHYARD_TEST_SET_SECRET", "s3cret");
        let db = pg_cluster::database(name);
        let store = tokio::task::spawn_blocking(move || PgStore::open(&db).unwrap()).await.unwrap();
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
        let s = store.clone();
        tokio::task::spawn_blocking(move || s.create_token("test", &hash).unwrap()).await.unwrap();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        drop(listener);
        let options = switchyard_server::Options {
            listen: addr,
            workflows: folder.path().to_path_buf(),
            answers: None,
            ui: Some(ui.path().to_path_buf()),
        };
        tokio::spawn(switchyard_server::serve(store.clone(), options, Arc::new(|_| {}), std::future::pending()));
        let url = format!("http://{addr}");
        switchyard_engine::net::install_crypto();
        let client = reqwest::Client::new();
        for _ in 0..200 {
            if client.get(format!("{url}/healthz")).send().await.is_ok() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(25)).await;
        }
        Server { url, token, store, _folder: folder, _ui: ui, client }
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
    for path in ["/api/runs", "/api/runs/{id}/events", "/api/runs/{id}/decisions", "/hooks/{name}"] {
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
        let (_, epoch) = store.claim_ready("w", std::time::Duration::from_secs(60)).unwrap().unwrap();
        let asked = approval_requested(&run, 1, "review");
        let paused = LogItem::Status { status: RunStatus::Paused, pending: vec!["review".into()] };
        store.write_batch(&run, epoch, &[asked, paused]).unwrap();
        store.release(&run, epoch, None).unwrap();
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
    let page = server.client.get(format!("{}/history", server.url)).send().await.unwrap().text().await.unwrap();
    assert_eq!(page, "<html>the app</html>", "any other path is the web app's");
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

    // The served workflow, opened by name and then by its file, as the window opens a file.
    let (status, opened) = server.command("startup_file", json!({ "workflow": "gate" })).await;
    assert_eq!(status, 200, "{opened}");
    let path = opened["path"].as_str().unwrap().to_string();
    assert!(path.ends_with("gate.yaml"), "{opened}");
    let (status, document) = server.command("open_file", json!({ "path": path })).await;
    assert_eq!(
        (status, &document["workflow"]["name"], &document["format"]),
        (200, &json!("gate"), &json!("switchyard"))
    );
    let (_, tea) = server.command("startup_file", json!({ "workflow": "tea-flow" })).await;
    let (status, tea) = server.command("open_file", json!({ "path": tea["path"] })).await;
    assert_eq!((status, &tea["format"]), (200, &json!("tea")), "a served file says the format it was read as: {tea}");
    let (status, answer) = server.command("open_file", json!({ "path": "/etc/passwd" })).await;
    assert_eq!((status, code(&answer)), (404, "NO_SUCH_WORKFLOW"), "only served workflows are opened");
    let (status, answer) = server.command("startup_file", json!({ "workflow": "nope" })).await;
    assert_eq!((status, code(&answer)), (404, "NO_SUCH_WORKFLOW"), "an unknown name in the address is said so");
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
    let row = {
        let (store, id) = (server.store.clone(), id.clone());
        tokio::task::spawn_blocking(move || store.requests(&id).unwrap()).await.unwrap()
    };
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
        let (_, epoch) = store.claim_ready("w", minute).unwrap().unwrap();
        let paused = LogItem::Status { status: RunStatus::Paused, pending: vec!["review".into()] };
        store.write_batch(&run, epoch, &[approval_requested(&run, 1, "review"), paused]).unwrap();
        store.release(&run, epoch, None).unwrap();
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
        let (_, epoch) = store.claim_ready("w", minute).unwrap().unwrap();
        let decided = json!({"seq": 2, "input": "decided", "node": "review",
            "decision": {"decision": "approve", "note": ""}, "immediate": false});
        store.write_batch(&run, epoch, &[LogItem::Input(serde_json::from_value(decided).unwrap())]).unwrap();
        assert_eq!(store.get(&run).unwrap().pending, vec!["review".to_string()], "the row lags behind the log");
    })
    .await
    .unwrap();
    let (status, answer) = server.post(&format!("/api/runs/{id}/decisions"), approve).await;
    assert_eq!((status, &answer["kept"]), (202, &json!(false)), "decided once: {answer}");
    let store = server.store.clone();
    let kept = tokio::task::spawn_blocking(move || store.requests(&id).unwrap()).await.unwrap();
    let rounds: Vec<_> = kept.decisions.iter().map(|k| (k.node.as_str(), k.round)).collect();
    assert_eq!(rounds, [("review", 0)], "one decision, for the round that was asked");
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
    let (status, report) = server.command("validate", json!({ "workflow": schema })).await;
    assert_eq!(status, 200, "{report}");
    assert!(!report.to_string().contains("root:"), "{report}");
    let workflow = json!({"switchyard": 1, "name": "x", "nodes": [{"id": "start", "type": "start"}], "edges": []});
    let run = json!({ "request": { "workflow": workflow, "workflowPath": "../../../../etc/passwd" } });
    let (status, answer) = server.command("start_run", run).await;
    assert_eq!((status, code(&answer)), (404, "NO_SUCH_WORKFLOW"), "{answer}");
}
