//! Following a run as its log is written: what the desktop's `follow_run` sends to the window and what a server's
//! event stream (`GET /api/runs/{id}/events`) sends to its clients. One implementation for both.
//!
//! Invariants:
//! - The run's status is read before its events: a run seen ended has all its events in its log, so the events read
//!   after seeing it ended are its last, and [`Followed::Ended`] comes only after them.
//! - Events come in order, each once, numbered after the last one delivered; a follower that stops and starts again
//!   from its last event (a client that reconnects) misses none.
//! - Where the store announces what it commits (PostgreSQL's NOTIFY, through `announced`), a follower wakes at once
//!   for its run, and for a `None` (the listener reconnected: anything may have been missed); announcements can be
//!   lost, so it also reads every `poll` regardless. A store that announces nothing is read every `poll`.
//! - A read that fails is returned as it is; the follower's place is kept, and the next [`Follow::next`] waits
//!   (`poll`, at most [`RETRY`]) before reading again: a database that is away is not asked in a loop.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::sync::broadcast;

use crate::events::Event;
use crate::store::{Store, StoreError};

/// What a follower is given next.
#[derive(Debug, PartialEq)]
pub enum Followed {
    /// Events numbered after the last ones given, in order (never empty).
    Events(Vec<Event>),
    /// The run has ended and every one of its events was given.
    Ended,
}

/// The longest a follower waits before reading again after a read failed.
pub const RETRY: Duration = Duration::from_millis(500);

/// Reads whether a run has ended (first), then its events numbered after `after` (at most a page, where the store
/// reads in pages).
type Read = Arc<dyn Fn(String, u64) -> BoxFuture<'static, Result<(bool, Vec<Event>), StoreError>> + Send + Sync>;

/// A run being followed from an event on ([`follow`]).
pub struct Follow {
    read: Read,
    run: String,
    last: u64,
    /// How many events a read gives at most (a full page is followed by another read at once).
    page: Option<usize>,
    poll: Duration,
    announced: Option<broadcast::Receiver<Option<String>>>,
    /// The next read waits first (for an announcement or `poll`): the last read found nothing new.
    wait_first: bool,
    /// The last read failed: the next one waits (`poll`, at most `RETRY`) first.
    failed: bool,
    ended: bool,
}

/// Follows run `run` of `store` from the events numbered after `after`, reading it every `poll` (off the async
/// threads: the store blocks).
pub fn follow(store: Arc<dyn Store>, run: &str, after: u64, poll: Duration) -> Follow {
    let read: Read = Arc::new(move |run: String, after: u64| {
        let store = store.clone();
        Box::pin(async move {
            let read = move || Ok((store.get(&run)?.status.ended(), store.events_after(&run, after)?));
            super::off_runtime(read).await
        })
    });
    Follow {
        read,
        run: run.to_string(),
        last: after,
        page: None,
        poll,
        announced: None,
        wait_first: false,
        failed: false,
        ended: false,
    }
}

impl Follow {
    /// Follows run `run` from the events numbered after `after` through `read` (whether the run has ended first,
    /// then at most `page` events after the given number), every `poll`: a store that is awaited and reads its log
    /// in pages.
    pub fn paged<F>(
        run: &str,
        after: u64,
        poll: Duration,
        page: usize,
        read: impl Fn(String, u64) -> F + Send + Sync + 'static,
    ) -> Follow
    where
        F: std::future::Future<Output = Result<(bool, Vec<Event>), StoreError>> + Send + 'static,
    {
        Follow {
            read: Arc::new(move |run, after| Box::pin(read(run, after))),
            run: run.to_string(),
            last: after,
            page: Some(page.max(1)),
            poll,
            announced: None,
            wait_first: false,
            failed: false,
            ended: false,
        }
    }

    /// Wakes on the store's announcements: run ids whose log grew, `None` when some may have been missed.
    pub fn announced_by(mut self, announced: broadcast::Receiver<Option<String>>) -> Follow {
        self.announced = Some(announced);
        self
    }

    /// The number of the last event given (where a follower that starts again goes on from).
    pub fn last(&self) -> u64 {
        self.last
    }

    /// The next events of the run, or that it has ended; waits while nothing new is written.
    pub async fn next(&mut self) -> Result<Followed, StoreError> {
        loop {
            if self.ended {
                return Ok(Followed::Ended);
            }
            if self.failed {
                tokio::time::sleep(self.poll.min(RETRY)).await;
            } else if self.wait_first {
                self.wait().await;
            }
            // Until a read says otherwise, the next one waits: a failed read is not repeated in a loop.
            (self.failed, self.wait_first) = (true, true);
            let (ended, events) = (self.read)(self.run.clone(), self.last).await?;
            self.failed = false;
            let full = self.page.is_some_and(|page| events.len() >= page);
            if let Some(event) = events.last() {
                self.last = event.seq;
            }
            if full {
                // More may be written already: read again at once.
                self.wait_first = false;
                return Ok(Followed::Events(events));
            }
            // Seen ended before its events were read: those were the last.
            self.ended = ended;
            if !events.is_empty() {
                return Ok(Followed::Events(events));
            }
        }
    }

    /// Until the store announces this run (or may have missed announcing it), or `poll` has passed.
    async fn wait(&mut self) {
        let poll = tokio::time::sleep(self.poll);
        let Some(announced) = self.announced.as_mut() else { return poll.await };
        let run = self.run.as_str();
        let heard = async {
            loop {
                match announced.recv().await {
                    Ok(Some(id)) if id != run => continue,
                    // This run, a reconnected listener, or a lag (announcements were dropped): read.
                    Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => return,
                    // Nobody announces any more: polling is all that is left.
                    Err(broadcast::error::RecvError::Closed) => std::future::pending::<()>().await,
                }
            }
        };
        tokio::select! {
            _ = heard => {}
            _ = poll => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::EventKind;
    use crate::format::{self, Format};
    use crate::log::RunLog;
    use crate::result::RunStatus;
    use crate::run::RunOptions;
    use crate::store::{NewRun, RunStore};

    /// A store with one run being written, and the log it is written through.
    fn started(dir: &tempfile::TempDir) -> (Arc<RunStore>, Arc<dyn RunLog>, crate::store::Claim) {
        let store = Arc::new(RunStore::open(&dir.path().join("runs.sqlite")).unwrap());
        let text = "switchyard: 1\nname: followed\nnodes:\n  - {id: start, type: start}\n";
        let wf = format::load_str(text, Some(Format::Switchyard), None).unwrap().workflow;
        let options = RunOptions::default();
        let new = NewRun {
            id: "r1",
            workflow: &wf,
            workflow_ref: None,
            answers_path: None,
            options: &options,
            eval_id: None,
            origin: Default::default(),
            version: None,
        };
        let claim = store.create(&new).unwrap();
        let log = store.clone().run_log(&claim);
        (store, log, claim)
    }

    fn write(log: &Arc<dyn RunLog>, seqs: std::ops::RangeInclusive<u64>) {
        for seq in seqs {
            let kind = EventKind::NodeProgress { node: "start".into(), message: format!("step {seq}") };
            log.append(&Event { seq, run: "r1".into(), ts: String::new(), kind }).unwrap();
        }
    }

    fn seqs(followed: Followed) -> Vec<u64> {
        match followed {
            Followed::Events(events) => events.iter().map(|e| e.seq).collect(),
            Followed::Ended => panic!("ended early"),
        }
    }

    #[tokio::test]
    async fn a_follower_gets_each_event_once_in_order_and_ended_only_after_the_last() {
        let dir = tempfile::tempdir().unwrap();
        let (store, log, _claim) = started(&dir);
        write(&log, 1..=3);
        let mut follow = follow(store.clone(), "r1", 1, Duration::from_millis(5));
        assert_eq!(seqs(follow.next().await.unwrap()), [2, 3], "only what came after the given number");
        write(&log, 4..=5);
        assert_eq!(seqs(follow.next().await.unwrap()), [4, 5]);
        write(&log, 6..=6);
        store.run_status("r1", RunStatus::Completed, &[]).unwrap();
        assert_eq!(seqs(follow.next().await.unwrap()), [6], "the last events before the end");
        assert_eq!(follow.next().await.unwrap(), Followed::Ended);
        assert_eq!(follow.next().await.unwrap(), Followed::Ended, "an ended run stays ended");
        assert_eq!(follow.last(), 6);
    }

    #[tokio::test]
    async fn a_paged_follower_reads_again_at_once_after_a_full_page() {
        let dir = tempfile::tempdir().unwrap();
        let (store, log, _claim) = started(&dir);
        write(&log, 1..=5);
        store.run_status("r1", RunStatus::Completed, &[]).unwrap();
        let reader = store.clone();
        // An hour between reads: a full page must not wait for it.
        let mut follow = Follow::paged("r1", 0, Duration::from_secs(3600), 2, move |run, after| {
            let read = || {
                Ok((reader.get(&run)?.status.ended(), reader.events_after(&run, after)?.into_iter().take(2).collect()))
            };
            std::future::ready(read())
        });
        assert_eq!(seqs(follow.next().await.unwrap()), [1, 2]);
        assert_eq!(seqs(follow.next().await.unwrap()), [3, 4]);
        assert_eq!(seqs(follow.next().await.unwrap()), [5]);
        assert_eq!(follow.next().await.unwrap(), Followed::Ended);
    }

    #[tokio::test]
    async fn an_announcement_of_the_run_wakes_its_follower_before_the_next_poll() {
        let dir = tempfile::tempdir().unwrap();
        let (store, log, _claim) = started(&dir);
        let (announce, heard) = broadcast::channel(16);
        // An hour between polls: only the announcement can wake it.
        let mut follow = follow(store.clone(), "r1", 0, Duration::from_secs(3600)).announced_by(heard);
        write(&log, 1..=1);
        assert_eq!(seqs(follow.next().await.unwrap()), [1]);
        let next = tokio::spawn(async move { (follow.next().await.map(seqs).unwrap(), follow) });
        write(&log, 2..=2);
        announce.send(Some("another run".into())).unwrap();
        announce.send(Some("r1".into())).unwrap();
        let (got, mut follow) = next.await.unwrap();
        assert_eq!(got, [2]);
        // A listener that reconnected may have missed announcements: `None` wakes every follower.
        let next = tokio::spawn(async move { follow.next().await.map(seqs).unwrap() });
        write(&log, 3..=3);
        announce.send(None).unwrap();
        assert_eq!(next.await.unwrap(), [3]);
    }

    #[tokio::test]
    async fn a_failed_read_keeps_the_followers_place() {
        let dir = tempfile::tempdir().unwrap();
        let (store, log, _claim) = started(&dir);
        write(&log, 1..=2);
        let fail = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (reader, failing) = (store.clone(), fail.clone());
        let mut follow = Follow::paged("r1", 0, Duration::from_millis(1), 100, move |run, after| {
            let read = || {
                if failing.load(std::sync::atomic::Ordering::SeqCst) {
                    return Err(StoreError::NoSuchRun { path: "runs.sqlite".into(), id: run.clone() });
                }
                Ok((reader.get(&run)?.status.ended(), reader.events_after(&run, after)?))
            };
            std::future::ready(read())
        });
        assert_eq!(seqs(follow.next().await.unwrap()), [1, 2]);
        write(&log, 3..=3);
        fail.store(true, std::sync::atomic::Ordering::SeqCst);
        assert!(follow.next().await.is_err());
        fail.store(false, std::sync::atomic::Ordering::SeqCst);
        assert_eq!(seqs(follow.next().await.unwrap()), [3], "nothing missed, nothing twice");
    }
}
