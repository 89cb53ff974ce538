//! The evaluation file (docs/evals.md): the workflow it tests and its cases, each an input, the answers and
//! decisions that stand in for models and people, and what must hold of the run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::format::{strip_location, yaml_error, LoadError};

/// `NAME.evals.yaml`: a workflow's test cases.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EvalFile {
    /// The workflow under test, relative to this file.
    pub workflow: String,
    /// The model that judges `judge` expectations that name none (`provider/model`); else `--model`, else the
    /// settings' default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<String>,
    /// Cases run in order of the file (in parallel, bounded); ids are unique.
    pub cases: Vec<Case>,
}

/// One way through the workflow and what must hold of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// Unique within the file; `--case ID` runs this one.
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The run input: text or an object (none: the start node's `initial_input`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<serde_json::Value>")]
    pub input: Option<Value>,
    /// What the models answer instead of being called: an answers file (relative to this file), or the same
    /// mapping inline (`nodes`, `routes`, `approvals`). Without it, the case calls the workflow's real models (and
    /// its `decisions` still decide its approvals).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answers: Option<AnswersRef>,
    /// How approvals are decided, per node: `approve`, `reject`, `{decision, note}`, or a list per visit. Laid over
    /// the answers' `approvals`, so one answers file serves both branches of an approval.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(with = "BTreeMap<String, serde_json::Value>")]
    pub decisions: BTreeMap<String, Value>,
    /// What must hold of the run, each checked and reported on its own.
    pub expect: Vec<Expectation>,
}

/// An answers file by path, or its content inline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum AnswersRef {
    Path(String),
    #[schemars(with = "BTreeMap<String, serde_json::Value>")]
    Inline(Value),
}

/// One thing that must hold: of a node (`node: ID`), or of the run as a whole (no `node`). Exactly one check per
/// expectation; any other key is refused.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Expectation {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    #[serde(flatten)]
    pub check: Check,
}

/// Not `#[serde(flatten)]` on the way in: it would take the first check it knows and ignore the rest, so a typo
/// (`nod:`, a second check) would pass unnoticed.
impl<'de> Deserialize<'de> for Expectation {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let mut map = serde_json::Map::deserialize(d)?;
        let node = match map.remove("node") {
            None => None,
            Some(Value::String(id)) => Some(id),
            Some(other) => return Err(D::Error::custom(format!("`node` is a node id, not {other}"))),
        };
        let mut keys: Vec<String> = map.keys().cloned().collect();
        keys.sort_unstable_by_key(|k| CHECKS.iter().position(|c| c == k));
        let known = CHECKS.join(", ");
        if let Some(unknown) = keys.iter().find(|k| !CHECKS.contains(&k.as_str())) {
            return Err(D::Error::custom(format!(
                "unknown expectation `{unknown}`; expected `node` and one of {known}"
            )));
        }
        match keys.len() {
            0 => Err(D::Error::custom(format!("an expectation needs a check: one of {known}"))),
            1 => {
                let check = serde_json::from_value(Value::Object(map))
                    .map_err(|e| D::Error::custom(crate::format::explain(&e.to_string())))?;
                Ok(Expectation { node, check })
            }
            _ => Err(D::Error::custom(format!(
                "an expectation has one check, this one has {}; write one expectation for each",
                keys.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(" and ")
            ))),
        }
    }
}

/// The keys of [`Check`], as files write them.
const CHECKS: [&str; 14] = [
    "equals",
    "contains",
    "regex",
    "schema",
    "path",
    "route",
    "tool",
    "approval",
    "status",
    "max_tokens",
    "max_latency_ms",
    "max_cost",
    "judge",
    "code",
];

/// What is checked. Text checks (`contains`, `regex`, and `equals` with a string) read the node's output as the next
/// node sees it (its `text`, else its data as JSON); `equals` with any other value, `schema` and `path` read its
/// data. Of the run: `output` checks read the last node that succeeded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Check {
    /// The output (a string) or the data (any other value) equals this.
    Equals(#[schemars(with = "serde_json::Value")] Value),
    /// The output contains this text.
    Contains(String),
    /// The output contains a match of this regular expression.
    Regex(String),
    /// The data is valid against this JSON Schema.
    Schema(#[schemars(with = "serde_json::Value")] Value),
    /// The value at a path in the data (`items.0.name` or a JSON Pointer, `/items/0/name`) equals `equals`.
    Path(PathCheck),
    /// The run went from the node to this node (a `route` of the trace); `(end)` when it ended there.
    Route(String),
    /// The node called this tool, with arguments containing `arguments` when given.
    Tool(ToolCheck),
    /// The approval was decided so: approve, reject or timeout.
    Approval(crate::result::Verdict),
    /// The node's status (`success`, `failed`, `skipped`), or the run's (`completed`, `failed`, `paused`, …).
    Status(String),
    /// Tokens the node (or the run) used, at most.
    MaxTokens(u64),
    /// Milliseconds the node (or the run) took, at most.
    MaxLatencyMs(u64),
    /// US dollars the run's model calls cost at most, from the settings' `prices` (of the run; no `node`).
    MaxCost(f64),
    /// A model judges the output against a rubric with a score from 0 to 1; it holds at `threshold` or above.
    Judge(JudgeCheck),
    /// Code (a code step's languages) that sees `input` = `{node, output, data, status}` and returns
    /// `{"pass": bool, "message": str}`; it runs only with your consent (`--allow-code`).
    Code(CodeCheck),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CodeCheck {
    /// python, javascript, bash or lua.
    pub language: String,
    /// A function body, as a code step's.
    pub code: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PathCheck {
    pub path: String,
    #[schemars(with = "serde_json::Value")]
    pub equals: Value,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JudgeCheck {
    /// What a good output does, in plain words.
    pub rubric: String,
    /// The lowest passing score, from 0 to 1 (default 0.5).
    #[serde(default = "default_threshold")]
    pub threshold: f64,
    /// The judging model (`provider/model`); else the file's `judge`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

fn default_threshold() -> f64 {
    0.5
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolCheck {
    pub name: String,
    /// Every key given must be in the call's arguments with this value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<serde_json::Value>")]
    pub arguments: Option<Value>,
}

/// An evaluation file, read and checked, with where its paths are relative to.
#[derive(Debug, Clone)]
pub struct Suite {
    pub path: PathBuf,
    pub file: EvalFile,
}

impl Suite {
    pub fn load(path: &Path) -> Result<Suite, LoadError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| LoadError::new(format!("cannot read the evaluation file: {e}")).at_file(path))?;
        Suite::parse(&text, path)
    }

    pub fn parse(text: &str, path: &Path) -> Result<Suite, LoadError> {
        let file: EvalFile = if text.trim_start().starts_with('{') {
            serde_json::from_str(text).map_err(|e| {
                LoadError::new(format!("invalid evaluation file: {}", strip_location(&e.to_string())))
                    .at(Some(e.line()), Some(e.column()))
                    .with_code("PARSE_ERROR")
            })
        } else {
            serde_yaml::from_str(text).map_err(yaml_error)
        }
        .map_err(|e| e.at_file(path))?;
        let refuse = |message: String| Err(LoadError::new(message).with_code("INVALID_EVALS").at_file(path));
        if file.cases.is_empty() {
            return refuse("the file has no cases; add one under `cases:`".into());
        }
        let mut seen = std::collections::BTreeSet::new();
        for case in &file.cases {
            if case.id.trim().is_empty() {
                return refuse("a case has an empty id; give every case a unique id".into());
            }
            if !seen.insert(case.id.as_str()) {
                return refuse(format!("two cases are called `{}`; give every case a unique id", case.id));
            }
            if case.expect.is_empty() {
                return refuse(format!("case `{}` expects nothing; add what must hold under `expect:`", case.id));
            }
            for (node, decision) in &case.decisions {
                let list = match decision {
                    Value::Array(list) => list.iter().collect(),
                    one => vec![one],
                };
                for d in list {
                    let said = match d {
                        Value::String(s) => Some(s.as_str()),
                        Value::Object(o) if o.keys().all(|k| k == "decision" || k == "note") => {
                            o.get("decision").and_then(Value::as_str)
                        }
                        _ => None,
                    };
                    if !matches!(said, Some("approve" | "reject")) {
                        return refuse(format!(
                            "case `{}`: the decision for `{node}` is {d}; write approve, reject, or {{decision: approve|reject, note: …}}",
                            case.id
                        ));
                    }
                }
            }
            for e in &case.expect {
                if matches!(e.check, Check::MaxCost(_)) && e.node.is_some() {
                    return refuse(format!("case `{}`: `max_cost` is of the whole run; remove its `node`", case.id));
                }
                if matches!(e.check, Check::Route(_)) && e.node.is_none() {
                    return refuse(format!("case `{}`: `route` needs the `node` it leaves from", case.id));
                }
                if let Check::Regex(pattern) = &e.check {
                    if let Err(err) = regex::Regex::new(pattern) {
                        return refuse(format!(
                            "case `{}`: `regex: {pattern}` is not a regular expression: {err}",
                            case.id
                        ));
                    }
                }
                if let Check::Code(c) = &e.check {
                    if let Err(err) = crate::code::Language::parse(Some(&c.language)) {
                        return refuse(format!("case `{}`: {err}", case.id));
                    }
                }
                if let Check::Judge(j) = &e.check {
                    if !(0.0..=1.0).contains(&j.threshold) || j.rubric.trim().is_empty() {
                        return refuse(format!(
                            "case `{}`: a judge needs a rubric and a threshold from 0 to 1",
                            case.id
                        ));
                    }
                }
                if let Check::Schema(schema) = &e.check {
                    if let Err(err) = jsonschema::validator_for(schema) {
                        return refuse(format!("case `{}`: `schema` is not a JSON Schema: {err}", case.id));
                    }
                }
            }
        }
        Ok(Suite { path: path.to_path_buf(), file })
    }

    /// The directory the file's relative paths start from.
    pub fn dir(&self) -> PathBuf {
        self.path.parent().map(Path::to_path_buf).unwrap_or_default()
    }

    /// The evaluation file of a workflow file: `NAME.evals.yaml` beside `NAME.yaml`.
    pub fn beside(workflow: &Path) -> PathBuf {
        let stem = workflow.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        workflow.with_file_name(format!("{stem}.evals.yaml"))
    }

    /// Where the suite's model calls are recorded: `NAME.evals.calls.json` beside `NAME.evals.yaml`.
    pub fn calls_path(&self) -> PathBuf {
        calls_path(&self.path)
    }

    pub fn workflow_path(&self) -> PathBuf {
        self.dir().join(&self.file.workflow)
    }
}

/// The JSON Schema of evaluation files, as committed at `schema/evals.schema.json`.
pub fn schema_json() -> String {
    let schema = schemars::schema_for!(EvalFile);
    let mut text = serde_json::to_string_pretty(&schema).expect("schemas serialize");
    text.push('\n');
    text
}

/// Where the model calls of the evaluation file at `path` are recorded: `NAME.evals.calls.json` beside it.
pub fn calls_path(path: &std::path::Path) -> PathBuf {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let stem = name.strip_suffix(".yaml").or_else(|| name.strip_suffix(".yml")).or_else(|| name.strip_suffix(".json"));
    path.with_file_name(format!("{}.calls.json", stem.unwrap_or(&name)))
}
