//! Retention (`Store::prune`): runs that ended before the cutoff go with their events and inputs, a batch at a time;
//! a paused run, a recent run and a run someone holds stay; a dry run deletes nothing and counts what would go — the
//! same in the SQLite store (a real file) and in PostgreSQL (a real server: `support/pg_cluster.rs`).

mod support;

use std::sync::Arc;

use support::*;
use switchyard_engine::events::{Event, EventKind};
use switchyard_engine::log::LogItem;
use switchyard_engine::record::{Input, Recorded};
use switchyard_engine::result::RunStatus;
use switchyard_engine::run::RunOptions;
use switchyard_engine::store::{
    prunable_status, Claim, NewRun, Prune, Pruned, RunStore, Store, StoredStatus, PRUNE_BATCH,
};

/// Run `id`, ended (or paused) as `status`, with `events` events and one input; its claim, still held.
fn ended(store: &Arc<dyn Store>, id: &str, status: RunStatus, events: u64) -> Claim {
    let wf = workflow("nodes:\n  - {id: start, type: start}\n");
    let options = RunOptions::default();
    let run = NewRun {
        id,
        workflow: &wf,
        workflow_ref: None,
        answers_path: None,
        options: &options,
        eval_id: None,
        origin: Default::default(),
        version: None,
    };
    let claim = store.create(&run).unwrap();
    let mut items: Vec<LogItem> = (1..=events)
        .map(|seq| {
            let kind = EventKind::NodeProgress { node: "start".into(), message: format!("step {seq}") };
            LogItem::Event(Event { seq, run: id.into(), ts: "2026-01-01T00:00:00.000Z".into(), kind })
        })
        .collect();
    items.push(LogItem::Input(Recorded { seq: events, ts: None, input: Input::Continued }));
    let pending = if status == RunStatus::Paused { vec!["review".to_string()] } else { vec![] };
    items.push(LogItem::Status { status, pending });
    store.clone().run_log(&claim).write_batch(id, &items).unwrap();
    claim
}

fn ids(store: &Arc<dyn Store>) -> Vec<String> {
    let mut ids: Vec<String> = store.list().unwrap().into_iter().map(|r| r.id).collect();
    ids.sort();
    ids
}

/// Every prune, against `store`; `backdate(ids)` makes those runs have ended (or last changed) 40 days ago.
fn every_prune(store: Arc<dyn Store>, backdate: impl Fn(&[String])) {
    let many = PRUNE_BATCH + 3;
    let mut old: Vec<String> = (0..many).map(|i| format!("old-done-{i:04}")).collect();
    for id in &old {
        drop(ended(&store, id, RunStatus::Completed, 2));
    }
    drop(ended(&store, "old-failed", RunStatus::Failed, 3));
    drop(ended(&store, "old-cancelled", RunStatus::Cancelled, 1));
    drop(ended(&store, "old-paused", RunStatus::Paused, 4));
    let held = ended(&store, "old-held", RunStatus::Completed, 5);
    drop(ended(&store, "recent", RunStatus::Completed, 6));
    old.extend(["old-failed", "old-cancelled", "old-paused", "old-held"].map(String::from));
    backdate(&old);
    let before = ids(&store);
    assert_eq!(before.len(), many + 5);

    let now = chrono::Utc::now();
    let rule = |statuses: Vec<StoredStatus>, dry_run: bool| Prune {
        ended_before: now - chrono::TimeDelta::days(30),
        statuses,
        keys_before: now - chrono::TimeDelta::days(90),
        dry_run,
    };
    let all_old = Pruned { runs: many as u64 + 2, events: 2 * many as u64 + 3 + 1, deliveries: 0, firings: 0 };
    assert_eq!(store.prune(&rule(vec![], true)).unwrap(), all_old, "a dry run counts the old ended runs held by none");
    assert_eq!(ids(&store), before, "a dry run deletes nothing");

    let cancelled = store.prune(&rule(vec![StoredStatus::Cancelled], false)).unwrap();
    assert_eq!((cancelled.runs, cancelled.events), (1, 1), "only the statuses asked for");
    assert!(!ids(&store).contains(&"old-cancelled".to_string()));

    let rest = store.prune(&rule(vec![], false)).unwrap();
    assert_eq!((rest.runs, rest.events), (all_old.runs - 1, all_old.events - 1), "more than one batch of runs");
    assert_eq!(ids(&store), ["old-held", "old-paused", "recent"], "held, paused and recent runs stay");
    for gone in ["old-done-0000", "old-failed"] {
        assert!(store.events(gone).unwrap().is_empty(), "{gone}'s events went with it");
        assert_eq!(store.load(gone).err().map(|e| e.code()), Some("NO_SUCH_RUN"));
    }
    assert_eq!(store.events("old-paused").unwrap().len(), 4, "a paused run keeps its events");
    let paused = store.load("old-paused").unwrap();
    assert_eq!((paused.row.status, paused.recording.inputs.len()), (StoredStatus::Paused, 1));

    assert_eq!(store.prune(&rule(vec![], true)).unwrap().runs, 0, "the held run is not counted either");
    drop(held);
    let freed = store.prune(&rule(vec![], false)).unwrap();
    assert_eq!((freed.runs, freed.events), (1, 5), "given up, the old run goes at the next prune");
    assert_eq!(ids(&store), ["old-paused", "recent"]);
}

#[test]
fn the_sqlite_store_prunes_old_ended_runs_with_their_events_and_keeps_paused_recent_and_held_ones() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.sqlite");
    let store: Arc<dyn Store> = Arc::new(RunStore::open(&path).unwrap());
    every_prune(store, |ids| {
        let conn = rusqlite::Connection::open(&path).unwrap();
        let then = (chrono::Utc::now() - chrono::TimeDelta::days(40)).format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string();
        for id in ids {
            conn.execute(
                "UPDATE runs SET ended_at = CASE WHEN ended_at IS NULL THEN NULL ELSE ?2 END, updated_at = ?2,
                   started_at = ?2 WHERE id = ?1",
                rusqlite::params![id, then],
            )
            .unwrap();
        }
    });
}

#[cfg(feature = "postgres")]
#[path = "support/pg_cluster.rs"]
mod pg_cluster;

#[cfg(feature = "postgres")]
#[test]
fn the_postgres_store_prunes_old_ended_runs_as_the_sqlite_store_does() {
    use switchyard_engine::store::postgres::PgStore;
    let url = pg_cluster::database("retention");
    every_prune(Arc::new(PgStore::open(&url).unwrap()), |ids| {
        let list = ids.iter().map(|id| format!("'{id}'")).collect::<Vec<_>>().join(", ");
        pg_cluster::sql(
            &url,
            &format!(
                "UPDATE runs SET ended_at = ended_at - interval '40 days', updated_at = now() - interval '40 days',
                   started_at = now() - interval '40 days' WHERE id IN ({list})"
            ),
        );
    });
}

#[test]
fn a_prune_takes_only_ended_statuses_and_says_why_it_refuses_the_others() {
    for ended in ["completed", "failed", "cancelled"] {
        assert_eq!(prunable_status(ended).unwrap().as_str(), ended);
    }
    for live in ["ready", "running", "paused", "interrupted"] {
        let refused = prunable_status(live).unwrap_err().to_string();
        assert!(
            refused.contains(&format!("`{live}` runs are never pruned")) && refused.contains("completed"),
            "{refused}"
        );
    }
    assert!(prunable_status("done").unwrap_err().to_string().contains("is no run status"));
}
