//! The PostgreSQL run store against a real server: one throwaway cluster per test binary (`support/pg_cluster.rs`);
//! one database per test, so that tests running at once never claim each other's runs. Run with `cargo test -p
//! switchyard-engine --features postgres --test postgres_store`; `cargo test --workspace` runs them too, since the
//! CLI turns the feature on by default.
#![cfg(feature = "postgres")]

mod support;

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use serde_json::json;
use support::*;
use switchyard_engine::events::{Event, EventKind};
use switchyard_engine::log::{Collector, Emitter, LogItem, RunLog};
use switchyard_engine::record::{Input, Recorded};
use switchyard_engine::result::{NodeResult, RunStatus, Usage};
use switchyard_engine::run::{self, RunOptions};
use switchyard_engine::store::postgres::{Beat, PgError, PgStore, Wait, CHANNEL};
use switchyard_engine::store::{NewRun, RunRow, Store, StoredStatus};
use switchyard_engine::Workflow;

#[path = "support/pg_cluster.rs"]
mod pg_cluster;
use pg_cluster::*;

fn store(name: &str) -> PgStore {
    PgStore::open(&database(name)).unwrap()
}

// ---- runs, events, inputs --------------------------------------------------------------------------------------

fn test_workflow() -> Workflow {
    workflow("nodes:\n  - {id: start, type: start}\n")
}

fn create(store: &PgStore, id: &str) {
    let (wf, options) = (test_workflow(), RunOptions { input: Some(json!({"topic": "pg"})), ..RunOptions::default() });
    let run = NewRun {
        id,
        workflow: &wf,
        workflow_ref: Some("/tmp/wf.yaml"),
        answers_path: Some("/tmp/answers.yaml"),
        options: &options,
        eval_id: None,
        origin: Default::default(),
        version: None,
    };
    store.submit(&run).wait().unwrap();
}

fn event(run: &str, seq: u64) -> Event {
    let kind = EventKind::NodeProgress { node: "start".into(), message: format!("step {seq}, ünïcödé \"quoted\"") };
    Event { seq, run: run.into(), ts: format!("2026-01-01T00:00:{:02}.000Z", seq % 60), kind }
}

fn events(run: &str, seqs: std::ops::RangeInclusive<u64>) -> Vec<LogItem> {
    seqs.map(|seq| LogItem::Event(event(run, seq))).collect()
}

fn input(seq: u64, node: &str) -> Recorded {
    let input = Input::NodeDone {
        node: node.into(),
        iteration: 0,
        data: Ok(json!({"text": "done", "zulu": 1, "alpha": 2})),
        code: None,
        tool_calls: Vec::new(),
        usage: None,
        duration_ms: 12,
        model_calls: 1,
    };
    // When it was kept (a journal entry's): kept as written.
    Recorded { seq, ts: Some(format!("2026-11-28T19:00:00.{:03}Z", seq % 1000)), input }
}

const MINUTE: Duration = Duration::from_secs(60);

#[test]
fn a_run_written_in_batches_is_listed_and_loaded_back_equal() {
    let store = store("loaded_back");
    create(&store, "r1");
    create(&store, "r2");
    assert_eq!(store.get("r1").wait().unwrap().status, StoredStatus::Ready);
    let (run, epoch) = store.claim_ready("w1", MINUTE).wait().unwrap().unwrap();
    assert_eq!((run.as_str(), epoch), ("r1", 1), "the oldest ready run is claimed first, at epoch 1");

    let mut batch = events("r1", 1..=3);
    batch.insert(1, LogItem::Input(input(2, "a")));
    batch.push(LogItem::Input(input(4, "b")));
    store.write_batch("r1", epoch, &batch).wait().unwrap();
    let mut second = events("r1", 4..=5);
    second.push(LogItem::Input(input(6, "c")));
    second.push(LogItem::Status { status: RunStatus::Running, pending: vec![] });
    second.push(LogItem::Status { status: RunStatus::Paused, pending: vec!["approve".into()] });
    store.write_batch("r1", epoch, &second).wait().unwrap();

    let written: Vec<Event> = (1..=5).map(|seq| event("r1", seq)).collect();
    let inputs = vec![input(2, "a"), input(4, "b"), input(6, "c")];
    assert_eq!(store.events("r1").wait().unwrap(), written);
    assert_eq!(store.inputs("r1").wait().unwrap(), inputs, "inputs keep their order within and across batches");
    let shared: &dyn Store = &store;
    assert_eq!(shared.events_after("r1", 3).unwrap(), written[3..], "a follower reads only what it has not seen");
    assert!(shared.events_after("r1", 5).unwrap().is_empty());

    let rows = store.list().wait().unwrap();
    assert_eq!(rows.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(), ["r2", "r1"], "newest first");
    let row = store.get("r1").wait().unwrap();
    // The same row either way, but for what the clock moves between the two reads.
    let still = |mut r: RunRow| {
        r.duration_ms = 0;
        r
    };
    assert_eq!(still(rows[1].clone()), still(row.clone()));
    assert_eq!(row.status, StoredStatus::Paused, "the last status of a batch stands");
    assert_eq!(row.pending, ["approve"]);
    assert_eq!((row.workflow.as_str(), row.workflow_ref.as_deref()), ("test", Some("/tmp/wf.yaml")));
    assert_eq!(row.answers_path.as_deref(), Some("/tmp/answers.yaml"));
    assert!(
        chrono::DateTime::parse_from_rfc3339(&row.started).is_ok() && row.started.ends_with('Z'),
        "{}",
        row.started
    );
    let lease = store.lease("r1").wait().unwrap();
    assert_eq!((lease.owner.as_deref(), lease.epoch), (Some("w1"), 1));

    let loaded = store.load("r1").wait().unwrap();
    assert_eq!(loaded.workflow, test_workflow());
    assert_eq!(loaded.options.input, Some(json!({"topic": "pg"})));
    assert_eq!(loaded.recording.events, written);
    assert_eq!(loaded.recording.inputs, inputs);
    // The JSON is kept as written: keys in their order, not sorted as `jsonb` would.
    let first = serde_json::to_string(&loaded.recording.inputs[0]).unwrap();
    assert!(first.find("\"zulu\"") < first.find("\"alpha\""), "{first}");

    assert!(store.events("nope").wait().unwrap().is_empty());
    let Err(error) = store.load("nope").wait() else { panic!("an unknown run loaded") };
    assert_eq!(error.code(), "NO_SUCH_RUN");
    let Err(error) = store.write_batch("nope", 1, &events("nope", 1..=1)).wait() else { panic!("wrote to no run") };
    assert_eq!(error.code(), "NO_SUCH_RUN");
    let Err(error) = store.write_batch("r1", epoch, &events("r2", 6..=6)).wait() else {
        panic!("wrote another run's event")
    };
    assert_eq!(error.code(), "RUN_LOG_FOREIGN_EVENT");
    create_twice_is_refused(&store);
}

fn create_twice_is_refused(store: &PgStore) {
    let (wf, options) = (test_workflow(), RunOptions::default());
    let run = NewRun {
        id: "r1",
        workflow: &wf,
        workflow_ref: None,
        answers_path: None,
        options: &options,
        eval_id: None,
        origin: Default::default(),
        version: None,
    };
    assert_eq!(store.submit(&run).wait().unwrap_err().code(), "RUN_EXISTS");
}

#[test]
fn two_claimers_racing_for_one_ready_run_exactly_one_gets_it() {
    let url = database("race");
    let workers: Vec<PgStore> = (0..6).map(|_| PgStore::open(&url).unwrap()).collect();
    for round in 0..15 {
        let id = format!("run-{round}");
        create(&workers[0], &id);
        let barrier = Arc::new(Barrier::new(workers.len()));
        let claims: Vec<Option<(String, i64)>> = std::thread::scope(|scope| {
            let handles: Vec<_> = workers
                .iter()
                .enumerate()
                .map(|(w, store)| {
                    let barrier = barrier.clone();
                    scope.spawn(move || {
                        barrier.wait();
                        store.claim_ready(&format!("w{w}"), MINUTE).wait().unwrap()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let won: Vec<_> = claims.into_iter().flatten().collect();
        assert_eq!(won, [(id.clone(), 1)], "round {round}: exactly one claimer gets the run");
    }
}

#[test]
fn a_stale_epoch_cannot_append_after_its_expired_lease_is_reclaimed() {
    let url = database("stale");
    let (old, new) = (PgStore::open(&url).unwrap(), PgStore::open(&url).unwrap());
    create(&old, "r");
    let (_, first) = old.claim_ready("old", Duration::from_secs(1)).wait().unwrap().unwrap();
    old.write_batch("r", first, &events("r", 1..=2)).wait().unwrap();
    assert_eq!(new.claim_ready("new", MINUTE).wait().unwrap(), None, "a live lease is not taken");

    std::thread::sleep(Duration::from_millis(1200));
    assert_eq!(new.get("r").wait().unwrap().status, StoredStatus::Interrupted, "running with an expired lease");
    let (_, second) = new.claim_ready("new", MINUTE).wait().unwrap().expect("an expired lease is taken over");
    assert!(second > first, "{second} > {first}");

    let mut stale = events("r", 3..=4);
    stale.push(LogItem::Input(input(5, "late")));
    stale.push(LogItem::Status { status: RunStatus::Completed, pending: vec![] });
    match old.write_batch("r", first, &stale).wait() {
        Err(PgError::StaleEpoch { epoch, current, .. }) => assert_eq!((epoch, current), (first, second)),
        other => panic!("a stale write was not refused as stale: {other:?}"),
    }
    assert_eq!(old.stale_writes(), 1, "the refused write is counted");
    assert_eq!(new.stale_writes(), 0);
    // Through the run log, as the emitter writes: refused with its code, and the log knows the run is lost.
    let log = old.run_log("r", first);
    let error = log.append(&event("r", 3)).unwrap_err();
    assert!(error.0.starts_with("[RUN_EPOCH_STALE]"), "{error}");
    assert!(log.lost());
    assert_eq!(old.heartbeat("r", first, MINUTE).wait().unwrap(), Beat::Lost, "a stale epoch cannot extend the lease");
    assert!(!old.release("r", first, None).wait().unwrap(), "nor give the run up");

    // Nothing of the stale writes is kept; the new owner goes on from where the log stands.
    let (row, lease) = (new.get("r").wait().unwrap(), new.lease("r").wait().unwrap());
    assert_eq!((row.status, lease.owner.as_deref(), lease.epoch), (StoredStatus::Running, Some("new"), second));
    assert_eq!(new.events("r").wait().unwrap(), vec![event("r", 1), event("r", 2)]);
    assert!(new.inputs("r").wait().unwrap().is_empty());
    new.write_batch("r", second, &events("r", 3..=3)).wait().unwrap();
    assert_eq!(new.events("r").wait().unwrap().len(), 3);
}

#[test]
fn a_run_taken_over_goes_before_older_runs_that_have_not_started() {
    let url = database("taken_over_first");
    let dying = PgStore::open(&url).unwrap().with_lease(Duration::from_secs(1)).unwrap();
    let other = PgStore::open(&url).unwrap();
    for id in ["older-1", "older-2", "going"] {
        create(&other, id);
    }
    // Its worker takes `going` and stops answering: no heartbeat, and the run is not given up.
    dying.claim_run("going").wait().unwrap().abandon();
    std::thread::sleep(Duration::from_millis(1200));
    // What each run waiting says: the run going on is taken before it.
    let rows = Store::recent(&other, 10).unwrap();
    let ahead = |id: &str| rows.iter().find(|r| r.id == id).unwrap().ahead;
    assert_eq!((ahead("older-1"), ahead("older-2")), (Some(1), Some(2)));
    let order: Vec<_> = (0..3)
        .map(|_| other.claim_from("other", MINUTE, None).wait().unwrap().expect("a run to take"))
        .map(|c| (c.id, c.taken_over_from.is_some()))
        .collect();
    let expected = [("going", true), ("older-1", false), ("older-2", false)].map(|(id, over)| (id.to_string(), over));
    assert_eq!(order, expected, "the run going on first, then the oldest that had not started");
    assert_eq!(other.claim_from("other", MINUTE, None).wait().unwrap(), None, "nothing more to take");
}

#[test]
fn a_heartbeat_extends_the_lease_so_nobody_else_can_claim_it() {
    let url = database("heartbeat");
    let (holder, other) = (PgStore::open(&url).unwrap(), PgStore::open(&url).unwrap());
    create(&holder, "r");
    let (_, epoch) = holder.claim_ready("holder", Duration::from_secs(1)).wait().unwrap().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        holder.heartbeat("r", epoch, Duration::from_secs(4)).wait().unwrap(),
        Beat::Held { cancel_requested: false, woken: false }
    );
    std::thread::sleep(Duration::from_millis(1000)); // past the first lease
    assert_eq!(other.claim_ready("other", MINUTE).wait().unwrap(), None, "the extended lease still holds");
    let lease = other.lease("r").wait().unwrap();
    assert_eq!((lease.owner.as_deref(), lease.epoch), (Some("holder"), epoch));
    let left = lease.expires_in_ms.unwrap();
    assert!((2_000..=3_000).contains(&left), "the lease runs 4 s from the heartbeat: {left} ms left");
    assert_eq!(
        holder.heartbeat("r", epoch + 1, MINUTE).wait().unwrap(),
        Beat::Lost,
        "an epoch that was never claimed holds nothing"
    );
    assert_eq!(holder.heartbeat("r", epoch, Duration::ZERO).wait().unwrap_err().code(), "PG_BAD_LEASE");
}

#[test]
fn an_event_numbered_twice_is_refused_with_its_whole_batch() {
    let store = store("duplicate");
    create(&store, "r");
    let (_, epoch) = store.claim_ready("w", MINUTE).wait().unwrap().unwrap();
    store.write_batch("r", epoch, &events("r", 1..=2)).wait().unwrap();
    let mut again = vec![LogItem::Input(input(3, "x"))];
    again.extend(events("r", 3..=3));
    again.extend(events("r", 2..=2));
    again.push(LogItem::Status { status: RunStatus::Failed, pending: vec![] });
    let error = store.write_batch("r", epoch, &again).wait().unwrap_err();
    assert_eq!(error.code(), "RUN_LOG_DUPLICATE", "{error}");
    assert!(error.to_string().contains("(run_id, seq)=(r, 2)"), "{error}");
    assert_eq!(store.events("r").wait().unwrap(), vec![event("r", 1), event("r", 2)], "nothing of the batch is kept");
    assert!(store.inputs("r").wait().unwrap().is_empty());
    assert_eq!(store.get("r").wait().unwrap().status, StoredStatus::Running);
    assert_eq!(store.stale_writes(), 0, "a duplicate is no stale write");
    store.write_batch("r", epoch, &events("r", 3..=3)).wait().unwrap();
}

/// Also shows the store working inside a current-thread runtime, where the synchronous `postgres` crate panics and
/// `block_in_place` does too.
#[tokio::test]
async fn each_committed_batch_is_announced_once_and_a_refused_one_not_at_all() {
    use futures::StreamExt;
    let url = database("notify");
    let store = PgStore::open(&url).unwrap();
    create(&store, "r");
    let (_, epoch) = store.claim_ready("w", MINUTE).wait().unwrap().unwrap();

    let (client, mut connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
    let (tx, mut heard) = futures::channel::mpsc::unbounded();
    tokio::spawn(async move {
        let mut messages = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(Ok(message)) = messages.next().await {
            if let tokio_postgres::AsyncMessage::Notification(n) = message {
                let _ = tx.unbounded_send((n.channel().to_string(), n.payload().to_string()));
            }
        }
    });
    client.batch_execute(&format!("LISTEN {CHANNEL}")).await.unwrap();

    store.write_batch("r", epoch, &events("r", 1..=50)).wait().unwrap();
    store.write_batch("r", epoch, &events("r", 51..=60)).wait().unwrap();
    assert!(store.write_batch("r", epoch, &events("r", 60..=61)).wait().is_err(), "a duplicate");
    assert!(store.write_batch("r", epoch + 1, &events("r", 61..=61)).wait().is_err(), "a stale epoch");
    store.write_batch("r", epoch, &[LogItem::Status { status: RunStatus::Completed, pending: vec![] }]).wait().unwrap();

    let mut got = Vec::new();
    while let Ok(Some(n)) = tokio::time::timeout(Duration::from_millis(500), heard.next()).await {
        got.push(n);
    }
    assert_eq!(got, vec![(CHANNEL.to_string(), "r".to_string()); 3], "one per committed batch");
    drop(store); // inside the runtime: the store's own runtime is shut down without panicking
}

/// A real run through the emitter's committer (a plain thread) into the fenced log, driven from a multi-thread runtime.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workflow_run_logs_through_its_claim_and_loads_back_as_it_ran() {
    let store = store("workflow_run");
    let wf = workflow(
        "nodes:
  - {id: start, type: start}
  - {id: draft, type: agent, user_prompt: Write}
  - {id: review, type: agent, user_prompt: 'Review {{ draft.text }}'}
edges:
  - {from: start, to: draft}
  - {from: draft, to: review}",
    );
    let options = RunOptions { run_id: Some("wf".into()), ..RunOptions::default() };
    store
        .submit(&NewRun {
            id: "wf",
            workflow: &wf,
            workflow_ref: None,
            answers_path: None,
            options: &options,
            eval_id: None,
            origin: Default::default(),
            version: None,
        })
        .wait()
        .unwrap();
    let (run_id, epoch) = store.claim_ready("w", MINUTE).wait().unwrap().unwrap();
    let answers = script("nodes:\n  draft: {text: the draft}\n  review: {text: fine}");
    let collector = Collector::default();
    let mut rt = runtime(answers.clone(), AskedModel::new(answers), vec![Arc::new(collector.clone())]);
    let log = store.run_log(&run_id, epoch);
    rt.log = Some(Arc::new(log.clone()));
    let outcome = run_to_pause(Arc::new(wf.clone()), options, rt).await;
    assert_eq!(outcome.result.status, RunStatus::Completed);
    assert_eq!(outcome.log_error, None);
    assert!(!log.lost());

    let loaded = store.load("wf").wait().unwrap();
    assert_eq!(loaded.row.status, StoredStatus::Completed);
    assert_eq!(loaded.recording.events, collector.events(), "the log holds every event observers saw, in order");
    assert!(!loaded.recording.inputs.is_empty());
    assert!(store.release("wf", epoch, None).wait().unwrap());
    let (row, lease) = (store.get("wf").wait().unwrap(), store.lease("wf").wait().unwrap());
    assert_eq!((row.status, lease.owner), (StoredStatus::Completed, None), "an ended run stays ended");
    assert_eq!(store.claim_ready("w", MINUTE).wait().unwrap(), None);

    // The emitter itself, from this runtime's thread: its batches go through the same fence.
    create(&store, "e");
    let (_, epoch) = store.claim_ready("w", MINUTE).wait().unwrap().unwrap();
    let emitter = Emitter::new("e", 0, Some(Arc::new(store.run_log("e", epoch))), vec![]);
    for _ in 0..100 {
        emitter.emit(EventKind::WorkflowResumed {});
    }
    emitter.record(Input::Cancelled { by: None });
    emitter.status(RunStatus::Cancelled, &[]);
    emitter.flush();
    assert_eq!(emitter.log_error(), None);
    assert_eq!(
        store.events("e").wait().unwrap().iter().map(|e| e.seq).collect::<Vec<_>>(),
        (1..=100).collect::<Vec<_>>()
    );
    assert_eq!(store.inputs("e").wait().unwrap()[0].seq, 101);
    assert_eq!(store.get("e").wait().unwrap().status, StoredStatus::Cancelled);
}

#[test]
fn a_run_given_up_while_running_is_ready_for_another_worker_at_once() {
    let store = store("release");
    create(&store, "r");
    let (_, epoch) = store.claim_ready("first", MINUTE).wait().unwrap().unwrap();
    assert!(store.release("r", epoch, None).wait().unwrap());
    assert_eq!(store.get("r").wait().unwrap().status, StoredStatus::Ready);
    let err = store.write_batch("r", epoch, &events("r", 1..=1)).wait().unwrap_err();
    assert_eq!(err.code(), "RUN_EPOCH_STALE", "a released claim writes nothing more");
    assert_eq!(store.claim_ready("second", MINUTE).wait().unwrap(), Some(("r".to_string(), epoch + 1)));
}

#[test]
fn workers_opening_a_new_database_together_migrate_it_once_and_a_newer_schema_is_refused() {
    let url = database("migrations");
    let opened: Vec<Result<PgStore, PgError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..4).map(|_| scope.spawn(|| PgStore::open(&url))).collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for store in &opened {
        assert!(store.is_ok(), "{:?}", store.as_ref().err());
    }
    let versions = sql(&url, "SELECT count(*) FROM switchyard_schema");
    assert_eq!(versions, switchyard_engine::store::postgres::latest(), "each migration is applied once");
    // Now the database is written as a newer Switchyard would.
    sql(&url, "INSERT INTO switchyard_schema (version) VALUES (99)");
    let Err(error) = PgStore::open(&url) else { panic!("a newer schema opened") };
    assert_eq!(error.code(), "STORE_TOO_NEW");
    assert!(error.to_string().contains("schema 99"), "{error}");
    assert!(!error.to_string().contains("postgres://"), "the message names the database, not its URL: {error}");
}

#[test]
fn the_store_connects_again_after_the_server_restarts() {
    // A cluster of its own: restarting the shared one would break the tests running beside this one.
    let own = start_cluster();
    let stop = scopeguard(&own);
    let store = PgStore::open(&format!("{}/switchyard", own.base)).unwrap();
    create(&store, "r");
    let (_, epoch) = store.claim_ready("w", MINUTE).wait().unwrap().unwrap();
    store.write_batch("r", epoch, &events("r", 1..=2)).wait().unwrap();
    postgres_sh(&[Path::new("restart"), &own.dir]);
    // The first call after the restart may fail on the broken connection (it is not retried); the next reconnects.
    let _ = store.heartbeat("r", epoch, MINUTE).wait();
    let _ = store.get("r").wait();
    assert_eq!(
        store.heartbeat("r", epoch, MINUTE).wait().unwrap(),
        Beat::Held { cancel_requested: false, woken: false }
    );
    store.write_batch("r", epoch, &events("r", 3..=3)).wait().unwrap();
    assert_eq!(store.events("r").wait().unwrap().len(), 3, "committed batches survive a crash of the server");
    drop(stop);
}

/// Stops a cluster and removes its folder when dropped, also when the test fails.
fn scopeguard(cluster: &Cluster) -> impl Drop + '_ {
    struct Stop<'a>(&'a Cluster);
    impl Drop for Stop<'_> {
        fn drop(&mut self) {
            let _ =
                Command::new("bash").arg(postgres_script()).arg("kill").arg(&self.0.dir).stderr(Stdio::null()).status();
            let _ = std::fs::remove_dir_all(&self.0.tmp);
        }
    }
    Stop(cluster)
}

// ---- the store as the session uses it ------------------------------------------------------------------------

fn new_run<'a>(id: &'a str, wf: &'a Workflow, options: &'a RunOptions, eval: Option<&'a str>) -> NewRun<'a> {
    NewRun {
        id,
        workflow: wf,
        workflow_ref: Some("/tmp/wf.yaml"),
        answers_path: None,
        options,
        eval_id: eval,
        origin: Default::default(),
        version: None,
    }
}

#[test]
fn a_run_started_here_is_held_by_its_claim_resumed_by_id_and_given_up_when_the_claim_is_dropped() {
    let url = database("held");
    let here = PgStore::open(&url).unwrap().with_owner("here");
    let there: Arc<dyn Store> = Arc::new(PgStore::open(&url).unwrap().with_owner("there"));
    let (wf, options) = (test_workflow(), RunOptions::default());
    let claim = Store::create(&here, &new_run("r", &wf, &options, Some("eval-1"))).unwrap();
    let (row, lease) = (here.get("r").wait().unwrap(), here.lease("r").wait().unwrap());
    assert_eq!((row.status, lease.owner.as_deref(), lease.epoch), (StoredStatus::Running, Some("here"), 1));
    let listed = there.get("r").unwrap();
    assert_eq!((listed.status, listed.eval.as_deref()), (StoredStatus::Running, Some("eval-1")), "the same RunRow");
    assert_eq!(there.claim("r").err().map(|e| e.code()), Some("RUN_IN_USE"), "held by a live lease");

    // Its log is the claim's: fenced by its epoch.
    let log = Arc::new(here.clone()).run_log(&claim);
    log.write_batch("r", &[LogItem::Status { status: RunStatus::Paused, pending: vec!["approve".into()] }]).unwrap();
    drop(claim);
    let row = there.get("r").unwrap();
    assert_eq!((row.status, row.pending.as_slice()), (StoredStatus::Paused, &["approve".to_string()][..]));
    assert_eq!(here.lease("r").wait().unwrap().owner, None, "a paused run is given up when its claim is dropped");
    assert_eq!(here.claim_ready("w", MINUTE).wait().unwrap(), None, "workers leave a paused run to a person");

    // A person resumes it by its id; the old claim's log writes nothing more.
    let resumed = there.claim("r").unwrap();
    let lease = here.lease("r").wait().unwrap();
    assert_eq!((lease.owner.as_deref(), lease.epoch), (Some("there"), 2));
    let error = log.write_batch("r", &events("r", 1..=1)).unwrap_err();
    assert!(error.0.starts_with("[RUN_EPOCH_STALE]"), "{error}");
    let log = there.clone().run_log(&resumed);
    log.write_batch("r", &[LogItem::Status { status: RunStatus::Completed, pending: vec![] }]).unwrap();
    drop(resumed);
    assert_eq!(there.claim("r").err().map(|e| e.code()), Some("NOT_RESUMABLE"), "an ended run is not claimed");
}

#[test]
fn a_fork_is_listed_with_the_run_it_forked_even_when_its_answer_holds_a_nul() {
    let store = store("forked");
    let wf = test_workflow();
    let reuse = |fork: Option<run::Fork>| RunOptions {
        reuse: Some(run::Reuse { run: "r0".into(), from: "start".into(), fork, ..run::Reuse::default() }),
        ..RunOptions::default()
    };
    let fork = reuse(Some(run::Fork { turn: None, answer: "said \u{0} otherwise".into() }));
    let from_node = reuse(None);
    // Input that names `"fork"` is no fork.
    let plain = RunOptions { input: Some(json!({"fork": "no"})), ..RunOptions::default() };
    for (id, options) in [("fork", &fork), ("from", &from_node), ("plain", &plain)] {
        drop(Store::create(&store, &new_run(id, &wf, options, None)).unwrap());
    }
    let listed: Vec<(String, Option<String>)> =
        Store::list(&store).unwrap().into_iter().map(|r| (r.id, r.forked_from)).collect();
    let of = |id: &str| listed.iter().find(|(r, _)| r == id).unwrap().1.clone();
    assert_eq!((of("fork").as_deref(), of("from"), of("plain")), (Some("r0"), None, None), "{listed:?}");
    assert_eq!(store.get("fork").wait().unwrap().forked_from.as_deref(), Some("r0"));
}

#[test]
fn a_claim_keeps_its_run_past_its_lease_by_heartbeats_and_says_when_it_is_lost() {
    let url = database("lost");
    let holder = PgStore::open(&url).unwrap().with_owner("holder").with_lease(Duration::from_millis(300)).unwrap();
    let other = PgStore::open(&url).unwrap();
    create(&holder, "r");
    let (_, claim) = holder.claim_next().wait().unwrap().unwrap();
    let lost = claim.lost();
    // Three leases long: without its heartbeats, the run would be anyone's by now.
    std::thread::sleep(Duration::from_millis(900));
    assert_eq!(other.claim_ready("other", MINUTE).wait().unwrap(), None, "the heartbeats kept the lease");
    assert!(!lost.happened());

    // The holder stops beating (as if it hung); once its lease runs out another takes the run, and the holder hears.
    // (Again until it takes: a heartbeat of the holder's that was under way may extend the lease once more.)
    let mut taken = None;
    until("another to take the run", || {
        sql(&url, "UPDATE runs SET lease_until = now() - interval '1 second' WHERE owner = 'holder'");
        taken = other.claim_ready("other", MINUTE).wait().unwrap();
        taken.is_some()
    });
    let (_, epoch) = taken.unwrap();
    assert_eq!(epoch, 2);
    until("the holder's claim to say it is lost", || lost.happened());
    drop(claim);
    let lease = other.lease("r").wait().unwrap();
    assert_eq!((lease.owner.as_deref(), lease.epoch), (Some("other"), 2), "the lost claim gave nothing up");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_submitted_or_given_up_is_announced_to_listening_workers() {
    let store = store("announced");
    let listener = store.listen().wait().unwrap();
    create(&store, "r");
    tokio::time::timeout(Duration::from_secs(10), listener.notified()).await.expect("announced when submitted");
    let (_, claim) = store.claim_next().wait().unwrap().unwrap();
    drop(claim); // still running: given up, ready for another worker at once
    tokio::time::timeout(Duration::from_secs(10), listener.notified()).await.expect("announced when given up");
    assert_eq!(store.get("r").wait().unwrap().status, StoredStatus::Ready);
}

#[test]
fn a_run_that_pauses_or_ends_keeps_what_its_model_calls_used() {
    let store = store("usage");
    create(&store, "r");
    let (_, epoch) = store.claim_ready("w", MINUTE).wait().unwrap().unwrap();
    let exit = |seq: u64, node: &str, tokens: u64| {
        let result = NodeResult {
            status: switchyard_engine::NodeStatus::Success,
            data: json!({"text": "x"}),
            tool_calls: vec![],
            error: None,
            error_code: None,
        };
        let usage = Usage { input_tokens: tokens, output_tokens: 1, cached_input_tokens: 0 };
        let kind = EventKind::NodeExit { node: node.into(), iteration: 1, result, duration_ms: 1, usage: Some(usage) };
        LogItem::Event(Event { seq, run: "r".into(), ts: "2026-01-01T00:00:00.000Z".into(), kind })
    };
    store.write_batch("r", epoch, &[exit(1, "start", 10), exit(2, "start", 5)]).wait().unwrap();
    assert!(store.get("r").wait().unwrap().usage.is_empty(), "counted when the run pauses or ends, not on every batch");
    store.write_batch("r", epoch, &[LogItem::Status { status: RunStatus::Completed, pending: vec![] }]).wait().unwrap();
    let row = Store::get(&store, "r").unwrap();
    assert_eq!(row.tokens, 17, "{:?}", row.usage);
}

// ---- the async core --------------------------------------------------------------------------------------------

/// A call is awaited, not blocked on: the runtime awaiting it runs its other tasks meanwhile, even with one thread.
/// Here the call waits for a row lock that only another task of that same thread gives up; were the call blocking
/// its thread, that task could never run and the call would end in `PG_TIMEOUT`.
#[tokio::test(flavor = "current_thread")]
async fn an_awaited_call_leaves_its_one_thread_runtime_free_to_run_what_it_waits_for() {
    let url = database("awaited");
    let store = PgStore::open(&url).unwrap();
    create(&store, "r");
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    client.batch_execute("BEGIN; SELECT 1 FROM runs WHERE id = 'r' FOR UPDATE").await.unwrap();
    let holder = tokio::spawn(async move {
        // Gives the row up once the store's call waits for it.
        loop {
            let waiting = client.query_one("SELECT count(*) FROM pg_locks WHERE NOT granted", &[]).await.unwrap();
            if waiting.get::<_, i64>(0) > 0 {
                break;
            }
            tokio::task::yield_now().await;
        }
        client.batch_execute("COMMIT").await.unwrap();
    });
    assert!(store.request_cancel("r", None).await.unwrap(), "asked once the lock was given up");
    holder.await.unwrap();

    // Many calls awaited at once are all answered, each with its own run.
    for id in ["a", "b", "c", "d"] {
        create(&store, id);
    }
    let rows = futures::future::join_all(["a", "b", "c", "d"].map(|id| store.get(id))).await;
    let ids: Vec<String> = rows.into_iter().map(|r| r.unwrap().id).collect();
    assert_eq!(ids, ["a", "b", "c", "d"]);
    drop(store);
}

#[test]
fn a_runs_children_are_listed_by_their_link_as_the_sqlite_store_lists_them() {
    let url = database("children");
    let (pg, dir) = (PgStore::open(&url).unwrap(), tempfile::tempdir().unwrap());
    let sqlite = switchyard_engine::store::RunStore::open(&dir.path().join("runs.sqlite")).unwrap();
    let wf = test_workflow();
    let link = |node: &str, item: Option<usize>| run::ParentLink {
        run: "parent".into(),
        node: node.into(),
        iteration: 1,
        item,
        call: None,
    };
    // An agent's two workflow tool calls: children of the agent's node, told apart by the call.
    let asked = |call: &str| Some(run::ParentLink { call: Some(call.into()), ..link("agent", None) });
    let runs = [
        ("parent", None),
        ("agent-c1", asked("c1")),
        ("agent-c0", asked("c0")),
        ("fan-1", Some(link("fan", Some(1)))),
        ("fan-0", Some(link("fan", Some(0)))),
        ("alone", Some(link("alone", None))),
        ("other", Some(run::ParentLink { run: "elsewhere".into(), ..link("alone", None) })),
    ];
    for (id, parent) in runs {
        let options = RunOptions { parent, ..RunOptions::default() };
        let run = new_run(id, &wf, &options, None);
        pg.submit(&run).wait().unwrap();
        drop(Store::create(&sqlite, &run).unwrap());
    }
    let listed = |store: &dyn Store| -> Vec<(String, String, Option<usize>, Option<String>)> {
        store.children("parent").unwrap().into_iter().map(|c| (c.id, c.link.node, c.link.item, c.link.call)).collect()
    };
    let expected = [
        ("agent-c0", "agent", None, Some("c0")),
        ("agent-c1", "agent", None, Some("c1")),
        ("alone", "alone", None, None),
        ("fan-0", "fan", Some(0), None),
        ("fan-1", "fan", Some(1), None),
    ]
    .map(|(id, node, item, call)| (id.to_string(), node.to_string(), item, call.map(String::from)));
    assert_eq!(listed(&pg), expected, "by node, then item, then the tool call");
    assert_eq!(listed(&pg), listed(&sqlite), "as SQLite lists them");
    assert!(pg.children("fan-0").wait().unwrap().is_empty());
}
