//! Where a server's runs of a workflow wait and how many run at once (docs/server.md, "Queues and limits"): a queue
//! is named as a trigger is (lowercase letters, digits and `-`), by the workflow or by one of its triggers;
//! `max_concurrent_runs` is at least 1. `INVALID_QUEUE` for a queue name a worker could not be given,
//! `INVALID_LIMIT` for a limit that would never let a run start.

use crate::document::Workflow;

use super::{Report, Severity};

pub(super) fn check(workflow: &Workflow, report: &mut Report) {
    if let Some(queue) = &workflow.queue {
        if let Some(why) = queue_problem(queue) {
            report.push(Severity::Error, "INVALID_QUEUE", format!("`queue: {queue}`: {why}"), None, None);
        }
    }
    for trigger in &workflow.triggers {
        if let Some(queue) = &trigger.queue {
            if let Some(why) = queue_problem(queue) {
                let message = format!("trigger `{}`: `queue: {queue}`: {why}", trigger.name());
                report.push(Severity::Error, "INVALID_QUEUE", message, None, None);
            }
        }
    }
    if workflow.max_concurrent_runs == Some(0) {
        report.push(
            Severity::Error,
            "INVALID_LIMIT",
            "`max_concurrent_runs: 0` would never let a run start: give 1 or more, or leave it out for no limit".into(),
            None,
            None,
        );
    }
}

/// Why `name` cannot be a queue's name (as `switchyard worker --queues` takes it), if it cannot.
pub fn queue_problem(name: &str) -> Option<String> {
    let slug = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-';
    if name.is_empty() {
        Some("a queue has a name: lowercase letters, digits and `-` (e.g. `batch`)".into())
    } else if name.len() > 64 || !name.chars().all(slug) {
        Some("a queue's name is up to 64 lowercase letters, digits and `-` (e.g. `batch`)".into())
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use crate::format::{self, Format};
    use crate::validate::{validate, Options};

    fn codes(extra: &str) -> Vec<String> {
        let text = format!("switchyard: 1\nname: q\n{extra}nodes:\n  - {{id: start, type: start}}\n");
        let workflow = format::load_str(&text, Some(Format::Switchyard), None).unwrap().workflow;
        validate(&workflow, &Options::default()).errors.iter().map(|f| f.code.to_string()).collect()
    }

    #[test]
    fn a_queue_is_named_as_a_worker_takes_it_and_a_limit_lets_at_least_one_run_start() {
        assert!(codes("queue: batch\nmax_concurrent_runs: 2\n").is_empty());
        assert_eq!(codes("queue: Batch Jobs\n"), ["INVALID_QUEUE"]);
        assert_eq!(codes("queue: ''\n"), ["INVALID_QUEUE"]);
        assert_eq!(codes("max_concurrent_runs: 0\n"), ["INVALID_LIMIT"]);
        let hook = "triggers:\n  - {webhook: tickets, queue: 'in box'}\n";
        assert_eq!(codes(hook), ["INVALID_QUEUE"]);
    }

    #[test]
    fn a_run_waits_in_its_triggers_queue_else_its_workflows_else_default() {
        let text = "switchyard: 1\nname: q\nqueue: batch\ntriggers:\n  - {webhook: tickets, queue: interactive}\n  \
                    - {webhook: other}\nnodes:\n  - {id: start, type: start}\n";
        let workflow = format::load_str(text, Some(Format::Switchyard), None).unwrap().workflow;
        assert_eq!(workflow.queue_for(Some("tickets")), "interactive");
        assert_eq!(workflow.queue_for(Some("other")), "batch");
        assert_eq!(workflow.queue_for(None), "batch");
        assert_eq!(crate::Workflow::new("plain").queue_for(Some("tickets")), "default");
    }
}
