//! Retention: ended runs deleted with their events, inputs and decisions, then the webhook delivery keys and schedule
//! firings whose runs are gone (`Store::prune`).
//!
//! Invariants:
//! - Only a run that ended (`completed`, `failed`, `cancelled`) before the cutoff and that nobody holds (no live
//!   lease) is deleted; its row is locked (`FOR UPDATE SKIP LOCKED`) from when it is chosen to when it is gone, so a
//!   run a transaction is changing is left for the next prune.
//! - A batch of at most `PRUNE_BATCH` runs is one transaction (one call): a large prune holds no lock for long.
//! - A delivery key or a firing is deleted only once its run is gone and it is older than its own cutoff: a late
//!   redelivery of a pruned run's key still starts nothing until then (`team::deliver` says its run was pruned).
//! - A dry run counts, in one snapshot, what the same prune would delete now, and deletes nothing.

use super::connection::InDb;
use super::{PgError, PgStore};
use crate::store::{Prune, Pruned, PRUNE_BATCH};

/// The runs a prune deletes: ended ($1: the statuses, each an ended one) before $2, held by nobody. The literal
/// list lets the planner use `runs_ended`.
macro_rules! prunable {
    ($runs:literal) => {
        concat!(
            $runs,
            ".status IN ('completed', 'failed', 'cancelled') AND ",
            $runs,
            ".status = ANY($1) AND ",
            $runs,
            ".ended_at < $2::text::timestamptz AND (",
            $runs,
            ".owner IS NULL OR ",
            $runs,
            ".lease_until IS NULL OR ",
            $runs,
            ".lease_until <= now())"
        )
    };
}

/// A batch of runs to delete ($3 at most), oldest first, locked until the transaction ends.
const CHOOSE: &str =
    concat!("SELECT id FROM runs WHERE ", prunable!("runs"), " ORDER BY ended_at, id LIMIT $3 FOR UPDATE SKIP LOCKED");

/// A key or firing is kept while its run is there and will not be pruned now ($1, $2: the runs' rule).
macro_rules! gone {
    ($run_id:literal) => {
        concat!("NOT EXISTS (SELECT 1 FROM runs r WHERE r.id = ", $run_id, " AND NOT (", prunable!("r"), "))")
    };
}

/// What a dry run counts: runs, their events, and the keys and firings (before $3) that would go with them.
const COUNT: &str = concat!(
    "SELECT (SELECT count(*) FROM runs WHERE ",
    prunable!("runs"),
    ")::int8,
            (SELECT count(*) FROM events e WHERE e.run_id IN (SELECT id FROM runs WHERE ",
    prunable!("runs"),
    "))::int8,
            (SELECT count(*) FROM deliveries d WHERE d.received_at < $3::text::timestamptz AND ",
    gone!("d.run_id"),
    ")::int8,
            (SELECT count(*) FROM fires f WHERE f.due < $3::text::timestamptz AND ",
    gone!("f.run_id"),
    ")::int8"
);

/// Delivery keys received before $1 whose runs are gone, $2 at a time.
const PRUNE_DELIVERIES: &str = "DELETE FROM deliveries WHERE (hook, key) IN (
       SELECT hook, key FROM deliveries d WHERE d.received_at < $1::text::timestamptz
         AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.id = d.run_id)
       LIMIT $2 FOR UPDATE SKIP LOCKED)";

/// Schedule firings due before $1 whose runs are gone, $2 at a time.
const PRUNE_FIRES: &str = "DELETE FROM fires WHERE (schedule, due) IN (
       SELECT schedule, due FROM fires f WHERE f.due < $1::text::timestamptz
         AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.id = f.run_id)
       LIMIT $2 FOR UPDATE SKIP LOCKED)";

impl PgStore {
    /// Deletes what `prune` names (see the module), a batch per transaction; with `dry_run`, counts it.
    pub async fn prune(&self, prune: &Prune) -> Result<Pruned, PgError> {
        let statuses = prune.db_statuses();
        let (runs_before, keys_before) = (prune.ended_before.to_rfc3339(), prune.keys_before.to_rfc3339());
        if prune.dry_run {
            return self
                .call(|s| async move {
                    let mut session = s.main.session(&s.db).await?;
                    let count = session.statement(COUNT).await.in_db(&s)?;
                    let tx = session.snapshot().await.in_db(&s)?;
                    let row = tx.query_one(&count, &[&statuses, &runs_before, &keys_before]).await.in_db(&s)?;
                    tx.commit().await.in_db(&s)?;
                    let n = |i: usize| row.get::<_, i64>(i) as u64;
                    Ok(Pruned { runs: n(0), events: n(1), deliveries: n(2), firings: n(3) })
                })
                .await;
        }
        let mut pruned = Pruned::default();
        let batch = PRUNE_BATCH as i64;
        loop {
            let (statuses, before) = (statuses.clone(), runs_before.clone());
            let (runs, events) = self
                .call(|s| async move {
                    let mut session = s.main.session(&s.db).await?;
                    let choose = session.statement(CHOOSE).await.in_db(&s)?;
                    let mut deletes = Vec::new();
                    for sql in [
                        "DELETE FROM events WHERE run_id = ANY($1)",
                        "DELETE FROM inputs WHERE run_id = ANY($1)",
                        "DELETE FROM decisions WHERE run_id = ANY($1)",
                        "DELETE FROM runs WHERE id = ANY($1)",
                    ] {
                        deletes.push(session.statement(sql).await.in_db(&s)?);
                    }
                    let tx = session.client.transaction().await.in_db(&s)?;
                    let ids: Vec<String> = tx
                        .query(&choose, &[&statuses, &before, &batch])
                        .await
                        .in_db(&s)?
                        .iter()
                        .map(|r| r.get(0))
                        .collect();
                    if ids.is_empty() {
                        return Ok((0, 0));
                    }
                    let mut counts = Vec::new();
                    for delete in &deletes {
                        counts.push(tx.execute(delete, &[&ids]).await.in_db(&s)?);
                    }
                    tx.commit().await.in_db(&s)?;
                    Ok((counts[3], counts[0]))
                })
                .await?;
            pruned.runs += runs;
            pruned.events += events;
            if runs < PRUNE_BATCH as u64 {
                break;
            }
        }
        for (sql, kept) in [(PRUNE_DELIVERIES, &mut pruned.deliveries), (PRUNE_FIRES, &mut pruned.firings)] {
            loop {
                let before = keys_before.clone();
                let deleted = self
                    .call(|s| async move {
                        let mut session = s.main.session(&s.db).await?;
                        let delete = session.statement(sql).await.in_db(&s)?;
                        session.client.execute(&delete, &[&before, &batch]).await.in_db(&s)
                    })
                    .await?;
                *kept += deleted;
                if deleted < PRUNE_BATCH as u64 {
                    break;
                }
            }
        }
        Ok(pruned)
    }
}
