//! `switchyard worker`: its arguments, what it prints, and how a signal stops it. The loop itself is the engine's
//! (`switchyard_engine::worker`); without the `postgres` feature the command says it was not built in.

use clap::Args;

use crate::{coded, Unusable};

#[derive(Args)]
pub struct WorkerArgs {
    /// How long a claimed run stays this worker's without a heartbeat, in seconds: a run whose worker died is taken
    /// over by another after it. Heartbeats come every third of it.
    #[arg(long, default_value_t = 30.0, value_name = "SECS")]
    lease: f64,
    /// Runs at once.
    #[arg(long, default_value_t = 1, value_name = "N")]
    jobs: usize,
    /// How long its runs may go on once it is told to stop (SIGTERM, Ctrl-C), in seconds, before they are given up
    /// to other workers (their steps in flight then run again there).
    #[arg(long, default_value_t = 30.0, value_name = "SECS")]
    grace: f64,
    /// How often to look for runs when none is announced, in seconds (default: half the lease, from 0.1 to 5): a
    /// run whose lease expired is announced by nobody.
    #[arg(long, value_name = "SECS")]
    poll: Option<f64>,
    /// The queues to take runs from, separated by commas (`--queues interactive,batch`): a workflow (or its trigger)
    /// names its runs' queue with `queue:`, `default` when it names none. Without it, every queue.
    #[arg(long, value_name = "NAME,…", value_delimiter = ',')]
    queues: Option<Vec<String>>,
    /// Let the runs' code steps execute (see `run --allow-code`); without it, only code the trust file allows runs.
    #[arg(long)]
    allow_code: bool,
}

/// A number of seconds as a duration: positive, and at most a day.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
fn seconds(flag: &str, secs: f64) -> Result<std::time::Duration, Unusable> {
    if !(secs > 0.0 && secs <= 86_400.0) {
        return Err(coded("INVALID_DURATION", format!("--{flag} {secs}: give a number of seconds from 0 to 86400")));
    }
    Ok(std::time::Duration::from_secs_f64(secs))
}

/// `--queues` as given: each a queue's name, none twice; none given: every queue.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
fn queues(given: Option<Vec<String>>) -> Result<Option<Vec<String>>, Unusable> {
    let Some(given) = given else { return Ok(None) };
    let mut queues: Vec<String> = Vec::new();
    for name in given.iter().map(|q| q.trim()) {
        if let Some(why) = switchyard_engine::validate::queues::queue_problem(name) {
            return Err(coded(
                "INVALID_ARGUMENTS",
                format!("--queues `{}`: {why}; leave --queues out to take from every queue", given.join(",")),
            ));
        }
        if !queues.iter().any(|q| q == name) {
            queues.push(name.to_string());
        }
    }
    Ok(Some(queues))
}

#[cfg(not(feature = "postgres"))]
pub fn cmd_workers(_db: Option<&str>, _json: bool) -> Result<u8, Unusable> {
    Err(coded(
        "POSTGRES_NOT_BUILT",
        "this switchyard was built without PostgreSQL support (the `postgres` feature), which workers need",
    ))
}

/// `switchyard workers`: the workers of the PostgreSQL run store, as `GET /api/workers` lists them.
#[cfg(feature = "postgres")]
pub fn cmd_workers(db: Option<&str>, json: bool) -> Result<u8, Unusable> {
    use crate::history::format_duration;
    use crate::out::{outln, printable};
    use switchyard_engine::store::postgres::{PgStore, Wait};

    let db = db.filter(|db| db.starts_with("postgres://") || db.starts_with("postgresql://")).ok_or_else(|| {
        coded(
            "WORKER_NEEDS_POSTGRES",
            "workers take runs from a PostgreSQL run store: pass --db postgres://… (or set SWITCHYARD_DB) to list them",
        )
    })?;
    let store = PgStore::open(db).map_err(|e| coded(e.code(), e.to_string()))?;
    let workers = store.workers().wait().map_err(|e| coded(e.code(), e.to_string()))?;
    if json {
        outln!("{}", serde_json::to_string_pretty(&workers).expect("workers are JSON"));
        return Ok(0);
    }
    if workers.is_empty() {
        crate::out::errln!("no worker has answered in the last day (start one with `switchyard worker`)");
    }
    for w in workers {
        let queues = w.queues.map_or("every queue".to_string(), |q| format!("queues {}", q.join(",")));
        let runs = if w.runs.is_empty() { "no run".to_string() } else { format!("runs {}", w.runs.join(", ")) };
        outln!(
            "{}  {:<13}  {queues}  {} at a time  last heartbeat {} ({} ago)  {runs}",
            printable(&w.name),
            w.state,
            w.jobs,
            w.last_heartbeat.get(..19).unwrap_or(&w.last_heartbeat),
            format_duration(w.heartbeat_age_ms as u64),
        );
    }
    Ok(0)
}

#[cfg(not(feature = "postgres"))]
pub async fn cmd(_db: Option<&str>, _args: WorkerArgs) -> Result<u8, Unusable> {
    Err(coded(
        "POSTGRES_NOT_BUILT",
        "this switchyard was built without PostgreSQL support (the `postgres` feature), which workers need",
    ))
}

#[cfg(feature = "postgres")]
pub async fn cmd(db: Option<&str>, args: WorkerArgs) -> Result<u8, Unusable> {
    use std::sync::Arc;

    use switchyard_engine::worker::{self, Options, Report};

    // Every line of the worker's log starts with when it was written.
    use crate::out::{counted, logln as errln};

    let Some(db) = db else {
        return Err(coded(
            "WORKER_NEEDS_POSTGRES",
            "a worker takes runs from a PostgreSQL run store: pass --db postgres://… (or set SWITCHYARD_DB)",
        ));
    };
    let lease = seconds("lease", args.lease)?;
    let options = Options {
        jobs: args.jobs,
        poll: match args.poll {
            Some(secs) => seconds("poll", secs)?,
            None => Options::poll_for(lease),
        },
        grace: seconds("grace", args.grace)?,
        allow_code: args.allow_code,
    };
    let queues = queues(args.queues)?;
    // Opening connects and migrates: blocking work, before the loop starts.
    let store = worker::open(db, lease).map_err(|e| coded(e.code(), e.to_string()))?.with_queues(queues);
    let from = match store.queues() {
        Some(queues) => format!("queues {}", queues.join(", ")),
        None => "every queue".to_string(),
    };
    errln!(
        "worker {} takes runs from {} ({from}; {} at a time, lease {} s)",
        store.owner(),
        store.database(),
        options.jobs,
        lease.as_secs_f64()
    );
    // The providers it can run models with: a run that needs another is left for a worker that has it.
    let path = switchyard_engine::providers::Settings::default_path();
    match switchyard_engine::providers::Settings::load(&path) {
        Ok(settings) => errln!(
            "providers: {} (from {}); runs that need another provider are left for a worker that has it",
            settings.provider_ids().join(", "),
            path.display()
        ),
        Err(e) => errln!("warning: [{}] {e}; runs that call a model are left for other workers", e.code()),
    }
    let report = Arc::new(|report: Report| match report {
        Report::Claimed { run, taken_over_from: None } => errln!("claimed {run}"),
        Report::Claimed { run, taken_over_from: Some(from) } => {
            errln!("claimed {run}: {} ({from})", switchyard_engine::events::TAKEN_OVER)
        }
        Report::Ended { run, status, log_error } => {
            errln!("{run} {}", status.as_str());
            if let Some(e) = log_error {
                errln!("warning: {run}: {e}");
            }
        }
        Report::Parked { run, pending } => errln!("{run} paused: waits for {}; parked", pending.join(", ")),
        Report::Lost { run } => {
            errln!("{run} lost: taken over by another worker, or its log could not be written; stopped here")
        }
        Report::Abandoned { run, code, message } => {
            errln!("{run} left for its lease to run out: [{code}] {message}")
        }
        Report::Released { run } => errln!("{run} given up: ready for another worker"),
        Report::Unavailable { code, message } => errln!("warning: [{code}] {message}; trying again"),
        Report::Idle => errln!("waiting for runs"),
        Report::Stopping { running } => {
            errln!("stopping: taking nothing more; {} going on", counted(running as u64, "run"))
        }
    });
    let summary =
        worker::work(store, options, report, stop_signal()).await.map_err(|e| coded(e.code(), e.to_string()))?;
    errln!(
        "worker stopped: took {}; {} refused",
        counted(summary.claimed as u64, "run"),
        counted(summary.stale_writes as u64, "stale write")
    );
    Ok(0)
}

/// Completes at SIGTERM or Ctrl-C.
#[cfg(feature = "postgres")]
pub async fn stop_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
