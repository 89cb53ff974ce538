//! `LISTEN/NOTIFY`: who hears that a run became ready, that something was asked of a held run, or that a batch
//! committed. Each listener has a connection of its own, connecting again when it breaks.
//!
//! Invariants:
//! - A notification sent while nobody listens is lost, so listeners poll as well, and are told (`None`) when their
//!   connection came back after breaking (anything may have been announced meanwhile).
//! - A run that becomes `ready` (created for workers, or given up while running) is announced on [`READY_CHANNEL`]
//!   (payload: the run id), from the statement that makes it so: idle workers wake on it ([`PgStore::listen`]).
//! - A decision or a cancellation for a run that someone holds is announced on [`WAKE_CHANNEL`] (payload: the run
//!   id): a holder that listens ([`PgStore::listen_wakes`]) beats its heartbeat at once, which reads what was asked,
//!   rather than at the next third of its lease. Announcements can be missed; the heartbeat reads it anyway.
//! - Each committed batch is announced on [`CHANNEL`] ([`PgStore::follow`]); lagging followers lose announcements,
//!   so followers read from the log, not from this.

use std::sync::Arc;
use std::time::Duration;

use tokio_postgres::{Client, NoTls};

use super::connection::{error_text, InDb, Shared};
use super::{PgError, PgStore, CHANNEL, READY_CHANNEL, WAKE_CHANNEL};

impl PgStore {
    /// Listens on `channel` on a connection of its own (connecting first, so that a database that cannot be reached
    /// is said now), telling `heard` of each announcement, until `stopped`: `keep_listening`.
    async fn keep_listening_on(
        &self,
        channel: &'static str,
        heard: Heard,
        stopped: tokio::sync::oneshot::Receiver<()>,
    ) -> Result<(), PgError> {
        self.call(|s| async move {
            let first = listening(&s, channel, heard.clone()).await?;
            tokio::spawn(keep_listening(s, channel, first, heard, stopped));
            Ok(())
        })
        .await
    }

    /// Listens for runs that become ready ([`READY_CHANNEL`]) on a connection of its own, connecting again when it
    /// breaks (and waking the listener then, since it may have missed one), until the listener is dropped.
    pub async fn listen(&self) -> Result<Listener, PgError> {
        let woken = Arc::new(tokio::sync::Notify::new());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let wake = woken.clone();
        let heard: Heard = Arc::new(move |_: Option<&str>| wake.notify_one());
        self.keep_listening_on(READY_CHANNEL, heard, stopped).await?;
        Ok(Listener { woken, _stop: stop })
    }

    /// Listens for what is asked of the runs this store holds ([`WAKE_CHANNEL`]) on a connection of its own, until
    /// the listener is dropped: the heartbeat of the run named beats at once. After the connection broke and came
    /// back, every held run's heartbeat beats (one may have been missed).
    pub async fn listen_wakes(&self) -> Result<WakeListener, PgError> {
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let shared = self.shared.clone();
        let heard: Heard = Arc::new(move |run: Option<&str>| {
            for ((id, _), beat) in shared.held.lock().unwrap().iter() {
                if run.is_none_or(|run| run == id) {
                    let _ = beat.send(());
                }
            }
        });
        self.keep_listening_on(WAKE_CHANNEL, heard, stopped).await?;
        Ok(WakeListener { _stop: stop })
    }

    /// Follows every run's committed batches ([`CHANNEL`]) on a connection of its own: each announcement's run id,
    /// and `None` after the connection broke and came back (anything may have been committed meanwhile). Lagging
    /// receivers lose announcements (and are told so by the channel), so followers read from the log, not from this.
    pub async fn follow(&self) -> Result<Follower, PgError> {
        let (tx, _) = tokio::sync::broadcast::channel(4096);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let sender = tx.clone();
        let heard: Heard = Arc::new(move |run: Option<&str>| {
            let _ = sender.send(run.map(str::to_string));
        });
        self.keep_listening_on(CHANNEL, heard, stopped).await?;
        Ok(Follower { tx, _stop: Arc::new(stop) })
    }
}

/// Beats the heartbeats of held runs when something is asked of them ([`PgStore::listen_wakes`]), until dropped.
pub struct WakeListener {
    _stop: tokio::sync::oneshot::Sender<()>,
}

/// Wakes an idle worker when a run becomes ready ([`PgStore::listen`]). Notifications can be missed (none is kept
/// for a listener that is reconnecting, and leases that expire announce nothing): workers poll as well.
pub struct Listener {
    woken: Arc<tokio::sync::Notify>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl Listener {
    /// Completes at the next announcement (at once if one came since the last call).
    pub async fn notified(&self) {
        self.woken.notified().await
    }
}

/// Who hears a channel's announcements: the payload, or `None` when the connection came back after breaking.
type Heard = Arc<dyn Fn(Option<&str>) + Send + Sync>;

/// Follows committed batches ([`PgStore::follow`]); clones share the connection, which closes when the last goes.
#[derive(Clone)]
pub struct Follower {
    tx: tokio::sync::broadcast::Sender<Option<String>>,
    _stop: Arc<tokio::sync::oneshot::Sender<()>>,
}

impl Follower {
    /// Announcements from now on.
    pub fn subscribe(&self) -> tokio::sync::broadcast::Receiver<Option<String>> {
        self.tx.subscribe()
    }
}

/// A connection that listens on `channel`: the client (which must be kept: dropping it closes the connection) and
/// the task that drives the connection and passes announcements to `heard`, which ends when it breaks.
async fn listening(
    s: &Shared,
    channel: &'static str,
    heard: Heard,
) -> Result<(Client, tokio::task::JoinHandle<()>), PgError> {
    let (client, mut connection) = s
        .main
        .config
        .connect(NoTls)
        .await
        .map_err(|e| PgError::Connect { db: s.db.clone(), detail: error_text(&e) })?;
    // Polling the connection for messages is also what drives it: the LISTEN below goes through this task.
    let driver = tokio::spawn(async move {
        while let Some(Ok(message)) = futures::future::poll_fn(|cx| connection.poll_message(cx)).await {
            if let tokio_postgres::AsyncMessage::Notification(n) = message {
                heard(Some(n.payload()));
            }
        }
    });
    client.batch_execute(&format!("LISTEN {channel}")).await.in_db(s)?;
    Ok((client, driver))
}

/// Keeps listening on `channel` until `stopped`; reconnects (once a second) when the connection breaks, and tells
/// `heard` then, since something may have been announced while it was down.
async fn keep_listening(
    s: Arc<Shared>,
    channel: &'static str,
    first: (Client, tokio::task::JoinHandle<()>),
    heard: Heard,
    mut stopped: tokio::sync::oneshot::Receiver<()>,
) {
    let mut current = Some(first);
    loop {
        match current.take() {
            Some((client, mut driver)) => {
                tokio::select! {
                    _ = &mut stopped => return,
                    _ = &mut driver => {
                        drop(client);
                        heard(None);
                    }
                }
            }
            None => {
                tokio::select! {
                    _ = &mut stopped => return,
                    _ = tokio::time::sleep(Duration::from_secs(1)) => {
                        current = listening(&s, channel, heard.clone()).await.ok();
                        if current.is_some() {
                            heard(None);
                        }
                    }
                }
            }
        }
    }
}
