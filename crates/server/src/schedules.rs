//! Schedules: each served schedule trigger starts a run at every time its cron expression names (UTC).
//!
//! Invariants:
//! - A firing is keyed by its schedule (`workflow/schedule`) and its due time, and starts its run in the same
//!   transaction as its key (`team::fire`): every `serve` instance fires every schedule, and each due time starts
//!   exactly one run.
//! - A schedule fires for due times from when this server first saw it on; times that passed while no server ran are
//!   not made up for (a nightly job missed during an outage runs the next night, not twice in the morning).

use std::collections::BTreeMap;
use std::time::Duration;

use crate::registry::Submission;
use chrono::{DateTime, Utc};
use switchyard_engine::store::{Origin, Via};
use switchyard_engine::validate::triggers::parse_cron;

use crate::AppState;

/// Fires due schedules until the server stops. `report` hears each run started and each failure.
pub async fn keep_firing(state: AppState, report: impl Fn(String) + Send + Sync + 'static) {
    // Next due time per schedule key.
    let mut next: BTreeMap<String, DateTime<Utc>> = BTreeMap::new();
    loop {
        let now = Utc::now();
        let schedules = state.registry.catalog.read().expect("not poisoned").schedules();
        let mut live = Vec::new();
        for (workflow, trigger) in schedules {
            let (Some(name), Some(cron)) = (&trigger.schedule, &trigger.cron) else { continue };
            let Ok(cron) = parse_cron(cron) else { continue };
            let key = format!("{workflow}/{name}");
            live.push(key.clone());
            let due = match next.get(&key) {
                Some(due) => *due,
                None => match next_due(&cron, now) {
                    Some(due) => {
                        next.insert(key.clone(), due);
                        due
                    }
                    None => continue,
                },
            };
            if due > now {
                continue;
            }
            match fire(&state, &workflow, &key, due, trigger.input.clone()).await {
                Ok(Some(run)) => report(format!("schedule {key} fired for {due}: run {run}")),
                Ok(None) => {} // another server fired it
                Err(e) => {
                    // Tried again at the next tick: the firing's key makes a late firing start its run once.
                    report(format!("warning: schedule {key} could not fire for {due} yet: {e}"));
                    continue;
                }
            }
            if let Some(after) = next_due(&cron, due) {
                next.insert(key, after);
            }
        }
        next.retain(|k, _| live.contains(k));
        // Wake at the next whole second: cron's resolution is a minute, so a firing is at most a second late.
        let ms = 1000 - i64::from(Utc::now().timestamp_subsec_millis());
        tokio::time::sleep(Duration::from_millis(ms.clamp(1, 1000) as u64)).await;
    }
}

/// The first due time of `cron` after `after`, in whole seconds: every instance computes the same one, whenever it
/// looks (the firing's key is its due time).
fn next_due(cron: &croner::Cron, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
    use chrono::SubsecRound;
    cron.find_next_occurrence(&after.trunc_subsecs(0), false).ok().map(|due| due.trunc_subsecs(0))
}

/// Starts the run for `key`'s firing at `due`, unless another server did: the run started here.
async fn fire(
    state: &AppState,
    workflow: &str,
    key: &str,
    due: DateTime<Utc>,
    input: Option<serde_json::Value>,
) -> Result<Option<String>, String> {
    let Some(served) = state.registry.served(workflow) else { return Ok(None) };
    let origin = Origin::new(Via::Schedule, key);
    let submission = Submission::new(served, input, state.answers.as_deref().map(|a| a.as_path()), origin);
    state.store.fire(key, due.timestamp_millis(), &submission.new_run()).await.map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use chrono::{DateTime, Utc};

    #[test]
    fn instances_that_look_at_different_moments_compute_the_same_due_time() {
        let cron = switchyard_engine::validate::triggers::parse_cron("* * * * *").unwrap();
        let at = |s: &str| s.parse::<DateTime<Utc>>().unwrap();
        let one = super::next_due(&cron, at("2026-11-25T07:52:10.112345Z")).unwrap();
        let two = super::next_due(&cron, at("2026-11-25T07:52:41.987654Z")).unwrap();
        assert_eq!(one, two);
        assert_eq!(one, at("2026-11-25T07:53:00Z"));
        assert_eq!(super::next_due(&cron, one).unwrap(), at("2026-11-25T07:54:00Z"));
    }
}
