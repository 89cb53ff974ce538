//! A workflow as an MCP tool: its name, description and schemas as a tool lists them, the call's arguments as the
//! run's input, and a run's outcome as the tool's result. One definition for every place that serves workflows as
//! tools: `switchyard mcp serve` (stdio, runs on this machine) and a server's `/mcp` (runs for its workers).
//!
//! Invariants:
//! - A tool's name is derived from the workflow's name alone (letters, digits, `_`, `-`; at most 64), so the
//!   same workflow is the same tool wherever it is served.
//! - With an `input_schema`, the call's arguments are the run's input, as they are; without one, the tool takes
//!   `{message}` and the message is the input.
//! - A completed run answers with its end's data (structured when the end node declares an object `output_schema`);
//!   a run that did not complete answers as an error naming each failed node with its code; a paused run says how to
//!   decide it, in the words of where it is served (`Decide`).

use std::sync::Arc;

use rmcp::model::{
    CallToolResult, ContentBlock, ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema, JsonObject,
    Tool,
};
use serde_json::{json, Value};

use crate::document::Workflow;
use crate::result::{NodeResult, NodeStatus, RunResult, RunStatus};
use crate::run::Decision;

/// One workflow served as a tool.
pub struct WorkflowTool {
    /// The tool's name ([`tool_name`] of the workflow's name).
    pub name: String,
    /// The workflow's `input_schema`: the call's arguments are the run's input. Without one, `{message}`.
    pub takes_object: bool,
    /// The output schema of its end node, when it has one (an object schema): the tool's `outputSchema`.
    pub output_schema: Option<JsonObject>,
    tool: Tool,
}

impl WorkflowTool {
    pub fn new(workflow: &Workflow) -> WorkflowTool {
        let name = tool_name(&workflow.name);
        let output_schema = output_schema(workflow);
        let input = match &workflow.input_schema {
            Some(Value::Object(schema)) => schema.clone(),
            Some(_) | None => json!({
                "type": "object",
                "properties": {"message": {"type": "string", "description": "What the workflow starts from"}},
            })
            .as_object()
            .cloned()
            .expect("an object"),
        };
        let description =
            workflow.description.clone().unwrap_or_else(|| format!("Runs the workflow {}", workflow.name));
        let mut tool = Tool::new(name.clone(), description, Arc::new(input)).with_title(workflow.name.clone());
        if let Some(schema) = &output_schema {
            tool = tool.with_raw_output_schema(Arc::new(schema.clone()));
        }
        WorkflowTool { name, takes_object: workflow.input_schema.is_some(), output_schema, tool }
    }

    /// The tool as `tools/list` gives it.
    pub fn tool(&self) -> Tool {
        self.tool.clone()
    }

    /// The tool as an agent's model is offered it (`tools.workflows`): the same name, description and arguments.
    pub fn for_a_model(&self) -> crate::run::ChildTool {
        crate::run::ChildTool {
            name: self.name.clone(),
            description: self.tool.description.as_deref().unwrap_or_default().to_string(),
            parameters: Value::Object((*self.tool.input_schema).clone()),
        }
    }

    /// The run's input for a call with these arguments.
    pub fn input(&self, arguments: JsonObject) -> Option<Value> {
        if self.takes_object {
            return Some(Value::Object(arguments));
        }
        match arguments.get("message") {
            Some(Value::String(m)) => Some(Value::String(m.clone())),
            Some(Value::Null) | None => None,
            Some(other) => Some(other.clone()),
        }
    }

    /// The tool's answer for a run that ended (or was cancelled), or paused with nobody here to decide it.
    pub fn answer(&self, r: &RunResult, decide: &Decide) -> CallToolResult {
        if r.status == RunStatus::Paused {
            return paused(r, decide);
        }
        if r.status != RunStatus::Completed {
            // Each failed node, with its code (CODE_NEEDS_CONSENT, NO_MODEL…: docs/errors.md).
            let nodes: Vec<(&String, &NodeResult)> =
                r.results.iter().filter(|(_, n)| n.status == NodeStatus::Failed).collect();
            let mut said = format!(
                "run {} {}: {}",
                r.run_id,
                r.status.as_str(),
                r.error.as_deref().unwrap_or("see the run's nodes for why")
            );
            for (node, n) in &nodes {
                let code = n.error_code.as_deref().map(|c| format!(" [{c}]")).unwrap_or_default();
                said.push_str(&format!("\n- `{node}`: {}{code}", n.error.as_deref().unwrap_or("failed")));
            }
            let mut result = CallToolResult::error(vec![ContentBlock::text(said)]);
            if self.output_schema.is_none() {
                let failed: Vec<Value> = nodes
                    .iter()
                    .map(|(node, n)| json!({"node": node, "code": n.error_code, "message": n.error}))
                    .collect();
                result.structured_content =
                    Some(json!({"status": r.status.as_str(), "runId": r.run_id, "error": r.error, "failed": failed}));
            }
            return result;
        }
        let data = output(r);
        if self.output_schema.is_some() && data.is_object() {
            let mut result = CallToolResult::structured(data);
            result.meta = None;
            return result;
        }
        let text = match &data {
            Value::String(s) => s.clone(),
            Value::Object(o) if o.len() == 1 && o.get("text").is_some_and(Value::is_string) => {
                o["text"].as_str().unwrap_or_default().to_string()
            }
            other => other.to_string(),
        };
        let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
        result.structured_content = Some(json!({"status": "completed", "runId": r.run_id, "result": data}));
        result
    }
}

/// How a person decides a paused run, where the workflow is served.
pub enum Decide {
    /// On this machine: `switchyard resume RUN --decide NODE=approve`.
    Resume,
    /// On a server: in its web app, or through its API's decisions route; `may_decide`: the caller's token may.
    Server { may_decide: bool },
}

/// A run that waits for a decision nobody here can take: how to take it.
fn paused(r: &RunResult, decide: &Decide) -> CallToolResult {
    let asks: Vec<String> = r.pending.iter().map(|p| format!("`{}` asks: {}", p.node, p.message)).collect();
    let (how, resume) = match decide {
        Decide::Resume => {
            let flags: Vec<String> = r.pending.iter().map(|p| format!("--decide {}=approve", p.node)).collect();
            let command = format!("switchyard resume {} {}", r.run_id, flags.join(" "));
            (format!("Decide it with `{command}` (or `=reject:NOTE`), or in the Switchyard app."), command)
        }
        Decide::Server { may_decide } => {
            let route = format!("POST /api/runs/{}/decisions", r.run_id);
            let node = r.pending.first().map(|p| p.node.as_str()).unwrap_or("NODE");
            let who = if *may_decide {
                "Decide it"
            } else {
                "This call's token may not decide approvals (that needs scope `decide`): someone whose token may \
                 decides it"
            };
            (
                format!(
                    "{who} in the server's web app (History), if it serves one, or with `{route}` and the body \
                     {{\"node\": \"{node}\", \"decision\": \"approve\"}} (or \"reject\", with a \"note\")."
                ),
                route,
            )
        }
    };
    let text = format!("Run {} waits for a decision ({}). {how}", r.run_id, asks.join("; "));
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.structured_content = Some(json!({
        "status": "paused",
        "runId": r.run_id,
        "pending": r.pending.iter().map(|p| json!({"node": p.node, "message": p.message})).collect::<Vec<_>>(),
        "resume": resume,
    }));
    result
}

/// The question that asks a person to approve or reject a paused run's approval `node`, with a note: a form
/// (elicitation) whose message is the approval's, with what it is about and which run and node it is.
pub fn question(run_id: &str, node: &str, message: &str, about: &str) -> ElicitRequestParams {
    let schema: ElicitationSchema = serde_json::from_value(json!({
        "type": "object",
        "properties": {
            "decision": {"type": "string", "title": "Decision", "enum": ["approve", "reject"]},
            "note": {"type": "string", "title": "Note", "description": "Why (the run may use it)"},
        },
        "required": ["decision"],
    }))
    .expect("the approval's elicitation schema is valid");
    let question = match about.trim() {
        "" => format!("{message}\n\n(run {run_id}, approval `{node}`)"),
        about => format!("{message}\n\n{about}\n\n(run {run_id}, approval `{node}`)"),
    };
    ElicitRequestParams::FormElicitationParams { meta: None, message: question, requested_schema: schema }
}

/// The person's answer to [`question`]: their decision (declining is rejecting), or None when they dismissed it.
pub fn decision(answer: ElicitResult) -> Option<Decision> {
    match answer.action {
        ElicitationAction::Accept => {
            let content = answer.content.unwrap_or_default();
            let word = content["decision"].as_str().unwrap_or("");
            let note = content["note"].as_str().unwrap_or("");
            Decision::parse(word, note).ok()
        }
        ElicitationAction::Decline => Some(Decision::parse("reject", "").expect("reject is a decision")),
        _ => None,
    }
}

/// A call that could not run: its `{code, message}` (the first of `errors`, else `RUN_REFUSED`).
pub fn refused(message: &str, errors: &[Value]) -> CallToolResult {
    let mut result = CallToolResult::error(vec![ContentBlock::text(message.to_string())]);
    let code = errors.first().and_then(|e| e["code"].as_str()).unwrap_or("RUN_REFUSED");
    result.structured_content = Some(json!({"status": "invalid", "errors": errors, "code": code}));
    result
}

/// A workflow's name as a tool name (one definition, with the document: an agent's `tools.workflows` name theirs so).
pub use crate::document::tool_name;

/// The end node's output schema (`Workflow::output_schema`), as a tool lists it.
fn output_schema(workflow: &Workflow) -> Option<JsonObject> {
    workflow.output_schema().cloned()
}

/// A workflow's output: the data of the run's last node to finish well (what its end node gave). A `workflow` node's
/// output is its child run's, this.
pub fn output(r: &RunResult) -> Value {
    r.trace
        .steps
        .iter()
        .rev()
        .filter(|s| s.status == NodeStatus::Success)
        .find_map(|s| r.results.get(&s.node).map(|n| n.data.clone()))
        .unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::PendingApproval;

    fn paused_run() -> RunResult {
        let pending = PendingApproval {
            node: "review".into(),
            message: "Publish this?".into(),
            previous_output: String::new(),
            tool: None,
            child: None,
        };
        RunResult {
            run_id: "r1".into(),
            status: RunStatus::Paused,
            results: Default::default(),
            trace: Default::default(),
            pending: vec![pending],
            state: Default::default(),
            error: None,
        }
    }

    #[test]
    fn a_paused_answer_says_how_to_decide_in_the_words_of_where_it_is_served() {
        let workflow: Workflow =
            crate::format::load_str("switchyard: 1\nname: Publish\nnodes:\n  - {id: start, type: start}\n", None, None)
                .unwrap()
                .workflow;
        let tool = WorkflowTool::new(&workflow);
        let text =
            |r: &CallToolResult| serde_json::to_value(&r.content).unwrap()[0]["text"].as_str().unwrap().to_string();
        let here = tool.answer(&paused_run(), &Decide::Resume);
        assert_eq!(here.structured_content.as_ref().unwrap()["resume"], "switchyard resume r1 --decide review=approve");
        let server = tool.answer(&paused_run(), &Decide::Server { may_decide: true });
        assert_eq!(server.structured_content.as_ref().unwrap()["resume"], "POST /api/runs/r1/decisions");
        assert!(text(&server).starts_with("Run r1 waits for a decision (`review` asks: Publish this?). Decide it"));
        // A token that may not decide is told so, not sent to a route that would refuse it.
        let not_yours = tool.answer(&paused_run(), &Decide::Server { may_decide: false });
        assert!(text(&not_yours).contains("This call's token may not decide approvals (that needs scope `decide`)"));
    }

    #[test]
    fn a_workflow_name_becomes_a_tool_name_of_the_allowed_characters() {
        assert_eq!(tool_name("Publish with approval"), "publish_with_approval");
        assert_eq!(tool_name("  Count rows!! "), "count_rows");
        assert_eq!(tool_name("v1.2-beta"), "v1_2-beta");
        assert_eq!(tool_name("???"), "workflow");
        assert_eq!(tool_name(&"x".repeat(80)).len(), 64);
    }
}
