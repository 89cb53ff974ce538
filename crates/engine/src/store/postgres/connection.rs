//! The store's connections and the private runtime every call goes through.
//!
//! Invariants:
//! - Every call is async at its core (`call`): its work runs on the store's private runtime and the caller awaits the
//!   answer on a channel, so it is awaited from any runtime without blocking it, or blocked on from any thread: a
//!   plain one, or inside a tokio runtime of either flavour ([`Wait`], the blocking adapter).
//! - A call that fails because the connection broke, or took longer than 30 s (`PG_TIMEOUT`), is not retried: a
//!   batch might have committed before its answer was lost. The next call connects again if the connection broke.
//! - Reads and batches go through the `main` connection, claims, heartbeats and releases through `leases`, so that a
//!   heartbeat never waits behind a batch.
//! - A driver error is converted in one place (`InDb::in_db`): `PG_CONNECT` when the connection was lost, else
//!   `STORE_QUERY`.
//!
//! Why `tokio-postgres` under a runtime of the store's own rather than the synchronous `postgres` crate: `postgres` is
//! `tokio-postgres` driven by `Runtime::block_on` on a runtime it keeps, and `block_on` panics on a thread that is
//! already inside a runtime ("Cannot start a runtime from within a runtime"). The engine calls its store and run log
//! from such threads (the shells' `#[tokio::main]`, `#[tokio::test]`), and the committer that calls `write_batch` is
//! a plain thread: the store must work from both. Wrapping calls in `tokio::task::block_in_place` would only move the
//! panic: it works on a multi-thread runtime and panics on a current-thread one. Instead the store keeps its
//! connections on a private one-thread runtime; a call hands its work to that runtime and awaits the answer on a
//! oneshot channel. An async caller (the server, a worker) awaits it and blocks nothing; a synchronous caller waits
//! with [`Wait::wait`], which parks its thread until the answer comes and enters no runtime on it, as the SQLite
//! store blocks its caller.

use std::future::Future;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use rustc_hash::FxHashMap;
use tokio_postgres::{Client, Config, IsolationLevel, NoTls, Statement};

use super::{PgError, PgStore};

/// The longest a call waits for the database; then it fails with `PG_TIMEOUT`.
pub(super) const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// A driver error as this store reports it: `PG_CONNECT` when the connection was lost (the next call connects
/// again), else `STORE_QUERY`; one conversion for every query.
pub(super) trait InDb<T> {
    fn in_db(self, db: &Shared) -> Result<T, PgError>;
}

impl<T> InDb<T> for Result<T, tokio_postgres::Error> {
    fn in_db(self, db: &Shared) -> Result<T, PgError> {
        self.map_err(|e| db.query_error(e))
    }
}

pub(super) struct Shared {
    pub(super) db: String,
    /// Reads and batches.
    pub(super) main: Conn,
    /// Claims, heartbeats and releases, so that a heartbeat never waits behind a large batch or a long read.
    pub(super) leases: Conn,
    pub(super) stale_writes: AtomicU64,
    /// The heartbeat of each claim this store holds, by (run, epoch): a message beats it at once.
    pub(super) held: std::sync::Mutex<FxHashMap<(String, i64), std::sync::mpsc::Sender<()>>>,
}

pub(super) struct OwnRuntime(pub(super) Option<tokio::runtime::Runtime>);

impl Drop for OwnRuntime {
    /// Dropping a runtime inside another one's task panics; shutting it down in the background does not.
    fn drop(&mut self) {
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}

/// One connection, opened on first use and again after it broke, with the statements prepared on it.
pub(super) struct Conn {
    pub(super) config: Config,
    pub(super) session: tokio::sync::Mutex<Option<Session>>,
}

pub(super) struct Session {
    pub(super) client: Client,
    statements: FxHashMap<&'static str, Statement>,
}

impl Session {
    /// The statement for `sql`, prepared once per connection: a statement used again costs one round trip, not two.
    pub(super) async fn statement(&mut self, sql: &'static str) -> Result<Statement, tokio_postgres::Error> {
        if let Some(statement) = self.statements.get(sql) {
            return Ok(statement.clone());
        }
        let statement = self.client.prepare(sql).await?;
        self.statements.insert(sql, statement.clone());
        Ok(statement)
    }

    /// A read-only transaction that sees one snapshot: what it reads agrees, whatever commits meanwhile.
    pub(super) async fn snapshot(&mut self) -> Result<tokio_postgres::Transaction<'_>, tokio_postgres::Error> {
        self.client.build_transaction().isolation_level(IsolationLevel::RepeatableRead).read_only(true).start().await
    }
}

impl Conn {
    /// The session, connecting when there is none or it broke. Runs on the store's runtime.
    pub(super) async fn session(&self, db: &str) -> Result<tokio::sync::MappedMutexGuard<'_, Session>, PgError> {
        let mut guard = self.session.lock().await;
        if guard.as_ref().is_none_or(|s| s.client.is_closed()) {
            *guard = None;
            let (client, connection) = self
                .config
                .connect(NoTls)
                .await
                .map_err(|e| PgError::Connect { db: db.to_string(), detail: error_text(&e) })?;
            // The connection is driven by a task of its own; it ends when the client is dropped or the server goes.
            tokio::spawn(async move {
                let _ = connection.await;
            });
            *guard = Some(Session { client, statements: FxHashMap::default() });
        }
        Ok(tokio::sync::MutexGuard::map(guard, |s| s.as_mut().expect("connected just above")))
    }
}

impl PgStore {
    /// Runs `work` on the store's runtime and awaits its answer: the core of every call. The caller only awaits a
    /// channel, so a call is awaited from any runtime (the server's, a worker's: neither is blocked while the
    /// database works) and blocked on from any thread ([`Wait`]). The work runs to its end (or its timeout) even
    /// when the caller stops awaiting it: a batch is committed or not, never cut in half by a caller that went.
    pub(super) async fn call<T, F, Fut>(&self, work: F) -> Result<T, PgError>
    where
        T: Send + 'static,
        F: FnOnce(Arc<Shared>) -> Fut,
        Fut: Future<Output = Result<T, PgError>> + Send + 'static,
    {
        let Some(runtime) = self.runtime.0.as_ref() else {
            return Err(PgError::Internal { detail: "its runtime was shut down".into() });
        };
        let (shared, work) = (self.shared.clone(), work(self.shared.clone()));
        let (tx, rx) = tokio::sync::oneshot::channel();
        runtime.spawn(async move {
            // Bound first, so that the work (and the connection it holds) is dropped before the match.
            let outcome = tokio::time::timeout(CALL_TIMEOUT, work).await;
            // A server that hangs leaves the connection open but useless, and one that ended the session (a
            // restart) may not have been seen closed yet: either way the next call connects anew.
            if matches!(outcome, Err(_) | Ok(Err(PgError::Connect { .. }))) {
                for conn in [&shared.main, &shared.leases] {
                    if let Ok(mut session) = conn.session.try_lock() {
                        *session = None;
                    }
                }
            }
            let answer = outcome.unwrap_or_else(|_| Err(PgError::Timeout { db: shared.db.clone() }));
            let _ = tx.send(answer);
        });
        // The sender is dropped unanswered only if the task panicked.
        rx.await.unwrap_or_else(|_| Err(PgError::Internal { detail: "the task panicked".into() }))
    }
}

/// The blocking adapter over the store's async calls, for a caller that is not async (the `Store` trait, a claim's
/// heartbeat thread, the committer, the command line): `store.tokens().wait()` blocks this thread until the answer
/// comes. It enters no runtime, so it works on a plain thread and inside a runtime of either flavour (where it blocks
/// that runtime's thread, as any synchronous store does); async code awaits the call instead. Never called on the
/// store's own runtime, which would wait for itself.
pub trait Wait: Future + Sized {
    fn wait(self) -> Self::Output {
        let waker = std::task::Waker::from(Arc::new(Unpark(std::thread::current())));
        let mut cx = std::task::Context::from_waker(&waker);
        let mut call = std::pin::pin!(self);
        loop {
            if let std::task::Poll::Ready(answer) = call.as_mut().poll(&mut cx) {
                return answer;
            }
            // Woken when the answer comes (a spurious wake-up polls again).
            std::thread::park();
        }
    }
}

impl<F: Future> Wait for F {}

/// Wakes the thread that waits on a call.
struct Unpark(std::thread::Thread);

impl std::task::Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

impl Shared {
    /// A failed statement: `Connect` when the connection broke under it (the server restarted or went away: asked
    /// again, the call connects anew and may succeed), else `Query`.
    pub(super) fn query_error(&self, e: tokio_postgres::Error) -> PgError {
        if connection_lost(&e) {
            return PgError::Connect {
                db: self.db.clone(),
                detail: format!("the connection was lost ({}); the next call connects again", error_text(&e)),
            };
        }
        PgError::Query { db: self.db.clone(), detail: error_text(&e) }
    }

    pub(super) fn unreadable(&self, run: &str, what: &'static str, detail: String) -> PgError {
        PgError::Unreadable { db: self.db.clone(), run: run.to_string(), what, detail }
    }
}

/// `host:port/dbname`, for messages: never the password.
pub(super) fn describe(config: &Config) -> String {
    let host = match config.get_hosts().first() {
        Some(tokio_postgres::config::Host::Tcp(host)) => host.clone(),
        Some(tokio_postgres::config::Host::Unix(path)) => path.display().to_string(),
        None => "localhost".to_string(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    format!("{host}:{port}/{}", config.get_dbname().unwrap_or(config.get_user().unwrap_or("postgres")))
}

/// Whether `e` says the connection broke rather than that the statement was refused: the connection is closed, the
/// server ended the session (SQLSTATE 57P01 "terminating connection due to administrator command" at a restart,
/// 57P02 a crash, 57P03 starting up), any connection exception (class 08), or the socket failed.
fn connection_lost(e: &tokio_postgres::Error) -> bool {
    if e.is_closed() {
        return true;
    }
    match e.as_db_error() {
        Some(db) => {
            let code = db.code().code();
            code.starts_with("08") || matches!(code, "57P01" | "57P02" | "57P03")
        }
        None => std::error::Error::source(e).is_some_and(|source| source.is::<std::io::Error>()),
    }
}

/// The server's message when there is one (tokio-postgres's own `Display` says only "db error").
pub(super) fn error_text(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => db.to_string(),
        None if e.to_string().contains("password missing") => "the server asks for a password and none was given: put \
             it in the URL (postgres://user:PASSWORD@host/db), in $PGPASSWORD, or in ~/.pgpass (or the file \
             $PGPASSFILE names)"
            .to_string(),
        None => e.to_string(),
    }
}

/// The password libpq would use for `config` when its URL gives none: `$PGPASSWORD`, else the first matching line
/// (`host:port:database:user:password`, `*` matching anything) of `$PGPASSFILE` or `~/.pgpass`.
pub(super) fn password_for(config: &Config) -> Option<String> {
    if let Ok(password) = std::env::var("PGPASSWORD") {
        return Some(password);
    }
    let file = std::env::var_os("PGPASSFILE")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| std::path::Path::new(&home).join(".pgpass")))?;
    let text = std::fs::read_to_string(file).ok()?;
    let host = match config.get_hosts().first() {
        Some(tokio_postgres::config::Host::Tcp(host)) => host.clone(),
        _ => "localhost".to_string(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432).to_string();
    let user = config.get_user().map(str::to_string).or_else(|| std::env::var("USER").ok()).unwrap_or_default();
    let database = config.get_dbname().map_or_else(|| user.clone(), str::to_string);
    pgpass_match(&text, [&host, &port, &database, &user])
}

/// The password of the first line of a password file matching host, port, database and user.
fn pgpass_match(text: &str, wanted: [&str; 4]) -> Option<String> {
    text.lines().filter(|l| !l.trim_start().starts_with('#')).find_map(|line| {
        // Fields are split on `:` not preceded by `\`, and `\:`/`\\` stand for `:`/`\`.
        let mut fields = vec![String::new()];
        let mut chars = line.chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => fields.last_mut().expect("one at least").extend(chars.next()),
                ':' if fields.len() < 5 => fields.push(String::new()),
                c => fields.last_mut().expect("one at least").push(c),
            }
        }
        if fields.len() != 5 {
            return None;
        }
        let matches = fields[..4].iter().zip(wanted).all(|(field, want)| field == "*" || field == want);
        matches.then(|| fields[4].clone())
    })
}

#[cfg(test)]
mod tests {
    use super::pgpass_match;

    #[test]
    fn a_password_file_line_matches_with_wildcards_and_escapes() {
        let text = "# comment\nother:5432:db:me:nope\n127.0.0.1:*:switchyard:me:s3\\:cret\n*:*:*:*:fallback\n";
        assert_eq!(pgpass_match(text, ["127.0.0.1", "5433", "switchyard", "me"]).as_deref(), Some("s3:cret"));
        assert_eq!(pgpass_match(text, ["db.example", "5432", "x", "y"]).as_deref(), Some("fallback"));
        assert_eq!(pgpass_match("h:1:d:u\n", ["h", "1", "d", "u"]), None, "four fields is no line");
    }
}
