//! One code per failure, the same in the CLI's `--json` and in the window (docs/errors.md). This reads the sources of
//! both shells and of the engine's errors and checks them against the documented table: every code any of them can
//! produce is documented, every documented code is produced, and a code documented for both front ends is reachable
//! from both — made by the engine's errors, which both convert with their own `code()`, or by each shell.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The source of every `.rs` file under `dir`, without `#[cfg(test)]` modules (tests may make up codes).
fn sources(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(sources(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap_or("").to_string();
            out.push((path, code));
        }
    }
    out
}

/// The SCREAMING_SNAKE string literal right after each `call` in `text`: `coded("X"` gives `X`.
fn codes_after(text: &str, call: &str) -> BTreeSet<String> {
    text.match_indices(call)
        .filter_map(|(i, _)| {
            let rest = text[i + call.len()..].trim_start().strip_prefix('"')?;
            let code = &rest[..rest.find('"')?];
            is_code(code).then(|| code.to_string())
        })
        .collect()
}

fn is_code(s: &str) -> bool {
    s.len() > 3 && s.contains('_') && s.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// The codes an error type's `fn code(&self)` returns: the literals in that function's body.
fn error_type_codes(file: &str) -> BTreeSet<String> {
    let text = std::fs::read_to_string(repo().join(file)).unwrap();
    let start = text.find("pub fn code(&self) -> &'static str {").unwrap_or_else(|| panic!("{file} has no `code()`"));
    let body = &text[start..];
    let body = &body[..body.find("\n    }\n").unwrap()];
    body.split('"').skip(1).step_by(2).filter(|s| is_code(s)).map(String::from).collect()
}

/// The codes of docs/errors.md's table of the server's HTTP API (`| 404 | `CODE` | …`).
fn served() -> BTreeSet<String> {
    let text = std::fs::read_to_string(repo().join("docs/errors.md")).unwrap();
    let rows = text.lines().filter(|l| l.starts_with("| 4") || l.starts_with("| 5"));
    let codes: BTreeSet<String> =
        rows.filter_map(|l| l.split('|').nth(2)).map(|c| c.trim().trim_matches('`').to_string()).collect();
    assert!(codes.contains("UNAUTHORIZED"), "the HTTP table of docs/errors.md was not found");
    codes
}

/// The table of docs/errors.md: code → (CLI, app).
fn documented() -> BTreeMap<String, (bool, bool)> {
    let text = std::fs::read_to_string(repo().join("docs/errors.md")).unwrap();
    let mut table = BTreeMap::new();
    for line in text.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let code = cells[1].trim_matches('`').to_string();
        let ticked = |c: &str| c == "✓";
        assert!(table.insert(code.clone(), (ticked(cells[2]), ticked(cells[3]))).is_none(), "`{code}` twice");
    }
    assert!(table.len() > 20, "the table of docs/errors.md was not found");
    table
}

#[test]
fn every_error_code_is_documented_and_the_same_in_the_cli_and_the_app() {
    let engine: BTreeSet<String> = [
        "crates/engine/src/session.rs",
        "crates/engine/src/store/mod.rs",
        "crates/engine/src/store/postgres/mod.rs",
        "crates/engine/src/worker.rs",
        "crates/engine/src/providers/settings.rs",
        "crates/run/src/recorded.rs",
        "crates/server/src/lib.rs",
    ]
    .iter()
    .flat_map(|f| error_type_codes(f))
    .collect();
    // Adding a run as a case is one engine function both shells call (`eval::add_case`): its refusals are its own.
    let add = std::fs::read_to_string(repo().join("crates/engine/src/eval/add.rs")).unwrap();
    let engine: BTreeSet<String> = engine.into_iter().chain(codes_after(&add, "refuse(")).collect();
    assert!(engine.contains("DECISION_REFUSED") && engine.contains("SETTINGS_PARSE_ERROR"), "{engine:?}");
    assert!(engine.contains("RUN_NOT_ENDED"), "{engine:?}");
    let cli_sources = sources(&repo().join("crates/cli/src"));
    // The app's commands are written once in crates/api (with the conversions of the engine's errors), hosted by
    // src-tauri.
    let app_sources: Vec<_> =
        [sources(&repo().join("src-tauri/src")), sources(&repo().join("crates/api/src"))].concat();
    let cli: BTreeSet<String> = cli_sources.iter().flat_map(|(_, t)| codes_after(t, "coded(")).collect();
    let app: BTreeSet<String> = app_sources.iter().flat_map(|(_, t)| codes_after(t, "CommandError::new(")).collect();
    // The commands' crate is the server's too: what only its server host says is documented with the HTTP API.
    let desktop: BTreeSet<String> =
        sources(&repo().join("src-tauri/src")).iter().flat_map(|(_, t)| codes_after(t, "CommandError::new(")).collect();
    let served = served();

    // Both shells turn the engine's errors into their output with the errors' own codes.
    let cli_text: String = cli_sources.iter().map(|(_, t)| t.as_str()).collect();
    let app_text: String = app_sources.iter().map(|(_, t)| t.as_str()).collect();
    assert!(cli_text.contains("impl From<SessionError> for Unusable") && cli_text.contains("e.code()"));
    assert!(cli_text.contains("coded(e.code(), e.to_string())"), "the CLI reports settings errors by their code");
    for error in ["SessionError", "StoreError", "SettingsError"] {
        assert!(app_text.contains(&format!("{error}> for CommandError")), "the app converts {error} by its code");
    }

    let table = documented();
    let mut problems = Vec::new();
    for code in &engine {
        if !matches!(table.get(code), Some((true, _) | (_, true))) {
            problems.push(format!("`{code}` (an engine error's) is not documented"));
        }
    }
    for (code, shell, made) in cli.iter().map(|c| (c, "CLI", true)).chain(app.iter().map(|c| (c, "app", false))) {
        match table.get(code) {
            Some(&(in_cli, in_app)) if (made && in_cli) || (!made && in_app) => {}
            _ if !made && !desktop.contains(code) && served.contains(code) => {}
            _ => problems.push(format!("`{code}` is made by the {shell} but not documented for it")),
        }
    }
    for (code, &(in_cli, in_app)) in &table {
        if in_cli && !engine.contains(code) && !cli.contains(code) {
            problems.push(format!("`{code}` is documented for the CLI, which never reports it"));
        }
        if in_app && !engine.contains(code) && !app.contains(code) {
            problems.push(format!("`{code}` is documented for the app, which never reports it"));
        }
    }
    assert!(problems.is_empty(), "docs/errors.md and the sources disagree:\n{}", problems.join("\n"));
}
