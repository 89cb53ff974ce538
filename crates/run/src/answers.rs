//! Answers files: what each node returns and which way each decision goes, so a workflow runs offline and
//! deterministically. A product feature, not a test double: users test workflows with it, CI runs examples with it.
//!
//! Answers are keyed by how many times the node was called before in the run, never by hidden counters, so a paused
//! run resumed in another process continues the script where it stopped.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::format::{strip_location, LoadError};
use crate::model::{ExecuteRequest, Model, ModelError, ModelOutput, NodeIo, RouteAnswer, RouteRequest};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Answers {
    /// What a node returns each time it runs; the last entry repeats.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub nodes: BTreeMap<String, OneOrMany<Answer>>,
    /// The target each routing decision picks, per visit; the last repeats.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub routes: BTreeMap<String, OneOrMany<String>>,
    /// Decisions given without a person, per visit; the last repeats. An unscripted approval pauses the run.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub approvals: BTreeMap<String, OneOrMany<Value>>,
    /// The answers of the child runs of each `workflow` node, by its id: the same shape, for the child's nodes
    /// (docs/subworkflows.md).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub workflows: BTreeMap<String, Answers>,
}

/// One entry, or a list of entries used per call/visit in order.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum OneOrMany<T> {
    Many(Vec<T>),
    One(T),
}

// Not `#[serde(untagged)]`: its "did not match any variant" hides what is actually wrong with an entry.
impl<'de, T: serde::de::DeserializeOwned> Deserialize<'de> for OneOrMany<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let value = Value::deserialize(d)?;
        let explain = |e: serde_json::Error| D::Error::custom(crate::format::explain(&e.to_string()));
        if value.is_array() {
            serde_json::from_value(value).map(OneOrMany::Many).map_err(explain)
        } else {
            serde_json::from_value(value).map(OneOrMany::One).map_err(explain)
        }
    }
}

impl<T> OneOrMany<T> {
    /// The entry for the `index`-th call; the last one repeats.
    pub fn at(&self, index: u32) -> Option<&T> {
        match self {
            OneOrMany::One(v) => Some(v),
            OneOrMany::Many(v) => v.get(index as usize).or(v.last()),
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AnswerStatus {
    #[default]
    Success,
    Failed,
}

impl AnswerStatus {
    fn is_success(&self) -> bool {
        *self == AnswerStatus::Success
    }
}

/// One scripted answer of a node.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Answer {
    /// The node's result data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    /// Shorthand for `data: {text: …}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "AnswerStatus::is_success")]
    pub status: AnswerStatus,
    /// The failure message when `status: failed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Simulated model latency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<u64>,
    /// Tools the model calls before answering (subagents by child id).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ScriptedToolCall>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedToolCall {
    pub tool: String,
    #[serde(default)]
    pub input: Value,
}

impl Answers {
    /// The answers file that belongs to a workflow: `<stem>.script.yaml` beside it (`review.yaml` →
    /// `review.script.yaml`), as an absolute path, when that file exists.
    pub fn beside(workflow: &Path) -> Option<PathBuf> {
        let script = workflow.with_extension("script.yaml");
        if !script.is_file() {
            return None;
        }
        Some(std::fs::canonicalize(&script).unwrap_or(script))
    }

    pub fn load(path: &Path) -> Result<Answers, LoadError> {
        let text = std::fs::read_to_string(path).map_err(|e| LoadError {
            code: "INVALID_FILE",
            file: Some(path.into()),
            line: None,
            column: None,
            message: format!("cannot read the answers file: {e}"),
        })?;
        Answers::parse(&text).map_err(|mut e| {
            e.file = Some(path.into());
            e
        })
    }

    pub fn parse(text: &str) -> Result<Answers, LoadError> {
        if text.trim_start().starts_with('{') {
            serde_json::from_str(text).map_err(|e| {
                LoadError::new(format!("invalid script: {}", strip_location(&e.to_string())))
                    .at(Some(e.line()), Some(e.column()))
            })
        } else if text.trim().is_empty() {
            Ok(Answers::default())
        } else {
            serde_yaml::from_str(text).map_err(|e| {
                let loc = e.location();
                LoadError::new(format!("invalid script: {}", strip_location(&e.to_string())))
                    .at(loc.as_ref().map(|l| l.line()), loc.as_ref().map(|l| l.column()))
            })
        }
    }

    /// Ids the script names that the workflow does not have: likely typos, reported as warnings.
    pub fn unknown_ids<'a>(&'a self, known: &'a [&'a str]) -> Vec<&'a str> {
        self.nodes
            .keys()
            .chain(self.routes.keys())
            .chain(self.approvals.keys())
            .chain(self.workflows.keys())
            .map(String::as_str)
            .filter(|id| !known.contains(id))
            .collect()
    }

    /// Whether these answers stand in for a model anywhere in `workflow`: a routing decision, or a node that is not a
    /// code step. Answers that pin only code steps leave the model calls to the model.
    pub fn answers_a_model(&self, workflow: &crate::document::Workflow) -> bool {
        let is_code =
            |id: &str| workflow.nodes.iter().any(|n| n.id == id && n.node_type == crate::document::NodeType::Script);
        !self.routes.is_empty() || self.nodes.keys().any(|id| !is_code(id))
    }

    pub fn answer(&self, node: &str, call_index: u32) -> Option<&Answer> {
        self.nodes.get(node).and_then(|a| a.at(call_index))
    }

    pub fn approval(&self, node: &str, visit: u32) -> Option<&Value> {
        self.approvals.get(node).and_then(|a| a.at(visit))
    }
}

/// The model that answers from a script.
pub struct AnswersModel {
    script: std::sync::Arc<Answers>,
}

impl AnswersModel {
    pub fn new(script: std::sync::Arc<Answers>) -> AnswersModel {
        AnswersModel { script }
    }
}

#[async_trait]
impl Model for AnswersModel {
    async fn execute(&self, request: &ExecuteRequest<'_>, io: &dyn NodeIo) -> Result<ModelOutput, ModelError> {
        let Some(answer) = self.script.answer(request.node, request.call_index) else {
            // Unscripted: an empty object where structured output is expected, else empty text.
            return Ok(match request.output_schema {
                Some(_) => ModelOutput { data: Some(json!({})), text: None, usage: None },
                None => ModelOutput { data: None, text: Some(String::new()), usage: None },
            });
        };
        if let Some(ms) = answer.delay_ms {
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
        for call in &answer.tool_calls {
            // A tool error goes back to the model as the tool's result (docs/tools.md); the script carries on.
            let _ = io.call_tool(&call.tool, call.input.clone()).await;
        }
        if answer.status == AnswerStatus::Failed {
            return Err(ModelError::retryable(answer.error.clone().unwrap_or_else(|| "scripted failure".into())));
        }
        if let Some(text) = &answer.text {
            io.progress(text);
            return Ok(ModelOutput { data: answer.data.clone(), text: Some(text.clone()), usage: None });
        }
        match &answer.data {
            Some(data) => Ok(ModelOutput { data: Some(data.clone()), text: None, usage: None }),
            None => Ok(ModelOutput { data: Some(json!({})), text: None, usage: None }),
        }
    }

    async fn route(&self, request: &RouteRequest<'_>, _io: &dyn NodeIo) -> Result<RouteAnswer, ModelError> {
        match self.script.routes.get(request.node).and_then(|r| r.at(request.visit)) {
            Some(choice) => Ok(RouteAnswer { choice: choice.clone(), note: None, usage: None }),
            None => {
                let first = request.choices.first().map(|c| c.id.clone()).unwrap_or_default();
                Ok(RouteAnswer {
                    choice: first,
                    note: Some("unscripted decision: took the first choice".into()),
                    usage: None,
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_beside_a_workflow_is_its_stem_dot_script_yaml_when_it_exists() {
        let dir = tempfile::tempdir().unwrap();
        let workflow = dir.path().join("review.yaml");
        assert_eq!(Answers::beside(&workflow), None);
        std::fs::write(dir.path().join("review.script.yaml"), "nodes: {}\n").unwrap();
        let found = Answers::beside(&workflow).unwrap();
        assert!(found.is_absolute() && found.ends_with("review.script.yaml"), "{found:?}");
        assert_eq!(Answers::beside(&dir.path().join("review.json")), Some(found), "whatever the workflow's extension");
        std::fs::create_dir(dir.path().join("other.script.yaml")).unwrap();
        assert_eq!(Answers::beside(&dir.path().join("other.yaml")), None, "a directory is not an answers file");
    }
}
