//! A workflow's triggers (docs/server.md): each is a webhook or a schedule, named so it can be a URL path segment,
//! named once; a schedule has a five-field cron expression; a webhook's secret is named by an environment variable,
//! never written in the file. `INVALID_TRIGGER` for a trigger that cannot be used, `DUPLICATE_TRIGGER` for a name
//! given twice, `INVALID_CRON` for a schedule that never fires or does not parse.

use std::collections::HashSet;
use std::str::FromStr;

use crate::document::{Trigger, Workflow};

use super::{Report, Severity};

pub(super) fn check(workflow: &Workflow, report: &mut Report) {
    let mut seen = HashSet::new();
    for (at, trigger) in workflow.triggers.iter().enumerate() {
        let problem = |report: &mut Report, code: &'static str, message: String| {
            let which = match trigger.name() {
                "" => format!("trigger {}", at + 1),
                name => format!("trigger `{name}`"),
            };
            report.push(Severity::Error, code, format!("{which}: {message}"), None, None);
        };
        for message in misuse(trigger) {
            problem(report, "INVALID_TRIGGER", message);
        }
        let name = trigger.name();
        if !name.is_empty() && !seen.insert(name.to_string()) {
            problem(report, "DUPLICATE_TRIGGER", "another trigger has this name; give each its own".into());
        }
        if let (Some(_), Some(cron)) = (&trigger.schedule, &trigger.cron) {
            if let Err(why) = parse_cron(cron) {
                problem(report, "INVALID_CRON", format!("`{cron}` is not a cron expression ({why}); write five fields: minute hour day-of-month month day-of-week, e.g. `0 3 * * *`"));
            }
        }
    }
}

message_error!(
    /// Why a cron expression is not one a server fires: the count of its fields, or what the cron parser says.
    CronError
);

/// A schedule's cron expression, as a server fires it: five fields, in UTC.
pub fn parse_cron(cron: &str) -> Result<croner::Cron, CronError> {
    if cron.split_whitespace().count() != 5 {
        return Err(CronError(format!("{} fields", cron.split_whitespace().count())));
    }
    croner::Cron::from_str(cron).map_err(|e| CronError(e.to_string()))
}

/// What makes a trigger unusable, in the order a reader fixes it.
fn misuse(trigger: &Trigger) -> Vec<String> {
    let mut found = Vec::new();
    match (&trigger.webhook, &trigger.schedule) {
        (None, None) => found.push("name it as `webhook: NAME` or `schedule: NAME`".to_string()),
        (Some(_), Some(_)) => {
            found.push("it is a webhook or a schedule, not both: keep one of `webhook` and `schedule`".into())
        }
        _ => {}
    }
    let name = trigger.name();
    let slug = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-';
    if !name.is_empty() && !name.chars().all(slug) {
        found.push(format!("`{name}` is not a name a URL can hold: use lowercase letters, digits and `-`"));
    }
    if trigger.webhook.is_some() {
        if trigger.cron.is_some() {
            found.push(
                "a webhook fires when it is called, not on a `cron`: remove `cron`, or make it a schedule".into(),
            );
        }
        if trigger.input.is_some() {
            found.push("a webhook's run input is the request's body: remove `input`".into());
        }
    }
    if trigger.schedule.is_some() {
        if trigger.cron.is_none() {
            found.push("a schedule needs `cron`, e.g. `cron: \"0 3 * * *\"` (every day at 03:00 UTC)".into());
        }
        if trigger.secret_env.is_some() {
            found.push("only webhooks are signed: remove `secret_env`".into());
        }
    }
    if let Some(env) = &trigger.secret_env {
        let variable = |c: char| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_';
        if env.is_empty() || !env.chars().all(variable) || env.starts_with(|c: char| c.is_ascii_digit()) {
            found.push(format!(
                "`secret_env` names the environment variable that holds the secret (e.g. `TICKETS_HOOK_SECRET`), not the secret; `{}` is not such a name",
                redacted(env)
            ));
        }
    }
    found
}

/// What an error may show of a value that might be a secret written where its variable's name belongs.
fn redacted(value: &str) -> String {
    let shown: String = value.chars().take(3).collect();
    if value.chars().count() > 3 {
        format!("{shown}…")
    } else {
        shown
    }
}
