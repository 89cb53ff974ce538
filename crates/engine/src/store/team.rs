//! What a team server keeps in the PostgreSQL run store beside the runs (schema 3): decisions and cancellations
//! waiting for a worker, API tokens, webhook deliveries, schedule firings, and the versions of the workflows it
//! serves. `switchyard serve` is a thin shell over these calls; workers read the requests.
//!
//! Invariants:
//! - A decision is kept for the round of the approval it settles (`record::settled`: how many times that node's
//!   approval was settled before). `(run, node, round)` is its key, so the same decision sent twice is kept once,
//!   and a worker applies a kept decision only while its round is the node's current one: never twice, even when
//!   its worker died after applying it.
//! - Whether a node waits, and for which round, is read from one snapshot of the run's log (`approval`): its
//!   requests against its settlements. Read apart, a decision sent twice could find the first one settled in the
//!   inputs but not yet in the run's row, and be kept for a round no one had asked about.
//! - A decision or a cancellation sets the run's `wake`: a parked run becomes `ready` at once (and is announced); a
//!   run a worker holds becomes `ready` when that worker gives it up paused (`release`). A claim clears `wake` before
//!   its worker reads the requests, so none is missed between the two.
//! - A webhook delivery and a schedule firing insert their run in the same transaction as their key: a redelivery,
//!   or a second server firing the same schedule at the same time, finds the key and starts nothing.
//! - Tokens are kept as SHA-256 hashes, never as given: the store cannot give one back.

use serde_json::Value;
use sha2::{Digest, Sha256};
use tokio_postgres::error::SqlState;

use super::{PgError, PgStore, READY_CHANNEL, WAKE_CHANNEL};
use crate::events::Event;
use crate::store::NewRun;
use crate::Workflow;

pub use crate::store::{KeptDecision, Requests};

/// Where a run's approvals on one node stand, read in one snapshot (`PgStore::approval`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalAt {
    /// The run has ended: it waits for nothing.
    pub ended: bool,
    /// The approvals it waits for, as its row says.
    pub pending: Vec<String>,
    /// How many approvals were asked of the node (`approval:requested` events).
    pub requested: u32,
    /// How many of them were settled (decided, or timed out).
    pub settled: u32,
}

impl ApprovalAt {
    /// The round the node waits in (its next decision's), if it waits.
    pub fn waiting(&self) -> Option<u32> {
        (!self.ended && self.requested > self.settled).then_some(self.settled)
    }
}

/// Whether a decision was kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kept {
    /// Kept now; the run was woken.
    New,
    /// The same round was decided before: nothing changed.
    Already,
}

/// A webhook delivery: the run it started, and whether it started it now (or an earlier delivery with the same key
/// did).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivered {
    pub run: String,
    pub new: bool,
}

/// One API token, as listed (never the token itself).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenRow {
    pub name: String,
    /// RFC 3339.
    pub created: String,
    pub revoked: bool,
}

/// One version of a served workflow.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkflowVersion {
    pub name: String,
    pub version: i32,
    /// SHA-256 of its document, as JSON.
    pub hash: String,
    /// The file it was read from.
    pub path: String,
    pub workflow: Workflow,
}

/// A new API token: what to give the person once, and its hash, which is all that is kept.
pub fn new_token() -> (String, String) {
    let token = format!("sy_{}{}", uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4().simple());
    let hash = token_hash(&token);
    (token, hash)
}

/// The hash a token is kept and looked up by.
pub fn token_hash(token: &str) -> String {
    hex(&Sha256::digest(token.as_bytes()))
}

/// Lowercase hexadecimal.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A token name: letters, digits, `-`, `_` and `.`, 1 to 64 of them.
pub fn valid_token_name(name: &str) -> bool {
    (1..=64).contains(&name.len()) && name.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
}

impl PgStore {
    /// Where run `id`'s approvals on `node` stand: its row, its `approval:requested` events for the node and its
    /// inputs, in one snapshot, so that a settlement is seen in all of them or in none. `NoSuchRun` for an unknown
    /// run.
    pub fn approval(&self, id: &str, node: &str) -> Result<ApprovalAt, PgError> {
        let (id, node) = (id.to_string(), node.to_string());
        self.block(|s| async move {
            let mut session = s.main.session(&s.db).await?;
            let q = |e| s.query_error(e);
            let get = session.statement(super::GET).await.map_err(q)?;
            let inputs = session.statement(super::INPUTS).await.map_err(q)?;
            let requested = session
                .statement(
                    // `\u0000` replaced before `->>`, as `super::row_select` reads JSON: an event holding it
                    // would fail the query.
                    "SELECT count(*)::int8
                     FROM (SELECT replace(event::text, '\\u0000', '\\ufffd')::json AS event
                           FROM events WHERE run_id = $1) AS e
                     WHERE event->>'type' = 'approval:requested' AND event->>'node' = $2",
                )
                .await
                .map_err(q)?;
            let tx = session.snapshot().await.map_err(q)?;
            let Some(raw) = tx.query_opt(&get, &[&id]).await.map_err(q)? else {
                return Err(PgError::NoSuchRun { db: s.db.clone(), id });
            };
            let row = s.row(&raw)?;
            let requested: i64 = tx.query_one(&requested, &[&id, &node]).await.map_err(q)?.get(0);
            let inputs: Vec<crate::record::Recorded> = s.column(&tx, &inputs, &id, "input").await?;
            tx.commit().await.map_err(q)?;
            Ok(ApprovalAt {
                ended: row.status.ended(),
                pending: row.pending,
                requested: u32::try_from(requested).unwrap_or(u32::MAX),
                settled: crate::record::settled(&inputs, &node),
            })
        })
    }

    /// Keeps a decision on `node`'s approval (`round`, see the module) for the worker that takes the run next, and
    /// wakes the run. `NoSuchRun` for an unknown run.
    pub fn keep_decision(&self, run: &str, node: &str, round: u32, decision: &Value) -> Result<Kept, PgError> {
        let (run, node, round, decision) = (run.to_string(), node.to_string(), round as i32, decision.to_string());
        self.block(|s| async move {
            let mut session = s.main.session(&s.db).await?;
            let keep = session
                .statement(
                    "WITH kept AS (
                       INSERT INTO decisions (run_id, node, round, decision)
                       SELECT id, $2, $3, $4::text::json FROM runs WHERE id = $1
                       ON CONFLICT DO NOTHING
                       RETURNING run_id),
                     woken AS (
                       UPDATE runs SET wake = true, updated_at = now(),
                         status = CASE WHEN status = 'paused' AND owner IS NULL THEN 'ready' ELSE status END
                       WHERE id IN (SELECT run_id FROM kept)
                       RETURNING id, status)
                     SELECT (SELECT count(*) FROM kept)::int8,
                            (SELECT bool_or(CASE WHEN status = 'ready' THEN pg_notify($5, id) END IS NULL) FROM woken),
                            EXISTS (SELECT 1 FROM runs WHERE id = $1),
                            (SELECT bool_or(CASE WHEN status <> 'ready' THEN pg_notify($6, id) END IS NULL) FROM woken)",
                )
                .await
                .map_err(|e| s.query_error(e))?;
            let row = session
                .client
                .query_one(&keep, &[&run, &node, &round, &decision, &READY_CHANNEL, &WAKE_CHANNEL])
                .await
                .map_err(|e| s.query_error(e))?;
            if !row.get::<_, bool>(2) {
                return Err(PgError::NoSuchRun { db: s.db.clone(), id: run });
            }
            Ok(if row.get::<_, i64>(0) == 1 { Kept::New } else { Kept::Already })
        })
    }

    /// Asks that a run be cancelled by whoever works it: at once when its holder listens for wakes, else at its next
    /// heartbeat; when it is parked, by the worker that takes it now. False when the run had ended already.
    pub fn request_cancel(&self, run: &str) -> Result<bool, PgError> {
        let run = run.to_string();
        self.block(|s| async move {
            let mut session = s.main.session(&s.db).await?;
            let cancel = session
                .statement(
                    "WITH asked AS (
                       UPDATE runs SET cancel_requested = true, wake = true, updated_at = now(),
                         status = CASE WHEN status = 'paused' AND owner IS NULL THEN 'ready' ELSE status END
                       WHERE id = $1 AND status IN ('ready', 'running', 'paused')
                       RETURNING id, status)
                     SELECT (SELECT count(*) FROM asked)::int8,
                            (SELECT bool_or(CASE WHEN status = 'ready' THEN pg_notify($2, id) END IS NULL) FROM asked),
                            EXISTS (SELECT 1 FROM runs WHERE id = $1),
                            (SELECT bool_or(CASE WHEN status <> 'ready' THEN pg_notify($3, id) END IS NULL) FROM asked)",
                )
                .await
                .map_err(|e| s.query_error(e))?;
            let row = session
                .client
                .query_one(&cancel, &[&run, &READY_CHANNEL, &WAKE_CHANNEL])
                .await
                .map_err(|e| s.query_error(e))?;
            if !row.get::<_, bool>(2) {
                return Err(PgError::NoSuchRun { db: s.db.clone(), id: run });
            }
            Ok(row.get::<_, i64>(0) == 1)
        })
    }

    /// What people asked of a run: read by the worker that has just claimed it.
    pub fn requests(&self, run: &str) -> Result<Requests, PgError> {
        let run = run.to_string();
        self.block(|s| async move {
            let mut session = s.main.session(&s.db).await?;
            let q = |e| s.query_error(e);
            let cancel = session.statement("SELECT cancel_requested FROM runs WHERE id = $1").await.map_err(q)?;
            let decisions = session
                .statement("SELECT node, round, decision::text FROM decisions WHERE run_id = $1 ORDER BY received_at")
                .await
                .map_err(q)?;
            let Some(cancel) = session.client.query_opt(&cancel, &[&run]).await.map_err(q)? else {
                return Err(PgError::NoSuchRun { db: s.db.clone(), id: run });
            };
            let rows = session.client.query(&decisions, &[&run]).await.map_err(q)?;
            let decisions = rows
                .iter()
                .map(|r| {
                    let decision = serde_json::from_str(r.get::<_, &str>(2))
                        .map_err(|e| s.unreadable(&run, "kept decision", e.to_string()))?;
                    Ok(KeptDecision { node: r.get(0), round: r.get::<_, i32>(1) as u32, decision })
                })
                .collect::<Result<_, PgError>>()?;
            Ok(Requests { cancel: cancel.get(0), decisions })
        })
    }

    /// A run's events numbered after `after`, in order, at most `limit`: what a follower has not seen yet.
    pub fn events_after(&self, run: &str, after: u64, limit: u32) -> Result<Vec<Event>, PgError> {
        let (run, after, limit) = (run.to_string(), i64::try_from(after).unwrap_or(i64::MAX), i64::from(limit));
        self.block(|s| async move {
            let mut session = s.main.session(&s.db).await?;
            let q = |e| s.query_error(e);
            let events = session
                .statement("SELECT event::text FROM events WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT $3")
                .await
                .map_err(q)?;
            let rows = session.client.query(&events, &[&run, &after, &limit]).await.map_err(q)?;
            rows.iter()
                .map(|r| {
                    serde_json::from_str(r.get::<_, &str>(0)).map_err(|e| s.unreadable(&run, "event", e.to_string()))
                })
                .collect()
        })
    }

    /// Starts the run `run` describes for a webhook delivery with idempotency key `key`, unless a delivery with
    /// that key started one before: then that run, started by nobody now.
    pub fn deliver(&self, hook: &str, key: &str, run: &NewRun) -> Result<Delivered, PgError> {
        let row = self.new_row(run)?;
        let (hook, key) = (hook.to_string(), key.to_string());
        self.block(|s| async move {
            let mut session = s.main.session(&s.db).await?;
            let q = |e| s.query_error(e);
            let claim_key = session
                .statement(
                    "INSERT INTO deliveries (hook, key, run_id) VALUES ($1, $2, $3)
                     ON CONFLICT DO NOTHING RETURNING run_id",
                )
                .await
                .map_err(q)?;
            let earlier = session.statement("SELECT run_id FROM deliveries WHERE hook = $1 AND key = $2").await;
            let (earlier, insert) = (earlier.map_err(q)?, session.statement(super::INSERT_RUN).await.map_err(q)?);
            let tx = session.client.transaction().await.map_err(q)?;
            if tx.query_opt(&claim_key, &[&hook, &key, &row.id]).await.map_err(q)?.is_none() {
                // The key is taken (a concurrent delivery waits for the first to commit, then lands here).
                let run: String = tx.query_one(&earlier, &[&hook, &key]).await.map_err(q)?.get(0);
                return Ok(Delivered { run, new: false });
            }
            s.insert_run(&tx, &insert, &row, None, "").await?;
            tx.commit().await.map_err(q)?;
            Ok(Delivered { run: row.id, new: true })
        })
    }

    /// Starts the run `run` describes for schedule `schedule`'s firing due at `due_ms` (Unix milliseconds), unless
    /// that firing started one already (another server fired it): the run started now, if any.
    pub fn fire(&self, schedule: &str, due_ms: i64, run: &NewRun) -> Result<Option<String>, PgError> {
        let row = self.new_row(run)?;
        let schedule = schedule.to_string();
        self.block(|s| async move {
            let mut session = s.main.session(&s.db).await?;
            let q = |e| s.query_error(e);
            let claim_fire = session
                .statement(
                    "INSERT INTO fires (schedule, due, run_id) VALUES ($1, to_timestamp($2::int8 / 1000.0), $3)
                     ON CONFLICT DO NOTHING RETURNING run_id",
                )
                .await
                .map_err(q)?;
            let insert = session.statement(super::INSERT_RUN).await.map_err(q)?;
            let tx = session.client.transaction().await.map_err(q)?;
            if tx.query_opt(&claim_fire, &[&schedule, &due_ms, &row.id]).await.map_err(q)?.is_none() {
                return Ok(None);
            }
            s.insert_run(&tx, &insert, &row, None, "").await?;
            tx.commit().await.map_err(q)?;
            Ok(Some(row.id))
        })
    }

    /// Keeps a token's hash under `name`. `TokenExists` when a token of that name exists (revoked or not).
    pub fn create_token(&self, name: &str, hash: &str) -> Result<(), PgError> {
        let (name, hash) = (name.to_string(), hash.to_string());
        self.block(|s| async move {
            let session = s.main.session(&s.db).await?;
            match session.client.execute("INSERT INTO tokens (name, hash) VALUES ($1, $2)", &[&name, &hash]).await {
                Ok(_) => Ok(()),
                Err(e) if e.code() == Some(&SqlState::UNIQUE_VIOLATION) => Err(PgError::TokenExists { name }),
                Err(e) => Err(s.query_error(e)),
            }
        })
    }

    /// Revokes the token `name`: no request with it is taken from now on. False when there is no such token.
    pub fn revoke_token(&self, name: &str) -> Result<bool, PgError> {
        let name = name.to_string();
        self.block(|s| async move {
            let session = s.main.session(&s.db).await?;
            let revoked = session
                .client
                .execute("UPDATE tokens SET revoked_at = coalesce(revoked_at, now()) WHERE name = $1", &[&name])
                .await
                .map_err(|e| s.query_error(e))?;
            Ok(revoked == 1)
        })
    }

    /// The name of the live (not revoked) token with this hash.
    pub fn token_named(&self, hash: &str) -> Result<Option<String>, PgError> {
        let hash = hash.to_string();
        self.block(|s| async move {
            let mut session = s.main.session(&s.db).await?;
            let find = session
                .statement("SELECT name FROM tokens WHERE hash = $1 AND revoked_at IS NULL")
                .await
                .map_err(|e| s.query_error(e))?;
            let row = session.client.query_opt(&find, &[&hash]).await.map_err(|e| s.query_error(e))?;
            Ok(row.map(|r| r.get(0)))
        })
    }

    /// Every token, oldest first.
    pub fn tokens(&self) -> Result<Vec<TokenRow>, PgError> {
        self.block(|s| async move {
            let session = s.main.session(&s.db).await?;
            let rows = session
                .client
                .query(
                    "SELECT name, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),
                            revoked_at IS NOT NULL
                     FROM tokens ORDER BY created_at, name",
                    &[],
                )
                .await
                .map_err(|e| s.query_error(e))?;
            Ok(rows.iter().map(|r| TokenRow { name: r.get(0), created: r.get(1), revoked: r.get(2) }).collect())
        })
    }

    /// Keeps `workflow` (read from `path`) as a new version of its name when it differs from the latest one kept:
    /// the version it is now. Two servers registering the same document at once keep it once.
    pub fn register_workflow(&self, path: &str, workflow: &Workflow) -> Result<i32, PgError> {
        let document = serde_json::to_string(workflow).map_err(|e| PgError::Query {
            db: self.shared.db.clone(),
            detail: format!("cannot write workflow `{}`: {e}", workflow.name),
        })?;
        let (name, path, hash) = (workflow.name.clone(), path.to_string(), hex(&Sha256::digest(document.as_bytes())));
        self.block(|s| async move {
            let mut session = s.main.session(&s.db).await?;
            let q = |e| s.query_error(e);
            let tx = session.client.transaction().await.map_err(q)?;
            // One registration per name at a time, so versions are numbered without gaps or twins.
            tx.execute("SELECT pg_advisory_xact_lock(hashtext('switchyard-workflow:' || $1))", &[&name])
                .await
                .map_err(q)?;
            let latest = tx
                .query_opt(
                    "SELECT version, hash FROM workflows WHERE name = $1 ORDER BY version DESC LIMIT 1",
                    &[&name],
                )
                .await
                .map_err(q)?;
            if let Some(latest) = &latest {
                if latest.get::<_, &str>(1) == hash {
                    return Ok(latest.get(0));
                }
            }
            let version = latest.map_or(1, |l| l.get::<_, i32>(0) + 1);
            tx.execute(
                "INSERT INTO workflows (name, version, hash, path, document) VALUES ($1, $2, $3, $4, $5::text::json)",
                &[&name, &version, &hash, &path, &document],
            )
            .await
            .map_err(q)?;
            tx.commit().await.map_err(q)?;
            Ok(version)
        })
    }

    /// Every version of every served workflow, by name then version.
    pub fn workflow_versions(&self) -> Result<Vec<WorkflowVersion>, PgError> {
        self.block(|s| async move {
            let session = s.main.session(&s.db).await?;
            let rows = session
                .client
                .query("SELECT name, version, hash, path, document::text FROM workflows ORDER BY name, version", &[])
                .await
                .map_err(|e| s.query_error(e))?;
            rows.iter()
                .map(|r| {
                    let workflow = serde_json::from_str(r.get::<_, &str>(4)).map_err(|e| PgError::Query {
                        db: s.db.clone(),
                        detail: format!(
                            "workflow `{}` version {} is unreadable: {e}",
                            r.get::<_, &str>(0),
                            r.get::<_, i32>(1)
                        ),
                    })?;
                    Ok(WorkflowVersion { name: r.get(0), version: r.get(1), hash: r.get(2), path: r.get(3), workflow })
                })
                .collect()
        })
    }
}
