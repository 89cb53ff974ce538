//! A server's `/mcp` against a real MCP client (the Python `mcp` SDK over Streamable HTTP, tests/mcp_http/client.py),
//! a real PostgreSQL (`pg_cluster.rs`) and a real worker taking the runs the calls start. npm test gives the python
//! (SWITCHYARD_TEST_MCP_PYTHON, from scripts/mcp-python.sh).

#[path = "../../engine/tests/support/pg_cluster.rs"]
mod pg_cluster;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use switchyard_engine::store::postgres::team::new_token;
use switchyard_engine::store::postgres::PgStore;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

const ANSWERS: &str = "nodes:
  draft:
    - text: Dark mode arrives next week on every platform.
  publish:
    - text: <h1>Dark mode is coming</h1>
";

/// A server over a fresh database, serving examples/approval-flow.yaml with an answers file, and one worker: its URL
/// and a token.
async fn team(name: &str) -> (String, String, tempfile::TempDir) {
    switchyard_engine::net::install_crypto();
    let db = pg_cluster::database(name);
    let opened = db.clone();
    let store = tokio::task::spawn_blocking(move || PgStore::open(&opened).unwrap()).await.unwrap();
    let folder = tempfile::tempdir().unwrap();
    let flows = folder.path().join("flows");
    std::fs::create_dir(&flows).unwrap();
    std::fs::copy(repo().join("examples/approval-flow.yaml"), flows.join("approval-flow.yaml")).unwrap();
    std::fs::write(folder.path().join("answers.yaml"), ANSWERS).unwrap();
    let (token, hash) = new_token();
    store.create_token("agent", &hash).await.unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let options = switchyard_server::Options {
        listen: addr,
        workflows: flows,
        answers: Some(folder.path().join("answers.yaml")),
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
    tokio::spawn(switchyard_engine::worker::work(store, worker, Arc::new(|_| {}), std::future::pending()));
    let url = format!("http://{addr}");
    let client = reqwest::Client::new();
    while client.get(format!("{url}/healthz")).send().await.is_err() {
        tokio::task::yield_now().await;
    }
    (url, token, folder)
}

/// Plays a scenario of client.py against the server: what the client saw.
async fn play(scenario: &str, url: &str, token: &str) -> Value {
    let python = std::env::var("SWITCHYARD_TEST_MCP_PYTHON")
        .expect("SWITCHYARD_TEST_MCP_PYTHON must name a python with the `mcp` package: run `npm test`");
    let out = tokio::process::Command::new(python)
        .arg(repo().join("crates/server/tests/mcp_http/client.py"))
        .args([scenario, url, token])
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{scenario}: {stdout}\n{stderr}");
    // The client ends its session (DELETE /mcp) as the SDK expects it to end.
    assert!(!stderr.contains("Session termination failed"), "{stderr}");
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{scenario}: not JSON ({e}): {stdout}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a python with the `mcp` package (SWITCHYARD_TEST_MCP_PYTHON); npm test runs it"]
async fn an_agent_calls_a_served_workflow_over_http_approves_its_step_and_gets_the_result_a_worker_made() {
    let (url, token, _folder) = team("mcp_http_approve").await;
    let seen = play("approve", &url, &token).await;
    assert_eq!(seen["tools"], serde_json::json!(["publish_with_approval"]), "{seen}");
    let asked = &seen["asked"][0]["message"];
    assert!(asked.as_str().unwrap().starts_with("Publish this announcement?"), "{seen}");
    assert_eq!(seen["call"]["isError"], false, "{seen}");
    assert_eq!(seen["call"]["text"][0], "<h1>Dark mode is coming</h1>", "{seen}");
    let run = seen["call"]["structured"]["runId"].as_str().unwrap();
    let progress: Vec<&str> =
        seen["progress"].as_array().unwrap().iter().filter_map(|p| p["message"].as_str()).collect();
    assert!(progress.contains(&"review waits for a decision") && progress.contains(&"publish succeeded"), "{seen}");
    // The run is a run like any other: the API shows it, with the decision the person made through the client.
    let client = reqwest::Client::new();
    let shown: Value =
        client.get(format!("{url}/api/runs/{run}")).bearer_auth(&token).send().await.unwrap().json().await.unwrap();
    assert_eq!(shown["run"]["status"], "completed", "{shown}");
    assert_eq!(shown["result"]["results"]["review"]["data"]["note"], "ship it", "{shown}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a python with the `mcp` package (SWITCHYARD_TEST_MCP_PYTHON); npm test runs it"]
async fn a_run_started_and_decided_through_mcp_names_the_tokens_person_as_who_started_and_who_decided_it() {
    let (url, token, _folder) = team("mcp_http_identities").await;
    let seen = play("approve", &url, &token).await;
    let run = seen["call"]["structured"]["runId"].as_str().unwrap_or_else(|| panic!("{seen}")).to_string();
    let client = reqwest::Client::new();
    // Its row: started via MCP by the token's name ("agent"), as the API, `switchyard runs` and History show it.
    let shown: Value =
        client.get(format!("{url}/api/runs/{run}")).bearer_auth(&token).send().await.unwrap().json().await.unwrap();
    assert_eq!(shown["run"]["origin"], serde_json::json!({"via": "mcp", "by": "agent"}), "{shown}");
    let listed: Value =
        client.get(format!("{url}/api/runs")).bearer_auth(&token).send().await.unwrap().json().await.unwrap();
    let row = listed.as_array().unwrap().iter().find(|r| r["id"] == run.as_str()).unwrap_or_else(|| panic!("{listed}"));
    assert_eq!(row["origin"], serde_json::json!({"via": "mcp", "by": "agent"}), "{row}");
    // Its log: the decision the person made through the client's elicitation names the token's name too.
    let events = client
        .get(format!("{url}/api/runs/{run}/events"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let received: Vec<Value> = events
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .filter(|e| e["type"] == "approval:received")
        .collect();
    assert_eq!(received.len(), 1, "{events}");
    assert_eq!(
        (&received[0]["by"], &received[0]["note"]),
        (&serde_json::json!("agent"), &serde_json::json!("ship it"))
    );
    assert!(!events.contains(&token), "the token's value is never in the log");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a python with the `mcp` package (SWITCHYARD_TEST_MCP_PYTHON); npm test runs it"]
async fn a_client_without_elicitation_is_told_the_run_waits_and_how_to_decide_it() {
    let (url, token, _folder) = team("mcp_http_paused").await;
    let seen = play("no-elicitation", &url, &token).await;
    let structured = &seen["call"]["structured"];
    assert_eq!(structured["status"], "paused", "{seen}");
    let run = structured["runId"].as_str().unwrap();
    assert_eq!(structured["resume"], format!("POST /api/runs/{run}/decisions"), "{seen}");
    assert!(seen["call"]["text"][0].as_str().unwrap().contains("web app"), "{seen}");
}

#[tokio::test]
async fn mcp_without_a_token_is_refused_like_the_api() {
    let (url, _token, _folder) = team("mcp_http_token").await;
    let answer = reqwest::Client::new()
        .post(format!("{url}/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status().as_u16(), 401);
    let body: Value = answer.json().await.unwrap();
    assert_eq!(body["code"], "UNAUTHORIZED", "{body}");
}
