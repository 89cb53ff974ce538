//! Reading and writing workflow files: the canonical YAML/JSON format and the importers of the source systems'
//! formats (SEMANTICS §8). Every loader returns the one document model plus the notes of what it approximated.

mod agentflow;
mod canonical;
mod openexpertise;
mod sweny;
mod tea;

use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::document::Workflow;

pub use canonical::{to_json, to_yaml};

/// The file formats Switchyard opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Switchyard's own YAML or JSON (`switchyard: 1`).
    Switchyard,
    /// AgentFlow's JSON graph (`nodes` with `data`, `connections`).
    AgentFlow,
    /// SWEny workflow YAML/JSON (`entry`, a map of `nodes`).
    Sweny,
    /// The Edge Agent YAML (a list of named `nodes`).
    Tea,
    /// OpenExpertise `experience.yaml` (`graph.nodes`, `graph.edges`).
    OpenExpertise,
}

impl Format {
    pub const ALL: [Format; 5] =
        [Format::Switchyard, Format::AgentFlow, Format::Sweny, Format::Tea, Format::OpenExpertise];

    pub fn name(self) -> &'static str {
        match self {
            Format::Switchyard => "switchyard",
            Format::AgentFlow => "agentflow",
            Format::Sweny => "sweny",
            Format::Tea => "tea",
            Format::OpenExpertise => "openexpertise",
        }
    }

    pub fn from_name(name: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.name().eq_ignore_ascii_case(name))
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A file that could not be loaded: where, and what to do about it.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadError {
    /// Stable SCREAMING_SNAKE code, e.g. `PARSE_ERROR`, `UNKNOWN_FIELD`, `TEA_GOTO_UNKNOWN_TARGET`.
    pub code: &'static str,
    pub file: Option<PathBuf>,
    pub line: Option<usize>,
    pub column: Option<usize>,
    pub message: String,
}

impl LoadError {
    pub fn new(message: impl Into<String>) -> LoadError {
        LoadError { code: "INVALID_FILE", file: None, line: None, column: None, message: message.into() }
    }

    pub fn with_code(mut self, code: &'static str) -> LoadError {
        self.code = code;
        self
    }

    pub fn at(mut self, line: Option<usize>, column: Option<usize>) -> LoadError {
        self.line = line;
        self.column = column;
        self
    }

    /// Names the file the error is in.
    pub fn at_file(mut self, file: &Path) -> LoadError {
        self.file = Some(file.to_path_buf());
        self
    }

    fn in_file(mut self, file: Option<&Path>) -> LoadError {
        if self.file.is_none() {
            self.file = file.map(Path::to_path_buf);
        }
        self
    }
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let file = self.file.as_ref().map(|p| p.display().to_string()).unwrap_or_else(|| "<input>".into());
        match (self.line, self.column) {
            (Some(l), Some(c)) => write!(f, "{file}:{l}:{c}: {} [{}]", self.message, self.code),
            (Some(l), None) => write!(f, "{file}:{l}: {} [{}]", self.message, self.code),
            _ => write!(f, "{file}: {} [{}]", self.message, self.code),
        }
    }
}

impl std::error::Error for LoadError {}

/// A loaded workflow with what the importer could not carry over exactly.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub workflow: Workflow,
    pub format: Format,
    /// Human-readable notes on what was approximated or left out; empty for canonical files.
    pub notes: Vec<String>,
}

/// Reads and loads a file, detecting its format from content unless `format` is given.
pub fn load_file(path: &Path, format: Option<Format>) -> Result<Loaded, LoadError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| LoadError::new(format!("cannot read the file: {e}")).in_file(Some(path)))?;
    load_str(&text, format, Some(path))
}

/// Loads workflow text. `origin` names the file in errors and anchors relative paths (SWEny `./file.md`); with no
/// `origin`, no file the text names is read.
pub fn load_str(text: &str, format: Option<Format>, origin: Option<&Path>) -> Result<Loaded, LoadError> {
    // A canonical document is read once, straight into the model (reading it into a value to find its format first
    // doubled the time to open a 5,000-node workflow). Whatever that read refuses takes the general path below,
    // which finds the format and words the error, so what a file opens as, and every error, stays the same.
    if matches!(format, None | Some(Format::Switchyard)) && text.contains("switchyard") {
        if let Ok(workflow) = canonical::from_str(text) {
            return Ok(Loaded { workflow, format: Format::Switchyard, notes: Vec::new() });
        }
    }
    let result = (|| {
        let value = parse_value(text)?;
        let format = match format {
            Some(f) if f != Format::Switchyard && !value.is_object() => return Err(not_a_mapping()),
            Some(f) => f,
            None => detect(&value)?,
        };
        // Files a document names are read next to its file, and never for text that is no file (what a request
        // to a server sends): a reference like `../../etc/passwd` is kept as text, with a note.
        let base_dir = origin.and_then(Path::parent);
        match format {
            Format::Switchyard => {
                let workflow = canonical::from_str(text)?;
                Ok(Loaded { workflow, format, notes: Vec::new() })
            }
            Format::AgentFlow => agentflow::import(&value).map(|(workflow, notes)| Loaded { workflow, format, notes }),
            Format::Sweny => {
                sweny::import(&value, base_dir).map(|(workflow, notes)| Loaded { workflow, format, notes })
            }
            Format::Tea => tea::import(&value).map(|(workflow, notes)| Loaded { workflow, format, notes }),
            Format::OpenExpertise => {
                openexpertise::import(&value, base_dir).map(|(workflow, notes)| Loaded { workflow, format, notes })
            }
        }
    })();
    result.map_err(|e| e.in_file(origin))
}

/// Parses YAML or JSON into a generic value, for detection and importers.
pub(crate) fn parse_value(text: &str) -> Result<Value, LoadError> {
    if text.trim().is_empty() {
        return Err(LoadError::new("the file is empty; a workflow needs at least a start node"));
    }
    if looks_like_json(text) {
        return serde_json::from_str(text).map_err(|e| {
            LoadError::new(format!("invalid JSON: {}", strip_location(&e.to_string())))
                .at(Some(e.line()), Some(e.column()))
                .with_code("PARSE_ERROR")
        });
    }
    serde_yaml::from_str(text).map_err(yaml_error)
}

fn looks_like_json(text: &str) -> bool {
    text.trim_start().starts_with('{')
}

/// A YAML parse error as a [`LoadError`] at its line and column (`PARSE_ERROR`).
pub fn yaml_error(e: serde_yaml::Error) -> LoadError {
    let location = e.location();
    LoadError::new(format!("invalid YAML: {}", strip_location(&e.to_string())))
        .at(location.as_ref().map(|l| l.line()), location.as_ref().map(|l| l.column()))
        .with_code("PARSE_ERROR")
}

/// serde messages end in " at line L column C"; the location is reported separately.
pub fn strip_location(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_string(),
        None => message.to_string(),
    }
}

fn not_a_mapping() -> LoadError {
    LoadError::new("a workflow file must be a mapping (YAML) or an object (JSON) at the top level")
        .with_code("NOT_A_MAPPING")
}

/// Recognizes a format from the document's top-level shape.
pub fn detect(value: &Value) -> Result<Format, LoadError> {
    let Some(map) = value.as_object() else { return Err(not_a_mapping()) };
    if map.contains_key("$schema") && map.contains_key("properties") {
        return Err(LoadError::new("this is a JSON Schema, not a workflow; open a workflow file instead"));
    }
    if map.contains_key("switchyard") {
        return Ok(Format::Switchyard);
    }
    if map.get("graph").is_some_and(|g| g.get("nodes").is_some()) {
        return Ok(Format::OpenExpertise);
    }
    if map.contains_key("entry") && map.get("nodes").is_some_and(Value::is_object) {
        return Ok(Format::Sweny);
    }
    if map.contains_key("connections") {
        return Ok(Format::AgentFlow);
    }
    if let Some(nodes) = map.get("nodes").and_then(Value::as_array) {
        let has = |key: &str| nodes.iter().any(|n| n.get(key).is_some());
        if has("data") || has("x") {
            return Ok(Format::AgentFlow);
        }
        if has("name") && !has("id") {
            return Ok(Format::Tea);
        }
        if has("id") && has("type") {
            return Err(LoadError::new(
                "this looks like a Switchyard workflow without its version key: add `switchyard: 1` at the top",
            ));
        }
    }
    if map.contains_key("nodes") {
        return Err(LoadError::new(
            "cannot tell which format this file is: it has `nodes` but matches no known format \
             (switchyard, agentflow, sweny, tea, openexpertise); pass --format NAME",
        ));
    }
    Err(LoadError::new(
        "not a workflow: no `nodes` found. A Switchyard file starts with `switchyard: 1`, `name:` and `nodes:`",
    )
    .with_code("NO_NODES"))
}

/// A simple left-to-right layout by depth from the first node, for importers whose files carry no positions.
pub(crate) fn layered_positions(workflow: &mut Workflow) {
    use std::collections::{HashMap, VecDeque};
    let Some(first) = workflow.nodes.first().map(|n| n.id.clone()) else {
        return;
    };
    let mut depth: HashMap<String, usize> = HashMap::new();
    depth.insert(first.clone(), 0);
    let mut queue = VecDeque::from([first]);
    while let Some(id) = queue.pop_front() {
        let d = depth[&id];
        for e in workflow.edges.iter().filter(|e| e.from == id) {
            if !depth.contains_key(&e.to) {
                depth.insert(e.to.clone(), d + 1);
                queue.push_back(e.to.clone());
            }
        }
    }
    let mut per_layer: HashMap<usize, usize> = HashMap::new();
    let max_depth = depth.values().copied().max().unwrap_or(0);
    for node in &mut workflow.nodes {
        let d = depth.get(&node.id).copied().unwrap_or(max_depth + 1);
        let row = per_layer.entry(d).or_default();
        node.position = Some(crate::document::Position { x: d as f64 * 280.0, y: *row as f64 * 140.0 });
        *row += 1;
    }
}

/// Adds a "did you mean" to serde's unknown-field and unknown-variant messages.
pub fn explain(message: &str) -> String {
    let kind = if message.contains("unknown field `") {
        "unknown field `"
    } else if message.contains("unknown variant `") {
        "unknown variant `"
    } else {
        return message.to_string();
    };
    let start = message.find(kind).unwrap() + kind.len();
    let Some(len) = message[start..].find('`') else {
        return message.to_string();
    };
    let got = &message[start..start + len];
    let expected: Vec<&str> = match message.find("expected one of ") {
        Some(i) => message[i..].split('`').skip(1).step_by(2).collect(),
        None => message.split("expected `").nth(1).and_then(|s| s.split('`').next()).into_iter().collect(),
    };
    let best = expected
        .iter()
        .map(|cand| (strsim::jaro_winkler(got, cand), *cand))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0));
    match best {
        Some((_, cand)) => format!("{message}; did you mean `{cand}`?"),
        None => message.to_string(),
    }
}

/// Refuses what a source system's published JSON Schema (bundled under `schema/`) refuses, naming the place
/// (`/nodes/gather/instruction`) and what is wrong, with the system's code (`SWENY_SCHEMA`, `OE_SCHEMA`).
fn check_published_schema(
    validator: &'static std::sync::OnceLock<jsonschema::Validator>,
    schema: &str,
    value: &Value,
    what: &str,
    code: &'static str,
) -> Result<(), LoadError> {
    let validator = validator.get_or_init(|| {
        let schema: Value = serde_json::from_str(schema).expect("a bundled schema is JSON");
        jsonschema::validator_for(&schema).expect("a bundled schema compiles")
    });
    let problems: Vec<String> = validator
        .iter_errors(value)
        .take(3)
        .map(|e| {
            let at = e.instance_path().to_string();
            format!("{}: {e}", if at.is_empty() { "the file".to_string() } else { format!("`{at}`") })
        })
        .collect();
    if problems.is_empty() {
        return Ok(());
    }
    Err(LoadError::new(format!("not a valid {what}: {}", problems.join("; "))).with_code(code))
}
