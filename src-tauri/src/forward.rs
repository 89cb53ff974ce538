//! Run events to the window: an observer queues events; a forwarder sends them as one batch per ~frame to the
//! run's channel (the command's `Events`), so a burst of thousands of events costs the UI one message per frame, in order, none dropped.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use switchyard_api::Events;
use switchyard_engine::events::Event;
use switchyard_engine::log::{LogError, Observer};
use tokio::sync::Notify;

/// How long the forwarder gathers events before sending a batch.
const FRAME: Duration = Duration::from_millis(16);

#[derive(Default)]
struct Queue {
    events: Mutex<Vec<Event>>,
    ready: Notify,
    closed: std::sync::atomic::AtomicBool,
    /// The window stopped listening: queueing more would only grow memory.
    gone: std::sync::atomic::AtomicBool,
}

/// The observer half: cheap to call from the engine.
#[derive(Clone)]
pub struct Forwarder(Arc<Queue>);

impl Observer for Forwarder {
    fn on_event(&self, event: &Event) -> Result<(), LogError> {
        if self.0.gone.load(std::sync::atomic::Ordering::Acquire) {
            return Err("the window is gone".into());
        }
        self.0.events.lock().map_err(|_| "poisoned".to_string())?.push(event.clone());
        self.0.ready.notify_one();
        Ok(())
    }
}

impl Forwarder {
    /// Starts the sending half on the runtime; it ends after `close` once the queue is drained.
    pub fn spawn(channel: Events<Vec<Event>>) -> Forwarder {
        let queue = Arc::new(Queue::default());
        let q = queue.clone();
        tauri::async_runtime::spawn(async move {
            loop {
                q.ready.notified().await;
                tokio::time::sleep(FRAME).await;
                let batch = std::mem::take(&mut *q.events.lock().unwrap());
                if !batch.is_empty() && !channel.send(batch) {
                    q.gone.store(true, std::sync::atomic::Ordering::Release);
                    q.events.lock().unwrap().clear();
                    return;
                }
                if q.closed.load(std::sync::atomic::Ordering::Acquire) && q.events.lock().unwrap().is_empty() {
                    return;
                }
            }
        });
        Forwarder(queue)
    }

    /// No more events will come; the last batch is still sent.
    pub fn close(&self) {
        self.0.closed.store(true, std::sync::atomic::Ordering::Release);
        self.0.ready.notify_one();
    }
}
