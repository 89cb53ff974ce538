//! The schema of both run stores: one migration per version, each a `.sql` file (`sqlite/`, `postgres/`) embedded
//! when Switchyard is built and listed once, in order, below; and the rules both stores follow to apply them
//! ([`plan`]). SQLite applies a plan through `rusqlite_migration` and keeps its version in `PRAGMA user_version`
//! (`store::sqlite`); PostgreSQL in the table `switchyard_schema`, under an advisory lock (`postgres::schema`).
//!
//! Invariants:
//! - Migrations are only ever appended: a released one never changes by a byte, since databases that applied it
//!   must open as they are (a test holds each file's SHA-256).
//! - Version N is the Nth migration of its store's list. A database at version `found` gets the migrations after
//!   `found`, in order, each once, all in one transaction: a failed one leaves the database as it was.
//! - A database at a version past the list was written by a newer Switchyard: it is refused before anything is
//!   written to it (`STORE_TOO_NEW`).

/// One migration: its file's name (without `.sql`) and its text.
#[derive(Debug, Clone, Copy)]
pub struct Migration {
    /// What the tests check the list's order by.
    #[cfg_attr(not(test), allow(dead_code))]
    pub name: &'static str,
    pub sql: &'static str,
}

/// The migration in `store/migrations/DIR/NAME.sql`.
macro_rules! migration {
    ($dir:literal, $name:literal) => {
        Migration { name: $name, sql: include_str!(concat!($dir, "/", $name, ".sql")) }
    };
}

/// The SQLite store's schema, version by version.
pub const SQLITE: &[Migration] = &[
    // 1: the first store (its tables may exist already in files written before versions were kept).
    migration!("sqlite", "0001_first"),
    // 2: runs keep the document and options they started with, their times and pending approvals; inputs; events
    // clustered by run (one b-tree, not a table and an index: half the writes per event).
    migration!("sqlite", "0002_copies_times_and_inputs"),
    // 3: the tokens each model used in a run (for its cost), the evaluation a run was a case of, and evaluations'
    // reports (a baseline to compare with).
    migration!("sqlite", "0003_usage_and_evals"),
    // 4: child runs: the parent run, node, iteration and item a child run belongs to, from its options' link.
    migration!("sqlite", "0004_child_runs"),
];

/// The PostgreSQL store's schema, version by version.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
pub const POSTGRES: &[Migration] = &[
    // 1: runs (with the lease columns workers need), their events and inputs. JSON columns keep the text as written
    // (not `jsonb`, which reorders keys): a run's events read back exactly as they were emitted.
    migration!("postgres", "0001_runs_events_inputs"),
    // 2: level with SQLite's migration 3: the tokens each model used in a run (for its cost), the evaluation a run
    // was a case of, and evaluations' reports.
    migration!("postgres", "0002_usage_and_evals"),
    // 3: what a team server keeps (`postgres::team`): decisions and cancellations waiting for a worker (`wake` says a
    // worker must look at the run again; `wake_at` when a parked run's approval times out), API tokens (hashed),
    // webhook deliveries by idempotency key, schedule firings, and every version of the workflows it serves. A
    // delivery's or a firing's key is inserted before its run, in the same transaction (the foreign key is checked
    // at commit), and goes with the run when it is deleted (until 5).
    migration!("postgres", "0003_team"),
    // 4: a token's scope (what it may do), expiry and last use (`postgres::team`).
    migration!("postgres", "0004_token_scopes"),
    // 5: retention: delivery keys and schedule firings outlive their runs (no foreign key to them any more), and
    // ended runs, keys and firings are found by their times.
    migration!("postgres", "0005_keys_outlive_runs"),
    // 6: identities: how each run was started and by whom, and who asked that it be cancelled.
    migration!("postgres", "0006_identities"),
    // 7: run versions: the version of the served workflow each run was started from.
    migration!("postgres", "0007_run_versions"),
    // 8: queues and limits: the queue each run waits in, its priority (a person's runs first) and its workflow's
    // `max_concurrent_runs`; the workers that take runs, their queues and heartbeats.
    migration!("postgres", "0008_queues"),
    // 9: the lease each worker takes its runs with, by which `switchyard workers` tells one that stopped answering.
    migration!("postgres", "0009_worker_leases"),
    // 10: level with SQLite's migration 4: child runs' links to their parent runs.
    migration!("postgres", "0010_child_runs"),
];

/// The version a store's schema is at once every migration of `list` is applied.
pub fn latest(list: &[Migration]) -> i64 {
    list.len() as i64
}

/// What a database at version `found` needs: the migrations after it, in order, each with the version it brings the
/// database to. Empty when it is up to date.
#[derive(Debug)]
pub struct Plan {
    pub from: i64,
    pub to: i64,
    pub steps: Vec<(i64, Migration)>,
}

impl Plan {
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }
}

/// The database is at a version this build does not know: a newer Switchyard wrote it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Newer {
    pub found: i64,
    pub known: i64,
}

/// The migrations a database at version `found` needs from `list`; [`Newer`] when it is past them, in which case
/// the caller must write nothing to it.
pub fn plan(list: &[Migration], found: i64) -> Result<Plan, Newer> {
    let known = latest(list);
    if found > known {
        return Err(Newer { found, known });
    }
    let steps = (found.max(0)..known).map(|v| (v + 1, list[v as usize])).collect();
    Ok(Plan { from: found, to: known, steps })
}

#[cfg(test)]
mod tests {
    use sha2::{Digest, Sha256};

    use super::*;

    /// Each released migration's SHA-256, in order. A migration that differs by a byte from what databases applied
    /// fails here: append a new one instead (and its digest here).
    const RELEASED: [(&str, &str); 14] = [
        ("sqlite/0001_first", "f9455d8b747853daecad6dd7842cced43e7c4039fabe0ca4986fc3711aa8b586"),
        ("sqlite/0002_copies_times_and_inputs", "d4b22038cf08656ad6cae38b048f02c11f05a1d490c6ac6425cb6eb3b940b532"),
        ("sqlite/0003_usage_and_evals", "937342207f962fb42930a0f39f7a1f6342783a896bc5f5c0444158427c2333c9"),
        ("sqlite/0004_child_runs", "f8237de8e7aef164de5485258b2b7a226d74403a73458fcf5f6948746defc209"),
        ("postgres/0001_runs_events_inputs", "43a7c50a1ab9d8b3e13ec2a7722b4b36726451baf5dfa5bea7c4808c3d6264db"),
        ("postgres/0002_usage_and_evals", "f643b98d00059894292d87413e5d882d1b92d15fa1f5ff2ac5061740c228a570"),
        ("postgres/0003_team", "0b7846ece0399b83c8ecc677fd23ac1e8244c4729526f28d1dc0f0263c4491b8"),
        ("postgres/0004_token_scopes", "18c311309a9b022a67758a738f86751857802983b3bdd2b6d7c7e9f6f34113b6"),
        ("postgres/0005_keys_outlive_runs", "7d8c60dd4bbbeef04a4eda45d3eb66fcd1fa54eb597a47b9972b88cafbf58d61"),
        ("postgres/0006_identities", "acd802149fda132932e4877c603da85f7445c605bbafcaa81023ae90105372d3"),
        ("postgres/0007_run_versions", "fb2f86125836ff3826d2edbbbc55ed348219263340e24883a6f14eed0642d489"),
        ("postgres/0008_queues", "a13425accb0369e43ab308aab2b4babf52ebde3d1145f6087438d7ef05df00df"),
        ("postgres/0009_worker_leases", "4c773cb68328400f6bc5eb2de1963f73a52cbfc55d2a7d3e514b202370272266"),
        ("postgres/0010_child_runs", "a2cb10cab284e4f6deb9fdf342cbe86bd3123fabcc3b27844ef32a0d54f81868"),
    ];

    #[test]
    fn released_migrations_are_byte_for_byte_what_databases_applied() {
        let embedded: Vec<(String, String)> = [("sqlite", SQLITE), ("postgres", POSTGRES)]
            .iter()
            .flat_map(|(dir, list)| list.iter().map(move |m| (format!("{dir}/{}", m.name), m.sql)))
            .map(|(name, sql)| (name, Sha256::digest(sql.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()))
            .collect();
        for (at, (name, digest)) in RELEASED.iter().enumerate() {
            assert_eq!(embedded.get(at).map(|(n, d)| (n.as_str(), d.as_str())), Some((*name, *digest)), "{name}");
        }
    }

    #[test]
    fn a_database_gets_the_migrations_after_its_version_in_order_and_a_newer_one_none() {
        let all = plan(SQLITE, 0).unwrap();
        assert_eq!(all.steps.iter().map(|(v, m)| (*v, m.name)).collect::<Vec<_>>()[0], (1, "0001_first"));
        assert_eq!((all.from, all.to, all.steps.len()), (0, 4, 4));
        let rest = plan(SQLITE, 2).unwrap();
        assert_eq!(rest.steps.iter().map(|(v, _)| *v).collect::<Vec<_>>(), [3, 4]);
        assert!(plan(POSTGRES, latest(POSTGRES)).unwrap().is_empty());
        assert_eq!(plan(SQLITE, 5).unwrap_err(), Newer { found: 5, known: 4 });
    }
}
