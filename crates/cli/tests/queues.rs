//! Queues and limits (docs/server.md, "Queues and limits") with real `switchyard worker` processes against a real
//! PostgreSQL (`support/pg_cluster.rs`): a run on one queue starts at once while a large batch waits on another, a
//! person's run goes before a batch in the same queue, a run waiting for a worker says how many go before it, and a
//! workflow's `max_concurrent_runs` holds however many workers race for its runs.
#![cfg(feature = "postgres")]

#[path = "../../engine/tests/support/pg_cluster.rs"]
mod pg_cluster;
mod support;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use switchyard_engine::events::EventKind;
use switchyard_engine::format::{self, Format};
use switchyard_engine::run::RunOptions;
use switchyard_engine::store::postgres::{PgStore, Wait};
use switchyard_engine::store::{NewRun, Origin, StoredStatus, Via};
use switchyard_engine::Workflow;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// One test's folder (workflows, answers files, worker logs) and database.
struct Team {
    home: tempfile::TempDir,
    db: String,
}

impl Team {
    fn new(name: &str) -> Team {
        Team { home: tempfile::tempdir().unwrap(), db: pg_cluster::database(name) }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_switchyard"));
        command
            .args(args)
            .current_dir(repo())
            .env("SWITCHYARD_HOME", self.home.path())
            .env("SWITCHYARD_DB", &self.db)
            .env("SWITCHYARD_LOCAL_URL", "http://127.0.0.1:9/v1");
        command
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    fn json(&self, args: &[&str]) -> (i32, Value) {
        support::json_output(args, self.run(args))
    }

    fn write(&self, name: &str, text: &str) -> String {
        support::write_file(self.home.path(), name, text)
    }

    /// A worker process, its stderr going to `NAME.log` in the folder.
    fn worker(&self, name: &str, args: &[&str]) -> Worker {
        let log = self.home.path().join(format!("{name}.log"));
        let child = self
            .command(&[&["worker"], args].concat())
            .stdout(Stdio::null())
            .stderr(File::create(&log).unwrap())
            .spawn()
            .unwrap();
        Worker { child, log }
    }

    fn store(&self) -> PgStore {
        PgStore::open(&self.db).unwrap()
    }
}

struct Worker {
    child: Child,
    log: PathBuf,
}

impl Worker {
    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits until its log says `text`.
    fn wait_for(&mut self, text: &str) {
        let log = self.log.clone();
        until(&format!("the worker to say {text:?}"), || {
            assert!(self.child.try_wait().unwrap().is_none(), "the worker ended: {}", self.log());
            std::fs::read_to_string(&log).unwrap_or_default().contains(text)
        });
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits for `done` to hold, for at most 120 s.
fn until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !done() {
        assert!(Instant::now() < deadline, "gave up waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A workflow of one agent, `work`, named `name`, with `extra` top-level fields (its queue, its limit).
fn workflow_text(name: &str, extra: &str) -> String {
    format!(
        "switchyard: 1\nname: {name}\n{extra}defaults:\n  model: local/test\nnodes:\n  - {{id: start, type: start}}\n  \
         - {{id: work, type: agent, user_prompt: go}}\nedges:\n  - {{from: start, to: work}}\n"
    )
}

/// A workflow file written to the folder, and the answers file that answers its agent after `delay_ms`.
struct Served {
    workflow: Workflow,
    path: String,
    answers: String,
}

impl Team {
    fn served(&self, name: &str, extra: &str, delay_ms: u64) -> Served {
        let text = workflow_text(name, extra);
        let path = self.write(&format!("{name}.yaml"), &text);
        let answers = self
            .write(&format!("{name}.answers.yaml"), &format!("nodes:\n  work: {{text: done, delay_ms: {delay_ms}}}\n"));
        let workflow = format::load_str(&text, Some(Format::Switchyard), None).unwrap().workflow;
        Served { workflow, path, answers }
    }

    /// Records a run of `served` `ready` for a worker, started as `origin` says: its id.
    fn submit(&self, store: &PgStore, served: &Served, origin: Origin) -> String {
        let id = switchyard_engine::run::new_run_id();
        let options = RunOptions { run_id: Some(id.clone()), ..RunOptions::default() };
        let run = NewRun {
            id: &id,
            workflow: &served.workflow,
            workflow_ref: Some(&served.path),
            answers_path: Some(&served.answers),
            options: &options,
            eval_id: None,
            origin,
            version: None,
        };
        store.submit(&run).wait().unwrap();
        id
    }
}

fn by_api() -> Origin {
    Origin::new(Via::Api, "alice")
}

fn ready_count(store: &PgStore) -> i64 {
    let counts = store.counts().wait().unwrap();
    counts.runs.iter().find(|(s, _)| s == "ready").map_or(0, |(_, n)| *n)
}

#[test]
fn a_run_on_interactive_starts_within_2_s_while_a_500_run_batch_waits_on_batch_with_one_worker_per_queue() {
    let team = Team::new("queues");
    let store = team.store();
    let batch = team.served("nightly batch", "queue: batch\n", 200);
    let interactive = team.served("ask", "queue: interactive\n", 10);
    let ids: Vec<String> = (0..500).map(|_| team.submit(&store, &batch, Origin::default())).collect();

    // A run waiting for a worker says so, and how many go before it in its queue; never `running`.
    let (code, listed) = team.json(&["runs", "--json", "--id", &ids[3]]);
    assert_eq!(code, 0, "{listed}");
    assert_eq!(listed[0]["status"], "ready", "{listed}");
    assert_eq!(listed[0]["queue"], "batch", "{listed}");
    assert_eq!(listed[0]["ahead"], 3, "{listed}");
    assert_eq!(listed[0]["waiting"], "waiting for a worker (3 ahead) in queue `batch`", "{listed}");
    let shown = team.run(&["show", &ids[499]]);
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.contains("ready") && shown.contains("waiting for a worker (499 ahead) in queue `batch`"), "{shown}");

    let mut batch_worker = team.worker("batch", &["--queues", "batch", "--jobs", "2", "--lease", "10"]);
    let mut interactive_worker = team.worker("interactive", &["--queues", "interactive", "--lease", "10"]);
    batch_worker.wait_for("queues batch;");
    interactive_worker.wait_for("waiting for runs");
    batch_worker.wait_for(&format!("{} completed", ids[0]));

    let started = Instant::now();
    let asked = team.submit(&store, &interactive, by_api());
    until("the interactive run to be taken", || store.get(&asked).wait().unwrap().status != StoredStatus::Ready);
    let latency = started.elapsed();
    let waiting = ready_count(&store);
    eprintln!(
        "figure: the interactive run started {:.0} ms after it was submitted, with {waiting} batch runs waiting",
        latency.as_secs_f64() * 1000.0
    );
    assert!(waiting > 400, "the batch is still under way: {waiting} batch runs wait");
    assert!(latency < Duration::from_secs(2), "the interactive run waited {latency:?}");
    until("the interactive run to complete", || store.get(&asked).wait().unwrap().status == StoredStatus::Completed);
    assert!(!batch_worker.log().contains(&asked), "the batch worker never took the interactive run");
    assert!(interactive_worker.log().contains(&format!("claimed {asked}")), "{}", interactive_worker.log());
    assert!(!interactive_worker.log().contains(&ids[1]), "the interactive worker takes nothing from batch");
}

#[test]
fn a_run_started_through_the_api_goes_before_a_batch_waiting_in_the_same_queue() {
    let team = Team::new("priority");
    let store = team.store();
    let batch = team.served("hooks batch", "", 100);
    let mut worker = team.worker("w", &["--jobs", "1", "--lease", "10"]);
    worker.wait_for("every queue;");
    let ids: Vec<String> = (0..30).map(|_| team.submit(&store, &batch, Origin::new(Via::Webhook, "tickets"))).collect();
    worker.wait_for(&format!("claimed {}", ids[0]));
    let asked = team.submit(&store, &batch, by_api());
    // A person's run waits behind nothing but other people's runs.
    // As a run opened shows it (`show`, `GET /api/runs/ID`).
    let row = store.load(&asked).wait().unwrap().row;
    if row.status == StoredStatus::Ready {
        assert_eq!((row.ahead, row.waiting().as_deref()), (Some(0), Some("waiting for a worker (0 ahead)")));
    }
    until("the API's run to complete", || store.get(&asked).wait().unwrap().status == StoredStatus::Completed);
    let waiting = ids.iter().filter(|id| store.get(id).wait().unwrap().status == StoredStatus::Ready).count();
    eprintln!("figure: the API's run completed with {waiting} of 30 earlier webhook runs still waiting");
    assert!(waiting >= 25, "the API's run went before the batch: {waiting} of its runs still wait");
    let log = worker.log();
    let claimed = |id: &str| log.find(&format!("claimed {id}")).unwrap_or(usize::MAX);
    assert!(claimed(&asked) < claimed(&ids[29]), "{log}");
}

#[test]
fn max_concurrent_runs_2_holds_under_50_starts_with_three_workers_racing() {
    let team = Team::new("limits");
    let store = team.store();
    let limited = team.served("limited", "max_concurrent_runs: 2\n", 150);
    let ids: Vec<String> = (0..50).map(|_| team.submit(&store, &limited, Origin::default())).collect();
    let mut workers: Vec<Worker> =
        (0..3).map(|w| team.worker(&format!("w{w}"), &["--jobs", "4", "--lease", "10", "--poll", "0.1"])).collect();
    let started = Instant::now();
    // Sampled while the runs go on: the runs of the workflow that hold a live lease.
    let mut most_sampled = 0;
    until("the 50 runs to complete", || {
        let counts = store.counts().wait().unwrap();
        let running = counts.runs.iter().find(|(s, _)| s == "running").map_or(0, |(_, n)| *n);
        most_sampled = most_sampled.max(running);
        counts.runs.iter().find(|(s, _)| s == "completed").is_some_and(|(_, n)| *n == 50)
    });
    let took = started.elapsed();
    for w in &mut workers {
        w.wait_for("waiting for runs");
    }
    // From the runs' logs: each run's stretch of work, from its first event to its last; the most at once.
    let mut edges: Vec<(chrono::DateTime<chrono::FixedOffset>, i32)> = Vec::new();
    for id in &ids {
        let events = store.events(id).wait().unwrap();
        assert!(matches!(events.last().map(|e| &e.kind), Some(EventKind::WorkflowEnd { .. })), "{id}: {events:?}");
        let ts = |i: usize| chrono::DateTime::parse_from_rfc3339(&events[i].ts).unwrap();
        edges.push((ts(0), 1));
        edges.push((ts(events.len() - 1), -1));
    }
    // An end and a start at the same millisecond: the end first.
    edges.sort();
    let (mut at_once, mut most_logged) = (0, 0);
    for (_, step) in edges {
        at_once += step;
        most_logged = most_logged.max(at_once);
    }
    let claims: usize = workers.iter().map(|w| w.log().matches("claimed ").count()).sum();
    eprintln!(
        "figure: 50 runs limited to 2 at once took {:.1} s on 3 workers of 4 slots; most at once: {most_sampled} \
         sampled, {most_logged} from the runs' logs; {claims} claims",
        took.as_secs_f64()
    );
    assert!(most_sampled <= 2 && most_logged <= 2, "sampled {most_sampled}, logged {most_logged}");
    assert_eq!(most_logged, 2, "the limit lets two run at once, not one");
    assert_eq!(claims, 50, "each run was claimed once");
}

#[test]
fn a_run_whose_worker_was_killed_is_taken_over_and_its_history_says_so() {
    let team = Team::new("takeover");
    let store = team.store();
    let slow = team.served("slow", "", 4000);
    let mut first = team.worker("first", &["--lease", "2"]);
    first.wait_for("waiting for runs");
    let id = team.submit(&store, &slow, Origin::default());
    first.wait_for(&format!("claimed {id}"));
    until("the agent to start", || {
        store
            .events(&id)
            .wait()
            .unwrap()
            .iter()
            .any(|e| matches!(e.kind, EventKind::NodeEnter { ref node, .. } if node == "work"))
    });
    let holder = store.lease(&id).wait().unwrap().owner.expect("held");
    let killed = Command::new("kill").args(["-KILL", &first.child.id().to_string()]).status().unwrap();
    assert!(killed.success());
    let _ = first.child.wait();

    let mut second = team.worker("second", &["--lease", "2"]);
    second.wait_for(&format!("{id} completed"));
    let taker = store.get(&id).wait().map(|_| ()).and_then(|_| store.lease(&id).wait()).unwrap();
    let events = store.events(&id).wait().unwrap();
    let taken: Vec<_> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::WorkflowTakenOver { from, by } => Some((from.clone(), by.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(taken.len(), 1, "one takeover: {events:?}");
    assert_eq!(taken[0].0, holder, "it names the worker that stopped answering");
    assert!(taken[0].1.as_deref().is_some_and(|by| by != holder), "and the one that took it over: {taken:?}");
    assert!(taker.owner.is_none(), "given up once completed");
    assert!(
        second.log().contains(&format!("claimed {id}: taken over after its worker stopped answering ({holder})")),
        "{}",
        second.log()
    );

    // `show` says so, in words; a replay tells the same story, the takeover included.
    let shown = team.run(&["show", &id]);
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.contains(&format!("taken over after its worker stopped answering ({holder}; now ")), "{shown}");
    let (code, shown) = team.json(&["show", &id, "--json"]);
    assert_eq!(code, 0, "{shown}");
    assert!(shown["takenOver"][0]["said"].as_str().is_some_and(|s| s.starts_with("taken over after")), "{shown}");
    let replayed = team.run(&["replay", &id, "--json"]);
    assert_eq!(replayed.status.code(), Some(0), "{}", String::from_utf8_lossy(&replayed.stderr));
}

/// `switchyard serve` on a free port of this machine, with a token: its address and the token.
struct Serve {
    child: Child,
    addr: String,
    token: String,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Team {
    fn serve(&self) -> Serve {
        let out = self.run(&["token", "create", "ops"]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let token = String::from_utf8(out.stdout).unwrap().trim().to_string();
        let folder = self.home.path().join("served");
        std::fs::create_dir_all(&folder).unwrap();
        // A free port: one the system gave, taken again by the server; another when someone took it meanwhile.
        loop {
            let addr = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().to_string();
            let mut child = self
                .command(&["serve", "--listen", &addr, "--workflows", folder.to_str().unwrap()])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let deadline = Instant::now() + Duration::from_secs(30);
            while std::net::TcpStream::connect(&addr).is_err() && child.try_wait().unwrap().is_none() {
                assert!(Instant::now() < deadline, "serve never answered");
                std::thread::sleep(Duration::from_millis(20));
            }
            if child.try_wait().unwrap().is_none() {
                return Serve { child, addr, token };
            }
        }
    }
}

impl Serve {
    fn get(&self, path: &str) -> (u16, Value) {
        use std::io::{Read, Write};
        let mut stream = std::net::TcpStream::connect(&self.addr).unwrap();
        let request = format!(
            "GET {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\nConnection: close\r\n\r\n",
            self.addr, self.token
        );
        stream.write_all(request.as_bytes()).unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        let (head, body) = answer.split_once("\r\n\r\n").unwrap_or_else(|| panic!("GET {path}: {answer}"));
        let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap();
        (status, serde_json::from_str(body).unwrap_or_else(|e| panic!("GET {path}: {e}: {body}")))
    }
}

#[test]
fn the_workers_view_lists_each_worker_its_queues_its_runs_and_its_last_heartbeat_and_says_which_stopped_answering() {
    let team = Team::new("workers");
    let store = team.store();
    let slow = team.served("long batch", "queue: batch\n", 60_000);
    let serve = team.serve();
    let mut batch = team.worker("batch", &["--queues", "batch,default", "--jobs", "2", "--lease", "2"]);
    batch.wait_for("waiting for runs");
    let id = team.submit(&store, &slow, Origin::default());
    batch.wait_for(&format!("claimed {id}"));
    let mut any = team.worker("any", &["--lease", "2", "--grace", "1"]);
    any.wait_for("waiting for runs");
    let holder = store.lease(&id).wait().unwrap().owner.expect("held");

    let listed = |team: &Team| {
        let (code, workers) = team.json(&["workers", "--json"]);
        assert_eq!(code, 0, "{workers}");
        workers.as_array().unwrap().clone()
    };
    let by_name = |workers: &[Value], name: &str| workers.iter().find(|w| w["name"] == name).cloned();
    let workers = listed(&team);
    assert_eq!(workers.len(), 2, "{workers:?}");
    let held = by_name(&workers, &holder).unwrap_or_else(|| panic!("{holder} listed: {workers:?}"));
    assert_eq!(held["queues"], serde_json::json!(["batch", "default"]), "{held}");
    assert_eq!((held["jobs"].as_i64(), held["state"].as_str()), (Some(2), Some("answering")), "{held}");
    assert_eq!(held["runs"], serde_json::json!([id]), "{held}");
    assert!(held["heartbeatAgeMs"].as_i64().is_some_and(|ms| ms < 2000), "answers every third of its lease: {held}");
    let other = workers.iter().find(|w| w["name"] != holder.as_str()).unwrap();
    assert_eq!((&other["queues"], &other["runs"]), (&Value::Null, &serde_json::json!([])), "{other}");

    // The API lists the same workers.
    let (status, api) = serve.get("/api/workers");
    assert_eq!(status, 200, "{api}");
    let names = |list: &[Value]| list.iter().map(|w| w["name"].as_str().unwrap().to_string()).collect::<Vec<_>>();
    assert_eq!(names(api.as_array().unwrap()), names(&workers), "{api}");
    assert_eq!(by_name(api.as_array().unwrap(), &holder).unwrap()["runs"], serde_json::json!([id]), "{api}");
    let text = team.run(&["workers"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.lines().any(|l| l.starts_with(&holder) && l.contains("queues batch,default") && l.contains(&id)),
        "{text}"
    );

    // Killed, it stops answering; stopped gracefully, it says so.
    let killed = Command::new("kill").args(["-KILL", &batch.child.id().to_string()]).status().unwrap();
    assert!(killed.success());
    until("the killed worker to be listed as not answering", || {
        by_name(&listed(&team), &holder).is_some_and(|w| w["state"] == "not answering")
    });
    let other = other["name"].as_str().unwrap().to_string();
    let stopped = Command::new("kill").args(["-TERM", &any.child.id().to_string()]).status().unwrap();
    assert!(stopped.success());
    let _ = any.child.wait();
    let workers = listed(&team);
    assert_eq!(by_name(&workers, &other).unwrap()["state"], "stopped", "{workers:?}");
}
