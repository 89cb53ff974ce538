//! `switchyard worker` and `--db postgres://…` against a real PostgreSQL (`support/pg_cluster.rs`: a throwaway
//! cluster for this test binary, one database per test), with the real binary in separate processes: runs submitted
//! for workers, workers killed or paused mid-run and their runs taken over, and the errors of a database that cannot
//! be used.
#![cfg(feature = "postgres")]

#[path = "../../engine/tests/support/pg_cluster.rs"]
mod pg_cluster;
mod support;

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use switchyard_engine::events::{Event, EventKind};
use switchyard_engine::result::{Decision, Verdict};
use switchyard_engine::store::postgres::{PgStore, Wait};
use switchyard_engine::store::StoredStatus;
use switchyard_engine::RunStatus;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// One test's folder (settings, answers files, worker logs) and database.
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

    /// The example fan-out (plan, then cost, security and speed at once, then synthesize), submitted for workers with
    /// these answers: its id.
    fn submit(&self, answers: &str) -> String {
        let answers = self.write("answers.yaml", answers);
        let (code, out) =
            self.json(&["run", "examples/research-fanout.yaml", "--answers", &answers, "--detach", "--json"]);
        assert_eq!((code, out["status"].as_str()), (0, Some("ready")), "{out}");
        out["runId"].as_str().unwrap().to_string()
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

    fn status(&self, run: &str) -> String {
        let (code, runs) = self.json(&["runs", "--json"]);
        assert_eq!(code, 0, "{runs}");
        let row = runs.as_array().unwrap().iter().find(|r| r["id"] == run).unwrap_or_else(|| panic!("{run}: {runs}"));
        row["status"].as_str().unwrap().to_string()
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

    fn signal(&self, signal: &str) {
        let sent = Command::new("kill").args([signal, &self.child.id().to_string()]).status().unwrap();
        assert!(sent.success());
    }

    /// SIGTERM, then its exit code and log.
    fn stop(mut self) -> (i32, String) {
        self.signal("-TERM");
        let status = self.child.wait().unwrap();
        (status.code().unwrap_or(-1), self.log())
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits for `done` to hold, for at most 60 s.
fn until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "gave up waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// How many times each node entered and exited, from the run's log.
fn visits(events: &[Event]) -> (BTreeMap<String, usize>, BTreeMap<String, usize>) {
    let (mut entered, mut exited) = (BTreeMap::new(), BTreeMap::new());
    for event in events {
        match &event.kind {
            EventKind::NodeEnter { node, .. } => *entered.entry(node.clone()).or_default() += 1,
            EventKind::NodeExit { node, .. } => *exited.entry(node.clone()).or_default() += 1,
            _ => {}
        }
    }
    (entered, exited)
}

fn has(events: &[Event], kind: &str, node: &str) -> bool {
    events.iter().any(|e| {
        let value = serde_json::to_value(e).unwrap();
        value["type"] == kind && value["node"] == node
    })
}

/// The researchers take different times, as in the example: siblings that all answer at once let a task's progress
/// and its siblings' entries interleave in either order, which a replay reports as a divergence (the engine's, with
/// either store).
const FAST: &str = "nodes:
  plan: {text: 'Angles: cost, security, speed.'}
  cost: {text: Cheaper., delay_ms: 30}
  security: {text: Isolate jobs., delay_ms: 10}
  speed: {text: Warm caches., delay_ms: 20}
  synthesize: {text: Move.}
";

#[test]
fn a_run_submitted_for_workers_is_announced_taken_and_run_to_completion_by_a_worker() {
    let team = Team::new("submitted");
    // A poll far longer than the test's deadline: the worker can only hear of the run through its announcement.
    let mut worker = team.worker("w", &["--lease", "5", "--poll", "600"]);
    worker.wait_for("waiting for runs");
    let id = team.submit(FAST);
    until("the run to complete", || team.status(&id) == "completed");
    let (code, log) = worker.stop();
    assert_eq!(code, 0, "{log}");
    assert!(log.contains(&format!("claimed {id}")) && log.contains(&format!("{id} completed")), "{log}");
    assert!(log.contains("took 1 run; 0 stale writes refused"), "{log}");

    // Listed, shown and replayed from the database as from the file.
    let (code, shown) = team.json(&["show", &id, "--json"]);
    assert_eq!((code, shown["status"].as_str()), (0, Some("completed")), "{shown}");
    assert_eq!(shown["results"]["synthesize"]["data"]["text"], "Move.", "{shown}");
    let (code, replayed) = team.json(&["replay", &id, "--json"]);
    assert_eq!((code, &replayed["results"]), (0, &shown["results"]), "the replay tells the same story");
    let (entered, exited) = visits(&team.store().events(&id).wait().unwrap());
    assert!(entered.values().chain(exited.values()).all(|n| *n == 1), "{entered:?} {exited:?}");
}

#[test]
fn two_workers_share_the_runs_several_at_a_time_and_no_run_is_worked_twice() {
    let team = Team::new("shared");
    let slow = FAST.replace("{text: Isolate jobs., delay_ms: 10}", "{text: Isolate jobs., delay_ms: 300}");
    let ids: Vec<String> = (0..6).map(|_| team.submit(&slow)).collect();
    let workers =
        [team.worker("a", &["--jobs", "2", "--lease", "5"]), team.worker("b", &["--jobs", "2", "--lease", "5"])];
    until("every run to complete", || {
        let (_, runs) = team.json(&["runs", "--json"]);
        runs.as_array().unwrap().iter().all(|r| r["status"] == "completed")
    });
    let logs: Vec<String> = workers.into_iter().map(|w| w.stop().1).collect();
    // Each line starts with when it was written (RFC 3339, UTC), then what happened.
    let said = |line: &str| {
        let (at, what) = line.split_once(' ').unwrap_or_else(|| panic!("no time on {line:?}"));
        assert!(at.ends_with('Z') && chrono_like(at), "{line:?} starts with an RFC 3339 UTC time");
        what.to_string()
    };
    let claimed = |log: &str| log.lines().map(said).filter(|l| l.starts_with("claimed ")).count();
    assert_eq!(claimed(&logs[0]) + claimed(&logs[1]), ids.len(), "each run claimed once:\n{}\n{}", logs[0], logs[1]);
    let store = team.store();
    for id in &ids {
        let (entered, exited) = visits(&store.events(id).wait().unwrap());
        assert!(entered.values().chain(exited.values()).all(|n| *n == 1) && exited.len() == 6, "{id}: {exited:?}");
        assert_eq!(store.lease(id).wait().unwrap().epoch, 1, "{id} was claimed once");
    }
}

#[test]
fn a_worker_killed_mid_run_has_its_run_taken_over_after_its_lease_and_no_completed_node_runs_again() {
    let team = Team::new("killed");
    let slow = FAST.replace("{text: Isolate jobs., delay_ms: 10}", "{text: Isolate jobs., delay_ms: 60000}");
    let id = team.submit(&slow);
    let mut first = team.worker("first", &["--lease", "2"]);
    first.wait_for(&format!("claimed {id}"));
    let store = team.store();
    // Mid-branch: `cost` and `speed` done and in the log, `security` in flight.
    until("cost and speed to finish while security runs", || {
        let events = store.events(&id).wait().unwrap();
        has(&events, "node:exit", "cost")
            && has(&events, "node:exit", "speed")
            && has(&events, "node:enter", "security")
    });
    first.signal("-KILL");
    let killed = Instant::now();
    let logged = store.events(&id).wait().unwrap().len();
    assert_eq!(store.get(&id).wait().unwrap().status, StoredStatus::Running, "its lease has not run out yet");

    // The same answers without the delay, for whoever goes on.
    team.write("answers.yaml", FAST);
    let second = team.worker("second", &["--lease", "2"]);
    until("another worker to take the run over", || store.lease(&id).wait().unwrap().epoch == 2);
    let reclaimed = killed.elapsed();
    until("the run to complete", || team.status(&id) == "completed");
    eprintln!("kill to reclaim: {} ms; to completion: {} ms", reclaimed.as_millis(), killed.elapsed().as_millis());
    // The lease runs 2 s from the last heartbeat, which came at most a third of a lease before the kill.
    assert!(reclaimed >= Duration::from_millis(1300), "taken over before the lease ran out: {reclaimed:?}");
    let (code, log) = second.stop();
    assert_eq!(code, 0, "{log}");

    let events = store.events(&id).wait().unwrap();
    let (entered, exited) = visits(&events);
    // Entries are derived from the log when a run is rebuilt, not emitted again: one each, in flight or not.
    assert!(entered.values().all(|n| *n == 1), "{entered:?}");
    assert!(exited.values().all(|n| *n == 1), "each node completed once: {exited:?}");
    // What completed before the kill was not run again; what was in flight ran again, in the second worker.
    let done_after: Vec<String> = events[logged..]
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::NodeExit { node, .. } => Some(node.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(done_after, ["security", "synthesize"], "the nodes that completed after the takeover");
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "one log, numbered on: {seqs:?}");
    let (_, shown) = team.json(&["show", &id, "--json"]);
    assert_eq!(shown["results"]["security"]["data"]["text"], "Isolate jobs.");
}

#[test]
fn a_worker_stopped_past_its_lease_loses_its_run_and_writes_nothing_more_to_it() {
    let team = Team::new("stale");
    let slow = FAST.replace("{text: Isolate jobs., delay_ms: 10}", "{text: Isolate jobs., delay_ms: 1500}");
    let id = team.submit(&slow);
    let mut stale = team.worker("stale", &["--lease", "1"]);
    stale.wait_for(&format!("claimed {id}"));
    let store = team.store();
    until("security to start", || has(&store.events(&id).wait().unwrap(), "node:enter", "security"));
    stale.signal("-STOP");

    team.write("answers.yaml", FAST);
    let other = team.worker("other", &["--lease", "5"]);
    until("the other worker to complete the run", || team.status(&id) == "completed");
    let ended = store.events(&id).wait().unwrap();

    // Woken after its run was taken over and completed: whatever it had in flight is refused, and it stops.
    stale.signal("-CONT");
    stale.wait_for(&format!("{id} lost"));
    let (code, log) = stale.stop();
    assert_eq!(code, 0, "{log}");
    eprintln!("the stale worker: {}", log.lines().last().unwrap_or(""));
    assert_eq!(store.events(&id).wait().unwrap(), ended, "the stale worker wrote nothing after the takeover");
    assert_eq!(store.lease(&id).wait().unwrap().epoch, 2);
    let (_, exited) = visits(&ended);
    assert!(exited.values().all(|n| *n == 1), "{exited:?}");
    let (code, log) = other.stop();
    assert_eq!(code, 0, "{log}");
}

#[test]
fn a_worker_told_to_stop_gives_up_a_run_it_cannot_finish_in_time_and_another_worker_completes_it() {
    let team = Team::new("stopped");
    let slow = FAST.replace("{text: Isolate jobs., delay_ms: 10}", "{text: Isolate jobs., delay_ms: 60000}");
    let id = team.submit(&slow);
    let mut worker = team.worker("first", &["--lease", "30", "--grace", "0.2"]);
    worker.wait_for(&format!("claimed {id}"));
    let store = team.store();
    until("security to start", || has(&store.events(&id).wait().unwrap(), "node:enter", "security"));
    let (code, log) = worker.stop();
    assert_eq!(code, 0, "{log}");
    assert!(log.contains(&format!("{id} given up")), "{log}");
    // Given up, not left to its 30 s lease: ready at once.
    assert_eq!(team.status(&id), "ready");

    team.write("answers.yaml", FAST);
    let next = team.worker("next", &["--lease", "30"]);
    until("the next worker to complete the run", || team.status(&id) == "completed");
    let (_, exited) = visits(&store.events(&id).wait().unwrap());
    assert!(exited.values().all(|n| *n == 1) && exited.len() == 6, "{exited:?}");
    drop(next);
}

#[test]
fn a_run_started_here_on_postgres_is_held_by_its_process_and_pauses_for_a_person_to_resume() {
    let team = Team::new("foreground");
    let answers = team
        .write("approval.yaml", &std::fs::read_to_string(repo().join("examples/approval-flow.script.yaml")).unwrap());
    let (code, paused) = team.json(&["run", "examples/approval-flow.yaml", "--answers", &answers, "--json"]);
    assert_eq!((code, paused["status"].as_str()), (0, Some("paused")), "{paused}");
    let id = paused["runId"].as_str().unwrap();
    assert_eq!(team.status(id), "paused");
    assert_eq!(team.store().lease(id).wait().unwrap().owner, None, "a paused run is given up");
    // A worker leaves it alone: it waits for a person.
    let mut worker = team.worker("w", &["--lease", "2"]);
    worker.wait_for("waiting for runs");
    let (code, done) = team.json(&["resume", id, "--decide", "review=approve", "--json"]);
    assert_eq!((code, done["status"].as_str()), (0, Some("completed")), "{done}");
    let (_, log) = worker.stop();
    assert!(!log.contains("claimed"), "{log}");
}

#[test]
fn a_database_that_cannot_be_used_is_named_with_a_code_and_no_password() {
    let team = Team { home: tempfile::tempdir().unwrap(), db: "postgres://someone:secret@127.0.0.1:9/nowhere".into() };
    let (code, out) = team.json(&["runs", "--json"]);
    assert_eq!(code, 2, "{out}");
    let error = &out["errors"][0];
    assert_eq!(error["code"], "PG_CONNECT", "{out}");
    let message = error["message"].as_str().unwrap();
    assert!(message.contains("127.0.0.1:9/nowhere") && !message.contains("secret"), "{message}");

    let (code, out) = team.json(&["runs", "--json", "--db", "postgres://[bad"]);
    assert_eq!((code, out["errors"][0]["code"].as_str()), (2, Some("PG_URL")), "{out}");

    // Runs for workers need a database workers share; workers need PostgreSQL.
    let sqlite = team.home.path().join("runs.sqlite");
    let sqlite = sqlite.to_str().unwrap();
    let out = team.run(&[
        "run",
        "examples/research-fanout.yaml",
        "--answers",
        "examples/research-fanout.script.yaml",
        "--detach",
        "--db",
        sqlite,
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("[NO_WORKERS]"), "{}", String::from_utf8_lossy(&out.stderr));
    for args in [&["worker", "--db", sqlite][..], &["worker", "--db", ""]] {
        let out = team.command(args).env_remove("SWITCHYARD_DB").output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains("[WORKER_NEEDS_POSTGRES]"), "{stderr}");
    }
}

/// Submits the approval example for workers with its answers (the approval is left to a person): its id.
fn submit_approval(team: &Team) -> String {
    let (code, out) = team.json(&[
        "run",
        "examples/approval-flow.yaml",
        "--answers",
        "examples/approval-flow.script.yaml",
        "--detach",
        "--json",
    ]);
    assert_eq!((code, out["status"].as_str()), (0, Some("ready")), "{out}");
    out["runId"].as_str().unwrap().to_string()
}

#[test]
fn a_decision_kept_in_the_database_wakes_a_parked_run_and_a_worker_applies_it_once() {
    let team = Team::new("kept_decision");
    let mut worker = team.worker("w", &["--lease", "2"]);
    let id = submit_approval(&team);
    worker.wait_for(&format!("{id} paused: waits for review; parked"));
    let store = team.store();
    let decision = Decision::new(Verdict::Reject, "say when");
    store.keep_decision(&id, "review", 0, &decision).wait().unwrap();
    // Sent again, as a client that retries does: kept once.
    store.keep_decision(&id, "review", 0, &decision).wait().unwrap();
    until("the run to complete", || team.status(&id) == "completed");
    let events = store.events(&id).wait().unwrap();
    let received = events.iter().filter(|e| matches!(e.kind, EventKind::ApprovalReceived { .. })).count();
    assert_eq!(received, 1, "one decision applied");
    assert!(has(&events, "node:exit", "revise") && !has(&events, "node:enter", "publish"), "the reject branch ran");
    let (code, log) = worker.stop();
    assert_eq!(code, 0, "{log}");
    assert!(log.contains(&format!("{id} completed")), "{log}");
}

#[test]
fn a_parent_run_on_a_worker_runs_its_child_parks_at_the_childs_approval_and_a_kept_decision_completes_both() {
    let team = Team::new("child_on_worker");
    let mut worker = team.worker("w", &["--lease", "2"]);
    let args =
        ["run", "examples/summarize-with-review.yaml", "--answers", "examples/summarize-with-review.script.yaml"];
    let (code, out) = team.json(&[&args[..], &["--detach", "--json"]].concat());
    assert_eq!((code, out["status"].as_str()), (0, Some("ready")), "{out}");
    let id = out["runId"].as_str().unwrap().to_string();
    worker.wait_for(&format!("{id} paused: waits for summarize; parked"));
    let store = team.store();
    let children = store.children(&id).wait().unwrap();
    assert_eq!(children.len(), 1, "the child is a run of its own, in the same database");
    assert_eq!(store.get(&children[0].id).wait().unwrap().status, StoredStatus::Paused);

    // Decided through the database, as the API keeps a decision: the worker takes both up and completes them.
    store.keep_decision(&id, "summarize", 0, &Decision::new(Verdict::Approve, "").by("dana")).wait().unwrap();
    until("the parent to complete", || team.status(&id) == "completed");
    assert_eq!(store.get(&children[0].id).wait().unwrap().status, StoredStatus::Completed);
    let (_, shown) = team.json(&["show", &children[0].id, "--json"]);
    assert_eq!(shown["decisions"][0]["by"], "dana", "the parent's decision is the child's: {shown}");
    let (code, log) = worker.stop();
    assert_eq!(code, 0, "{log}");
}

#[test]
fn a_kept_decision_its_run_cannot_take_is_left_out_and_the_run_goes_on() {
    let team = Team::new("unfit_decision");
    let mut worker = team.worker("w", &["--lease", "2"]);
    let id = submit_approval(&team);
    let parked = format!("{id} paused: waits for review; parked");
    worker.wait_for(&parked);
    let store = team.store();
    // Kept for a node that waits for nothing (as a decision kept for a round that never came would be): it wakes
    // the run, and the worker that takes it must not stop on it, or every worker after it would too.
    store.keep_decision(&id, "revise", 0, &Decision::new(Verdict::Approve, "")).wait().unwrap();
    until("the run to be parked again", || worker.log().matches(&parked).count() == 2);
    assert!(!worker.log().contains("left for its lease"), "{}", worker.log());
    store.keep_decision(&id, "review", 0, &Decision::new(Verdict::Approve, "")).wait().unwrap();
    until("the run to complete", || team.status(&id) == "completed");
    let events = store.events(&id).wait().unwrap();
    assert!(has(&events, "node:exit", "publish") && !has(&events, "node:enter", "revise"), "{events:?}");
    let (code, log) = worker.stop();
    assert_eq!(code, 0, "{log}");
}

#[test]
fn a_cancellation_sent_through_the_database_ends_a_parked_run_and_a_running_one() {
    let team = Team::new("cancelled");
    let mut worker = team.worker("w", &["--lease", "1", "--jobs", "2"]);
    let parked = submit_approval(&team);
    worker.wait_for(&format!("{parked} paused: waits for review; parked"));
    let slow = FAST.replace("{text: Isolate jobs., delay_ms: 10}", "{text: Isolate jobs., delay_ms: 60000}");
    let running = team.submit(&slow);
    worker.wait_for(&format!("claimed {running}"));
    let store = team.store();
    until("the slow researcher to start", || has(&store.events(&running).wait().unwrap(), "node:enter", "security"));
    assert!(store.request_cancel(&parked, None).wait().unwrap());
    assert!(store.request_cancel(&running, None).wait().unwrap());
    // The running one hears it at its worker's next heartbeat (a third of the 1 s lease), not after the 60 s node.
    until("both runs to be cancelled", || team.status(&parked) == "cancelled" && team.status(&running) == "cancelled");
    assert!(!store.request_cancel(&running, None).wait().unwrap(), "an ended run is not cancelled again");
    for run in [&parked, &running] {
        let events = store.events(run).wait().unwrap();
        // A pause closes its stretch of the log with an end that says `paused`; the run itself ends once.
        let ended =
            |e: &&Event| matches!(&e.kind, EventKind::WorkflowEnd { status, .. } if *status != RunStatus::Paused);
        assert_eq!(events.iter().filter(ended).count(), 1, "one end, once: {events:?}");
    }
    let (code, log) = worker.stop();
    assert_eq!(code, 0, "{log}");
}

#[test]
fn an_approval_that_waits_while_another_branch_works_is_decided_through_the_database_without_a_pause() {
    let team = Team::new("decided_while_running");
    let wf = team.write("branches.yaml", support::BRANCHES);
    let answers = team.write(
        "answers.yaml",
        "nodes: {slow: {text: S, delay_ms: 4000}, quick: {text: Q}, polish: {text: P}, merge: {text: M}}\n",
    );
    let (code, out) = team.json(&["run", &wf, "--answers", &answers, "--detach", "--json"]);
    assert_eq!(code, 0, "{out}");
    let id = out["runId"].as_str().unwrap().to_string();
    let _worker = team.worker("w", &["--lease", "1"]);
    let store = team.store();
    // The approval waits while `slow` works: the database says so before the run pauses.
    until("the approval to be listed as pending", || store.get(&id).wait().unwrap().pending == ["check"]);
    assert_eq!(store.get(&id).wait().unwrap().status, StoredStatus::Running);
    store.keep_decision(&id, "check", 0, &Decision::new(Verdict::Approve, "")).wait().unwrap();
    until("the decision to be applied", || has(&store.events(&id).wait().unwrap(), "approval:received", "check"));
    let events = store.events(&id).wait().unwrap();
    assert!(!has(&events, "node:exit", "slow"), "applied while `slow` still worked");
    until("the run to complete", || team.status(&id) == "completed");
    let events = store.events(&id).wait().unwrap();
    assert!(events.iter().all(|e| !matches!(e.kind, EventKind::WorkflowPaused { .. })), "it never paused");
    assert!(has(&events, "node:exit", "polish"));
}

#[test]
fn a_worker_without_the_provider_a_run_needs_leaves_it_for_another_and_says_which_providers_it_has() {
    let team = Team::new("providers");
    // Whoever submits has the provider; the worker, with settings of its own, does not.
    team.write("settings.yaml", "providers:\n  - {id: hosted, kind: openai, base_url: 'http://127.0.0.1:9/v1'}\n");
    let flow = team.write(
        "hosted.yaml",
        "switchyard: 1\nname: hosted\nnodes:\n  - {id: start, type: start}\n  - {id: ask, type: agent, model: hosted/m}\nedges:\n  - {from: start, to: ask}\n",
    );
    let (code, out) = team.json(&["run", &flow, "--detach", "--json"]);
    assert_eq!((code, out["status"].as_str()), (0, Some("ready")), "{out}");
    let run = out["runId"].as_str().unwrap().to_string();
    let elsewhere = tempfile::tempdir().unwrap();
    let log = team.home.path().join("bare.log");
    let child = team
        .command(&["worker", "--lease", "30"])
        .env("SWITCHYARD_HOME", elsewhere.path())
        .stdout(Stdio::null())
        .stderr(File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let mut worker = Worker { child, log };
    worker.wait_for("providers: local");
    worker.wait_for("[UNKNOWN_PROVIDER]");
    assert!(worker.log().contains(&format!("{run} left for its lease to run out")), "{}", worker.log());
    assert_ne!(team.status(&run), "failed", "the run is left for a worker that has the provider, not failed");
    let (code, said) = worker.stop();
    assert_eq!(code, 0, "{said}");
    assert!(said.contains("0 runs going on"), "{said}");
}

/// Whether `at` reads as RFC 3339 with milliseconds in UTC (`2026-11-29T01:42:11.123Z`).
fn chrono_like(at: &str) -> bool {
    let b = at.as_bytes();
    at.len() == 24
        && [4, 7].iter().all(|&i| b[i] == b'-')
        && b[10] == b'T'
        && [13, 16].iter().all(|&i| b[i] == b':')
        && b[19] == b'.'
        && at.chars().enumerate().all(|(i, c)| [4, 7, 10, 13, 16, 19, 23].contains(&i) || c.is_ascii_digit())
}

#[test]
fn token_create_takes_a_scope_and_an_expiry_list_shows_them_and_rotate_gives_a_new_value() {
    let team = Team::new("token_commands");
    let said = |out: &Output| String::from_utf8_lossy(&out.stderr).to_string();
    let made = team.run(&["token", "create", "ci-bot", "--scope", "read", "--expires", "90d"]);
    assert_eq!(made.status.code(), Some(0), "{}", said(&made));
    let first = String::from_utf8_lossy(&made.stdout).trim().to_string();
    assert!(first.starts_with("sy_") && said(&made).contains("scope read, for 90d"), "{}", said(&made));
    let listed = team.run(&["token", "list"]);
    let line = String::from_utf8_lossy(&listed.stdout).to_string();
    assert!(
        line.starts_with("ci-bot\t") && line.contains("\tlive\tread\texpires ") && line.contains("never used"),
        "{line}"
    );
    assert!(!line.contains(&first), "the list never shows a token");
    let rotated = team.run(&["token", "rotate", "ci-bot"]);
    assert_eq!(rotated.status.code(), Some(0), "{}", said(&rotated));
    let second = String::from_utf8_lossy(&rotated.stdout).trim().to_string();
    assert!(second.starts_with("sy_") && second != first);
    for (args, code) in [
        (&["token", "create", "x", "--scope", "root"][..], "INVALID_SCOPE"),
        (&["token", "create", "x", "--expires", "soon"][..], "INVALID_EXPIRY"),
        (&["token", "create", "x", "--expires", "999999999d"][..], "INVALID_EXPIRY"),
        (&["token", "rotate", "nobody"][..], "NO_SUCH_TOKEN"),
    ] {
        let out = team.run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", said(&out));
        assert!(said(&out).contains(code), "{args:?}: {}", said(&out));
    }
}
