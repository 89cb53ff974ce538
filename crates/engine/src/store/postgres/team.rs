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
//!   or a second server firing the same schedule at the same time, finds the key and starts nothing. A key outlives
//!   its run (`prune`): a redelivery of a pruned run's key starts nothing either, and says its run was pruned.
//! - Tokens are kept as SHA-256 hashes, never as given: the store cannot give one back.

use sha2::{Digest, Sha256};
use tokio_postgres::error::SqlState;

use super::connection::InDb;
use super::runs::{GET, INPUTS, INSERT_RUN};
use super::{PgError, PgStore, READY_CHANNEL, WAKE_CHANNEL};
use crate::events::Event;
use crate::result::Decision;
use crate::store::NewRun;
use crate::Workflow;

pub use crate::store::{KeptDecision, Requests};

/// A kept decision as the database has it (`{decision, note}`, the note left out when there was none), read with the
/// words every front end takes (`Decision::parse`).
fn kept_decision(text: &str) -> Result<Decision, String> {
    #[derive(serde::Deserialize)]
    struct Kept {
        decision: String,
        #[serde(default)]
        note: String,
        #[serde(default)]
        by: Option<String>,
    }
    let kept: Kept = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let decision = Decision::parse(&kept.decision, kept.note).map_err(|e| e.to_string())?;
    Ok(Decision { by: kept.by, ..decision })
}

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
    /// The earlier delivery's run is no longer in the store (retention pruned it): nothing was started.
    pub pruned: bool,
}

/// One API token, as listed (never the token itself).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenRow {
    pub name: String,
    /// RFC 3339.
    pub created: String,
    pub revoked: bool,
    /// Past its expiry (and not revoked): refused as a revoked one is.
    pub expired: bool,
    pub scope: Scope,
    /// RFC 3339; none: it does not expire.
    pub expires: Option<String>,
    /// RFC 3339, to the minute; none: never used.
    pub last_used: Option<String>,
}

/// What a token may do, each scope all that the ones before it may: `read` (runs, events, workflows), `run` (start
/// runs), `decide` (decide approvals, cancel runs), `admin` (everything; tokens made before scopes are `admin`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Scope {
    Read,
    Run,
    Decide,
    Admin,
}

impl Scope {
    pub const ALL: [Scope; 4] = [Scope::Read, Scope::Run, Scope::Decide, Scope::Admin];

    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Read => "read",
            Scope::Run => "run",
            Scope::Decide => "decide",
            Scope::Admin => "admin",
        }
    }

    pub fn parse(word: &str) -> Option<Scope> {
        Scope::ALL.into_iter().find(|s| s.as_str() == word)
    }
}

/// Who a request's token says it comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// The token's name: a person or a system.
    pub name: String,
    pub scope: Scope,
}

/// What `rotate_token` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rotated {
    Yes,
    /// No live token has that name (none, or revoked).
    NoSuchToken,
    /// It expired (RFC 3339: when), and no new expiry was given.
    Expired {
        at: String,
    },
}

/// What a token is, looked up by its hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenFound {
    Live(Caller),
    /// It expired (RFC 3339: when).
    Expired {
        name: String,
        at: String,
    },
    /// Revoked, or never made here.
    Unknown,
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

/// One version of a served workflow as `GET /api/workflows/NAME/versions` lists it (its document aside).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VersionInfo {
    pub version: i32,
    /// SHA-256 of its document, as JSON.
    pub hash: String,
    /// The file it was read from.
    pub path: String,
    /// When it was first served: RFC 3339, UTC.
    pub registered_at: String,
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
    pub async fn approval(&self, id: &str, node: &str) -> Result<ApprovalAt, PgError> {
        let (id, node) = (id.to_string(), node.to_string());
        self.call(|s| async move {
            let mut session = s.main.session(&s.db).await?;
            let get = session.statement(GET).await.in_db(&s)?;
            let inputs = session.statement(INPUTS).await.in_db(&s)?;
            let requested = session
                .statement(
                    // `\u0000` replaced before `->>`, as `runs::row_select` reads JSON: an event holding it
                    // would fail the query.
                    "SELECT count(*)::int8
                     FROM (SELECT replace(event::text, '\\u0000', '\\ufffd')::json AS event
                           FROM events WHERE run_id = $1) AS e
                     WHERE event->>'type' = 'approval:requested' AND event->>'node' = $2",
                )
                .await
                .in_db(&s)?;
            let tx = session.snapshot().await.in_db(&s)?;
            let Some(raw) = tx.query_opt(&get, &[&id]).await.in_db(&s)? else {
                return Err(PgError::NoSuchRun { db: s.db.clone(), id });
            };
            let (row, _) = s.row(&raw)?;
            let requested: i64 = tx.query_one(&requested, &[&id, &node]).await.in_db(&s)?.get(0);
            let inputs: Vec<crate::record::Recorded> = s.column(&tx, &inputs, &id, "input").await?;
            tx.commit().await.in_db(&s)?;
            Ok(ApprovalAt {
                ended: row.status.ended(),
                pending: row.pending,
                requested: u32::try_from(requested).unwrap_or(u32::MAX),
                settled: crate::record::settled(&inputs, &node),
            })
        })
        .await
    }

    /// Keeps a decision on `node`'s approval (`round`, see the module) for the worker that takes the run next, and
    /// wakes the run. `NoSuchRun` for an unknown run.
    pub async fn keep_decision(&self, run: &str, node: &str, round: u32, decision: &Decision) -> Result<Kept, PgError> {
        let decision = serde_json::to_string(decision).expect("a decision serializes");
        let (run, node, round) = (run.to_string(), node.to_string(), round as i32);
        self.call(|s| async move {
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
                .in_db(&s)?;
            let row = session
                .client
                .query_one(&keep, &[&run, &node, &round, &decision, &READY_CHANNEL, &WAKE_CHANNEL])
                .await
                .in_db(&s)?;
            if !row.get::<_, bool>(2) {
                return Err(PgError::NoSuchRun { db: s.db.clone(), id: run });
            }
            Ok(if row.get::<_, i64>(0) == 1 { Kept::New } else { Kept::Already })
        }).await
    }

    /// Asks that a run be cancelled by whoever works it: at once when its holder listens for wakes, else at its next
    /// heartbeat; when it is parked, by the worker that takes it now. False when the run had ended already.
    pub async fn request_cancel(&self, run: &str, by: Option<&str>) -> Result<bool, PgError> {
        let (run, by) = (run.to_string(), by.map(str::to_string));
        self.call(|s| async move {
            let mut session = s.main.session(&s.db).await?;
            let cancel = session
                .statement(
                    "WITH asked AS (
                       UPDATE runs SET cancel_requested = true, wake = true, updated_at = now(),
                         cancelled_by = CASE WHEN cancel_requested THEN cancelled_by ELSE $4 END,
                         status = CASE WHEN status = 'paused' AND owner IS NULL THEN 'ready' ELSE status END
                       WHERE id = $1 AND status IN ('ready', 'running', 'paused')
                       RETURNING id, status)
                     SELECT (SELECT count(*) FROM asked)::int8,
                            (SELECT bool_or(CASE WHEN status = 'ready' THEN pg_notify($2, id) END IS NULL) FROM asked),
                            EXISTS (SELECT 1 FROM runs WHERE id = $1),
                            (SELECT bool_or(CASE WHEN status <> 'ready' THEN pg_notify($3, id) END IS NULL) FROM asked)",
                )
                .await
                .in_db(&s)?;
            let row = session
                .client
                .query_one(&cancel, &[&run, &READY_CHANNEL, &WAKE_CHANNEL, &by])
                .await
                .in_db(&s)?;
            if !row.get::<_, bool>(2) {
                return Err(PgError::NoSuchRun { db: s.db.clone(), id: run });
            }
            Ok(row.get::<_, i64>(0) == 1)
        }).await
    }

    /// What people asked of a run: read by the worker that has just claimed it.
    pub async fn requests(&self, run: &str) -> Result<Requests, PgError> {
        let run = run.to_string();
        self.call(|s| async move {
            let mut session = s.main.session(&s.db).await?;
            let cancel =
                session.statement("SELECT cancel_requested, cancelled_by FROM runs WHERE id = $1").await.in_db(&s)?;
            let decisions = session
                .statement("SELECT node, round, decision::text FROM decisions WHERE run_id = $1 ORDER BY received_at")
                .await
                .in_db(&s)?;
            let Some(cancel) = session.client.query_opt(&cancel, &[&run]).await.in_db(&s)? else {
                return Err(PgError::NoSuchRun { db: s.db.clone(), id: run });
            };
            let rows = session.client.query(&decisions, &[&run]).await.in_db(&s)?;
            let decisions = rows
                .iter()
                .map(|r| {
                    let decision =
                        kept_decision(r.get(2)).map_err(|detail| s.unreadable(&run, "kept decision", detail))?;
                    Ok(KeptDecision { node: r.get(0), round: r.get::<_, i32>(1) as u32, decision })
                })
                .collect::<Result<_, PgError>>()?;
            Ok(Requests { cancel: cancel.get(0), cancelled_by: cancel.get(1), decisions })
        })
        .await
    }

    /// A run's events numbered after `after`, in order, at most `limit`: what a follower has not seen yet.
    pub async fn events_after(&self, run: &str, after: u64, limit: u32) -> Result<Vec<Event>, PgError> {
        let (run, after, limit) = (run.to_string(), i64::try_from(after).unwrap_or(i64::MAX), i64::from(limit));
        self.call(|s| async move {
            let mut session = s.main.session(&s.db).await?;
            let events = session
                .statement("SELECT event::text FROM events WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT $3")
                .await
                .in_db(&s)?;
            let rows = session.client.query(&events, &[&run, &after, &limit]).await.in_db(&s)?;
            rows.iter()
                .map(|r| {
                    serde_json::from_str(r.get::<_, &str>(0)).map_err(|e| s.unreadable(&run, "event", e.to_string()))
                })
                .collect()
        })
        .await
    }

    /// Starts the run `run` describes for a webhook delivery with idempotency key `key`, unless a delivery with
    /// that key started one before: then that run, started by nobody now.
    pub async fn deliver(&self, hook: &str, key: &str, run: &NewRun<'_>) -> Result<Delivered, PgError> {
        let row = self.new_row(run)?;
        let (hook, key) = (hook.to_string(), key.to_string());
        self.call(|s| async move {
            let mut session = s.main.session(&s.db).await?;
            let claim_key = session
                .statement(
                    "INSERT INTO deliveries (hook, key, run_id) VALUES ($1, $2, $3)
                     ON CONFLICT DO NOTHING RETURNING run_id",
                )
                .await
                .in_db(&s)?;
            let earlier = session
                .statement(
                    "SELECT run_id, NOT EXISTS (SELECT 1 FROM runs WHERE id = d.run_id) FROM deliveries d
                     WHERE hook = $1 AND key = $2",
                )
                .await;
            let (earlier, insert) = (earlier.in_db(&s)?, session.statement(INSERT_RUN).await.in_db(&s)?);
            let tx = session.client.transaction().await.in_db(&s)?;
            if tx.query_opt(&claim_key, &[&hook, &key, &row.id]).await.in_db(&s)?.is_none() {
                // The key is taken (a concurrent delivery waits for the first to commit, then lands here).
                let earlier = tx.query_one(&earlier, &[&hook, &key]).await.in_db(&s)?;
                return Ok(Delivered { run: earlier.get(0), new: false, pruned: earlier.get(1) });
            }
            s.insert_run(&tx, &insert, &row, None, "").await?;
            tx.commit().await.in_db(&s)?;
            Ok(Delivered { run: row.id, new: true, pruned: false })
        })
        .await
    }

    /// Starts the run `run` describes for schedule `schedule`'s firing due at `due_ms` (Unix milliseconds), unless
    /// that firing started one already (another server fired it): the run started now, if any.
    pub async fn fire(&self, schedule: &str, due_ms: i64, run: &NewRun<'_>) -> Result<Option<String>, PgError> {
        let row = self.new_row(run)?;
        let schedule = schedule.to_string();
        self.call(|s| async move {
            let mut session = s.main.session(&s.db).await?;
            let claim_fire = session
                .statement(
                    "INSERT INTO fires (schedule, due, run_id) VALUES ($1, to_timestamp($2::int8 / 1000.0), $3)
                     ON CONFLICT DO NOTHING RETURNING run_id",
                )
                .await
                .in_db(&s)?;
            let insert = session.statement(INSERT_RUN).await.in_db(&s)?;
            let tx = session.client.transaction().await.in_db(&s)?;
            if tx.query_opt(&claim_fire, &[&schedule, &due_ms, &row.id]).await.in_db(&s)?.is_none() {
                return Ok(None);
            }
            s.insert_run(&tx, &insert, &row, None, "").await?;
            tx.commit().await.in_db(&s)?;
            Ok(Some(row.id))
        })
        .await
    }

    /// Keeps a token's hash under `name`, able to do everything (`admin`), for ever. `TokenExists` when a token of
    /// that name exists (revoked or not).
    pub async fn create_token(&self, name: &str, hash: &str) -> Result<(), PgError> {
        self.create_scoped_token(name, hash, Scope::Admin, None).await
    }

    /// Keeps a token's hash under `name`, with its scope, expiring `expires_in` seconds from now (never: none).
    /// `TokenExists` when a token of that name exists (revoked or not).
    pub async fn create_scoped_token(
        &self,
        name: &str,
        hash: &str,
        scope: Scope,
        expires_in: Option<u64>,
    ) -> Result<(), PgError> {
        let (name, hash, scope) = (name.to_string(), hash.to_string(), scope.as_str());
        let seconds = expires_in.map(|s| s.min(i64::MAX as u64) as f64);
        self.call(|s| async move {
            let session = s.main.session(&s.db).await?;
            let insert = "INSERT INTO tokens (name, hash, scope, expires_at)
                          VALUES ($1, $2, $3, now() + make_interval(secs => $4::float8))";
            match session.client.execute(insert, &[&name, &hash, &scope, &seconds]).await {
                Ok(_) => Ok(()),
                Err(e) if e.code() == Some(&SqlState::UNIQUE_VIOLATION) => Err(PgError::TokenExists { name }),
                Err(e) => Err(s.query_error(e)),
            }
        })
        .await
    }

    /// Revokes the token `name`: no request with it is taken from now on. False when there is no such token.
    pub async fn revoke_token(&self, name: &str) -> Result<bool, PgError> {
        let name = name.to_string();
        self.call(|s| async move {
            let session = s.main.session(&s.db).await?;
            let revoked = session
                .client
                .execute("UPDATE tokens SET revoked_at = coalesce(revoked_at, now()) WHERE name = $1", &[&name])
                .await
                .in_db(&s)?;
            Ok(revoked == 1)
        })
        .await
    }

    /// Gives the token `name` a new hash (the old token is refused from the next request on), keeping its scope, and
    /// its expiry unless `expires_in` (seconds from now) gives a new one. An expired token is rotated only with a new
    /// expiry: its new value would be refused at once.
    pub async fn rotate_token(&self, name: &str, hash: &str, expires_in: Option<u64>) -> Result<Rotated, PgError> {
        let (name, hash) = (name.to_string(), hash.to_string());
        let seconds = expires_in.map(|s| s.min(i64::MAX as u64) as f64);
        self.call(|s| async move {
            let session = s.main.session(&s.db).await?;
            let rotated = session
                .client
                .execute(
                    "UPDATE tokens SET hash = $2, last_used_at = NULL,
                            expires_at = CASE WHEN $3::float8 IS NULL THEN expires_at
                                              ELSE now() + make_interval(secs => $3::float8) END
                     WHERE name = $1 AND revoked_at IS NULL
                       AND ($3::float8 IS NOT NULL OR expires_at IS NULL OR expires_at > now())",
                    &[&name, &hash, &seconds],
                )
                .await
                .in_db(&s)?;
            if rotated == 1 {
                return Ok(Rotated::Yes);
            }
            let expired = session
                .client
                .query_opt(
                    "SELECT to_char(expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') FROM tokens
                     WHERE name = $1 AND revoked_at IS NULL AND expires_at <= now()",
                    &[&name],
                )
                .await
                .in_db(&s)?;
            Ok(match expired {
                Some(row) => Rotated::Expired { at: row.get(0) },
                None => Rotated::NoSuchToken,
            })
        })
        .await
    }

    /// The token with this hash (not revoked): who it is and what it may do, or that it expired. Its last use is
    /// kept (at most once a minute, so that a busy token does not write on every request).
    pub async fn token_named(&self, hash: &str) -> Result<TokenFound, PgError> {
        let hash = hash.to_string();
        self.call(|s| async move {
            let mut session = s.main.session(&s.db).await?;
            let find = session
                .statement(
                    "WITH found AS (
                         SELECT name, scope, expires_at, last_used_at FROM tokens
                         WHERE hash = $1 AND revoked_at IS NULL),
                     used AS (
                         UPDATE tokens SET last_used_at = now() WHERE hash = $1 AND revoked_at IS NULL
                           AND (expires_at IS NULL OR expires_at > now())
                           AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute'))
                     SELECT name, scope, expires_at IS NOT NULL AND expires_at <= now(),
                            to_char(expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')
                     FROM found",
                )
                .await
                .in_db(&s)?;
            let Some(row) = session.client.query_opt(&find, &[&hash]).await.in_db(&s)? else {
                return Ok(TokenFound::Unknown);
            };
            let (name, scope, expired): (String, String, bool) = (row.get(0), row.get(1), row.get(2));
            if expired {
                return Ok(TokenFound::Expired { name, at: row.get::<_, Option<String>>(3).unwrap_or_default() });
            }
            // The column's check admits only the four words.
            let scope = Scope::parse(&scope).unwrap_or(Scope::Read);
            Ok(TokenFound::Live(Caller { name, scope }))
        })
        .await
    }

    /// Every token, oldest first.
    pub async fn tokens(&self) -> Result<Vec<TokenRow>, PgError> {
        self.call(|s| async move {
            let session = s.main.session(&s.db).await?;
            let rows = session
                .client
                .query(
                    "SELECT name, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),
                            revoked_at IS NOT NULL, scope,
                            to_char(expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),
                            to_char(last_used_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI\"Z\"'),
                            revoked_at IS NULL AND expires_at IS NOT NULL AND expires_at <= now()
                     FROM tokens ORDER BY created_at, name",
                    &[],
                )
                .await
                .in_db(&s)?;
            Ok(rows
                .iter()
                .map(|r| TokenRow {
                    name: r.get(0),
                    created: r.get(1),
                    revoked: r.get(2),
                    scope: Scope::parse(r.get::<_, &str>(3)).unwrap_or(Scope::Read),
                    expires: r.get(4),
                    last_used: r.get(5),
                    expired: r.get(6),
                })
                .collect())
        })
        .await
    }

    /// Keeps `workflow` (read from `path`) as a new version of its name when it differs from the latest one kept:
    /// the version it is now. Two servers registering the same document at once keep it once.
    pub async fn register_workflow(&self, path: &str, workflow: &Workflow) -> Result<i32, PgError> {
        let document = serde_json::to_string(workflow).map_err(|e| PgError::Query {
            db: self.shared.db.clone(),
            detail: format!("cannot write workflow `{}`: {e}", workflow.name),
        })?;
        let (name, path, hash) = (workflow.name.clone(), path.to_string(), hex(&Sha256::digest(document.as_bytes())));
        self.call(|s| async move {
            let mut session = s.main.session(&s.db).await?;
            let tx = session.client.transaction().await.in_db(&s)?;
            // One registration per name at a time, so versions are numbered without gaps or twins.
            tx.execute("SELECT pg_advisory_xact_lock(hashtext('switchyard-workflow:' || $1))", &[&name])
                .await
                .in_db(&s)?;
            let latest = tx
                .query_opt(
                    "SELECT version, hash FROM workflows WHERE name = $1 ORDER BY version DESC LIMIT 1",
                    &[&name],
                )
                .await
                .in_db(&s)?;
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
            .in_db(&s)?;
            tx.commit().await.in_db(&s)?;
            Ok(version)
        })
        .await
    }

    /// Every version of every served workflow, by name then version.
    pub async fn workflow_versions(&self) -> Result<Vec<WorkflowVersion>, PgError> {
        self.call(|s| async move {
            let session = s.main.session(&s.db).await?;
            let rows = session
                .client
                .query("SELECT name, version, hash, path, document::text FROM workflows ORDER BY name, version", &[])
                .await
                .in_db(&s)?;
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
        .await
    }

    /// The versions of the workflow `name` kept (each one served once), newest first; none for a name never served.
    pub async fn versions_of(&self, name: &str) -> Result<Vec<VersionInfo>, PgError> {
        let name = name.to_string();
        self.call(|s| async move {
            let session = s.main.session(&s.db).await?;
            let rows = session
                .client
                .query(
                    "SELECT version, hash, path,
                       to_char(registered_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')
                     FROM workflows WHERE name = $1 ORDER BY version DESC",
                    &[&name],
                )
                .await
                .in_db(&s)?;
            Ok(rows
                .iter()
                .map(|r| VersionInfo { version: r.get(0), hash: r.get(1), path: r.get(2), registered_at: r.get(3) })
                .collect())
        })
        .await
    }
}
