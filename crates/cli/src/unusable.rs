//! How a command says it cannot go on: exit 2, the message on stderr, and its `{code, message}` objects (printed as
//! JSON with `--json`).

use serde_json::{json, Value};
use switchyard_engine::format;
use switchyard_engine::session::SessionError;

/// Exit 2: the input could not be used at all. With `--json` the errors are printed as one JSON object on stdout, so
/// a tool reading it always has something to parse.
pub(crate) struct Unusable {
    pub(crate) message: String,
    /// `{code, message, line?}` objects (or validation findings).
    pub(crate) errors: Vec<Value>,
}

pub(crate) fn coded(code: &str, message: impl Into<String>) -> Unusable {
    let message = message.into();
    Unusable { errors: vec![json!({"code": code, "message": message})], message }
}

impl From<format::LoadError> for Unusable {
    fn from(e: format::LoadError) -> Unusable {
        let mut error = json!({"code": e.code, "message": e.to_string()});
        if let Some(line) = e.line {
            error["line"] = json!(line);
        }
        Unusable { message: e.to_string(), errors: vec![error] }
    }
}

impl From<SessionError> for Unusable {
    fn from(e: SessionError) -> Unusable {
        let errors = match &e {
            SessionError::Invalid { report, .. } => {
                report.errors.iter().map(|f| serde_json::to_value(f).expect("a finding is JSON")).collect()
            }
            e => vec![json!({"code": e.code(), "message": e.to_string()})],
        };
        Unusable { message: e.to_string(), errors }
    }
}
