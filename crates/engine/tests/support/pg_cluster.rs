//! A throwaway PostgreSQL cluster for tests against a real server (`scripts/postgres.sh`, in a temporary folder): one
//! per test binary, started on first use and stopped when the binary exits (or, should it be killed, by a watchdog);
//! one database per test, so that tests running at once never claim each other's runs. Included with `#[path]` by
//! the engine's and the CLI's PostgreSQL tests.
#![allow(dead_code)]

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Instant;

pub struct Cluster {
    /// The temporary folder (removed at exit) and the cluster's folder in it.
    pub tmp: PathBuf,
    pub dir: PathBuf,
    /// `postgres://postgres@127.0.0.1:PORT`, without a database.
    pub base: String,
}

static CLUSTER: OnceLock<Cluster> = OnceLock::new();

pub fn postgres_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/postgres.sh")
}

/// Runs `scripts/postgres.sh ARGS…`; its last line on stdout.
pub fn postgres_sh(args: &[&Path]) -> String {
    let out = Command::new("bash").arg(postgres_script()).args(args).stderr(Stdio::inherit()).output().unwrap();
    assert!(out.status.success(), "scripts/postgres.sh {args:?} failed");
    String::from_utf8(out.stdout).unwrap().lines().last().unwrap_or("").to_string()
}

/// A new cluster in a temporary folder. Its folder must be reachable by the `postgres` user the server runs as.
pub fn start_cluster() -> Cluster {
    let tmp = tempfile::Builder::new().prefix("switchyard-pg-").tempdir().unwrap().keep();
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755)).unwrap();
    let dir = tmp.join("pg");
    let started = Instant::now();
    let url = postgres_sh(&[Path::new("start"), &dir]);
    eprintln!("cluster started in {} ms: {url}", started.elapsed().as_millis());
    let base = url.strip_suffix("/switchyard").expect("the URL names the database switchyard").to_string();
    // Should this process be killed before it exits, a watchdog in a process group of its own (so that Ctrl-C does
    // not end it too) stops the cluster once the process is gone.
    let _ = Command::new("bash")
        .args(["-c", r#"while kill -0 "$0" 2>/dev/null; do sleep 1; done; bash "$1" kill "$2"; rm -rf "$3""#])
        .arg(std::process::id().to_string())
        .arg(postgres_script())
        .arg(&dir)
        .arg(&tmp)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn();
    Cluster { tmp, dir, base }
}

extern "C" {
    fn atexit(callback: extern "C" fn()) -> std::ffi::c_int;
}

/// Stops the binary's cluster when the test harness exits (statics are never dropped).
extern "C" fn stop_cluster() {
    if let Some(cluster) = CLUSTER.get() {
        let _ =
            Command::new("bash").arg(postgres_script()).arg("stop").arg(&cluster.dir).stderr(Stdio::null()).status();
        let _ = std::fs::remove_dir_all(&cluster.tmp);
    }
}

pub fn cluster() -> &'static Cluster {
    CLUSTER.get_or_init(|| {
        let cluster = start_cluster();
        // SAFETY: registers a plain function with the C library; it runs once, at exit.
        unsafe { atexit(stop_cluster) };
        cluster
    })
}

/// Runs statements on the database at `url`, on a thread of its own (callers may be inside a runtime): the first
/// column of the last statement's first row, if it is a number.
pub fn sql(url: &str, statements: &str) -> i64 {
    let (url, statements) = (url.to_string(), statements.to_string());
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async {
            let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
            tokio::spawn(connection);
            let messages = client.simple_query(&statements).await.unwrap();
            let row = messages.iter().rev().find_map(|m| match m {
                tokio_postgres::SimpleQueryMessage::Row(row) => Some(row),
                _ => None,
            });
            row.and_then(|r| r.get(0)).and_then(|v| v.parse().ok()).unwrap_or(0)
        })
    })
    .join()
    .unwrap()
}

/// A new, empty database for one test: its URL.
pub fn database(name: &str) -> String {
    let base = &cluster().base;
    // One statement per call: CREATE DATABASE cannot run inside the implicit transaction of several.
    sql(&format!("{base}/postgres"), &format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"));
    sql(&format!("{base}/postgres"), &format!("CREATE DATABASE {name}"));
    format!("{base}/{name}")
}

/// Waits for `done` to hold, for at most 30 s.
#[allow(dead_code)]
pub fn until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !done() {
        assert!(std::time::Instant::now() < deadline, "gave up waiting for {what}");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}
