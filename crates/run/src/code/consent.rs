//! Consent to run a workflow's code. Code from a file never runs unless the person running it said so: once for a
//! run (`--allow-code`), or for a version of the workflow's code, recorded by `switchyard trust FILE` or the app's
//! prompt in the trust file beside the settings.
//!
//! A version is a fingerprint: SHA-256 over every code step that would run — its node id, language and source, and
//! for a module step the module file's bytes. Editing a prompt does not ask again; changing any code, or a tool
//! module on disk, does.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{module_path, Language};
use crate::document::NodeType;
use crate::Workflow;

/// One code step as the person is shown it before consenting.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CodeStep {
    pub node: String,
    pub language: String,
    /// The module file, for a step that calls one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub module: Option<String>,
    /// The code: the node's body, or the module file's text (or why it cannot be read).
    pub source: String,
}

/// The code steps that would run: script nodes without a pinned output, in a language Switchyard runs.
pub fn code_steps(workflow: &Workflow, dir: &Path) -> Vec<CodeStep> {
    workflow
        .nodes
        .iter()
        .filter(|n| n.node_type == NodeType::Script && n.pinned.is_none())
        .filter_map(|n| {
            let language = Language::parse(n.language.as_deref()).ok()?;
            let (module, source) = match (&n.module, &n.code) {
                (Some(module), _) => {
                    let source = std::fs::read_to_string(module_path(dir, module))
                        .unwrap_or_else(|e| format!("(the module cannot be read: {e})"));
                    (Some(module.clone()), source)
                }
                (None, Some(code)) => (None, code.clone()),
                (None, None) => return None,
            };
            Some(CodeStep { node: n.id.clone(), language: language.name().to_string(), module, source })
        })
        .collect()
}

/// The fingerprint of a set of code steps; `None` when there is no code to consent to.
pub fn fingerprint(steps: &[CodeStep]) -> Option<String> {
    if steps.is_empty() {
        return None;
    }
    let mut hash = Sha256::new();
    for step in steps {
        for part in [step.node.as_str(), step.language.as_str(), step.module.as_deref().unwrap_or(""), &step.source] {
            hash.update((part.len() as u64).to_le_bytes());
            hash.update(part.as_bytes());
        }
    }
    Some(hash.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// Why the trust file cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("the trust file {path} {problem}")]
pub struct TrustError {
    pub path: String,
    pub problem: String,
}

/// One version of a workflow's code the person allowed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trusted {
    pub fingerprint: String,
    /// The file it was trusted for, to show the person; trust follows the code, not the path.
    pub workflow: String,
    pub trusted_at: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct TrustFile {
    #[serde(default)]
    trusted: Vec<Trusted>,
}

/// The trust file: `trust.json` beside `settings.yaml`.
pub struct TrustStore {
    path: PathBuf,
}

impl TrustStore {
    pub fn at(path: PathBuf) -> TrustStore {
        TrustStore { path }
    }

    /// `trust.json` in the settings folder (`SWITCHYARD_HOME`, else the user's config folder).
    pub fn default_location() -> TrustStore {
        TrustStore { path: crate::files::settings_dir().join("trust.json") }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn read(&self) -> Result<TrustFile, TrustError> {
        let problem = |problem: String| TrustError { path: self.path.display().to_string(), problem };
        match std::fs::read_to_string(&self.path) {
            Ok(text) => serde_json::from_str(&text)
                .map_err(|e| problem(format!("is not valid ({e}); fix or delete it to be asked again"))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(TrustFile::default()),
            Err(e) => Err(problem(format!("cannot be read: {e}"))),
        }
    }

    pub fn list(&self) -> Result<Vec<Trusted>, TrustError> {
        Ok(self.read()?.trusted)
    }

    pub fn is_trusted(&self, fingerprint: &str) -> Result<bool, TrustError> {
        Ok(self.read()?.trusted.iter().any(|t| t.fingerprint == fingerprint))
    }

    /// Records a fingerprint as allowed (once; trusting it again changes nothing). Written to a temporary file and
    /// renamed, so a crash never leaves half a trust file.
    pub fn trust(&self, fingerprint: &str, workflow: &str) -> Result<(), TrustError> {
        let mut file = self.read()?;
        if file.trusted.iter().any(|t| t.fingerprint == fingerprint) {
            return Ok(());
        }
        file.trusted.push(Trusted {
            fingerprint: fingerprint.to_string(),
            workflow: workflow.to_string(),
            trusted_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        });
        self.write(&file)
    }

    /// Forgets every fingerprint recorded for a workflow file; returns how many there were.
    pub fn forget(&self, workflow: &str) -> Result<usize, TrustError> {
        let mut file = self.read()?;
        let before = file.trusted.len();
        file.trusted.retain(|t| t.workflow != workflow);
        let removed = before - file.trusted.len();
        if removed > 0 {
            self.write(&file)?;
        }
        Ok(removed)
    }

    fn write(&self, file: &TrustFile) -> Result<(), TrustError> {
        let problem = |e: std::io::Error| TrustError {
            path: self.path.display().to_string(),
            problem: format!("cannot be written: {e}"),
        };
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).map_err(problem)?;
        }
        let temporary = self.path.with_extension("json.tmp");
        let text = serde_json::to_string_pretty(file).expect("the trust file is JSON");
        std::fs::write(&temporary, text + "\n").map_err(problem)?;
        std::fs::rename(&temporary, &self.path).map_err(problem)
    }
}

/// What a run of this workflow needs: the steps, their fingerprint, and whether that version is trusted.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Consent {
    pub steps: Vec<CodeStep>,
    pub fingerprint: Option<String>,
    pub trusted: bool,
}

impl Consent {
    /// Reads the trust file for this workflow's code; an unreadable trust file is an error, never consent.
    pub fn check(workflow: &Workflow, dir: &Path, store: &TrustStore) -> Result<Consent, TrustError> {
        let steps = code_steps(workflow, dir);
        let fingerprint = fingerprint(&steps);
        let trusted = match &fingerprint {
            None => true,
            Some(f) => store.is_trusted(f)?,
        };
        Ok(Consent { steps, fingerprint, trusted })
    }

    /// Nothing to run, or this version was allowed.
    pub fn granted(&self) -> bool {
        self.trusted
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{self, Format};

    fn workflow(code: &str) -> Workflow {
        let yaml = format!(
            "switchyard: 1\nname: t\nnodes:\n  - {{id: start, type: start}}\n  - {{id: s, type: script, language: python, code: {code:?}}}\n  - {{id: p, type: script, code: 'x', pinned: {{a: 1}}}}\nedges: [{{from: start, to: s}}, {{from: s, to: p}}]\n"
        );
        format::load_str(&yaml, Some(Format::Switchyard), None).unwrap().workflow
    }

    #[test]
    fn the_fingerprint_follows_the_code_and_leaves_pinned_steps_out() {
        let dir = tempfile::tempdir().unwrap();
        let a = code_steps(&workflow("return {'a': 1}"), dir.path());
        assert_eq!(a.len(), 1, "the pinned step runs no code");
        let mut renamed = workflow("return {'a': 1}");
        renamed.name = "another name".into();
        assert_eq!(fingerprint(&a), fingerprint(&code_steps(&renamed, dir.path())), "only code counts");
        let b = code_steps(&workflow("return {'a': 2}"), dir.path());
        assert_ne!(fingerprint(&a), fingerprint(&b));
        assert_eq!(fingerprint(&[]), None);
    }

    #[test]
    fn trust_is_recorded_once_per_fingerprint_and_an_unreadable_trust_file_is_never_consent() {
        let dir = tempfile::tempdir().unwrap();
        let store = TrustStore::at(dir.path().join("config/trust.json"));
        let wf = workflow("return {}");
        let consent = Consent::check(&wf, dir.path(), &store).unwrap();
        assert!(!consent.granted());
        let fp = consent.fingerprint.clone().unwrap();
        store.trust(&fp, "/w.yaml").unwrap();
        store.trust(&fp, "/w.yaml").unwrap();
        assert_eq!(store.list().unwrap().len(), 1);
        assert!(Consent::check(&wf, dir.path(), &store).unwrap().granted());
        assert_eq!(store.forget("/w.yaml").unwrap(), 1);
        assert!(!Consent::check(&wf, dir.path(), &store).unwrap().granted());
        std::fs::write(store.path(), "{not json").unwrap();
        let e = Consent::check(&wf, dir.path(), &store).unwrap_err();
        assert!(e.to_string().contains("trust.json") && e.to_string().contains("delete it"), "{e}");
    }
}
