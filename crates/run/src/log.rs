//! How a run's events are kept and delivered (SEMANTICS §6): the emitter numbers them; with a run log, a committer
//! thread writes them (and the run's inputs) in batches first, then hands them to observers; an observer that fails
//! or panics is ignored.

use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};

use crate::events::{Event, EventKind};
use crate::record::{Input, Recorded};
use crate::result::RunStatus;

message_error!(
    /// A run log or observer that could not take an event: the log's error is reported once with the run's outcome,
    /// an observer's is ignored.
    LogError
);

/// Something that watches a run. Errors are ignored by the emitter: an observer never stops a run.
pub trait Observer: Send + Sync {
    fn on_event(&self, event: &Event) -> Result<(), LogError>;
}

impl<F> Observer for F
where
    F: Fn(&Event) -> Result<(), String> + Send + Sync,
{
    fn on_event(&self, event: &Event) -> Result<(), LogError> {
        self(event).map_err(LogError)
    }
}

/// Where a run's events are kept durably. Written before observers see an event; a failure here is reported once
/// as a warning on stderr-like channels by the caller, never silently dropped, but does not stop the run.
pub trait RunLog: Send + Sync {
    fn append(&self, event: &Event) -> Result<(), LogError>;

    /// Keeps an input of the run (see `run::input`), before anything it causes is emitted.
    fn record_input(&self, _run: &str, _input: &Recorded) -> Result<(), LogError> {
        Ok(())
    }

    /// The run's status changed: it paused (`pending` waits), went on, or ended.
    fn run_status(&self, _run: &str, _status: RunStatus, _pending: &[String]) -> Result<(), LogError> {
        Ok(())
    }

    /// Writes several items in order, all or none where the log can (the run store: one transaction).
    fn write_batch(&self, run: &str, items: &[LogItem]) -> Result<(), LogError> {
        let mut first_error = Ok(());
        for item in items {
            let written = match item {
                LogItem::Event(event) => self.append(event),
                LogItem::Input(input) => self.record_input(run, input),
                LogItem::Status { status, pending } => self.run_status(run, *status, pending),
            };
            if first_error.is_ok() {
                first_error = written;
            }
        }
        first_error
    }
}

/// Several run logs written in order (the run store, then a shell's own: a JSON-lines file).
pub struct Tee(pub Vec<Arc<dyn RunLog>>);

impl RunLog for Tee {
    fn append(&self, event: &Event) -> Result<(), LogError> {
        let mut first_error = Ok(());
        for log in &self.0 {
            if let Err(e) = log.append(event) {
                if first_error.is_ok() {
                    first_error = Err(e);
                }
            }
        }
        first_error
    }

    fn write_batch(&self, run: &str, items: &[LogItem]) -> Result<(), LogError> {
        self.0.iter().map(|log| log.write_batch(run, items)).fold(Ok(()), Result::and)
    }

    fn record_input(&self, run: &str, input: &Recorded) -> Result<(), LogError> {
        self.0.iter().map(|log| log.record_input(run, input)).fold(Ok(()), Result::and)
    }

    fn run_status(&self, run: &str, status: RunStatus, pending: &[String]) -> Result<(), LogError> {
        self.0.iter().map(|log| log.run_status(run, status, pending)).fold(Ok(()), Result::and)
    }
}

/// A run log in memory: events and inputs (tests, and runs nobody keeps on disk).
#[derive(Default, Clone)]
pub struct MemoryLog {
    pub events: Arc<Mutex<Vec<Event>>>,
    pub inputs: Arc<Mutex<Vec<Recorded>>>,
}

impl MemoryLog {
    /// What a rebuild of this run needs.
    pub fn recording(&self) -> crate::record::Recording {
        crate::record::Recording {
            inputs: self.inputs.lock().unwrap().clone(),
            events: self.events.lock().unwrap().clone(),
        }
    }
}

impl RunLog for MemoryLog {
    fn append(&self, event: &Event) -> Result<(), LogError> {
        self.events.lock().unwrap().push(event.clone());
        Ok(())
    }

    fn record_input(&self, _run: &str, input: &Recorded) -> Result<(), LogError> {
        self.inputs.lock().unwrap().push(input.clone());
        Ok(())
    }
}

/// Collects events in memory (tests, the app's run panel).
#[derive(Default, Clone)]
pub struct Collector(pub Arc<Mutex<Vec<Event>>>);

impl Collector {
    pub fn events(&self) -> Vec<Event> {
        self.0.lock().unwrap().clone()
    }
}

impl Observer for Collector {
    fn on_event(&self, event: &Event) -> Result<(), LogError> {
        self.0.lock().map_err(|_| "poisoned".to_string())?.push(event.clone());
        Ok(())
    }
}

struct EmitterState {
    seq: u64,
    /// Events numbered up to this one are in the log already (a resumed run derives them again): not delivered.
    quiet_through: u64,
}

/// One write to a run log.
#[derive(Debug, Clone)]
pub enum LogItem {
    Event(Event),
    Input(Recorded),
    Status { status: RunStatus, pending: Vec<String> },
}

/// Where events go: straight to observers (no log), or through the committer (a log).
#[derive(Clone)]
enum Sink {
    Direct(Arc<[Arc<dyn Observer>]>),
    Committed(Arc<Committer>),
}

/// The committer thread of a run has stopped.
struct Gone;

/// The way to a run's committer thread, shared by every clone of its emitter.
struct Committer {
    tx: std::sync::mpsc::SyncSender<Queued>,
}

impl Committer {
    /// Fails when the committer thread is gone (the item is dropped).
    fn send(&self, queued: Queued) -> Result<(), Gone> {
        self.tx.send(queued).map_err(|_| Gone)
    }

    /// Returns once everything queued before is committed and delivered.
    fn flush(&self) {
        let (done, wait) = std::sync::mpsc::sync_channel(1);
        if self.tx.send(Queued::Flush(done)).is_ok() {
            let _ = wait.recv();
        }
    }
}

/// When the last emitter of a run goes, whatever it queued is written before it is gone: a run dropped without
/// ending (a launch refused after its rebuild, a shell that stops driving it) never writes to its log after whoever
/// held the run gave it up, where it would overwrite what the run's next holder wrote.
impl Drop for Committer {
    fn drop(&mut self) {
        self.flush();
    }
}

// Items are the common case and flushes rare: boxing every item would cost an allocation per event.
#[allow(clippy::large_enum_variant)]
enum Queued {
    Item(LogItem),
    /// Answered once everything queued before it is committed and delivered.
    Flush(std::sync::mpsc::SyncSender<()>),
    /// As `Flush`, for a task that must not block its thread while it waits.
    Committed(tokio::sync::oneshot::Sender<()>),
}

/// Numbers, timestamps and delivers the events of one run.
///
/// With a run log, events and inputs go through a committer thread: it writes whatever has queued up as one batch
/// (one transaction in the run store), then hands the batch's events to observers. So nothing an observer sees can
/// be missing from the log, the scheduler never waits for the disk, and a slow disk costs one commit per batch, not
/// one per event. Without a log, observers get each event at once.
#[derive(Clone)]
pub struct Emitter {
    run: Arc<str>,
    state: Arc<Mutex<EmitterState>>,
    sink: Option<Sink>,
    log_error: Arc<Mutex<Option<String>>>,
}

impl Emitter {
    pub fn new(run: &str, first_seq: u64, log: Option<Arc<dyn RunLog>>, observers: Vec<Arc<dyn Observer>>) -> Emitter {
        let log_error = Arc::new(Mutex::new(None));
        let sink = match log {
            Some(log) => {
                // Bounded: when the disk falls behind, the run waits for it instead of queueing without limit.
                let (tx, rx) = std::sync::mpsc::sync_channel(QUEUE);
                let (run_id, errors) = (run.to_string(), log_error.clone());
                std::thread::Builder::new()
                    .name("switchyard-run-log".into())
                    .spawn(move || commit_loop(&run_id, rx, log, observers, errors))
                    .expect("a thread starts");
                Some(Sink::Committed(Arc::new(Committer { tx })))
            }
            None if observers.is_empty() => None,
            None => Some(Sink::Direct(observers.into())),
        };
        Emitter {
            run: Arc::from(run),
            state: Arc::new(Mutex::new(EmitterState { seq: first_seq, quiet_through: 0 })),
            sink,
            log_error,
        }
    }

    pub fn run_id(&self) -> &str {
        &self.run
    }

    /// Whether journal entries are kept: the run has a log (`journal` drops them otherwise).
    pub fn keeps_journal(&self) -> bool {
        matches!(self.sink, Some(Sink::Committed(_)))
    }

    /// The sequence number the next event will get.
    pub fn next_seq(&self) -> u64 {
        self.state.lock().unwrap().seq + 1
    }

    /// The first run-log write error, if any happened (call `flush` first to see every write's).
    pub fn log_error(&self) -> Option<String> {
        self.log_error.lock().unwrap().clone()
    }

    /// Events up to `seq` are not delivered: the log holds them already.
    pub fn quiet_through(&self, seq: u64) {
        self.state.lock().unwrap().quiet_through = seq;
    }

    /// The next event is numbered `seq` at least (numbers taken by events a rebuild does not derive are skipped).
    pub fn skip_to(&self, seq: u64) {
        let mut state = self.state.lock().unwrap();
        state.seq = state.seq.max(seq.saturating_sub(1));
    }

    /// Delivers a recorded event again, as it was (a replay), and numbers on from it.
    pub fn replay(&self, event: Event) {
        let mut state = self.state.lock().unwrap();
        state.seq = state.seq.max(event.seq);
        self.send(&mut state, event);
    }

    /// Keeps an input in the run log, numbered with the next event's `seq`, committed with or before what it causes.
    /// Whether inputs reach a run log (else recording one is skipped, and so is building it).
    pub fn keeps_inputs(&self) -> bool {
        matches!(&self.sink, Some(Sink::Committed(_)))
    }

    pub fn record(&self, input: Input) {
        if let Some(Sink::Committed(tx)) = &self.sink {
            let state = self.state.lock().unwrap();
            let _ = tx.send(Queued::Item(LogItem::Input(Recorded { seq: state.seq + 1, ts: None, input })));
        }
    }

    /// Tells the run log the run's status.
    pub fn status(&self, status: RunStatus, pending: &[String]) {
        if let Some(Sink::Committed(tx)) = &self.sink {
            let _state = self.state.lock().unwrap(); // in order with the events around it
            let _ = tx.send(Queued::Item(LogItem::Status { status, pending: pending.to_vec() }));
        }
    }

    /// Keeps a journal entry of a node task (`crate::journal`) and returns once it is in the log: the task goes on
    /// only after that, so what it did is never lost to a crash after it went on. Nothing to keep without a log.
    pub async fn journal(&self, entry: crate::journal::Entry) {
        let Some(Sink::Committed(tx)) = &self.sink else { return };
        let (done, committed) = tokio::sync::oneshot::channel();
        // When the turn or tool call ended, for a person reading the conversation (`Recorded::ts`).
        let ts = Some(chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true));
        {
            let state = self.state.lock().unwrap();
            let input = Recorded { seq: state.seq + 1, ts, input: Input::Journaled(Box::new(entry)) };
            if tx.send(Queued::Item(LogItem::Input(input))).is_err() || tx.send(Queued::Committed(done)).is_err() {
                return;
            }
        }
        let _ = committed.await;
    }

    /// Returns once everything emitted so far is in the log and with the observers.
    pub fn flush(&self) {
        if let Some(Sink::Committed(committer)) = &self.sink {
            committer.flush();
        }
    }

    /// Called with the state locked, so that events reach the log and observers in `seq` order.
    fn send(&self, _state: &mut EmitterState, event: Event) {
        match &self.sink {
            None => {}
            Some(Sink::Direct(observers)) => deliver(observers, &event),
            Some(Sink::Committed(tx)) => {
                let _ = tx.send(Queued::Item(LogItem::Event(event)));
            }
        }
    }

    pub fn emit(&self, kind: EventKind) {
        let mut state = self.state.lock().unwrap();
        state.seq += 1;
        if self.sink.is_none() || state.seq <= state.quiet_through {
            return;
        }
        let event = self.event(state.seq, kind);
        self.send(&mut state, event);
    }

    /// Emits an event and hands its payload back (the final results, which the run's result keeps). Copied only
    /// when the event goes on to the run log's thread; observers called here see it and give it back.
    pub fn emit_and_return(&self, kind: EventKind) -> EventKind {
        if matches!(self.sink, Some(Sink::Committed(_))) {
            self.emit(kind.clone());
            return kind;
        }
        let mut state = self.state.lock().unwrap();
        state.seq += 1;
        match &self.sink {
            Some(Sink::Direct(observers)) if state.seq > state.quiet_through => {
                let event = self.event(state.seq, kind);
                deliver(observers, &event);
                event.kind
            }
            _ => kind,
        }
    }

    fn event(&self, seq: u64, kind: EventKind) -> Event {
        Event {
            seq,
            run: self.run.to_string(),
            ts: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            kind,
        }
    }
}

fn deliver(observers: &[Arc<dyn Observer>], event: &Event) {
    for observer in observers {
        let _ = std::panic::catch_unwind(AssertUnwindSafe(|| observer.on_event(event)));
    }
}

/// Most writes committed as one batch.
const MAX_BATCH: usize = 4096;
/// Most writes waiting for the committer.
const QUEUE: usize = 4096;

/// The committer: writes what has queued up as one batch, then delivers its events. Ends when the run's emitters
/// are gone.
fn commit_loop(
    run: &str,
    rx: std::sync::mpsc::Receiver<Queued>,
    log: Arc<dyn RunLog>,
    observers: Vec<Arc<dyn Observer>>,
    errors: Arc<Mutex<Option<String>>>,
) {
    let mut batch: Vec<LogItem> = Vec::new();
    let mut flushes = Vec::new();
    while let Ok(first) = rx.recv() {
        let mut next = Some(first);
        while let Some(queued) = next.take() {
            match queued {
                Queued::Item(item) => batch.push(item),
                Queued::Flush(done) => flushes.push(Done::Thread(done)),
                Queued::Committed(done) => flushes.push(Done::Task(done)),
            }
            if batch.len() < MAX_BATCH {
                next = rx.try_recv().ok();
            }
        }
        if !batch.is_empty() {
            if let Err(e) = log.write_batch(run, &batch) {
                errors.lock().unwrap().get_or_insert(e.0);
            }
            for item in batch.drain(..) {
                if let LogItem::Event(event) = item {
                    deliver(&observers, &event);
                }
            }
        }
        for done in flushes.drain(..) {
            match done {
                Done::Thread(done) => {
                    let _ = done.send(());
                }
                Done::Task(done) => {
                    let _ = done.send(());
                }
            }
        }
    }
}

/// Who waits for a batch to be written: a thread (`flush`) or a task (`journal`).
enum Done {
    Thread(std::sync::mpsc::SyncSender<()>),
    Task(tokio::sync::oneshot::Sender<()>),
}

#[cfg(test)]
mod tests {
    use super::*;
    /// An observer that checks, for each event it sees, that the log already holds it.
    struct SeesOnlyLogged(MemoryLog, Arc<Mutex<Vec<u64>>>);

    impl Observer for SeesOnlyLogged {
        fn on_event(&self, event: &Event) -> Result<(), LogError> {
            assert!(self.0.events.lock().unwrap().iter().any(|e| e.seq == event.seq), "#{} not logged yet", event.seq);
            self.1.lock().unwrap().push(event.seq);
            Ok(())
        }
    }

    /// A log whose writes fail.
    struct Broken;

    impl RunLog for Broken {
        fn append(&self, _: &Event) -> Result<(), LogError> {
            Err("disk full".into())
        }
    }

    #[test]
    fn observers_see_each_event_after_the_log_has_it_in_order_from_any_thread() {
        let log = MemoryLog::default();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let observer = Arc::new(SeesOnlyLogged(log.clone(), seen.clone()));
        let emitter = Emitter::new("r", 0, Some(Arc::new(log.clone())), vec![observer]);
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let emitter = emitter.clone();
                std::thread::spawn(move || {
                    for i in 0..250 {
                        emitter.emit(EventKind::NodeProgress { node: format!("n{t}"), message: i.to_string() });
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        emitter.record(Input::Cancelled { by: None });
        emitter.flush();
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen, (1..=1000).collect::<Vec<u64>>());
        assert_eq!(log.inputs.lock().unwrap().len(), 1);
        assert_eq!(log.inputs.lock().unwrap()[0].seq, 1001, "an input is numbered with the next event");
    }

    #[test]
    fn a_failing_log_is_reported_once_and_observers_still_see_every_event() {
        let collector = Collector::default();
        let emitter = Emitter::new("r", 0, Some(Arc::new(Broken)), vec![Arc::new(collector.clone())]);
        for _ in 0..3 {
            emitter.emit(EventKind::WorkflowResumed {});
        }
        emitter.flush();
        assert_eq!(emitter.log_error().as_deref(), Some("disk full"));
        assert_eq!(collector.events().len(), 3);
    }
}
