//! Retention on a schedule (`serve --prune-older-than`): the store's prune (`Store::prune`), once as the server
//! starts and every hour after, each logged.
//!
//! Invariants:
//! - Only runs that ended are pruned, never one someone holds; delivery keys and firings go only after their own
//!   window and once their runs are gone (`postgres::prune`), so no redelivery or firing starts a run twice.
//! - Every instance may prune: batches skip the rows another one is deleting, so two instances at once delete each
//!   run once.

use std::time::Duration;

use chrono::{TimeDelta, Utc};
use switchyard_engine::store::postgres::PgStore;
use switchyard_engine::store::Prune;

/// How a server prunes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// Runs that ended longer ago than this go (`--prune-older-than`).
    pub runs: TimeDelta,
    /// Delivery keys and schedule firings older than this go, once their runs are gone (`--keep-deliveries`).
    pub keys: TimeDelta,
    /// How long between two prunes: an hour.
    pub every: Duration,
}

/// Prunes now and every `retention.every` until the server stops. `report` hears what each prune removed, or why it
/// could not prune (tried again at the next one).
pub async fn keep_pruning(store: PgStore, retention: Retention, report: impl Fn(String) + Send + Sync + 'static) {
    loop {
        let now = Utc::now();
        let prune = Prune {
            ended_before: now - retention.runs,
            statuses: Vec::new(),
            keys_before: now - retention.keys,
            dry_run: false,
        };
        match store.prune(&prune).await {
            Ok(pruned) => report(format!("pruned {}", pruned.said(&prune))),
            Err(e) => report(format!(
                "warning: could not prune ({}): {e}; tried again in {} s",
                e.code(),
                retention.every.as_secs()
            )),
        }
        tokio::time::sleep(retention.every).await;
    }
}
