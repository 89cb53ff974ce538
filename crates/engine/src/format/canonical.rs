//! The canonical format: `Workflow` serialized as YAML (or JSON), field order fixed by the type, so exports are
//! stable and diff cleanly.

use super::{looks_like_json, strip_location, LoadError};
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

/// Adds a "did you mean" to serde's unknown-field and unknown-variant messages.
fn explain(message: &str) -> String {
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

#[cfg(test)]
mod tests {
    use super::explain;

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
