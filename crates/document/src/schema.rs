//! The JSON Schema of the canonical format, generated from the document types so it cannot drift from them.

/// The schema as pretty JSON, as committed at `schema/workflow.schema.json`.
pub fn workflow_schema_json() -> String {
    let schema = schemars::schema_for!(crate::document::Workflow);
    let mut text = serde_json::to_string_pretty(&schema).expect("schemas serialize");
    text.push('\n');
    text
}
