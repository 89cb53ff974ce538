//! The canonical format: `Workflow` serialized as YAML (or JSON), field order fixed by the type, so exports are
//! stable and diff cleanly.

use super::{explain, looks_like_json, strip_location, LoadError};
use crate::document::{Workflow, FORMAT_VERSION};

pub(super) fn from_str(text: &str) -> Result<Workflow, LoadError> {
    let workflow: Workflow = if looks_like_json(text) {
        serde_json::from_str(text).map_err(|e| {
            LoadError::new(explain(&strip_location(&e.to_string()))).at(Some(e.line()), Some(e.column()))
        })?
    } else {
        serde_yaml::from_str(text).map_err(|e| {
            let loc = e.location();
            LoadError::new(explain(&strip_location(&e.to_string())))
                .at(loc.as_ref().map(|l| l.line()), loc.as_ref().map(|l| l.column()))
        })?
    };
    if workflow.switchyard != FORMAT_VERSION {
        return Err(LoadError::new(format!(
            "unsupported format version `switchyard: {}`: this Switchyard reads version {FORMAT_VERSION}; \
             upgrade Switchyard or set `switchyard: {FORMAT_VERSION}`",
            workflow.switchyard
        )));
    }
    Ok(workflow)
}

/// The canonical YAML text of a workflow.
pub fn to_yaml(workflow: &Workflow) -> String {
    serde_yaml::to_string(workflow).expect("a workflow always serializes to YAML")
}

/// The canonical JSON text of a workflow (pretty, with a trailing newline).
pub fn to_json(workflow: &Workflow) -> String {
    let mut text = serde_json::to_string_pretty(workflow).expect("a workflow always serializes to JSON");
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use crate::format::explain;

    #[test]
    fn suggests_the_closest_field() {
        let msg = explain("nodes[0]: unknown field `user_promt`, expected one of `id`, `user_prompt`, `model`");
        assert!(msg.ends_with("did you mean `user_prompt`?"), "{msg}");
    }

    #[test]
    fn no_suggestion_when_nothing_is_close() {
        let msg = explain("unknown field `zzz`, expected one of `id`, `user_prompt`");
        assert!(!msg.contains("did you mean"), "{msg}");
    }
}
