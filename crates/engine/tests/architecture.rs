//! The engine's layering, as ARCHITECTURE.md states it, checked from the source: which top-level module uses which
//! (`crate::x` paths outside test modules), that no module uses one that uses it back, and the invariants
//! ("X knows nothing of Y").

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

type Graph = BTreeMap<String, BTreeSet<String>>;

/// The source without its `#[cfg(test)] mod tests { … }` block (tests may reach anywhere).
fn without_tests(text: &str) -> &str {
    text.split("#[cfg(test)]\nmod tests").next().unwrap_or(text)
}

/// The engine modules each `crate::` path in `text` names: `crate::a::b`, `crate::{a, b::c}`.
fn named_modules(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for (i, _) in text.match_indices("crate::") {
        let rest = &text[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let group = &group[..group.find('}').unwrap_or(group.len())];
            for item in group.split(',') {
                let name: String = item
                    .trim()
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase() || *c == '_' || c.is_ascii_digit())
                    .collect();
                if !name.is_empty() {
                    found.insert(name);
                }
            }
        } else {
            let name: String =
                rest.chars().take_while(|c| c.is_ascii_lowercase() || *c == '_' || c.is_ascii_digit()).collect();
            if !name.is_empty() {
                found.insert(name);
            }
        }
    }
    found
}

fn collect(dir: &Path, top: Option<&str>, graph: &mut Graph) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let stem = path.file_stem().unwrap().to_string_lossy().to_string();
        if path.is_dir() {
            collect(&path, Some(top.unwrap_or(&stem)), graph);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let module = top.unwrap_or(&stem).to_string();
            // `tests.rs` is a `#[cfg(test)] mod tests;` in a file of its own: tests may reach anywhere.
            if module == "lib" || stem == "tests" {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let uses = graph.entry(module.clone()).or_default();
            uses.extend(named_modules(without_tests(&text)).into_iter().filter(|m| *m != module));
        }
    }
}

fn engine() -> Graph {
    let mut graph = Graph::new();
    collect(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), None, &mut graph);
    let modules: BTreeSet<String> = graph.keys().cloned().collect();
    for (module, uses) in graph.iter_mut() {
        // The PostgreSQL store is `crate::postgres` (feature `postgres`), kept in `store/postgres.rs`: part of `store`.
        if uses.remove("postgres") && module != "store" {
            uses.insert("store".to_string());
        }
        uses.retain(|m| modules.contains(m));
    }
    graph
}

/// A path from `from` back to itself, if there is one.
fn cycle_through(graph: &Graph, from: &str) -> Option<Vec<String>> {
    let mut stack = vec![vec![from.to_string()]];
    let mut seen = BTreeSet::new();
    while let Some(path) = stack.pop() {
        let last = path.last().unwrap();
        for next in graph.get(last).into_iter().flatten() {
            if next == from {
                let mut cycle = path.clone();
                cycle.push(from.to_string());
                return Some(cycle);
            }
            if seen.insert(next.clone()) {
                let mut longer = path.clone();
                longer.push(next.clone());
                stack.push(longer);
            }
        }
    }
    None
}

#[test]
fn the_module_reader_sees_plain_and_grouped_paths() {
    let text = "use crate::a::B;\nuse crate::{c, d::E};\nlet x = crate::f::g();";
    assert_eq!(named_modules(text), ["a", "c", "d", "f"].map(String::from).into());
    assert!(named_modules(without_tests("use crate::a;\n#[cfg(test)]\nmod tests {\n use crate::z;\n}")).len() == 1);
    let graph: Graph = [("a", "b"), ("b", "c"), ("c", "a"), ("d", "a")]
        .into_iter()
        .map(|(m, u)| (m.to_string(), BTreeSet::from([u.to_string()])))
        .collect();
    assert_eq!(cycle_through(&graph, "a"), Some(["a", "b", "c", "a"].map(String::from).to_vec()));
    assert_eq!(cycle_through(&graph, "d"), None, "d leads into a circle but is not on it");
}

#[test]
fn no_engine_module_uses_a_module_that_uses_it_back() {
    let graph = engine();
    assert!(graph.len() > 15, "the engine's modules were not found: {graph:?}");
    let cycles: Vec<String> = graph.keys().filter_map(|m| cycle_through(&graph, m)).map(|c| c.join(" → ")).collect();
    assert!(cycles.is_empty(), "modules that use each other in a circle:\n{}", cycles.join("\n"));
}

#[test]
fn the_layers_know_nothing_of_the_layers_above_them() {
    let graph = engine();
    let uses = |m: &str| graph.get(m).cloned().unwrap_or_default();
    let only = |m: &str, allowed: &[&str]| {
        let extra: Vec<String> = uses(m).into_iter().filter(|u| !allowed.contains(&u.as_str())).collect();
        assert!(extra.is_empty(), "`{m}` may use only {allowed:?}, but uses {extra:?}");
    };
    // The document and the leaves know nothing of running.
    only("document", &[]);
    only("files", &[]);
    only("template", &[]);
    only("net", &[]);
    // The run's vocabulary: results, events, and the inputs a run records, over the document only.
    only("result", &["document"]);
    only("events", &["document", "result"]);
    only("record", &["document", "result", "events", "journal"]);
    // The journal of node tasks is vocabulary too: what a model turn, a tool call or a model call answered.
    only("journal", &["result"]);
    // Keeping and delivering events knows the vocabulary, nothing of the executor.
    only("log", &["events", "record", "result", "journal"]);
    // Reading files knows nothing of running them.
    for module in ["format", "validate", "graph", "node_types"] {
        for above in ["run", "log", "store", "session", "providers", "mcp"] {
            assert!(!uses(module).contains(above), "`{module}` uses `{above}`");
        }
    }
    // The executor knows nothing of where runs are kept, which providers exist, or how a shell asked for the run.
    for above in ["store", "session", "providers", "format"] {
        assert!(!uses("run").contains(above), "`run` uses `{above}`");
    }
    // Recorded calls are a model over a model: they know the model interface, the results and what a call answered
    // (the journal's vocabulary), nothing else.
    only("recorded", &["model", "result", "journal"]);
    // Evaluations run through the session, as every front end does; like a front end, they name the store their
    // cases' runs are kept in, and keep their own reports there.
    for above in ["providers", "mcp"] {
        assert!(!uses("eval").contains(above), "`eval` uses `{above}`");
    }
    assert!(uses("eval").contains("session"), "`eval` runs its cases through the session");
    // A worker takes runs from the PostgreSQL store and runs them through the session, as a front end does: it
    // knows nothing of the executor, providers, MCP or files.
    for above in ["run", "providers", "mcp", "format"] {
        assert!(!uses("worker").contains(above), "`worker` uses `{above}`");
    }
    assert!(uses("worker").contains("session"), "`worker` runs its runs through the session");
    // Only the session puts the pieces together; evaluations keep their reports beside the runs, workers take their
    // claims from the store, and the views every shell returns show its rows (they open nothing).
    let users_of_store: Vec<&String> = graph.iter().filter(|(_, u)| u.contains("store")).map(|(m, _)| m).collect();
    assert_eq!(users_of_store, ["eval", "session", "views", "worker"], "only the session opens runs in the store");
    for above in ["run", "session", "providers", "mcp", "worker", "eval", "remote"] {
        assert!(!uses("views").contains(above), "`views` uses `{above}`");
    }
    // The client of a server knows its routes and the events it streams, nothing of running or keeping runs.
    for above in ["run", "session", "store", "worker", "eval"] {
        assert!(!uses("remote").contains(above), "`remote` uses `{above}`");
    }
}

#[test]
fn the_run_state_knows_nothing_of_tasks_clocks_or_the_run_log() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/run/state");
    let mut read = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.file_stem().is_some_and(|s| s == "tests") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let code = without_tests(&text);
        for forbidden in ["tokio", "Instant", "SystemTime", "crate::log", "Emitter", "Utc::now"] {
            assert!(!code.contains(forbidden), "{} mentions `{forbidden}`", path.display());
        }
        read += 1;
    }
    assert!(read >= 5, "the state's files were not found in {}", dir.display());
}
