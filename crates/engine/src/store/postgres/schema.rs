//! The PostgreSQL store's tables and their migrations.
//!
//! Invariants:
//! - The tables are the SQLite store's (`runs`, `events`, `inputs`), and a run also has an `owner` (the worker working
//!   it), a `lease_until` and an `epoch`. Its status is the engine's, or `ready` (waiting for a worker).
//! - The schema is versioned in `switchyard_schema`, one row per migration applied; the migrations
//!   (`store/migrations/postgres/*.sql`) follow the rules of `store::migrations` (in order, each once, in one
//!   transaction; a database written by a newer Switchyard is refused before anything is written to it), under an
//!   advisory lock, so workers that start together apply each once.

use super::connection::{error_text, InDb, Shared};
use super::PgError;
use crate::store::migrations;

/// The schema version this build writes.
pub fn latest() -> i64 {
    migrations::latest(migrations::POSTGRES)
}

/// Serializes migrations across every process that opens the database (an arbitrary constant: "switchyd").
const MIGRATION_LOCK: i64 = 0x7377_6974_6368_7964;

impl Shared {
    /// Creates the schema, or brings it up to date, in one transaction under an advisory lock.
    pub(super) async fn migrate(&self) -> Result<(), PgError> {
        let mut session = self.main.session(&self.db).await?;
        let tx = session.client.transaction().await.in_db(self)?;
        let found = async {
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK]).await?;
            tx.batch_execute(
                "CREATE TABLE IF NOT EXISTS switchyard_schema (
                     version integer PRIMARY KEY,
                     applied_at timestamptz NOT NULL DEFAULT now()
                 )",
            )
            .await?;
            let row = tx.query_one("SELECT coalesce(max(version), 0)::int8 FROM switchyard_schema", &[]).await?;
            Ok::<i64, tokio_postgres::Error>(row.get(0))
        }
        .await
        .in_db(self)?;
        // Dropping the transaction rolls it back: nothing was written.
        let plan = migrations::plan(migrations::POSTGRES, found).map_err(|newer| PgError::TooNew {
            db: self.db.clone(),
            found: newer.found,
            known: newer.known,
        })?;
        let migrate_error = |e: tokio_postgres::Error| PgError::Migrate {
            db: self.db.clone(),
            from: plan.from,
            to: plan.to,
            detail: error_text(&e),
        };
        for (version, migration) in &plan.steps {
            tx.batch_execute(migration.sql).await.map_err(migrate_error)?;
            let version = *version as i32;
            tx.execute("INSERT INTO switchyard_schema (version) VALUES ($1)", &[&version])
                .await
                .map_err(migrate_error)?;
        }
        tx.commit().await.map_err(migrate_error)
    }
}
