//! Finding runs (`Store::find`, `Store::resolve`): pages newest first by keyset, filters by status, workflow, time
//! and id prefix, and short ids — the same rows in the same order from the SQLite store and from PostgreSQL (a real
//! server: `support/pg_cluster.rs`).

mod support;

use std::sync::Arc;

use serde_json::json;
use support::*;
use switchyard_engine::log::LogItem;
use switchyard_engine::result::RunStatus;
use switchyard_engine::run::RunOptions;
use switchyard_engine::store::{
    parse_instant_at, parse_status, Claim, NewRun, RunQuery, RunRow, RunStore, Store, StoredStatus,
};

/// 24 runs, ids `ab0000-run`, `cd0001-run`, …; even ones of workflow `alpha`, odd ones of `beta`; completed, failed
/// or paused in turn; and one more, `held-run`, still running (its claim is returned, to hold it).
fn fill(store: &Arc<dyn Store>) -> Claim {
    let options = RunOptions { input: Some(json!({"n": 1})), ..RunOptions::default() };
    for i in 0..24 {
        let name = if i % 2 == 0 { "alpha" } else { "beta" };
        let wf = workflow(&format!("switchyard: 1\nname: {name}\nnodes:\n  - {{id: start, type: start}}\n"));
        let id = format!("{}{i:04}-run", if i % 2 == 0 { "ab" } else { "cd" });
        let run = NewRun {
            id: &id,
            workflow: &wf,
            workflow_ref: None,
            answers_path: None,
            options: &options,
            eval_id: None,
            origin: Default::default(),
            version: None,
        };
        let claim = store.create(&run).unwrap();
        let status = [RunStatus::Completed, RunStatus::Failed, RunStatus::Paused][i % 3];
        let pending = if status == RunStatus::Paused { vec!["ok".to_string()] } else { vec![] };
        store.clone().run_log(&claim).write_batch(&id, &[LogItem::Status { status, pending }]).unwrap();
    }
    let wf = workflow("switchyard: 1\nname: alpha\nnodes:\n  - {id: start, type: start}\n");
    let run = NewRun {
        id: "held-run",
        workflow: &wf,
        workflow_ref: None,
        answers_path: None,
        options: &options,
        eval_id: None,
        origin: Default::default(),
        version: None,
    };
    store.create(&run).unwrap()
}

fn ids(rows: &[RunRow]) -> Vec<String> {
    rows.iter().map(|r| r.id.clone()).collect()
}

/// Every page of `query`, `size` runs at a time, each after the last run of the page before.
fn paged(store: &Arc<dyn Store>, query: &RunQuery, size: usize) -> Vec<String> {
    let mut all = Vec::new();
    let mut query = RunQuery { limit: size, ..query.clone() };
    loop {
        let page = store.find(&query).unwrap();
        assert!(page.len() <= size, "a page holds at most its limit");
        all.extend(ids(&page));
        if page.len() < size {
            return all;
        }
        query.before = page.last().map(|r| r.id.clone());
    }
}

fn every_finding(store: Arc<dyn Store>) {
    let _held = fill(&store);
    let all = store.list().unwrap();
    assert_eq!(all.len(), 25);
    assert_eq!(ids(&store.find(&RunQuery::page(usize::MAX)).unwrap()), ids(&all), "find lists as list does");
    assert_eq!(all[0].id, "held-run", "newest first");

    // Pages of every size tell the whole list, in order, once.
    for size in [1, 7, 25, 100] {
        assert_eq!(paged(&store, &RunQuery::page(usize::MAX), size), ids(&all), "pages of {size}");
    }

    // Filters, alone and together, paged: the runs of the whole list that match, in its order.
    let status = |s: &[StoredStatus]| RunQuery { status: s.to_vec(), ..RunQuery::page(usize::MAX) };
    let failed_alpha = RunQuery { workflow: Some("alpha".into()), ..status(&[StoredStatus::Failed]) };
    let expected: Vec<String> = ids(&all)
        .into_iter()
        .zip(&all)
        .filter(|(_, r)| r.status == StoredStatus::Failed && r.workflow == "alpha")
        .map(|(id, _)| id)
        .collect();
    assert_eq!(expected.len(), 4, "runs 4, 10, 16 and 22");
    assert_eq!(paged(&store, &failed_alpha, 3), expected);
    let paused_or_completed = status(&[StoredStatus::Paused, StoredStatus::Completed]);
    assert_eq!(paged(&store, &paused_or_completed, 5).len(), 16);
    assert_eq!(ids(&store.find(&status(&[StoredStatus::Running])).unwrap()), ["held-run"], "held: running");
    assert!(store.find(&status(&[StoredStatus::Interrupted])).unwrap().is_empty(), "nothing is interrupted");
    assert_eq!(
        store.find(&RunQuery { workflow: Some("beta".into()), ..RunQuery::page(usize::MAX) }).unwrap().len(),
        12
    );
    // A workflow's name in any case, as people type it, names the same runs.
    assert_eq!(
        store.find(&RunQuery { workflow: Some("BETA".into()), ..RunQuery::page(usize::MAX) }).unwrap().len(),
        12
    );

    // Time: since a run's start lists it and every run after it; until, the others.
    let at = chrono::DateTime::parse_from_rfc3339(&all[10].started).unwrap().with_timezone(&chrono::Utc);
    let started = |r: &RunRow| chrono::DateTime::parse_from_rfc3339(&r.started).unwrap();
    let since = store.find(&RunQuery { since: Some(at), ..RunQuery::page(usize::MAX) }).unwrap();
    let until = store.find(&RunQuery { until: Some(at), ..RunQuery::page(usize::MAX) }).unwrap();
    assert_eq!(ids(&since), ids(&all.iter().filter(|r| started(r) >= at).cloned().collect::<Vec<_>>()));
    assert_eq!(since.len() + until.len(), all.len(), "since and until split the list");
    assert!(ids(&since).contains(&all[10].id));

    // Id prefixes.
    let prefixed = store.find(&RunQuery { id_prefix: Some("ab00".into()), ..RunQuery::page(usize::MAX) }).unwrap();
    assert_eq!(prefixed.len(), 12, "ab0000 … ab0022");
    let narrower = RunQuery { id_prefix: Some("ab001".into()), ..RunQuery::page(usize::MAX) };
    assert_eq!(
        ids(&store.find(&narrower).unwrap()),
        ["ab0018-run", "ab0016-run", "ab0014-run", "ab0012-run", "ab0010-run"]
    );
    assert!(prefixed.iter().all(|r| r.id.starts_with("ab00")));
    assert_eq!(store.resolve("cd0005-run").unwrap(), "cd0005-run", "a whole id");
    assert_eq!(store.resolve("cd0005").unwrap(), "cd0005-run", "a short id names the run it begins");
    let ambiguous = store.resolve("cd00").unwrap_err();
    assert_eq!(ambiguous.code(), "AMBIGUOUS_RUN_ID");
    let message = ambiguous.to_string();
    assert!(message.contains("cd0023-run") && message.contains('…') && message.contains("cd00"), "{message}");
    assert_eq!(store.resolve("zz").unwrap_err().code(), "NO_SUCH_RUN");
    assert_eq!(store.resolve("").unwrap_err().code(), "NO_SUCH_RUN", "an empty id names no run");

    // History's search: an id's beginning, or the workflow's name or file anywhere in it, in any case.
    let search = |text: &str| RunQuery { search: Some(text.into()), ..RunQuery::page(usize::MAX) };
    let alpha = store.find(&search("LPH")).unwrap();
    assert_eq!(alpha.len(), 13, "12 runs of alpha and the held one");
    assert!(alpha.iter().all(|r| r.workflow == "alpha"));
    assert_eq!(ids(&store.find(&search("AB001")).unwrap()), ids(&store.find(&narrower).unwrap()));
    assert!(store.find(&search("run")).unwrap().is_empty(), "an id matches from its start only");
    assert_eq!(store.find(&search("a")).unwrap().len(), all.len(), "ab… ids, alpha and beta");
    let failed_beta = RunQuery { status: vec![StoredStatus::Failed], ..search("bet") };
    let found = store.find(&failed_beta).unwrap();
    assert!(!found.is_empty() && found.iter().all(|r| r.workflow == "beta" && r.status == StoredStatus::Failed));
    assert_eq!(paged(&store, &search("bet"), 5), ids(&store.find(&search("bet")).unwrap()), "searches page too");

    // A page after a run that is not there is refused, not an empty page (which would say "no more").
    let lost = RunQuery { before: Some("gone".into()), ..RunQuery::page(10) };
    assert_eq!(store.find(&lost).unwrap_err().code(), "NO_SUCH_RUN");
}

/// A workflow's runs with their child runs: `parent-run` of `top` runs `kid-run` (node `fan`) of `kid`, which runs
/// `grand-run` (node `inner`) of `grand`; `other-run` of `grand` is nobody's child.
fn family(store: Arc<dyn Store>) {
    let wf = |name: &str| workflow(&format!("switchyard: 1\nname: {name}\nnodes:\n  - {{id: start, type: start}}\n"));
    let mut claims = Vec::new();
    for (id, name, parent) in [
        ("parent-run", "top", None),
        ("kid-run", "kid", Some(("parent-run", "fan"))),
        ("grand-run", "grand", Some(("kid-run", "inner"))),
        ("other-run", "grand", None),
    ] {
        // The grandchild is the third item of its parent's `for_each`.
        let link = parent.map(|(run, node): (&str, &str)| switchyard_engine::run::ParentLink {
            run: run.into(),
            node: node.into(),
            iteration: 1,
            item: (node == "inner").then_some(2),
            call: None,
        });
        let options = RunOptions { parent: link, ..RunOptions::default() };
        let wf = wf(name);
        let run = NewRun {
            id,
            workflow: &wf,
            workflow_ref: None,
            answers_path: None,
            options: &options,
            eval_id: None,
            origin: Default::default(),
            version: None,
        };
        claims.push(store.create(&run).unwrap());
    }
    let of = |workflow: &str, with_children: bool| {
        let query = RunQuery { workflow: Some(workflow.into()), with_children, ..RunQuery::page(usize::MAX) };
        let mut found = ids(&store.find(&query).unwrap());
        found.sort();
        found
    };
    assert_eq!(of("top", false), ["parent-run"]);
    assert_eq!(of("top", true), ["grand-run", "kid-run", "parent-run"], "its children at any depth");
    assert_eq!(of("kid", true), ["grand-run", "kid-run"], "a child's own children");
    assert_eq!(of("grand", true), ["grand-run", "other-run"], "a run's own workflow, nothing above it");
    // Each row names its parent and the node there.
    let kid = store.find(&RunQuery { id_prefix: Some("kid".into()), ..RunQuery::page(1) }).unwrap();
    let parent = kid[0].parent.as_ref().expect("a child names its parent");
    assert_eq!((parent.run.as_str(), parent.node.as_str()), ("parent-run", "fan"));
    assert_eq!(parent.at(), "fan");
    let grand = store.find(&RunQuery { id_prefix: Some("grand".into()), ..RunQuery::page(1) }).unwrap();
    assert_eq!(grand[0].parent.as_ref().map(|p| (p.item, p.at())), Some((Some(2), "inner[2]".to_string())));
    let top = store.find(&RunQuery { id_prefix: Some("parent".into()), ..RunQuery::page(1) }).unwrap();
    assert_eq!(top[0].parent, None);
    // Paged, a family is the same runs in the same order as in one page.
    let query = RunQuery { workflow: Some("top".into()), with_children: true, ..RunQuery::page(usize::MAX) };
    assert_eq!(paged(&store, &query, 1), ids(&store.find(&query).unwrap()));
}

#[test]
fn a_workflows_runs_are_listed_with_their_child_runs_at_any_depth_when_asked_in_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    family(Arc::new(RunStore::open(&dir.path().join("runs.db")).unwrap()));
}

#[cfg(feature = "postgres")]
#[test]
fn a_workflows_runs_are_listed_with_their_child_runs_at_any_depth_when_asked_in_postgres() {
    use switchyard_engine::store::postgres::PgStore;
    family(Arc::new(PgStore::open(&pg_cluster::database("run_families")).unwrap()));
}

#[test]
fn the_sqlite_store_pages_filters_and_resolves_short_ids() {
    let dir = tempfile::tempdir().unwrap();
    every_finding(Arc::new(RunStore::open(&dir.path().join("runs.db")).unwrap()));
}

#[cfg(feature = "postgres")]
#[path = "support/pg_cluster.rs"]
mod pg_cluster;

#[cfg(feature = "postgres")]
#[test]
fn the_postgres_store_pages_filters_and_resolves_short_ids_as_sqlite_does() {
    use switchyard_engine::store::postgres::PgStore;
    every_finding(Arc::new(PgStore::open(&pg_cluster::database("run_queries")).unwrap()));
}

#[test]
fn statuses_and_times_are_read_as_flags_and_queries_give_them() {
    let now = chrono::DateTime::parse_from_rfc3339("2026-11-28T12:00:00Z").unwrap().with_timezone(&chrono::Utc);
    let at = |t: &str| parse_instant_at(t, now).map(|t| t.to_rfc3339());
    assert_eq!(at("2h").unwrap(), "2026-11-28T10:00:00+00:00");
    assert_eq!(at("7d").unwrap(), "2026-11-21T12:00:00+00:00");
    assert_eq!(at("2026-11-27").unwrap(), "2026-11-27T00:00:00+00:00");
    assert_eq!(at("2026-11-28T13:00:00+02:00").unwrap(), "2026-11-28T11:00:00+00:00");
    for bad in ["yesterday", "2x", "", "-3h", "99999999999999999d"] {
        assert!(at(bad).is_err(), "{bad:?} is refused");
    }
    assert_eq!(parse_status("interrupted"), Ok(StoredStatus::Interrupted));
    assert!(parse_status("done").unwrap_err().0.contains("completed"), "a wrong status names the right ones");
}
