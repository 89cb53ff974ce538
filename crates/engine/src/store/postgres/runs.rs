//! A run recorded in the PostgreSQL store and read back: its row, its stored run, its events and inputs.
//!
//! Invariants:
//! - A run is inserted by one statement (`INSERT_RUN`): `ready` and announced, or `running` and held at epoch 1; the
//!   run and its announcement commit together.
//! - A stored run (`load`) is read in one snapshot: its row, inputs and events agree, whatever commits meanwhile.
//! - JSON is read in SQL only after `\u0000` is replaced, so that one event holding it cannot fail every listing.

use tokio_postgres::error::SqlState;
use tokio_postgres::Statement;

use super::connection::{InDb, Session, Shared};
use super::{Lease, PgError, PgStore, READY_CHANNEL};
use crate::events::Event;
use crate::run::{Recorded, Recording};
use crate::store::{resolved, ChildRun, NewRun, RunQuery, RunRow, StoredRun, StoredStatus, CANDIDATES};

/// The columns `Shared::row` reads, as one literal (for `concat!`). JSON is read in SQL (`->>`) only after `\u0000`
/// is replaced (by U+FFFD): PostgreSQL refuses to turn that escape into text, and would fail every query that reads
/// the one event holding it (a model's or a script's output may) — the whole listing, for everyone.
///
/// `row_select!()` also counts, for a ready run, the runs of its queue a worker takes before it (`ahead`: runs going
/// on that wait for a worker, taken over or woken, then ready runs of a higher priority or older): what a
/// listing and a run opened show. `row_select!(light)` leaves it out, for the reads that only look at the status and
/// come often (`get`: a follower's every poll), since the count reads every ready run ahead of it.
macro_rules! row_select {
    () => {
        row_select!(
            "CASE WHEN status = 'ready'
                THEN (SELECT count(*) FROM runs a WHERE a.status = 'ready' AND a.queue = runs.queue
                        AND (a.priority > runs.priority OR a.priority = runs.priority
                             AND (a.started_at, a.id) < (runs.started_at, runs.id)))::int8
                     + (SELECT count(*) FROM runs g WHERE g.queue = runs.queue
                          AND (g.status = 'running' AND (g.lease_until IS NULL OR g.lease_until <= now())
                               OR g.status = 'paused' AND (g.wake OR g.wake_at <= now())
                                  AND (g.owner IS NULL OR g.lease_until <= now())))::int8 END"
        )
    };
    (light) => {
        row_select!("NULL::int8")
    };
    ($ahead:literal) => {
        concat!(
            "SELECT id, workflow_path, script_path, status, workflow_name,
           to_char(started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'),
           (extract(epoch FROM started_at) * 1000)::int8,
           (extract(epoch FROM coalesce(ended_at, now())) * 1000)::int8,
           (extract(epoch FROM updated_at) * 1000)::int8,
           pending::text,
           owner IS NOT NULL AND lease_until > now(),
           owner, epoch, (extract(epoch FROM lease_until - now()) * 1000)::int8,
           CASE WHEN status = 'running'
                THEN (SELECT replace(event::text, '\\u0000', '\\ufffd')::json->>'ts'
                      FROM events e WHERE e.run_id = runs.id ORDER BY seq DESC LIMIT 1) END,
           usage::text, eval_id,
           CASE WHEN options::text LIKE '%\"fork\"%'
                THEN (SELECT CASE WHEN o->'reuse'->'fork' IS NOT NULL THEN o->'reuse'->>'run' END
                      FROM (SELECT replace(options::text, '\\u0000', '\\ufffd')::json AS o) f) END,
           via, started_by, cancelled_by, workflow_version, queue AS queue, ",
            $ahead,
            " AS ahead,
           CASE WHEN options::text LIKE '%\"prices\"%'
                THEN (SELECT CASE WHEN json_typeof(o->'prices') = 'object' THEN (o->'prices')::text END
                      FROM (SELECT replace(options::text, '\\u0000', '\\ufffd')::json AS o) f) END AS kept_prices,
           parent_run, parent_node, parent_item
         FROM runs"
        )
    };
}

const RECENT: &str = concat!(row_select!(), " ORDER BY started_at DESC, id DESC LIMIT $1");
/// A page of runs (`RunQuery`): after the run $1 (keyset), with one of the statuses $2 (as history shows them:
/// `running` held by a live lease, else `interrupted`), of workflow $3 (and, with $9, its runs' children at any
/// depth), started in [$4, $5), ids beginning with $6.
const FIND: &str = concat!(
    row_select!(),
    " WHERE ($1::text IS NULL OR (started_at, id) < (SELECT b.started_at, b.id FROM runs b WHERE b.id = $1))
        AND ($2::text[] IS NULL OR (CASE WHEN status = 'running' AND NOT (owner IS NOT NULL AND lease_until > now())
                                         THEN 'interrupted' ELSE status END) = ANY($2::text[]))
        AND ($3::text IS NULL OR lower(workflow_name) = lower($3) OR workflow_path = $3
             OR ($9 AND id IN (WITH RECURSIVE family(id) AS (
                   SELECT c.id FROM runs c WHERE c.parent_run IN
                     (SELECT p.id FROM runs p WHERE lower(p.workflow_name) = lower($3) OR p.workflow_path = $3)
                   UNION SELECT c.id FROM runs c JOIN family f ON c.parent_run = f.id)
                 SELECT id FROM family)))
        AND ($4::text IS NULL OR started_at >= $4::text::timestamptz)
        AND ($5::text IS NULL OR started_at < $5::text::timestamptz)
        AND ($6::text IS NULL OR starts_with(id, $6))
        AND ($8::text IS NULL OR starts_with(lower(id), lower($8)) OR strpos(lower(workflow_name), lower($8)) > 0
             OR strpos(lower(workflow_path), lower($8)) > 0)
      ORDER BY started_at DESC, id DESC LIMIT $7"
);
pub(super) const GET: &str = concat!(row_select!(light), " WHERE id = $1");
/// A run's row as a run opened shows it: with how many go before it while it waits (`load`).
const GET_SHOWN: &str = concat!(row_select!(), " WHERE id = $1");
const EVENTS: &str = "SELECT event::text FROM events WHERE run_id = $1 ORDER BY seq";
pub(super) const INPUTS: &str = "SELECT input::text FROM inputs WHERE run_id = $1 ORDER BY id";

/// Runs by status as history shows them, and how often they were claimed (every claim raises a run's epoch).
const COUNT_RUNS: &str = "SELECT CASE WHEN status = 'running' AND NOT (owner IS NOT NULL AND lease_until > now())
            THEN 'interrupted' ELSE status END, count(*)::int8, coalesce(sum(epoch), 0)::int8,
            coalesce(sum(greatest(epoch - 1, 0)), 0)::int8
     FROM runs GROUP BY 1";
/// Decisions kept, webhook deliveries kept, and the holders of live leases (workers, or terminals running a run).
const COUNT_TEAM: &str = "SELECT (SELECT count(*) FROM decisions)::int8, (SELECT count(*) FROM deliveries)::int8,
            (SELECT count(DISTINCT owner) FROM runs WHERE owner IS NOT NULL AND lease_until > now())::int8";

/// What the database says of all runs at one moment: what `/metrics` reports.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counts {
    /// Runs by status (`ready`, `running`, `interrupted`, …).
    pub runs: Vec<(String, i64)>,
    /// Claims of runs (a run's first claim and every one after).
    pub claims: i64,
    /// Claims after a run's first: an interrupted run taken over, a paused or given-up run taken again.
    pub reclaims: i64,
    pub decisions: i64,
    pub deliveries: i64,
    /// Holders of a live lease.
    pub holders: i64,
}

/// Inserts a run: `ready` and announced on [`READY_CHANNEL`] when no lease is given ($8), else `running`, held by
/// $9 at epoch 1. One statement, so one transaction: the run and its announcement commit together.
pub(super) const INSERT_RUN: &str = "WITH new AS (
       INSERT INTO runs (id, workflow_path, script_path, status, workflow_name, document, options,
                         eval_id, owner, epoch, lease_until, via, started_by, workflow_version,
                         queue, priority, max_concurrent)
       VALUES ($1, $2, $3, CASE WHEN $8::int8 IS NULL THEN 'ready' ELSE 'running' END, $4,
               $5::text::json, $6::text::json, $7,
               CASE WHEN $8::int8 IS NULL THEN NULL ELSE $9 END,
               CASE WHEN $8::int8 IS NULL THEN 0 ELSE 1 END,
               now() + $8::int8 * interval '1 millisecond', $11, $12, $13, $14, $15, $16)
       RETURNING id, status, epoch)
     SELECT epoch, CASE WHEN status = 'ready' THEN pg_notify($10, id) END IS NULL FROM new";

/// A run's row as it is inserted (`INSERT_RUN`).
pub(super) struct NewRow {
    pub(super) id: String,
    workflow_ref: String,
    answers_path: Option<String>,
    name: String,
    document: String,
    options: String,
    eval_id: Option<String>,
    via: &'static str,
    started_by: Option<String>,
    version: Option<i32>,
    queue: String,
    priority: i16,
    max_concurrent: Option<i32>,
}

impl PgStore {
    /// Records a run, `ready` for a worker to claim, and announces it on [`READY_CHANNEL`].
    pub async fn submit(&self, run: &NewRun<'_>) -> Result<(), PgError> {
        self.insert(run, None).await.map(|_| ())
    }

    /// Inserts the run: `ready` and announced, or, given a lease, `running` and held by this store's owner. Its epoch.
    pub(super) async fn insert(&self, run: &NewRun<'_>, lease: Option<i64>) -> Result<i64, PgError> {
        let row = self.new_row(run)?;
        let owner = self.owner.to_string();
        self.call(|s| async move {
            let mut session = s.main.session(&s.db).await?;
            let insert = session.statement(INSERT_RUN).await.in_db(&s)?;
            s.insert_run(&session.client, &insert, &row, lease, &owner).await
        })
        .await
    }

    /// A run's row as it is inserted, written on the caller's thread.
    pub(super) fn new_row(&self, run: &NewRun<'_>) -> Result<NewRow, PgError> {
        let unwritable = |what: &str, e: serde_json::Error| PgError::Query {
            db: self.shared.db.clone(),
            detail: format!("cannot write the {what} of run `{}`: {e}", run.id),
        };
        Ok(NewRow {
            id: run.id.to_string(),
            workflow_ref: run.workflow_ref.unwrap_or("").to_string(),
            answers_path: run.answers_path.map(str::to_string),
            name: run.workflow.name.clone(),
            document: serde_json::to_string(run.workflow).map_err(|e| unwritable("workflow", e))?,
            options: serde_json::to_string(run.options).map_err(|e| unwritable("options", e))?,
            eval_id: run.eval_id.map(str::to_string),
            via: run.origin.via.as_str(),
            started_by: run.origin.by.clone(),
            version: run.version,
            queue: run.workflow.queue_for(run.origin.trigger()).to_string(),
            priority: i16::from(run.origin.interactive()),
            max_concurrent: run.workflow.max_concurrent_runs.map(|n| i32::try_from(n).unwrap_or(i32::MAX)),
        })
    }

    /// Runs, newest first.
    pub async fn list(&self) -> Result<Vec<RunRow>, PgError> {
        self.recent(usize::MAX).await
    }

    /// The newest `limit` runs, newest first.
    pub async fn recent(&self, limit: usize) -> Result<Vec<RunRow>, PgError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.call(|s| async move {
            let mut session = s.main.session(&s.db).await?;
            let recent = session.statement(RECENT).await.in_db(&s)?;
            let rows = session.client.query(&recent, &[&limit]).await.in_db(&s)?;
            rows.iter().map(|r| s.row(r).map(|(row, _)| row)).collect()
        })
        .await
    }

    /// A page of runs, newest first, as `query` asks for them (`Store::find`).
    pub async fn find(&self, query: &RunQuery) -> Result<Vec<RunRow>, PgError> {
        let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
        let statuses: Option<Vec<String>> =
            (!query.status.is_empty()).then(|| query.status.iter().map(|s| s.as_str().to_string()).collect());
        let instant = |t: Option<chrono::DateTime<chrono::Utc>>| t.map(|t| t.to_rfc3339());
        let (since, until) = (instant(query.since), instant(query.until));
        let (before, workflow, prefix) = (query.before.clone(), query.workflow.clone(), query.id_prefix.clone());
        let search = query.search.clone();
        let with_children = query.with_children;
        self.call(|s| async move {
            let mut session = s.main.session(&s.db).await?;
            let find = session.statement(FIND).await.in_db(&s)?;
            let rows = session
                .client
                .query(
                    &find,
                    &[&before, &statuses, &workflow, &since, &until, &prefix, &limit, &search, &with_children],
                )
                .await
                .in_db(&s)?;
            // A page after a run that is not there is refused, not empty (which would say "no more").
            if let (Some(before), true) = (&before, rows.is_empty()) {
                s.get(&mut session, before).await?;
            }
            rows.iter().map(|r| s.row(r).map(|(row, _)| row)).collect()
        })
        .await
    }

    /// The run whose id is `id`, else the one whose id begins with it (`Store::resolve`).
    pub async fn resolve(&self, id: &str) -> Result<String, PgError> {
        match self.get(id).await {
            Err(PgError::NoSuchRun { db, .. }) if !id.is_empty() => {
                let query = RunQuery { id_prefix: Some(id.to_string()), ..RunQuery::page(CANDIDATES + 1) };
                let found = self.find(&query).await?.into_iter().map(|r| r.id).collect();
                resolved(found).map_err(|several| match several {
                    Some(candidates) => PgError::AmbiguousRun { prefix: id.to_string(), candidates },
                    None => PgError::NoSuchRun { db, id: id.to_string() },
                })
            }
            found => found.map(|row| row.id),
        }
    }

    /// Runs by status, claims, decisions, deliveries and lease holders, as the database has them now.
    pub async fn counts(&self) -> Result<Counts, PgError> {
        self.call(|s| async move {
            let mut session = s.main.session(&s.db).await?;
            let (runs, team) =
                (session.statement(COUNT_RUNS).await.in_db(&s)?, session.statement(COUNT_TEAM).await.in_db(&s)?);
            let mut counts = Counts::default();
            for row in session.client.query(&runs, &[]).await.in_db(&s)? {
                counts.runs.push((row.try_get(0).in_db(&s)?, row.try_get(1).in_db(&s)?));
                counts.claims += row.try_get::<_, i64>(2).in_db(&s)?;
                counts.reclaims += row.try_get::<_, i64>(3).in_db(&s)?;
            }
            let team = session.client.query_one(&team, &[]).await.in_db(&s)?;
            (counts.decisions, counts.deliveries, counts.holders) =
                (team.try_get(0).in_db(&s)?, team.try_get(1).in_db(&s)?, team.try_get(2).in_db(&s)?);
            Ok(counts)
        })
        .await
    }

    /// One run of the history.
    pub async fn get(&self, id: &str) -> Result<RunRow, PgError> {
        self.leased(id).await.map(|(row, _)| row)
    }

    /// One run of the history, and who holds it.
    pub(super) async fn leased(&self, id: &str) -> Result<(RunRow, Lease), PgError> {
        let id = id.to_string();
        self.call(|s| async move {
            let mut session = s.main.session(&s.db).await?;
            s.get(&mut session, &id).await
        })
        .await
    }

    /// The child runs of `run` (its `workflow` nodes'), by node, iteration and item, as the SQLite store lists them.
    pub async fn children(&self, run: &str) -> Result<Vec<ChildRun>, PgError> {
        let run = run.to_string();
        self.call(|s| async move {
            let mut session = s.main.session(&s.db).await?;
            let children = session
                .statement(
                    "SELECT id, parent_node, parent_iteration, parent_item, options -> 'parent' ->> 'call' FROM runs
                     WHERE parent_run = $1 ORDER BY parent_node, parent_iteration, parent_item NULLS FIRST, 5 NULLS FIRST",
                )
                .await
                .in_db(&s)?;
            let rows = session.client.query(&children, &[&run]).await.in_db(&s)?;
            Ok(rows
                .iter()
                .map(|r| ChildRun {
                    id: r.get(0),
                    link: crate::run::ParentLink {
                        run: run.clone(),
                        node: r.get(1),
                        iteration: r.get::<_, i32>(2) as u32,
                        item: r.get::<_, Option<i32>>(3).map(|i| i as usize),
                        call: r.get(4),
                    },
                })
                .collect())
        })
        .await
    }

    /// Everything needed to continue, replay or reuse a run, read in one snapshot: its inputs and events agree.
    pub async fn load(&self, id: &str) -> Result<StoredRun, PgError> {
        let id = id.to_string();
        self.call(|s| async move {
            let mut session = s.main.session(&s.db).await?;
            let get = session.statement(GET_SHOWN).await.in_db(&s)?;
            let copies = session.statement("SELECT document::text, options::text FROM runs WHERE id = $1").await;
            let (copies, events, inputs) = (
                copies.in_db(&s)?,
                session.statement(EVENTS).await.in_db(&s)?,
                session.statement(INPUTS).await.in_db(&s)?,
            );
            let tx = session.snapshot().await.in_db(&s)?;
            let Some(raw) = tx.query_opt(&get, &[&id]).await.in_db(&s)? else {
                return Err(PgError::NoSuchRun { db: s.db.clone(), id });
            };
            let (row, _) = s.row(&raw)?;
            let copies = tx.query_one(&copies, &[&id]).await.in_db(&s)?;
            let workflow = serde_json::from_str(copies.get::<_, &str>(0))
                .map_err(|e| s.unreadable(&id, "workflow copy", e.to_string()))?;
            let options = serde_json::from_str(copies.get::<_, &str>(1))
                .map_err(|e| s.unreadable(&id, "options", e.to_string()))?;
            let inputs = s.column(&tx, &inputs, &id, "input").await?;
            let events = s.column(&tx, &events, &id, "event").await?;
            tx.commit().await.in_db(&s)?;
            Ok(StoredRun { row, workflow, options, recording: Recording { inputs, events } })
        })
        .await
    }

    /// A run's events in order (none for an unknown run, as with the SQLite store).
    pub async fn events(&self, run_id: &str) -> Result<Vec<Event>, PgError> {
        let id = run_id.to_string();
        self.call(|s| async move {
            let mut session = s.main.session(&s.db).await?;
            let events = session.statement(EVENTS).await.in_db(&s)?;
            s.column(&session.client, &events, &id, "event").await
        })
        .await
    }

    /// A run's inputs in the order they were recorded.
    pub async fn inputs(&self, run_id: &str) -> Result<Vec<Recorded>, PgError> {
        let id = run_id.to_string();
        self.call(|s| async move {
            let mut session = s.main.session(&s.db).await?;
            let inputs = session.statement(INPUTS).await.in_db(&s)?;
            s.column(&session.client, &inputs, &id, "input").await
        })
        .await
    }
}

impl Shared {
    async fn get(&self, session: &mut Session, id: &str) -> Result<(RunRow, Lease), PgError> {
        let get = session.statement(GET).await.in_db(self)?;
        let row = session.client.query_opt(&get, &[&id]).await.in_db(self)?;
        match row {
            Some(row) => self.row(&row),
            None => Err(PgError::NoSuchRun { db: self.db.clone(), id: id.to_string() }),
        }
    }

    /// A row of `ROW_SELECT`: the run as every store gives it, and who holds it.
    pub(super) fn row(&self, r: &tokio_postgres::Row) -> Result<(RunRow, Lease), PgError> {
        let (id, status): (String, String) = (r.try_get(0).in_db(self)?, r.try_get(3).in_db(self)?);
        let live: bool = r.try_get(10).in_db(self)?;
        let status = StoredStatus::from_db(&status, live);
        let (started, ended, updated): (i64, i64, i64) =
            (r.try_get(6).in_db(self)?, r.try_get(7).in_db(self)?, r.try_get(8).in_db(self)?);
        // An interrupted run's time stops at its last sign of life: its last event.
        let until = match status {
            StoredStatus::Interrupted => r
                .try_get::<_, Option<&str>>(14)
                .in_db(self)?
                .and_then(|ts| chrono::DateTime::parse_from_rfc3339(ts).ok())
                .map_or(updated, |t| t.timestamp_millis()),
            _ => ended,
        };
        let pending: &str = r.try_get(9).in_db(self)?;
        let pending =
            serde_json::from_str(pending).map_err(|e| self.unreadable(&id, "pending approvals", e.to_string()))?;
        let workflow_path: String = r.try_get(1).in_db(self)?;
        let lease = Lease {
            owner: r.try_get(11).in_db(self)?,
            epoch: r.try_get(12).in_db(self)?,
            expires_in_ms: r.try_get(13).in_db(self)?,
        };
        let row = RunRow {
            workflow: r.try_get(4).in_db(self)?,
            workflow_ref: Some(workflow_path).filter(|p| !p.is_empty()),
            answers_path: r.try_get(2).in_db(self)?,
            status,
            started: r.try_get(5).in_db(self)?,
            duration_ms: (until - started).max(0) as u64,
            pending,
            usage: r
                .try_get::<_, Option<&str>>(15)
                .in_db(self)?
                .map(serde_json::from_str)
                .transpose()
                .map_err(|e| self.unreadable(&id, "usage", e.to_string()))?
                .unwrap_or_default(),
            eval: r.try_get(16).in_db(self)?,
            forked_from: r.try_get(17).in_db(self)?,
            origin: crate::store::Origin {
                via: crate::store::Via::parse(r.try_get(18).in_db(self)?),
                by: r.try_get(19).in_db(self)?,
            },
            cancelled_by: r.try_get(20).in_db(self)?,
            version: r.try_get(21).in_db(self)?,
            // By name, as the columns after the first ones are read.
            queue: Some(r.try_get("queue").in_db(self)?),
            ahead: r.try_get::<_, Option<i64>>("ahead").in_db(self)?.map(|n| n.max(0) as u64),
            waiting: None,
            // The prices it kept (`RunOptions::prices`), read by name; a table that does not read is none, as a
            // run's that kept none.
            prices: r.try_get::<_, Option<&str>>("kept_prices").in_db(self)?.and_then(|p| serde_json::from_str(p).ok()),
            tokens: 0,
            cost: None,
            cost_text: None,
            priced: None,
            parent: crate::store::RunParent::of(
                r.try_get("parent_run").in_db(self)?,
                r.try_get("parent_node").in_db(self)?,
                r.try_get::<_, Option<i32>>("parent_item").in_db(self)?.map(i64::from),
            ),
            id,
        };
        Ok((row.counted(), lease))
    }

    /// Inserts `row` with `insert` (`INSERT_RUN`) on `client` (a connection, or a transaction that also does
    /// something else): its epoch.
    pub(super) async fn insert_run(
        &self,
        client: &impl tokio_postgres::GenericClient,
        insert: &Statement,
        row: &NewRow,
        lease: Option<i64>,
        owner: &str,
    ) -> Result<i64, PgError> {
        let params: [&(dyn tokio_postgres::types::ToSql + Sync); 16] = [
            &row.id,
            &row.workflow_ref,
            &row.answers_path,
            &row.name,
            &row.document,
            &row.options,
            &row.eval_id,
            &lease,
            &owner,
            &READY_CHANNEL,
            &row.via,
            &row.started_by,
            &row.version,
            &row.queue,
            &row.priority,
            &row.max_concurrent,
        ];
        match client.query_one(insert, &params).await {
            Ok(r) => Ok(r.get::<_, i64>(0)),
            Err(e) if e.code() == Some(&SqlState::UNIQUE_VIOLATION) => {
                Err(PgError::RunExists { db: self.db.clone(), id: row.id.clone() })
            }
            Err(e) => Err(self.query_error(e)),
        }
    }

    /// The JSON column of `statement`'s rows for `run`, read back.
    pub(super) async fn column<T: serde::de::DeserializeOwned>(
        &self,
        client: &impl tokio_postgres::GenericClient,
        statement: &Statement,
        run: &str,
        what: &'static str,
    ) -> Result<Vec<T>, PgError> {
        let rows = client.query(statement, &[&run]).await.in_db(self)?;
        rows.iter()
            .map(|r| {
                let text: &str = r.try_get(0).in_db(self)?;
                serde_json::from_str(text).map_err(|e| self.unreadable(run, what, e.to_string()))
            })
            .collect()
    }
}
