//! The workflows a server serves: the workflow files of one folder, read again when they change, each version kept
//! in the store (`team::register_workflow`). Runs start from the version current when they start; a run keeps its
//! own copy of the document, so a new version never changes a run under way.
//!
//! Invariants:
//! - A file that does not load or validate is reported (file and first problem) and leaves what was served from it
//!   as it was: a typo never takes a workflow away.
//! - A webhook name is served by one workflow: when two workflows declare it, the one whose name sorts first keeps
//!   it and the other is reported.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::SystemTime;

use switchyard_engine::document::Trigger;
use switchyard_engine::format::{self, Format, Loaded};
use switchyard_engine::store::postgres::PgStore;
use switchyard_engine::validate;
use switchyard_engine::Workflow;

/// Why the workflows folder could not be scanned: it cannot be read, or a version could not be kept in the store.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ScanError(pub String);

/// One served workflow, at its current version.
#[derive(Clone)]
pub struct Served {
    pub workflow: Arc<Workflow>,
    pub version: i32,
    /// The file it was read from (absolute).
    pub path: PathBuf,
    /// The format the file was read as, and what its importer approximated (none for a Switchyard file).
    pub format: Format,
    pub notes: Arc<[String]>,
}

/// A run of a served workflow about to be recorded: what its `NewRun` borrows.
pub struct Submission {
    pub id: String,
    served: Served,
    options: switchyard_engine::run::RunOptions,
    path: String,
    answers: Option<String>,
    origin: switchyard_engine::store::Origin,
}

impl Submission {
    /// A new run of `served` with `input`, answered by the server's answers file when it has one, started as
    /// `origin` says (how, and by whom).
    pub fn new(
        served: Served,
        input: Option<serde_json::Value>,
        answers: Option<&Path>,
        origin: switchyard_engine::store::Origin,
    ) -> Submission {
        let id = switchyard_engine::run::new_run_id();
        // The run keeps the server's prices for the models it can use: its cost is what the server's settings said
        // when it started, whoever looks and whatever the settings say later (`usage::kept_prices`).
        let prices = Some(switchyard_engine::session::kept_prices(&served.workflow, None));
        let options =
            switchyard_engine::run::RunOptions { input, run_id: Some(id.clone()), prices, ..Default::default() };
        let (path, answers) = (served.path.display().to_string(), answers.map(|a| a.display().to_string()));
        Submission { id, served, options, path, answers, origin }
    }

    /// The run as the store records it.
    pub fn new_run(&self) -> switchyard_engine::store::NewRun<'_> {
        switchyard_engine::store::NewRun {
            id: &self.id,
            workflow: &self.served.workflow,
            workflow_ref: Some(&self.path),
            answers_path: self.answers.as_deref(),
            options: &self.options,
            eval_id: None,
            origin: self.origin.clone(),
            // Every run of a served workflow, however started (API, webhook, schedule, `/mcp`), records its version.
            version: Some(self.served.version),
        }
    }
}

/// What the folder held at the last scan.
#[derive(Default, Clone)]
pub struct Catalog {
    /// By workflow name.
    pub workflows: BTreeMap<String, Served>,
    /// Webhook name → (workflow name, trigger).
    pub hooks: BTreeMap<String, (String, Trigger)>,
    /// What the last scan could not serve, by file.
    pub problems: BTreeMap<PathBuf, String>,
}

impl Catalog {
    /// The schedules served: (workflow, trigger), in name order.
    pub fn schedules(&self) -> Vec<(String, Trigger)> {
        let mut found = Vec::new();
        for (name, served) in &self.workflows {
            for t in served.workflow.triggers.iter().filter(|t| t.schedule.is_some()) {
                found.push((name.clone(), t.clone()));
            }
        }
        found
    }
}

/// The folder's workflows, shared by the API, webhooks and schedules.
pub struct Registry {
    folder: PathBuf,
    pub catalog: RwLock<Catalog>,
    /// Each file's modification time and length at the last scan: what a scan compares.
    seen: RwLock<BTreeMap<PathBuf, (Option<SystemTime>, u64)>>,
}

/// What one scan did, for the log.
#[derive(Debug, Default)]
pub struct Scanned {
    /// (workflow, version) newly registered.
    pub registered: Vec<(String, i32)>,
    /// (file, problem) newly found.
    pub problems: Vec<(PathBuf, String)>,
}

impl Registry {
    pub fn new(folder: &Path) -> Registry {
        Registry {
            folder: std::fs::canonicalize(folder).unwrap_or_else(|_| folder.to_path_buf()),
            catalog: RwLock::new(Catalog::default()),
            seen: RwLock::new(BTreeMap::new()),
        }
    }

    /// The workflow served under `name` now, at its current version.
    pub fn served(&self, name: &str) -> Option<Served> {
        self.catalog.read().expect("not poisoned").workflows.get(name).cloned()
    }

    pub fn folder(&self) -> &Path {
        &self.folder
    }

    /// Reads the folder again when a file was added, changed or removed since the last scan, registering new
    /// versions in `store`. The folder's files are read on the caller's thread (a handful of small files).
    pub async fn scan(&self, store: &PgStore) -> Result<Scanned, ScanError> {
        let files = switchyard_engine::files::workflow_files(&self.folder)
            .map_err(|e| ScanError(format!("cannot read the workflows folder {}: {e}", self.folder.display())))?;
        let now: BTreeMap<PathBuf, (Option<SystemTime>, u64)> = files
            .iter()
            .map(|p| {
                let meta = std::fs::metadata(p).ok();
                (p.clone(), (meta.as_ref().and_then(|m| m.modified().ok()), meta.map_or(0, |m| m.len())))
            })
            .collect();
        if *self.seen.read().expect("not poisoned") == now {
            return Ok(Scanned::default());
        }
        let mut scanned = Scanned::default();
        // A copy, so that no lock is held while the store registers versions.
        let previous = self.catalog.read().expect("not poisoned").clone();
        let mut next = Catalog::default();
        for path in &files {
            match load(path) {
                Ok(Loaded { workflow, format, notes }) => {
                    if let Some(other) = next.workflows.get(&workflow.name) {
                        let problem = format!(
                            "workflow `{}` is served from {} already; rename one of them",
                            workflow.name,
                            other.path.display()
                        );
                        note(&mut next, &mut scanned, &previous, path, problem);
                        continue;
                    }
                    let version = store
                        .register_workflow(&path.display().to_string(), &workflow)
                        .await
                        .map_err(|e| ScanError(e.to_string()))?;
                    if previous.workflows.get(&workflow.name).is_none_or(|p| p.version != version) {
                        scanned.registered.push((workflow.name.clone(), version));
                    }
                    next.workflows.insert(
                        workflow.name.clone(),
                        Served {
                            workflow: Arc::new(workflow),
                            version,
                            path: path.clone(),
                            format,
                            notes: notes.into(),
                        },
                    );
                }
                Err(mut problem) => {
                    // What was served from this file stays served.
                    if let Some((name, kept)) = previous.workflows.iter().find(|(_, s)| s.path == *path) {
                        problem = format!("{problem}; version {} of `{name}` stays served", kept.version);
                        next.workflows.insert(name.clone(), kept.clone());
                    }
                    note(&mut next, &mut scanned, &previous, path, problem);
                }
            }
        }
        for (name, served) in next.workflows.clone() {
            for t in served.workflow.triggers.iter() {
                let Some(hook) = &t.webhook else { continue };
                if let Some((other, _)) = next.hooks.get(hook) {
                    let problem =
                        format!("webhook `{hook}` is served by workflow `{other}` already; rename one of them");
                    note(&mut next, &mut scanned, &previous, &served.path, problem);
                    continue;
                }
                next.hooks.insert(hook.clone(), (name.clone(), t.clone()));
            }
        }
        drop(previous);
        *self.catalog.write().expect("not poisoned") = next;
        *self.seen.write().expect("not poisoned") = now;
        Ok(scanned)
    }
}

/// Records a file's problem, and says it (in `scanned`) when it is new.
fn note(next: &mut Catalog, scanned: &mut Scanned, previous: &Catalog, path: &Path, problem: String) {
    if previous.problems.get(path) != Some(&problem) {
        scanned.problems.push((path.to_path_buf(), problem.clone()));
    }
    next.problems.insert(path.to_path_buf(), problem);
}

/// A workflow file, loaded and validated as a server runs it (providers are the workers' to check).
fn load(path: &Path) -> Result<Loaded, String> {
    let loaded = format::load_file(path, None).map_err(|e| format!("not served: {e}"))?;
    let options = switchyard_engine::session::validation_options(switchyard_engine::session::Checking {
        purpose: validate::Purpose::Run,
        format: Some(loaded.format),
        file: Some(path),
        ..Default::default()
    });
    let report = validate::validate(&loaded.workflow, &options);
    if let Some(first) = report.errors.first() {
        return Err(format!("not served: {} problem(s); the first: {}", report.errors.len(), first.message));
    }
    // A schedule's runs start with its `input`: it must be one the workflow takes.
    for t in loaded.workflow.triggers.iter().filter(|t| t.schedule.is_some()) {
        if let Err(e) = switchyard_engine::session::check_input(&loaded.workflow, t.input.as_ref()) {
            return Err(format!("not served: schedule `{}`: its input does not fit the workflow: {e}", t.name()));
        }
    }
    Ok(loaded)
}
