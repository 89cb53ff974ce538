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
    top_level(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))
}

/// The document crate (`crates/document`): the model, formats and validation, below the run.
fn document_src() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../document/src")
}

/// The run crate (`crates/run`): the run's vocabulary, its log and the executor, below the engine.
fn run_src() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../run/src")
}

/// The top-level modules of the crate whose sources are in `src`, and the ones each uses: its own, and those of the
/// crates below that its `lib.rs` re-exports under their names (`pub use switchyard_document::{document, …}`), so
/// that `crate::format` in the run crate is a use of `format`.
fn top_level(src: &Path) -> Graph {
    let mut graph = Graph::new();
    collect(src, None, &mut graph);
    let modules: BTreeSet<String> = graph.keys().cloned().chain(reexported(src)).collect();
    for uses in graph.values_mut() {
        uses.retain(|m| modules.contains(m));
    }
    graph
}

/// The modules of other crates `src/lib.rs` re-exports: the names in `pub use switchyard_…::{a, b};`.
fn reexported(src: &Path) -> BTreeSet<String> {
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    let mut names = BTreeSet::new();
    for (at, _) in lib.match_indices("pub use switchyard_") {
        let rest = &lib[at..];
        let statement = &rest[..rest.find(';').unwrap_or(rest.len())];
        if let Some(group) = statement.split_once("::{").map(|(_, g)| g.trim_end_matches('}')) {
            names.extend(group.split(',').map(str::trim).filter(|n| !n.is_empty()).map(String::from));
        }
    }
    names
}

/// The three crates of the engine, lowest first, with their sources.
fn crates() -> [(&'static str, std::path::PathBuf); 3] {
    [("document", document_src()), ("run", run_src()), ("engine", Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))]
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

/// Reads one path's use tree at the start of `text` (after `prefix::`): `a::b`, `a::{b, c::{self, D}}`, adding each
/// path it names to `out`; returns how far it read.
fn use_tree(text: &str, prefix: &[String], out: &mut Vec<Vec<String>>) -> usize {
    let ident = |s: &str| s.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(s.len());
    let skip = |s: &str, at: usize| at + s[at..].len() - s[at..].trim_start_matches([' ', '\n', '\t', ',']).len();
    if text.starts_with('{') {
        let mut at = 1;
        loop {
            at = skip(text, at);
            if at >= text.len() || text[at..].starts_with('}') {
                return at + 1;
            }
            let read = use_tree(&text[at..], prefix, out);
            if read == 0 {
                // Not a path (`*`, `r#x`): step over it.
                at += text[at..].chars().next().map_or(1, char::len_utf8);
            }
            at += read;
        }
    }
    let end = ident(text);
    if end == 0 {
        return 0;
    }
    let mut path = prefix.to_vec();
    path.push(text[..end].to_string());
    match text[end..].strip_prefix("::") {
        Some(rest) if !rest.starts_with('<') => end + 2 + use_tree(rest, &path, out),
        _ => {
            out.push(path);
            end
        }
    }
}

/// The module (segments) each path in `text` names, read from inside module `me` whose child modules are `children`:
/// `crate::a::b`, `super::c`, `self::d`, `child::e`, grouped or not. Paths are as written; which module they land in
/// is `deep_engine`'s to say.
fn named_paths(text: &str, me: &[String], children: &BTreeSet<String>) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut at = 0;
    while at < text.len() {
        let rest = &text[at..];
        let Some(c) = rest.chars().next() else { break };
        let before = text[..at].chars().next_back();
        if !(is_ident(c) && before.is_none_or(|b| !is_ident(b) && b != ':')) {
            at += c.len_utf8();
            continue;
        }
        let end = rest.find(|c: char| !is_ident(c)).unwrap_or(rest.len());
        let head = &rest[..end];
        let Some(after) = rest[end..].strip_prefix("::") else {
            at += end;
            continue;
        };
        let mut base: Vec<String> = match head {
            "crate" => Vec::new(),
            "self" => me.to_vec(),
            "super" => me[..me.len().saturating_sub(1)].to_vec(),
            child if children.contains(child) => [me, &[child.to_string()]].concat(),
            _ => {
                at += end;
                continue;
            }
        };
        let mut after = after;
        while let Some(more) = after.strip_prefix("super::") {
            base.pop();
            after = more;
        }
        let read = use_tree(after, &base, &mut out);
        if head != "crate" && head != "self" && head != "super" && read == 0 {
            out.push(base);
        }
        at = text.len() - after.len() + read.max(1);
    }
    out
}

/// Every engine module at any depth (`eval`, `eval::runner`, `run::state::routing`) and the modules it uses, other
/// than its own submodules (a module is made of them: its children use it and each other, never back).
fn deep_engine() -> Graph {
    modules_under(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))
}

/// The modules of the crate whose sources are in `src`, at any depth, and the modules each uses.
fn modules_under(src: &Path) -> Graph {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut modules: BTreeMap<String, String> = BTreeMap::new();
    for path in &files {
        let relative = path.strip_prefix(src).unwrap().to_string_lossy().replace('\\', "/");
        if relative == "lib.rs" {
            continue;
        }
        // Every module is where its path says (no `#[path]` in the engine's sources: see the test below).
        let name = relative.trim_end_matches(".rs").trim_end_matches("/mod").replace('/', "::");
        let text = std::fs::read_to_string(path).unwrap();
        let code: String = without_tests(&text)
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .map(|l| format!("{l}\n"))
            .collect();
        modules.insert(name, code);
    }
    let mut graph = Graph::new();
    for (module, code) in &modules {
        let me: Vec<String> = module.split("::").map(String::from).collect();
        let children: BTreeSet<String> = code
            .lines()
            .filter_map(|l| {
                let l = l.trim_start();
                let l = l.strip_prefix("pub ").or_else(|| l.strip_prefix("pub(crate) ")).unwrap_or(l);
                let name = l.strip_prefix("mod ")?.strip_suffix(';')?;
                Some(name.trim().to_string())
            })
            .collect();
        let uses = graph.entry(module.clone()).or_default();
        for path in named_paths(code, &me, &children) {
            // The longest prefix that is a module: `eval::runner::run` is in `eval::runner`, `crate::Workflow` in none.
            let found = (1..=path.len()).rev().map(|n| path[..n].join("::")).find(|m| modules.contains_key(m));
            if let Some(used) = found {
                if used != *module && !used.starts_with(&format!("{module}::")) {
                    uses.insert(used);
                }
            }
        }
    }
    graph
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
    for (name, src) in crates() {
        let graph = top_level(&src);
        assert!(graph.len() >= 7, "the {name} crate's modules were not found: {graph:?}");
        let cycles: Vec<String> =
            graph.keys().filter_map(|m| cycle_through(&graph, m)).map(|c| c.join(" → ")).collect();
        assert!(cycles.is_empty(), "modules that use each other in a circle:\n{}", cycles.join("\n"));
    }
}

#[test]
fn the_submodule_reader_resolves_super_self_children_and_nested_groups() {
    let me = ["eval".to_string(), "runner".to_string()];
    let children = BTreeSet::from(["inner".to_string()]);
    let text = "use super::{check::{self, Failure}, file::X};\nuse crate::a::{b, c::D};\nlet x = super::judge::f();\n\
                inner::g(); self::h::I; super::super::top::J; std::fs::read(); other::inner::k(); Vec::<u8>::new();";
    let paths: Vec<String> = named_paths(text, &me, &children).iter().map(|p| p.join("::")).collect();
    assert_eq!(
        paths,
        [
            "eval::check::self",
            "eval::check::Failure",
            "eval::file::X",
            "a::b",
            "a::c::D",
            "eval::judge::f",
            "eval::runner::inner::g",
            "eval::runner::h::I",
            "top::J",
        ]
    );
    let graph = deep_engine();
    let uses = |m: &str| graph.get(m).cloned().unwrap_or_default();
    assert!(uses("eval::runner").contains("eval::judge"), "{:?}", uses("eval::runner"));
    let run = modules_under(&run_src());
    assert!(run["run::state::routing"].contains("result"), "{:?}", run["run::state::routing"]);
    let document = modules_under(&document_src());
    assert!(document["format::sweny"].contains("document"), "{:?}", document["format::sweny"]);
    assert!(uses("store::postgres").contains("store"), "the PostgreSQL store is part of `store`");
    assert!(!uses("eval").contains("eval::runner"), "a module's own submodules are not uses");
}

#[test]
fn every_engine_module_is_in_the_file_its_path_names() {
    // The submodule reader names a module after its file; a `#[path]` would mount a file under another name (the
    // PostgreSQL store was `crate::postgres` kept in `store/postgres.rs`), and the layers it checks would be wrong.
    let mut files = Vec::new();
    for (_, src) in crates() {
        rust_files(&src, &mut files);
    }
    let mounted: Vec<String> = files
        .iter()
        .filter(|f| std::fs::read_to_string(f).unwrap().lines().any(|l| l.trim_start().starts_with("#[path")))
        .map(|f| f.display().to_string())
        .collect();
    assert!(mounted.is_empty(), "files that mount a module with #[path]: {mounted:?}");
}

#[test]
fn a_circle_between_two_submodules_is_found_though_their_parents_use_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::create_dir(src.join("eval")).unwrap();
    for (file, text) in [
        ("lib.rs", "pub mod eval;\npub mod session;"),
        ("session.rs", "pub fn run() {}"),
        ("eval/mod.rs", "pub mod judge;\npub mod runner;\npub use runner::run;"),
        ("eval/runner.rs", "use super::judge::judge_all;\nuse crate::session;"),
        ("eval/judge.rs", "use super::{check, runner::CaseError};"),
    ] {
        std::fs::write(src.join(file), text).unwrap();
    }
    let graph = modules_under(src);
    assert_eq!(graph["eval"], BTreeSet::new(), "the parent uses none but its own submodules");
    let cycles: Vec<Vec<String>> = graph.keys().filter_map(|m| cycle_through(&graph, m)).collect();
    assert_eq!(
        cycles,
        [["eval::judge", "eval::runner", "eval::judge"], ["eval::runner", "eval::judge", "eval::runner"]]
            .map(|c| c.map(String::from).to_vec())
    );
}

#[test]
fn no_engine_module_at_any_depth_uses_a_module_that_uses_it_back() {
    let deepest = [("document", "validate::triggers"), ("run", "run::state::routing"), ("engine", "store::postgres")];
    for ((name, src), (_, deep)) in crates().into_iter().zip(deepest) {
        let graph = modules_under(&src);
        assert!(graph.keys().any(|m| m == deep), "the {name} crate's submodules were not found: {graph:?}");
        let cycles: Vec<String> =
            graph.keys().filter_map(|m| cycle_through(&graph, m)).map(|c| c.join(" → ")).collect();
        assert!(
            cycles.is_empty(),
            "modules that use each other in a circle (move what both need to a module both use):\n{}",
            cycles.join("\n")
        );
    }
}

#[test]
fn the_layers_know_nothing_of_the_layers_above_them() {
    // Reading files knows nothing of running them: the document, its formats, the node types, the graph, templates
    // and validation are the crate `switchyard-document`, which the engine depends on, so Cargo refuses any use of
    // the engine from them. Inside it, the document model and templates use nothing; the formats read into the model
    // and know nothing of validation.
    let document = top_level(&document_src());
    let in_document = |m: &str| document.get(m).cloned().unwrap_or_else(|| panic!("no module `{m}` in the document"));
    for (module, allowed) in [
        ("document", &[][..]),
        ("template", &[]),
        ("language", &[]),
        ("node_types", &["document"]),
        ("graph", &["document", "node_types"]),
        ("format", &["document", "graph", "language"]),
    ] {
        let extra: Vec<String> = in_document(module).into_iter().filter(|u| !allowed.contains(&u.as_str())).collect();
        assert!(extra.is_empty(), "`{module}` may use only {allowed:?}, but uses {extra:?}");
    }
    let manifest = std::fs::read_to_string(document_src().join("../Cargo.toml")).unwrap();
    for above in ["tokio", "reqwest", "rusqlite", "rmcp", "mlua", "tokio-postgres"] {
        assert!(
            !manifest.lines().any(|l| l.trim_start().starts_with(above)),
            "the document crate depends on {above}: reading a file runs nothing, keeps nothing, calls no one"
        );
    }

    // The run knows nothing of where runs are kept, which providers exist, or how a shell asked for the run: the
    // run's vocabulary, its log, the model interface, code steps, MCP tools and the executor are the crate
    // `switchyard-run`, below the engine, so Cargo refuses any use of `store`, `session`, `providers`, `eval` or
    // `worker` from them. Inside it:
    let run = top_level(&run_src());
    let in_run = |m: &str| run.get(m).cloned().unwrap_or_else(|| panic!("no module `{m}` in the run crate"));
    let only = |m: &str, allowed: &[&str]| {
        let extra: Vec<String> = in_run(m).into_iter().filter(|u| !allowed.contains(&u.as_str())).collect();
        assert!(extra.is_empty(), "`{m}` may use only {allowed:?}, but uses {extra:?}");
    };
    // The leaves know nothing of running.
    only("files", &[]);
    only("net", &[]);
    // The run's vocabulary: results, events, and the inputs a run records, over the document only.
    only("result", &["document"]);
    only("events", &["document", "result"]);
    only("record", &["document", "result", "events", "journal"]);
    // The journal of node tasks is vocabulary too: what a model turn, a tool call or a model call answered.
    only("journal", &["result"]);
    // Keeping and delivering events knows the vocabulary, nothing of the executor.
    only("log", &["events", "record", "result", "journal"]);
    // The executor reads no files: it is given the document.
    assert!(!in_run("run").contains("format"), "`run` uses `format`");
    // Recorded calls are a model over a model: they know the model interface, the results and what a call answered
    // (the journal's vocabulary), nothing else.
    only("recorded", &["model", "result", "journal"]);
    let manifest = std::fs::read_to_string(run_src().join("../Cargo.toml")).unwrap();
    for above in ["rusqlite", "tokio-postgres"] {
        assert!(
            !manifest.lines().any(|l| l.trim_start().starts_with(above)),
            "the run crate depends on {above}: the executor is given a log, it keeps no runs"
        );
    }

    let graph = engine();
    let uses = |m: &str| graph.get(m).cloned().unwrap_or_default();
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
    let dir = run_src().join("run/state");
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

#[test]
fn the_server_and_the_commands_await_their_store_and_block_no_thread() {
    // The server's store is async at its core (PostgreSQL), and the commands ask their host for stored runs: neither
    // wraps a blocking call. Only the desktop's host runs its SQLite store's calls off the runtime's threads.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = Vec::new();
    rust_files(&root.join("crates/server/src"), &mut files);
    let server = files.len();
    rust_files(&root.join("crates/api/src"), &mut files);
    assert!(server >= 5 && files.len() > server + 3, "the server's and the commands' sources were not found");
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        for blocking in ["spawn_blocking", "block_in_place", "block_on", ".wait()"] {
            assert!(!text.contains(blocking), "{} calls `{blocking}`", path.display());
        }
    }
}

/// The top-level parts of a generic argument list, split at commas outside `<…>`, `(…)` and `[…]`.
fn generic_arguments(text: &str) -> Vec<&str> {
    let (mut parts, mut depth, mut start) = (Vec::new(), 0i32, 0);
    for (i, c) in text.char_indices() {
        match c {
            '<' | '(' | '[' => depth += 1,
            '>' | ')' | ']' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(text[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(text[start..].trim());
    parts
}

/// The public functions (and commands: `#[tauri::command]`) in `text` whose return type is `Result<…, String>`, by
/// name. A `Result<…, String>` inside another type (a tool's answer in `Option<…>`) is data, not the function's error.
fn bare_string_errors(text: &str) -> Vec<String> {
    let code = without_tests(text);
    let mut found = Vec::new();
    let lines: Vec<&str> = code.lines().collect();
    for (at, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        let command =
            at > 0 && lines[..at].iter().rev().take(3).any(|l| l.trim_start().starts_with("#[tauri::command"));
        let rest = match trimmed.strip_prefix("pub ") {
            Some(rest) => rest,
            None if command => trimmed,
            None => continue,
        };
        let rest = rest.trim_start_matches("const ").trim_start_matches("async ").trim_start_matches("unsafe ");
        let Some(rest) = rest.strip_prefix("fn ") else { continue };
        let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        // The signature runs past its generics and parameters to the body or the `;` of a declaration, over as many
        // lines as it takes.
        let from = lines[..at].iter().map(|l| l.len() + 1).sum::<usize>() + line.find("fn ").unwrap() + 3 + name.len();
        let Some(after) = past_brackets(&code[from..]) else { continue };
        let tail = &code[from + after..];
        let signature = &tail[..tail.find(['{', ';']).unwrap_or(tail.len())];
        let Some(returned) = signature.trim_start().strip_prefix("->") else { continue };
        let returned = returned.split_whitespace().collect::<Vec<_>>().join(" ");
        let returned = returned.split(" where ").next().unwrap_or(&returned);
        let returned = returned.strip_prefix("std::result::").unwrap_or(returned);
        let Some(arguments) = returned.strip_prefix("Result<").and_then(|r| r.strip_suffix('>')) else { continue };
        if let [_, error] = generic_arguments(arguments)[..] {
            if error == "String" || error == "std::string::String" {
                found.push(name);
            }
        }
    }
    found
}

/// How far past a function's generics (`<…>`, if any) and parameters (`(…)`) `text` goes, starting at the first.
fn past_brackets(text: &str) -> Option<usize> {
    let mut depth = 0i32;
    let mut previous = ' ';
    for (i, c) in text.char_indices() {
        match c {
            '<' | '(' | '[' => depth += 1,
            '>' if previous == '-' => {}
            '>' | ']' => depth -= 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
        previous = c;
    }
    None
}

fn rust_files(dir: &Path, into: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, into);
        } else if path.extension().is_some_and(|e| e == "rs") && path.file_stem().is_some_and(|s| s != "tests") {
            into.push(path);
        }
    }
}

#[test]
fn the_error_reader_sees_bare_string_errors_in_any_signature() {
    let text = "pub fn a() -> Result<u8, String> {}\nfn b() -> Result<u8, String> {}\npub async fn c(\n    x: u8,\n) \
                -> Result<Vec<(u8, u8)>, String>\nwhere u8: Copy {}\npub fn d() -> Result<u8, Error> {}\npub fn e() -> \
                Option<Result<u8, String>> {}\n#[tauri::command]\n#[specta::specta]\nasync fn f() -> Result<(), String> \
                {}\npub fn h<F: Fn() -> u8>(f: F) -> Result<u8, String>;\npub fn i(f: impl Fn() -> Result<u8, \
                String>) {}\npub(crate) fn j() -> Result<u8, String> {}\n#[cfg(test)]\nmod tests {\n pub fn g() -> \
                Result<u8, String> {}\n}";
    assert_eq!(bare_string_errors(text), ["a", "c", "f", "h"]);
}

#[test]
fn no_public_engine_function_or_command_returns_a_bare_string_error() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap();
    let mut files = Vec::new();
    for (_, src) in crates() {
        rust_files(&src, &mut files);
    }
    let engine = files.len();
    assert!(engine > 60, "the engine's and the document's sources were not found");
    // The commands (`crates/api`), their desktop shell, and the server (which answers them over HTTP) with its API.
    rust_files(&root.join("crates/api/src"), &mut files);
    rust_files(&root.join("src-tauri/src"), &mut files);
    rust_files(&root.join("crates/server/src"), &mut files);
    let mut found = Vec::new();
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        for name in bare_string_errors(&text) {
            let path = path.canonicalize().unwrap();
            found.push(format!("{} `{name}`", path.strip_prefix(&root).unwrap_or(&path).display()));
        }
    }
    assert!(
        found.is_empty(),
        "these return `Result<_, String>`; give each a typed error (`message_error!` from the document crate's lib.rs, or a \
         thiserror enum where callers branch on the kind):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_commands_know_nothing_of_tauri_or_http() {
    let api = Path::new(env!("CARGO_MANIFEST_DIR")).join("../api");
    let manifest = std::fs::read_to_string(api.join("Cargo.toml")).unwrap();
    for shell in ["tauri", "axum", "reqwest", "hyper", "switchyard-server", "switchyard-app"] {
        assert!(
            !manifest.lines().any(|l| l.trim_start().starts_with(shell)),
            "crates/api depends on {shell}: a command is a plain function over its host"
        );
    }
    let mut files = Vec::new();
    rust_files(&api.join("src"), &mut files);
    assert!(files.len() >= 5, "the commands' sources were not found");
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        for shell in ["tauri::", "axum::", "StatusCode", "reqwest::"] {
            assert!(!text.contains(shell), "{} names {shell}", path.display());
        }
    }
}
