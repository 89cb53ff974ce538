//! Reading a workflow and saying what is wrong with it: `validate`, `export` and `trust`, and how findings, import
//! notes and hints are printed (grouped, in this command line's words).

use std::path::Path;

use switchyard_engine::code::consent::TrustStore;
use switchyard_engine::format::{self, Format, Loaded};
use switchyard_engine::providers::{self, Settings};
use switchyard_engine::session::{self, WorkflowRef};
use switchyard_engine::validate::{self, Report};

use crate::out::{counted, errln, out, outln, printable};
use crate::{coded, ExportFormat, Unusable};

pub(crate) fn load(file: &Path, format: Option<Format>) -> Result<Loaded, Unusable> {
    let loaded = format::load_file(file, format).map_err(Unusable::from)?;
    print_notes(file, &loaded.notes);
    Ok(loaded)
}

pub(crate) fn settings() -> Result<Settings, Unusable> {
    Settings::load(&Settings::default_path()).map_err(|e| coded(e.code(), e.to_string()))
}

/// What to do about a problem with this code, in this command line's words. The engine's messages state the problem
/// and carry a stable code; what fixes it (a flag, a command) belongs to each front end.
pub(crate) fn hint(code: &str) -> Option<&'static str> {
    Some(match code {
        "NO_MODEL" => "pass --model PROVIDER/MODEL, set default_model in the settings, or start a local model server (or point $SWITCHYARD_LOCAL_URL at one)",
        "CODE_NEEDS_CONSENT" => "run with --allow-code, or `switchyard trust FILE` once for this version of its code",
        "UNKNOWN_PROVIDER" => "add the provider to the settings, or run offline with --answers FILE",
        "NO_SUCH_RUN" => "`switchyard runs` lists the stored runs",
        "NO_WORKERS" => "pass --db postgres://… (or set SWITCHYARD_DB) to a database your workers take runs from",
        "WORKER_NEEDS_POSTGRES" => "pass --db postgres://user@host:port/db (or set SWITCHYARD_DB)",
        "POSTGRES_NOT_BUILT" => "build switchyard with its default features (or `--features postgres`)",
        "PG_CONNECT" => "check the URL, and that the server runs and accepts this user (`pg_isready -d URL`)",
        "RUN_IN_USE" => "another process runs it now; `switchyard runs` shows when it pauses or ends",
        _ => return None,
    })
}

/// One `hint:` line per distinct code that has one, after the problems it concerns.
pub(crate) fn print_hints<'a>(codes: impl IntoIterator<Item = &'a str>) {
    let mut seen = std::collections::BTreeSet::new();
    for code in codes {
        if let Some(hint) = hint(code).filter(|_| seen.insert(code)) {
            errln!("hint: [{code}] {hint}");
        }
    }
}

/// The findings, then what to do about them.
pub(crate) fn print_findings(file: &Path, report: &Report) {
    print_list(file, report);
    print_hints(report.errors.iter().chain(&report.warnings).map(|f| f.code));
}

/// Findings of one code past this many are summed up in one line naming where they are (`--json` lists them all).
pub(crate) const SHOWN_PER_CODE: usize = 3;

pub(crate) fn print_list(file: &Path, report: &Report) {
    for (kind, list) in [("error", &report.errors), ("warning", &report.warnings)] {
        let lines = list.iter().map(|f| Said {
            kind: f.code.to_string(),
            place: place(f).trim_start().to_string(),
            line: format!("{kind}: {}:{} [{}] {}", file.display(), place(f), f.code, f.message),
        });
        print_grouped(lines, |code, more| {
            format!("{kind}: {}: [{code}] {more} (--json lists every one)", file.display())
        });
    }
}

/// One line the CLI prints of a kind that may repeat: what kind it is, where it is (`node `a``, or empty), the line.
pub(crate) struct Said {
    pub(crate) kind: String,
    pub(crate) place: String,
    pub(crate) line: String,
}

/// Lines grouped by kind, in the order each kind first appears: the first `SHOWN_PER_CODE` of a kind, then one line
/// (`summary(kind, "N more like these, at node `a`, node `b`, …")`) for the rest, naming each place once.
pub(crate) fn print_grouped(lines: impl IntoIterator<Item = Said>, summary: impl Fn(&str, &str) -> String) {
    let mut by_kind: Vec<(String, Vec<Said>)> = Vec::new();
    for said in lines {
        match by_kind.iter_mut().find(|(kind, _)| *kind == said.kind) {
            Some((_, same)) => same.push(said),
            None => by_kind.push((said.kind.clone(), vec![said])),
        }
    }
    for (kind, same) in by_kind {
        for said in same.iter().take(SHOWN_PER_CODE) {
            errln!("{}", printable(&said.line));
        }
        let rest = same.get(SHOWN_PER_CODE..).unwrap_or_default();
        if rest.is_empty() {
            continue;
        }
        let mut places: Vec<&str> = Vec::new();
        for said in rest.iter().filter(|s| !s.place.is_empty()) {
            if !places.contains(&said.place.as_str()) {
                places.push(&said.place);
            }
        }
        const NAMED: usize = 5;
        let mut more = format!("{} more like these", rest.len());
        if !places.is_empty() {
            more.push_str(", at ");
            more.push_str(&places[..places.len().min(NAMED)].join(", "));
            if places.len() > NAMED {
                more.push_str(", …");
            }
        }
        errln!("{}", printable(&summary(&kind, &more)));
    }
}

/// An import note's kind, to group notes that say the same thing of different nodes: its text with every
/// `backticked` name left out, so "node `a` cannot be reached from the entry `e`…" is one kind for every node.
pub(crate) fn note_kind(note: &str) -> String {
    let mut kind = String::new();
    for (i, part) in note.split('`').enumerate() {
        kind.push_str(if i % 2 == 0 { part } else { "`…`" });
    }
    kind
}

/// Where an import note is: its leading `node `id``, `edges[i]` or `connection a -> b`, else nowhere.
pub(crate) fn note_place(note: &str) -> String {
    let head = note.split(':').next().unwrap_or_default();
    let named = |prefix: &str| head.starts_with(prefix) && head.matches('`').count() == 2;
    if named("node `") || head.starts_with("edges[") || head.starts_with("connection ") {
        return head.to_string();
    }
    // "node `a` cannot be reached …": the node named first.
    match note.strip_prefix("node `").and_then(|rest| rest.split_once('`')) {
        Some((id, _)) => format!("node `{id}`"),
        None => String::new(),
    }
}

/// What an importer approximated or left out, grouped by kind as findings are.
pub(crate) fn print_notes(file: &Path, notes: &[String]) {
    let lines = notes.iter().map(|note| Said {
        kind: note_kind(note),
        place: note_place(note),
        line: format!("note: {}: {note}", file.display()),
    });
    print_grouped(lines, |_, more| format!("note: {}: {more}", file.display()));
}

/// Where a finding is: ` node `id``, ` edge `a->b``, or nothing for the whole workflow.
pub(crate) fn place(f: &validate::Finding) -> String {
    match (&f.node, &f.edge) {
        (Some(n), _) => format!(" node `{n}`"),
        (None, Some(e)) => format!(" edge `{e}`"),
        _ => String::new(),
    }
}

pub(crate) async fn cmd_validate(
    file: &Path,
    json: bool,
    format: Option<Format>,
    scripted: bool,
) -> Result<u8, Unusable> {
    let loaded = load(file, format)?;
    let configured = session::settings_for_check(settings(), scripted)?;
    // Single tools the workflow names are checked against what their servers list (it starts those servers).
    let servers = configured.as_ref().map(|s| s.mcp_servers.clone()).unwrap_or_default();
    let mcp_tools = switchyard_engine::mcp::list_named(&loaded.workflow, &servers).await;
    // Nodes that name no model use the default; when none can be found anywhere, they are flagged (NO_MODEL).
    let mut no_default_model = false;
    if let Some(settings) = configured.as_ref().filter(|s| s.default_model.is_none() && !scripted) {
        if !validate::nodes_needing_a_model(&loaded.workflow).is_empty() {
            no_default_model = providers::discover_default_model(settings).await.model.is_none();
        }
    }
    let options = session::validation_options(session::Checking {
        settings: configured.as_ref(),
        scripted,
        format: Some(loaded.format),
        mcp_tools,
        no_default_model,
        file: Some(file),
        ..Default::default()
    });
    let report = validate::validate(&loaded.workflow, &options);
    if json {
        outln!("{}", serde_json::to_string_pretty(&report).unwrap());
    } else {
        print_findings(file, &report);
        if report.is_ok() {
            outln!(
                "{}: valid ({}, {}, {})",
                file.display(),
                counted(loaded.workflow.nodes.len() as u64, "node"),
                counted(loaded.workflow.edges.len() as u64, "edge"),
                counted(report.warnings.len() as u64, "warning")
            );
        }
    }
    Ok(if report.is_ok() { 0 } else { 1 })
}

pub(crate) fn cmd_export(file: &Path, to: ExportFormat, format: Option<Format>) -> Result<u8, Unusable> {
    let loaded = load(file, format)?;
    let report = validate::validate(
        &loaded.workflow,
        &session::validation_options(session::Checking { scripted: true, file: Some(file), ..Default::default() }),
    );
    print_findings(file, &report);
    match to {
        ExportFormat::Yaml => out!("{}", format::to_yaml(&loaded.workflow)),
        ExportFormat::Json => out!("{}", format::to_json(&loaded.workflow)),
    }
    Ok(if report.is_ok() { 0 } else { 1 })
}

pub(crate) fn cmd_trust(file: &Path, format: Option<Format>, forget: bool) -> Result<u8, Unusable> {
    let trust = TrustStore::default_location();
    let workflow_ref = WorkflowRef::new(file, format);
    if forget {
        let removed = trust
            .forget(&workflow_ref.path.display().to_string())
            .map_err(|e| coded("TRUST_UNREADABLE", e.to_string()))?;
        outln!(
            "{}: forgot {}; its code needs consent again",
            file.display(),
            counted(removed as u64, "trusted version")
        );
        return Ok(0);
    }
    let loaded = load(file, format)?;
    let (_, consent) = session::code_for(&loaded.workflow, Some(&workflow_ref), true, &trust)?;
    let Some(fingerprint) = &consent.fingerprint else {
        outln!("{}: no code steps; nothing to trust", file.display());
        return Ok(0);
    };
    trust
        .trust(fingerprint, &workflow_ref.path.display().to_string())
        .map_err(|e| coded("TRUST_UNREADABLE", e.to_string()))?;
    for step in &consent.steps {
        let what = step
            .module
            .as_deref()
            .map_or_else(|| counted(step.source.lines().count() as u64, "line"), |m| format!("module {m}"));
        outln!("  {} ({}): {what}", step.node, step.language);
    }
    outln!(
        "{}: trusted {}, fingerprint {}; {} without --allow-code until {} code changes",
        file.display(),
        counted(consent.steps.len() as u64, "code step"),
        &fingerprint[..12],
        if consent.steps.len() == 1 { "it runs" } else { "they run" },
        if consent.steps.len() == 1 { "its" } else { "their" },
    );
    Ok(0)
}
