//! Stored runs: `runs` lists them, `show` rebuilds one from its recording, `replay` plays it again, `prune` deletes
//! the ones that ended long ago.

use std::path::PathBuf;

use serde_json::json;
use switchyard_engine::events::Event;
use switchyard_engine::journal;
use switchyard_engine::run;
use switchyard_engine::session;
use switchyard_engine::store::{self, RunFilter, RunQuery, StoredStatus};
use switchyard_engine::usage::Priced;
use switchyard_engine::views;
use switchyard_engine::RunStatus;

use crate::out::{counted, errln, outln, printable};
use crate::running::{open_runs, result_json, sinks};
use crate::unusable::coded;
use crate::Unusable;

/// Which runs `switchyard runs` lists (its flags).
#[derive(Debug, Default, clap::Args)]
pub(crate) struct RunsFilter {
    /// At most N runs (the newest); without it, every run that matches.
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// Only runs listed after this one: the next page (give the last id of the page before).
    #[arg(long, value_name = "RUN")]
    pub before: Option<String>,
    /// Only runs with this status (ready, running, paused, interrupted, completed, failed, cancelled); repeat it or
    /// separate with commas for several.
    #[arg(long, value_name = "STATUS", value_delimiter = ',')]
    pub status: Vec<String>,
    /// Only runs of the workflow of this name (in any case), or started from this file as the list shows it.
    #[arg(long, value_name = "NAME")]
    pub workflow: Option<String>,
    /// Only runs started at or after this time: RFC 3339, a day (2026-11-28), or an age (30m, 2h, 7d).
    #[arg(long, value_name = "TIME")]
    pub since: Option<String>,
    /// Only runs started before this time (as --since).
    #[arg(long, value_name = "TIME")]
    pub until: Option<String>,
    /// Only runs whose id begins with this.
    #[arg(long, value_name = "PREFIX")]
    pub id: Option<String>,
    /// Only runs whose id begins with this, or whose workflow's name or file has it in them (in any case), as
    /// History's search box finds them.
    #[arg(long, value_name = "TEXT")]
    pub search: Option<String>,
    /// With --workflow: its runs' child runs too, at any depth (each names its parent: `child of RUN`).
    #[arg(long, requires = "workflow")]
    pub with_children: bool,
}

impl RunsFilter {
    fn query(self) -> Result<RunQuery, Unusable> {
        let filter = RunFilter {
            limit: self.limit.map(|l| u32::try_from(l).unwrap_or(u32::MAX)),
            before: self.before,
            status: self.status,
            workflow: self.workflow,
            since: self.since,
            until: self.until,
            id: self.id,
            search: self.search,
            with_children: self.with_children,
        };
        filter.query(usize::MAX).map_err(|(flag, why)| coded("INVALID_ARGUMENTS", format!("--{flag}: {why}")))
    }
}

pub(crate) fn cmd_runs(db: Option<&str>, json: bool, filter: RunsFilter) -> Result<u8, Unusable> {
    let store = open_runs(db)?;
    let paged = filter.limit.is_some();
    let mut query = filter.query()?;
    if let Some(before) = query.before.take() {
        query.before = Some(store.resolve(&before).map_err(|e| coded(e.code(), e.to_string()))?);
    }
    let runs = session::priced_rows(store.find(&query).map_err(|e| coded(e.code(), e.to_string()))?);
    // A full page may have a next one: say how to ask for it (on stderr, so that the listing stays the listing).
    if let (true, Some(last)) = (paged && runs.len() == query.limit, runs.last()) {
        errln!("more: switchyard runs --before {} (with the same filters)", last.id);
    }
    if json {
        // The shape a server's `GET /api/runs` lists too.
        let rows: Vec<_> = runs.into_iter().map(switchyard_engine::views::ListedRun::from).collect();
        outln!("{}", serde_json::to_string_pretty(&rows).unwrap());
        return Ok(0);
    }
    let current = runs.iter().any(|r| r.tokens > 0 && r.cost.is_some() && r.priced == Some(Priced::Current));
    for r in runs {
        let pending = if r.pending.is_empty() { String::new() } else { format!("  waits: {}", r.pending.join(", ")) };
        let case = if r.eval.is_some() { "  (test case)" } else { "" };
        let waiting = r.waiting().map(|w| format!("  {w}")).unwrap_or_default();
        let child = r
            .parent
            .as_ref()
            .map(|p| format!("  child of {} ({})", p.run.get(..8).unwrap_or(&p.run), p.at()))
            .unwrap_or_default();
        outln!(
            "{}  {:<11}  {}  {:>8}  {:>9}  {}{pending}{case}{waiting}{child}",
            r.id,
            r.status.as_str(),
            r.started.get(..19).unwrap_or(&r.started),
            format_duration(r.duration_ms),
            format_cost(&r),
            r.workflow_ref.as_deref().unwrap_or(&r.workflow),
        );
    }
    if current {
        errln!("*: {} (recorded before runs kept their prices)", Priced::Current.note().unwrap_or_default());
    }
    Ok(0)
}

/// What `switchyard prune` deletes (its flags).
#[derive(Debug, clap::Args)]
pub(crate) struct PruneArgs {
    /// Delete runs that ended before this: an age (30d, 12h, 90m) or a time (RFC 3339, or a day: 2026-11-28).
    /// Required, so that nothing is pruned by accident.
    #[arg(long, value_name = "AGE|TIME")]
    pub older_than: String,
    /// Only runs with this status: completed, failed or cancelled (repeat it or separate with commas; none given: all
    /// three). Runs that may still go on (ready, running, paused, interrupted) are never pruned.
    #[arg(long, value_name = "STATUS", value_delimiter = ',')]
    pub status: Vec<String>,
    /// PostgreSQL: keep webhook delivery keys and schedule firings this long after they came (an age or a time, as
    /// --older-than), and always while their run is kept, so that a late redelivery of a pruned run's key starts
    /// nothing.
    #[arg(long, value_name = "AGE|TIME", default_value = store::KEEP_DELIVERIES)]
    pub keep_deliveries: String,
    /// Delete nothing: say what would be deleted.
    #[arg(long)]
    pub dry_run: bool,
    /// Print {"dryRun", "runs", "events", "deliveries", "firings", "endedBefore", "keysBefore", "statuses"}.
    #[arg(long)]
    pub json: bool,
}

pub(crate) fn cmd_prune(db: Option<&str>, args: PruneArgs) -> Result<u8, Unusable> {
    let invalid = |flag: &str, why: String| coded("INVALID_ARGUMENTS", format!("--{flag}: {why}"));
    let now = chrono::Utc::now();
    let instant = |flag: &str, text: &str| {
        let at = store::parse_instant_at(text, now).map_err(|why| invalid(flag, why.into()))?;
        if at > now {
            return Err(invalid(
                flag,
                format!(
                    "`{}` is in the future, which would take every run: give an age (30d) or a past time",
                    text.trim()
                ),
            ));
        }
        Ok(at)
    };
    let statuses = args
        .status
        .iter()
        .filter(|s| !s.trim().is_empty())
        .map(|s| store::prunable_status(s).map_err(|why| invalid("status", why.into())))
        .collect::<Result<_, _>>()?;
    let prune = store::Prune {
        ended_before: instant("older-than", &args.older_than)?,
        statuses,
        keys_before: instant("keep-deliveries", &args.keep_deliveries)?,
        dry_run: args.dry_run,
    };
    let store = open_runs(db)?;
    let pruned = store.prune(&prune).map_err(|e| coded(e.code(), e.to_string()))?;
    if args.json {
        let at = |t: chrono::DateTime<chrono::Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        let mut said = serde_json::to_value(pruned).expect("counts are JSON");
        said["dryRun"] = json!(prune.dry_run);
        said["endedBefore"] = json!(at(prune.ended_before));
        said["keysBefore"] = json!(at(prune.keys_before));
        said["statuses"] = json!(if prune.statuses.is_empty() {
            vec!["completed", "failed", "cancelled"]
        } else {
            prune.statuses.iter().map(|s| s.as_str()).collect()
        });
        outln!("{}", serde_json::to_string_pretty(&said).unwrap());
    } else if prune.dry_run {
        outln!("would prune {} (--dry-run: nothing was deleted)", pruned.said(&prune));
    } else {
        outln!("pruned {}", pruned.said(&prune));
    }
    Ok(0)
}

/// A run's cost as the engine writes it (`usage::dollars`), marked `*` when it is priced with this machine's
/// settings (a run recorded before runs kept their prices): "–" when it used no tokens, "N tok" when a model it used
/// has no price.
pub(crate) fn format_cost(r: &switchyard_engine::store::RunRow) -> String {
    match (r.tokens, &r.cost_text) {
        (0, _) => "–".to_string(),
        (_, Some(text)) if r.priced == Some(Priced::Current) => format!("{text}*"),
        (_, Some(text)) => text.clone(),
        (tokens, None) => format!("{tokens} tok"),
    }
}

pub(crate) fn format_duration(ms: u64) -> String {
    match ms {
        0..=999 => format!("{ms} ms"),
        1000..=59_999 => format!("{:.1} s", ms as f64 / 1000.0),
        _ => format!("{}m{:02}s", ms / 60_000, (ms / 1000) % 60),
    }
}

/// The child runs of `run_id`, each with its status now.
fn child_runs(store: &dyn store::Store, run_id: &str) -> Result<Vec<views::Child>, Unusable> {
    let failed = |e: store::StoreError| coded(e.code(), e.to_string());
    let children = store.children(run_id).map_err(failed)?;
    let with_status = |c: store::ChildRun| -> Result<_, Unusable> {
        let status = store.get(&c.id).map_err(failed)?.status;
        Ok(views::Child::new(c, status))
    };
    children.into_iter().map(with_status).collect()
}

/// Rebuilds a stored run's result from its recording (no model call), as `run --json` printed it.
pub(crate) fn cmd_show(db: Option<&str>, run_id: &str, json: bool) -> Result<u8, Unusable> {
    let store = open_runs(db)?;
    // A short id (History prints the first 8 characters) names the run it begins.
    let run_id = &store.resolve(run_id).map_err(|e| coded(e.code(), e.to_string()))?;
    let (row, result) = session::show(&*store, run_id)?;
    let status = row.status;
    let mut out = result_json(&result, Some(&row));
    if matches!(status, StoredStatus::Interrupted | StoredStatus::Running | StoredStatus::Ready) {
        out["status"] = json!(status);
        out["error"] = json!(match status {
            StoredStatus::Ready => format!(
                "the run is {}; `switchyard resume {run_id}` runs it here",
                row.waiting().unwrap_or_else(|| "waiting for a worker".into())
            ),
            _ => format!("the run is {}; `switchyard resume {run_id}` continues it", status.as_str()),
        });
    }
    // Inside each agent: its model turns and tool calls, as the run's journal keeps them.
    let turns = session::turns(&*store, run_id)?;
    // Who started it, decided its approvals and cancelled it (a server's runs; docs/server.md, "Identities").
    let events = store.events(run_id).map_err(|e| coded(e.code(), e.to_string()))?;
    let decided = views::decisions(&events);
    // The runs its `workflow` nodes started (docs/subworkflows.md), each with where it is now.
    let children = child_runs(&*store, run_id)?;
    if json {
        if !children.is_empty() {
            out["children"] = json!(children);
        }
        if !turns.is_empty() {
            out["turns"] = json!(turns);
        }
        // Only what a server recorded: a run of this machine's alone prints what `run --json` printed.
        if row.origin.via != store::Via::Local {
            out["origin"] = json!(row.origin);
        }
        if row.cancelled_by.is_some() {
            out["cancelledBy"] = json!(row.cancelled_by);
        }
        if let Some(version) = row.version {
            out["version"] = json!(version);
        }
        // A server's run: the queue it waits (or waited) in, and while it waits, how many go before it.
        if let Some(queue) = &row.queue {
            out["queue"] = json!(queue);
        }
        if let Some(waiting) = row.waiting() {
            (out["ahead"], out["waiting"]) = (json!(row.ahead), json!(waiting));
        }
        if decided.iter().any(|d| d.by.is_some()) {
            out["decisions"] = json!(decided);
        }
        let takeovers = views::takeovers(&events);
        if !takeovers.is_empty() {
            out["takenOver"] =
                json!(takeovers.iter().map(|(at, said)| json!({"at": at, "said": said})).collect::<Vec<_>>());
        }
        outln!("{}", serde_json::to_string_pretty(&out).unwrap());
    } else {
        let cost = match (row.tokens, &row.cost_text) {
            (0, _) => String::new(),
            (tokens, Some(text)) => match row.priced.and_then(Priced::note) {
                Some(note) => format!(", {}, {text}, {note}", counted(tokens, "token")),
                None => format!(", {}, {text}", counted(tokens, "token")),
            },
            (tokens, None) => format!(", {} (no price under `prices` in the settings)", counted(tokens, "token")),
        };
        // A server's run names the version of the served workflow it ran (`GET /api/workflows/NAME/versions`).
        let version = row.version.map(|v| format!("version {v} of ")).unwrap_or_default();
        outln!("run {run_id}: {} ({version}{}{cost})", status.as_str(), row.workflow);
        if let Some(said) = row.origin.said() {
            outln!("  started {}", printable(&said));
        }
        if let Some(parent) = &row.parent {
            let short = parent.run.get(..8).unwrap_or(&parent.run);
            outln!("  child run of {short}, run by its node {} (switchyard show {short})", printable(&parent.at()));
        }
        if let Some(waiting) = row.waiting() {
            outln!("  {waiting}");
        }
        // Each takeover after a worker stopped answering, as the run's log has it.
        for (at, said) in views::takeovers(&events) {
            outln!("  {} at {}", printable(&said), at.get(..19).unwrap_or(&at));
        }
        for d in &decided {
            let by = d.by.as_ref().map(|b| format!(" by {}", printable(b))).unwrap_or_default();
            let note = if d.note.is_empty() { String::new() } else { format!(": {}", printable(&d.note)) };
            outln!("  {} {}{by} at {}{note}", printable(&d.node), d.decision.said(), d.at.get(..19).unwrap_or(&d.at));
        }
        if let Some(by) = &row.cancelled_by {
            outln!("  cancelled by {}", printable(by));
        }
        for (node, result) in &result.results {
            let text = result.error.clone().unwrap_or_else(|| run::output_text(&result.data));
            let text: String = text.chars().take(100).collect();
            outln!("  {:<20} {:<9} {}", printable(node), result.status.word(), printable(&text.replace('\n', " ")));
            let journaled = turns.get(node).map(Vec::as_slice).unwrap_or_default();
            let model_turns = journaled.iter().filter(|e| matches!(e.entry.what, journal::What::Turn { .. })).count();
            let tool_calls = journaled.iter().filter(|e| matches!(e.entry.what, journal::What::Tool { .. })).count();
            if model_turns + tool_calls > 0 {
                let (model_turns, tool_calls) =
                    (counted(model_turns as u64, "model turn"), counted(tool_calls as u64, "tool call"));
                outln!("  {:<20} {model_turns}, {tool_calls} (--json lists them)", "");
            }
        }
        for child in &children {
            let item = match (&child.item, &child.call) {
                (Some(i), _) => format!("[{i}]"),
                (None, Some(call)) => format!(" tool call {call}"),
                (None, None) => String::new(),
            };
            let short = child.id.get(..8).unwrap_or(&child.id);
            outln!(
                "  {:<20} child run {short} {} (switchyard show {short})",
                format!("{}{item}", printable(&child.node)),
                child.status.as_str()
            );
        }
        for p in &result.pending {
            outln!("  waits for `{}`: {}", p.node, printable(&p.message));
        }
        if !result.pending.is_empty() {
            let decide: Vec<String> = result.pending.iter().map(|p| format!("--decide {}=approve", p.node)).collect();
            outln!("  decide with `switchyard resume {run_id} {}` (or reject)", decide.join(" "));
        }
    }
    Ok(0)
}

/// Plays a stored run again from its recording: the same events, results and trace, with no model or tool call.
pub(crate) fn cmd_replay(db: Option<&str>, run_id: &str, json: bool, events: Option<PathBuf>) -> Result<u8, Unusable> {
    let store = open_runs(db)?;
    let run_id = &store.resolve(run_id).map_err(|e| coded(e.code(), e.to_string()))?;
    let replayed = session::replay(&*store, run_id, sinks(&events, json)?)?;
    if json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&result_json(&replayed.result, Some(&session::row(&*store, run_id)?)))
                .unwrap()
        );
    }
    // The replay must tell the same story; where it does not, the engine (or the store) changed.
    if let Some(d) = &replayed.diverged {
        let kind = |e: &Option<Event>| {
            e.as_ref().map_or("nothing".to_string(), |e| format!("{} #{}", e.kind.type_name(), e.seq))
        };
        errln!(
            "warning: the replay differs from the recording at event {}: recorded {}, replayed {}",
            d.at + 1,
            kind(&d.recorded),
            kind(&d.replayed)
        );
        return Ok(1);
    }
    Ok(match replayed.result.status {
        RunStatus::Completed | RunStatus::Paused => 0,
        _ => 1,
    })
}
