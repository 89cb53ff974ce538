//! What a team server keeps beside the runs (`postgres::team`), against a real PostgreSQL: decisions kept once and
//! waking their run, cancellations, webhook deliveries and schedule firings that start one run per key, hashed
//! tokens, and workflow versions. One database per test (`support/pg_cluster.rs`).
#![cfg(feature = "postgres")]

mod support;

#[path = "support/pg_cluster.rs"]
mod pg_cluster;
use pg_cluster::*;

use std::time::Duration;

use support::*;
use switchyard_engine::log::LogItem;
use switchyard_engine::result::{Decision, RunStatus, Verdict};
use switchyard_engine::run::RunOptions;
use switchyard_engine::store::postgres::team::{self, Kept};
use switchyard_engine::store::postgres::{PgStore, Wait};
use switchyard_engine::store::{NewRun, Prune, Pruned, StoredStatus};
use switchyard_engine::Workflow;

const MINUTE: Duration = Duration::from_secs(60);

fn store(name: &str) -> PgStore {
    PgStore::open(&database(name)).unwrap()
}

fn test_workflow() -> Workflow {
    workflow("nodes:\n  - {id: start, type: start}\n")
}

fn new_run<'a>(id: &'a str, wf: &'a Workflow, options: &'a RunOptions) -> NewRun<'a> {
    NewRun {
        id,
        workflow: wf,
        workflow_ref: None,
        answers_path: None,
        options,
        eval_id: None,
        origin: Default::default(),
        version: None,
    }
}

/// A run claimed by `worker` and paused on `node`, then given up: parked.
fn parked(store: &PgStore, id: &str, node: &str) {
    let (wf, options) = (test_workflow(), RunOptions::default());
    store.submit(&new_run(id, &wf, &options)).wait().unwrap();
    let (_, epoch) = store.claim_ready("w", MINUTE).wait().unwrap().unwrap();
    let paused = LogItem::Status { status: RunStatus::Paused, pending: vec![node.to_string()] };
    store.write_batch(id, epoch, &[paused]).wait().unwrap();
    assert!(store.release(id, epoch, None).wait().unwrap());
    assert_eq!(store.get(id).wait().unwrap().status, StoredStatus::Paused);
}

#[test]
fn a_decision_sent_twice_is_kept_once_and_wakes_its_parked_run() {
    let store = store("decision_twice");
    parked(&store, "r", "review");
    let approve = Decision::new(Verdict::Approve, "ship");
    assert_eq!(store.keep_decision("r", "review", 0, &approve).wait().unwrap(), Kept::New);
    assert_eq!(
        store.keep_decision("r", "review", 0, &Decision::new(Verdict::Reject, "")).wait().unwrap(),
        Kept::Already
    );
    assert_eq!(store.get("r").wait().unwrap().status, StoredStatus::Ready, "a decision makes a parked run ready");
    let requests = store.requests("r").wait().unwrap();
    assert_eq!(requests.decisions.len(), 1);
    assert_eq!((requests.decisions[0].round, &requests.decisions[0].decision), (0, &approve), "the first one stands");
    assert!(!requests.cancel);
    assert_eq!(store.keep_decision("nope", "review", 0, &approve).wait().unwrap_err().code(), "NO_SUCH_RUN");
}

#[test]
fn a_kept_decision_is_read_back_typed_and_one_the_store_cannot_read_is_its_error_never_an_approval() {
    let url = database("decision_unreadable");
    let store = PgStore::open(&url).unwrap();
    parked(&store, "r", "review");
    // Kept by an earlier version, which left the note out when there was none.
    sql(
        &url,
        r#"INSERT INTO decisions (run_id, node, round, decision) VALUES ('r', 'review', 0, '{"decision": "reject"}')"#,
    );
    let read = store.requests("r").wait().unwrap();
    assert_eq!(read.decisions[0].decision, Decision::new(Verdict::Reject, ""));
    sql(
        &url,
        r#"INSERT INTO decisions (run_id, node, round, decision) VALUES ('r', 'review', 1, '{"decision": "maybe"}')"#,
    );
    let refused = store.requests("r").wait().unwrap_err();
    assert_eq!(refused.code(), "STORE_UNREADABLE");
    assert!(refused.to_string().contains("maybe"), "{refused}");
}

#[test]
fn a_decision_that_comes_while_a_worker_holds_the_run_wakes_it_when_the_worker_parks_it() {
    let store = store("decision_while_held");
    let (wf, options) = (test_workflow(), RunOptions::default());
    store.submit(&new_run("r", &wf, &options)).wait().unwrap();
    let (_, epoch) = store.claim_ready("w", MINUTE).wait().unwrap().unwrap();
    // The worker is about to park it when the decision comes.
    store.keep_decision("r", "review", 0, &Decision::new(Verdict::Approve, "")).wait().unwrap();
    assert_eq!(store.get("r").wait().unwrap().status, StoredStatus::Running, "the worker still holds it");
    let paused = LogItem::Status { status: RunStatus::Paused, pending: vec!["review".into()] };
    store.write_batch("r", epoch, &[paused]).wait().unwrap();
    store.release("r", epoch, None).wait().unwrap();
    assert_eq!(
        store.get("r").wait().unwrap().status,
        StoredStatus::Ready,
        "given up paused with a decision waiting: ready"
    );
    let (run, next) = store.claim_ready("w2", MINUTE).wait().unwrap().unwrap();
    assert_eq!((run.as_str(), next), ("r", epoch + 1));
    // The claim cleared the wake: parked again with nothing new, it stays parked.
    let paused = LogItem::Status { status: RunStatus::Paused, pending: vec!["review".into()] };
    store.write_batch("r", next, &[paused]).wait().unwrap();
    store.release("r", next, None).wait().unwrap();
    assert_eq!(store.get("r").wait().unwrap().status, StoredStatus::Paused);
}

#[test]
fn a_woken_run_whose_worker_died_before_parking_it_again_is_taken_by_the_next_worker() {
    let store = store("woken_then_died");
    parked(&store, "r", "review");
    store.keep_decision("r", "review", 0, &Decision::new(Verdict::Approve, "")).wait().unwrap();
    // Taken (which clears the wake) by a worker that says the run waits, and dies before it applies the decision.
    let (_, epoch) = store.claim_ready("w", Duration::from_millis(200)).wait().unwrap().unwrap();
    let paused = LogItem::Status { status: RunStatus::Paused, pending: vec!["review".into()] };
    store.write_batch("r", epoch, &[paused]).wait().unwrap();
    assert!(store.claim_ready("w2", MINUTE).wait().unwrap().is_none(), "held while its lease runs");
    std::thread::sleep(Duration::from_millis(300));
    let (run, next) =
        store.claim_ready("w2", MINUTE).wait().unwrap().expect("its lease is over: another worker takes it");
    assert_eq!((run.as_str(), next), ("r", epoch + 1));
    assert_eq!(store.requests("r").wait().unwrap().decisions.len(), 1, "the decision that woke it still waits for it");
    // Parked properly (given up with no holder), it is not taken again for nothing.
    store
        .write_batch("r", next, &[LogItem::Status { status: RunStatus::Paused, pending: vec!["review".into()] }])
        .wait()
        .unwrap();
    store.release("r", next, None).wait().unwrap();
    assert!(store.claim_ready("w3", MINUTE).wait().unwrap().is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decision_and_a_cancellation_for_a_held_run_reach_its_holder_at_once_not_at_its_next_heartbeat() {
    // A 60 s lease beats every 20 s: what reaches the holder within 10 s came by the announcement.
    let store = store("wake_held").with_lease(MINUTE).unwrap();
    let (wf, options) = (test_workflow(), RunOptions::default());
    store.submit(&new_run("r", &wf, &options)).wait().unwrap();
    let (_, claim) = store.claim_next().wait().unwrap().unwrap();
    let _wakes = store.listen_wakes().wait().unwrap();
    let soon = Duration::from_secs(10);
    let nudged = claim.nudged();
    store.keep_decision("r", "review", 0, &Decision::new(Verdict::Approve, "")).wait().unwrap();
    tokio::time::timeout(soon, nudged).await.expect("the decision reached the holder before its heartbeat");
    let asked = claim.cancel_requested();
    assert!(store.request_cancel("r", None).wait().unwrap());
    tokio::time::timeout(soon, asked.wait()).await.expect("the cancellation reached the holder before its heartbeat");
    assert_eq!(
        store.get("r").wait().unwrap().status,
        StoredStatus::Running,
        "the holder keeps the run: it acts on what it heard"
    );
}

#[test]
fn a_cancellation_wakes_a_parked_run_and_reaches_a_held_one_at_its_heartbeat() {
    let store = store("cancel");
    parked(&store, "parked", "review");
    assert!(store.request_cancel("parked", None).wait().unwrap());
    assert_eq!(store.get("parked").wait().unwrap().status, StoredStatus::Ready);
    assert!(store.requests("parked").wait().unwrap().cancel);

    let (wf, options) = (test_workflow(), RunOptions::default());
    store.submit(&new_run("held", &wf, &options)).wait().unwrap();
    let (run, epoch) = loop {
        let (run, epoch) = store.claim_ready("w", MINUTE).wait().unwrap().unwrap();
        if run == "held" {
            break (run, epoch);
        }
    };
    assert_eq!(
        store.heartbeat(&run, epoch, MINUTE).wait().unwrap(),
        switchyard_engine::store::postgres::Beat::Held { cancel_requested: false, woken: false }
    );
    assert!(store.request_cancel("held", None).wait().unwrap());
    assert_eq!(
        store.heartbeat(&run, epoch, MINUTE).wait().unwrap(),
        switchyard_engine::store::postgres::Beat::Held { cancel_requested: true, woken: true }
    );
    let ended = LogItem::Status { status: RunStatus::Cancelled, pending: vec![] };
    store.write_batch(&run, epoch, &[ended]).wait().unwrap();
    assert!(!store.request_cancel("held", None).wait().unwrap(), "an ended run cannot be cancelled");
    assert_eq!(store.request_cancel("nope", None).wait().unwrap_err().code(), "NO_SUCH_RUN");
}

#[test]
fn a_parked_run_is_taken_again_when_its_approval_times_out() {
    let store = store("wake_at");
    let (wf, options) = (test_workflow(), RunOptions::default());
    store.submit(&new_run("r", &wf, &options)).wait().unwrap();
    let (_, epoch) = store.claim_ready("w", MINUTE).wait().unwrap().unwrap();
    let paused = LogItem::Status { status: RunStatus::Paused, pending: vec!["review".into()] };
    store.write_batch("r", epoch, &[paused]).wait().unwrap();
    let now_ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    store.release("r", epoch, Some(now_ms + 400)).wait().unwrap();
    assert_eq!(store.claim_ready("w2", MINUTE).wait().unwrap(), None, "not before its deadline");
    until("the deadline to pass", || store.claim_ready("w2", MINUTE).wait().unwrap().is_some());
}

#[test]
fn a_webhook_delivered_twice_with_one_key_starts_one_run() {
    let url = database("deliveries");
    let store = PgStore::open(&url).unwrap();
    let (wf, options) = (test_workflow(), RunOptions::default());
    let first = store.deliver("hook", "key-1", &new_run("a", &wf, &options)).wait().unwrap();
    let again = store.deliver("hook", "key-1", &new_run("b", &wf, &options)).wait().unwrap();
    let other_hook = store.deliver("other", "key-1", &new_run("c", &wf, &options)).wait().unwrap();
    assert_eq!((first.run.as_str(), first.new), ("a", true));
    assert_eq!((again.run.as_str(), again.new), ("a", false), "the redelivery finds the first run");
    assert_eq!((other_hook.run.as_str(), other_hook.new), ("c", true), "keys are per hook");
    let ids: Vec<String> = store.list().wait().unwrap().into_iter().map(|r| r.id).collect();
    assert_eq!(ids.len(), 2, "no run `b`: {ids:?}");
    // Its key outlives the run: deleted (by hand here), a redelivery still starts nothing and says it was pruned.
    sql(&url, "DELETE FROM runs WHERE id = 'a'");
    let after = store.deliver("hook", "key-1", &new_run("d", &wf, &options)).wait().unwrap();
    assert_eq!((after.run.as_str(), after.new, after.pruned), ("a", false, true));
    assert_eq!(store.list().wait().unwrap().len(), 1, "no run `d`");
}

/// Prunes what ended more than 30 days ago, and keys received more than 90 days ago.
fn prune(store: &PgStore, dry_run: bool) -> Pruned {
    let now = chrono::Utc::now();
    let rule = Prune {
        ended_before: now - chrono::TimeDelta::days(30),
        statuses: vec![],
        keys_before: now - chrono::TimeDelta::days(90),
        dry_run,
    };
    store.prune(&rule).wait().unwrap()
}

/// Run `id` ended (completed) by a worker 40 days ago.
fn ended_long_ago(store: &PgStore, url: &str, id: &str) {
    let (_, epoch) = store.claim_ready("w", MINUTE).wait().unwrap().unwrap();
    let done = LogItem::Status { status: RunStatus::Completed, pending: vec![] };
    store.write_batch(id, epoch, &[done]).wait().unwrap();
    assert!(store.release(id, epoch, None).wait().unwrap());
    sql(url, &format!("UPDATE runs SET ended_at = now() - interval '40 days' WHERE id = '{id}'"));
}

#[test]
fn prune_runs_and_events_gone_delivery_keys_kept_a_late_redelivery_starts_nothing() {
    let url = database("prune_keys");
    let store = PgStore::open(&url).unwrap();
    let (wf, options) = (test_workflow(), RunOptions::default());
    assert!(store.deliver("hook", "late", &new_run("a", &wf, &options)).wait().unwrap().new);
    ended_long_ago(&store, &url, "a");
    let due = 1_800_000_000_000;
    assert!(store.fire("wf/nightly", due, &new_run("f", &wf, &options)).wait().unwrap().is_some());
    ended_long_ago(&store, &url, "f");

    let pruned = prune(&store, false);
    assert_eq!((pruned.runs, pruned.deliveries, pruned.firings), (2, 0, 0), "the runs go, their keys stay");
    assert!(store.list().wait().unwrap().is_empty() && store.events("a").wait().unwrap().is_empty());
    let late = store.deliver("hook", "late", &new_run("b", &wf, &options)).wait().unwrap();
    assert_eq!((late.run.as_str(), late.new, late.pruned), ("a", false, true), "a late redelivery starts nothing");
    assert_eq!(store.fire("wf/nightly", due, &new_run("g", &wf, &options)).wait().unwrap(), None, "fired already");
    assert!(store.list().wait().unwrap().is_empty(), "no run was started");

    // After their own window, keys whose runs are gone go too; a key whose run is kept never does.
    assert!(store.deliver("hook", "kept", &new_run("c", &wf, &options)).wait().unwrap().new);
    sql(&url, "UPDATE deliveries SET received_at = now() - interval '100 days'");
    sql(&url, "UPDATE fires SET due = due - interval '100 years'");
    let counted = prune(&store, true);
    assert_eq!(counted, Pruned { runs: 0, events: 0, deliveries: 1, firings: 1 }, "a dry run counts them");
    assert_eq!(prune(&store, false), counted);
    assert_eq!(sql(&url, "SELECT count(*) FROM deliveries"), 1, "the key of the run still kept stays");
    assert_eq!(store.list().wait().unwrap().len(), 1);
}

#[test]
fn deliveries_racing_on_one_key_start_one_run() {
    let url = database("delivery_race");
    let threads: Vec<_> = (0..8)
        .map(|i| {
            let url = url.clone();
            std::thread::spawn(move || {
                let store = PgStore::open(&url).unwrap();
                let (wf, options) = (test_workflow(), RunOptions::default());
                store.deliver("hook", "same", &new_run(&format!("r{i}"), &wf, &options)).wait().unwrap()
            })
        })
        .collect();
    let delivered: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    assert_eq!(delivered.iter().filter(|d| d.new).count(), 1);
    assert!(delivered.iter().all(|d| d.run == delivered[0].run), "{delivered:?}");
    assert_eq!(PgStore::open(&url).unwrap().list().wait().unwrap().len(), 1);
}

#[test]
fn a_schedule_firing_starts_one_run_whichever_server_fires_it() {
    let url = database("fires");
    let (one, two) = (PgStore::open(&url).unwrap(), PgStore::open(&url).unwrap());
    let (wf, options) = (test_workflow(), RunOptions::default());
    let due = 1_800_000_000_000;
    assert_eq!(one.fire("wf/nightly", due, &new_run("a", &wf, &options)).wait().unwrap().as_deref(), Some("a"));
    assert_eq!(two.fire("wf/nightly", due, &new_run("b", &wf, &options)).wait().unwrap(), None, "fired already");
    assert_eq!(
        two.fire("wf/nightly", due + 60_000, &new_run("c", &wf, &options)).wait().unwrap().as_deref(),
        Some("c")
    );
    assert_eq!(one.list().wait().unwrap().len(), 2);
}

#[test]
fn tokens_are_kept_as_hashes_and_a_revoked_one_names_nobody() {
    let store = store("tokens");
    let (token, hash) = team::new_token();
    assert!(token.starts_with("sy_") && token.len() > 60, "{token}");
    assert_eq!(hash, team::token_hash(&token));
    store.create_token("ci", &hash).wait().unwrap();
    assert_eq!(store.create_token("ci", &team::new_token().1).wait().unwrap_err().code(), "TOKEN_EXISTS");
    let ci = team::Caller { name: "ci".into(), scope: team::Scope::Admin };
    assert_eq!(store.token_named(&team::token_hash(&token)).wait().unwrap(), team::TokenFound::Live(ci));
    assert_eq!(store.token_named(&team::token_hash("sy_guess")).wait().unwrap(), team::TokenFound::Unknown);
    assert!(store.revoke_token("ci").wait().unwrap());
    assert!(!store.revoke_token("nobody").wait().unwrap());
    assert_eq!(store.token_named(&hash).wait().unwrap(), team::TokenFound::Unknown, "revoked");
    let listed = store.tokens().wait().unwrap();
    assert_eq!((listed[0].name.as_str(), listed[0].revoked), ("ci", true));
    assert!(!format!("{listed:?}").contains(&token));
    assert!(!team::valid_token_name("") && !team::valid_token_name("a b") && team::valid_token_name("ci-1.bot"));
}

#[test]
fn a_workflow_is_kept_as_a_new_version_only_when_it_changed() {
    let store = store("versions");
    let first = test_workflow();
    assert_eq!(store.register_workflow("/w/a.yaml", &first).wait().unwrap(), 1);
    assert_eq!(store.register_workflow("/w/a.yaml", &first).wait().unwrap(), 1, "unchanged: the same version");
    let mut changed = first.clone();
    changed.description = Some("now with a description".into());
    assert_eq!(store.register_workflow("/w/a.yaml", &changed).wait().unwrap(), 2);
    let versions = store.workflow_versions().wait().unwrap();
    assert_eq!(versions.iter().map(|v| v.version).collect::<Vec<_>>(), [1, 2]);
    assert_eq!(versions[1].workflow, changed);
}

#[test]
fn events_after_a_number_are_those_a_follower_has_not_seen() {
    let store = store("events_after");
    let (wf, options) = (test_workflow(), RunOptions::default());
    store.submit(&new_run("r", &wf, &options)).wait().unwrap();
    let (_, epoch) = store.claim_ready("w", MINUTE).wait().unwrap().unwrap();
    let events: Vec<LogItem> = (1..=5)
        .map(|seq| {
            let kind =
                switchyard_engine::events::EventKind::NodeProgress { node: "start".into(), message: format!("{seq}") };
            LogItem::Event(switchyard_engine::events::Event {
                seq,
                run: "r".into(),
                ts: "2026-01-01T00:00:00.000Z".into(),
                kind,
            })
        })
        .collect();
    store.write_batch("r", epoch, &events).wait().unwrap();
    let seqs =
        |after, limit| store.events_after("r", after, limit).wait().unwrap().iter().map(|e| e.seq).collect::<Vec<_>>();
    assert_eq!(seqs(0, 500), [1, 2, 3, 4, 5]);
    assert_eq!(seqs(3, 500), [4, 5]);
    assert_eq!(seqs(1, 2), [2, 3]);
    assert!(seqs(5, 500).is_empty());
}

#[test]
fn a_paused_run_whose_worker_died_before_giving_it_up_is_taken_when_a_decision_comes() {
    let store = store("died_paused");
    let (wf, options) = (test_workflow(), RunOptions::default());
    store.submit(&new_run("r", &wf, &options)).wait().unwrap();
    let (_, epoch) = store.claim_ready("w", Duration::from_millis(300)).wait().unwrap().unwrap();
    let paused = LogItem::Status { status: RunStatus::Paused, pending: vec!["review".into()] };
    store.write_batch("r", epoch, &[paused]).wait().unwrap();
    // Killed here: never given up. A decision comes; once the dead worker's lease is over, the run is taken.
    store.keep_decision("r", "review", 0, &Decision::new(Verdict::Approve, "")).wait().unwrap();
    until("the run to be taken again", || store.claim_ready("w2", MINUTE).wait().unwrap().is_some());
    assert_eq!(store.lease("r").wait().unwrap().epoch, epoch + 1);
    // A paused run with nothing asked of it is left alone, whoever held it.
    store.submit(&new_run("quiet", &wf, &options)).wait().unwrap();
    let (_, epoch) = store.claim_ready("w", Duration::from_millis(100)).wait().unwrap().unwrap();
    let paused = LogItem::Status { status: RunStatus::Paused, pending: vec!["review".into()] };
    store.write_batch("quiet", epoch, &[paused]).wait().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(store.claim_ready("w2", MINUTE).wait().unwrap(), None);
}
