//! Prompts and expressions, both Jinja through minijinja (SEMANTICS §2): one environment, one syntax, the same
//! undefined-is-falsy rules for `if` conditions, edge guards, `for_each` lists and prompt templates.

use std::sync::{Arc, OnceLock};

use minijinja::value::{Enumerator, Object, Value as JValue};
use minijinja::{Environment, UndefinedBehavior};
use serde_json::Value;

/// The name previous output is exposed under, as in AgentFlow prompts.
pub const PREVIOUS_OUTPUT: &str = "PREVIOUS_OUTPUT";

fn env() -> &'static Environment<'static> {
    static ENV: OnceLock<Environment<'static>> = OnceLock::new();
    ENV.get_or_init(|| {
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Lenient);
        env.set_keep_trailing_newline(true);
        // Python's dict and str methods (`state.get('x', 0)`, `.items()`, `.keys()`, `.upper()`…), as TEA's Jinja2
        // conditions use them.
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env
    })
}

/// Whether text uses template syntax at all; plain text is used as is, without a render.
pub fn is_template(text: &str) -> bool {
    text.contains("{{") || text.contains("{%") || text.contains("{#")
}

/// Checks that a template parses; the message says where it does not.
pub fn check_template(source: &str) -> Result<(), TemplateError> {
    if !is_template(source) {
        return Ok(());
    }
    env().template_from_str(source).map(|_| ()).map_err(describe)
}

/// Checks that an expression parses.
pub fn check_expression(source: &str) -> Result<(), TemplateError> {
    if source.trim().is_empty() {
        return Err(TemplateError("the expression is empty".into()));
    }
    env().compile_expression(source).map(|_| ()).map_err(describe)
}

/// The names the engine puts in every context besides node ids (SEMANTICS §2). `item` and `index` are set only
/// inside a `for_each` node's run ([`ITEM_NAMES`]).
pub const CONTEXT_NAMES: [&str; 4] = ["input", "state", PREVIOUS_OUTPUT, "iteration"];

/// The names a `for_each` node's templates see for the current item.
pub const ITEM_NAMES: [&str; 2] = ["item", "index"];

/// Parses a template and returns what it reads from the context: the dotted paths of the names it does not define
/// itself (`draft.text`, `input`), sorted, leaving out the environment's globals (`range`, `dict`, …). Plain text
/// reads nothing and is not parsed.
pub fn template_reads(source: &str) -> Result<Vec<String>, TemplateError> {
    if !is_template(source) {
        return Ok(Vec::new());
    }
    let template = env().template_from_str(source).map_err(describe)?;
    Ok(without_globals(template.undeclared_variables(true)))
}

/// Parses an expression and returns what it reads from the context, like [`template_reads`].
pub fn expression_reads(source: &str) -> Result<Vec<String>, TemplateError> {
    check_expression(source)?;
    let expression = env().compile_expression(source).map_err(describe)?;
    Ok(without_globals(expression.undeclared_variables(true)))
}

fn without_globals(names: std::collections::HashSet<String>) -> Vec<String> {
    static GLOBALS: OnceLock<Vec<String>> = OnceLock::new();
    let globals = GLOBALS.get_or_init(|| env().globals().map(|(name, _)| name.to_string()).collect());
    let is_global = |path: &str| {
        let root = path.split('.').next().unwrap_or(path);
        globals.iter().any(|g| g == root)
    };
    let mut names: Vec<String> = names.into_iter().filter(|n| !is_global(n)).collect();
    names.sort();
    names
}

/// Renders a template over a scope.
pub fn render(source: &str, scope: &Scope) -> Result<String, TemplateError> {
    if !is_template(source) {
        return Ok(source.to_string());
    }
    let template = env().template_from_str(source).map_err(describe)?;
    template.render(JValue::from_object(scope.clone())).map_err(describe)
}

/// Evaluates an expression to a JSON value.
pub fn evaluate(source: &str, scope: &Scope) -> Result<Value, TemplateError> {
    let expr = env().compile_expression(source).map_err(describe)?;
    let value = expr.eval(JValue::from_object(scope.clone())).map_err(describe)?;
    if value.is_undefined() || value.is_none() {
        return Ok(Value::Null);
    }
    serde_json::to_value(&value).map_err(|e| TemplateError(format!("the result cannot be used as data: {e}")))
}

/// Evaluates an expression for truth, with Jinja's truthiness (undefined and empty are false).
pub fn is_true(source: &str, scope: &Scope) -> Result<bool, TemplateError> {
    let expr = env().compile_expression(source).map_err(describe)?;
    let value = expr.eval(JValue::from_object(scope.clone())).map_err(describe)?;
    Ok(value.is_true())
}

message_error!(
    /// A template or expression that does not parse, or fails when it is evaluated: what and where.
    TemplateError
);

fn describe(e: minijinja::Error) -> TemplateError {
    let mut msg = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(s) = source {
        msg.push_str(&format!(": {s}"));
        source = s.source();
    }
    TemplateError(msg)
}

/// What templates and expressions see: `input`, one key per completed node, `state`, `item`, `index` and
/// `PREVIOUS_OUTPUT`. Lookups read the shared maps directly; nothing is copied per render.
#[derive(Debug, Clone)]
pub struct Scope {
    pub input: Arc<Value>,
    pub results: imbl::HashMap<String, Arc<Value>>,
    pub state: imbl::HashMap<String, Value>,
    pub previous_output: Arc<str>,
    pub item: Option<(Value, usize)>,
    /// The iteration of the node being run or routed (1 for its first run).
    pub iteration: Option<u32>,
}

impl Scope {
    pub fn new(input: Value) -> Scope {
        Scope {
            input: Arc::new(input),
            results: imbl::HashMap::new(),
            state: imbl::HashMap::new(),
            previous_output: Arc::from(""),
            item: None,
            iteration: None,
        }
    }

    /// The context object of SEMANTICS §2 as JSON: `input` plus each completed node's data.
    pub fn context_json(&self) -> Value {
        let mut map = serde_json::Map::new();
        map.insert("input".into(), (*self.input).clone());
        let mut keys: Vec<&String> = self.results.keys().collect();
        keys.sort();
        for k in keys {
            map.insert(k.clone(), (*self.results[k]).clone());
        }
        Value::Object(map)
    }

    /// `state` as JSON, keys sorted so output is stable.
    pub fn state_json(&self) -> Value {
        let mut entries: Vec<(&String, &Value)> = self.state.iter().collect();
        entries.sort_by(|a, b| a.0.cmp(b.0));
        Value::Object(entries.into_iter().map(|(k, v)| (k.clone(), v.clone())).collect())
    }
}

#[derive(Debug)]
struct StateObject(imbl::HashMap<String, Value>);

impl Object for StateObject {
    fn get_value(self: &Arc<Self>, key: &JValue) -> Option<JValue> {
        self.0.get(key.as_str()?).map(JValue::from_serialize)
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        let keys: Vec<JValue> = self.0.keys().map(|k| JValue::from(k.as_str())).collect();
        Enumerator::Values(keys)
    }
}

impl Object for Scope {
    fn get_value(self: &Arc<Self>, key: &JValue) -> Option<JValue> {
        let key = key.as_str()?;
        match key {
            "input" => Some(JValue::from_serialize(&*self.input)),
            "state" => Some(JValue::from_object(StateObject(self.state.clone()))),
            PREVIOUS_OUTPUT => Some(JValue::from(&*self.previous_output)),
            "item" => self.item.as_ref().map(|(item, _)| JValue::from_serialize(item)),
            "index" => self.item.as_ref().map(|(_, index)| JValue::from(*index)),
            "iteration" => self.iteration.map(JValue::from),
            _ => self.results.get(key).map(|v| JValue::from_serialize(&**v)),
        }
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        let mut keys: Vec<JValue> = ["input", "state", PREVIOUS_OUTPUT].into_iter().map(JValue::from).collect();
        keys.extend(self.results.keys().map(|k| JValue::from(k.as_str())));
        Enumerator::Values(keys)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn scope() -> Scope {
        let mut s = Scope::new(json!({"topic": "rust"}));
        s.results.insert("investigate".into(), Arc::new(json!({"novel_count": 2})));
        s.state.insert("score".into(), json!(0.95));
        s.previous_output = Arc::from("hello");
        s
    }

    #[test]
    fn renders_context_state_and_previous_output() {
        let out =
            render("{{ input.topic }} {{ investigate.novel_count }} {{ state.score }} {{PREVIOUS_OUTPUT}}", &scope());
        assert_eq!(out.unwrap(), "rust 2 0.95 hello");
    }

    #[test]
    fn expressions_use_jinja_truthiness() {
        let s = scope();
        assert!(is_true("state.score > 0.9", &s).unwrap());
        assert!(is_true("state[\"score\"] > 0.9 and investigate.novel_count == 2", &s).unwrap());
        assert!(!is_true("state.missing", &s).unwrap());
        assert!(is_true("not state.missing", &s).unwrap());
    }

    #[test]
    fn reads_are_the_undeclared_names_with_their_paths_without_globals_or_local_names() {
        let reads =
            template_reads("{% for x in range(3) %}{{ x }}{{ loop.index }}{% endfor %}{{ draft.text }} {{ input }}");
        assert_eq!(reads.unwrap(), ["draft.text", "input"]);
        assert_eq!(expression_reads("state[\"k\"] > 1 and review.data.score").unwrap(), ["review.data.score", "state"]);
        assert!(template_reads("plain {{ text").is_err());
        assert_eq!(template_reads("no template here").unwrap(), Vec::<String>::new());
        assert!(expression_reads("").is_err());
    }

    #[test]
    fn every_context_name_validation_accepts_is_one_the_scope_provides() {
        let mut s = scope();
        s.item = Some((json!("x"), 0));
        s.iteration = Some(1);
        let s = Arc::new(s);
        for name in CONTEXT_NAMES.iter().chain(&ITEM_NAMES) {
            assert!(s.get_value(&JValue::from(*name)).is_some(), "`{name}` is not in the scope");
        }
    }

    #[test]
    fn python_dict_methods_work_on_state_and_data_as_in_tea() {
        let s = scope();
        assert!(is_true("state.get('score', 0) > 0.9", &s).unwrap());
        assert!(is_true("state.get('missing', 0) == 0", &s).unwrap());
        assert!(is_true("state.get('missing') is none", &s).unwrap());
        assert!(is_true("'score' in state.keys()", &s).unwrap());
        assert!(is_true("state.items() | list | length == 1", &s).unwrap());
        assert!(is_true("investigate.get('novel_count') == 2 and input.get('topic').upper() == 'RUST'", &s).unwrap());
        assert_eq!(evaluate("state.values() | list", &s).unwrap(), json!([0.95]));
    }

    #[test]
    fn parse_errors_are_reported() {
        assert!(check_expression("state.x >").is_err());
        assert!(check_template("{{ unclosed").is_err());
        assert!(check_template("plain text with { braces }").is_ok());
        assert!(check_expression("  ").is_err());
    }
}
