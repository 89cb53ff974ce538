//! OpenExpertise `experience.yaml` (docs/formats.md): `graph.nodes` (agents and tools), dependency `graph.edges` gated by
//! `when` expressions in its small DSL, `for_each` fan-out, `loops`, `pipelines`, and `state.schema` merge
//! strategies. Agents become agent nodes, tools become script nodes. `when` expressions are parsed (not rewritten
//! as strings) and translated into this engine's expression language.

use std::path::Path;

use serde_json::Value;

use super::LoadError;
use crate::document::{Edge, ForEach, Merge, Node, NodeType, OnError, Retry, StateField, Workflow};

const NODE_KEYS: &[&str] =
    &["id", "kind", "prompt", "impl", "reads", "writes", "schema", "for_each", "on_error", "phase", "description"];

/// A `cli-agent` node's own fields (OpenExpertise's `CliAgentNodeSpec`), all carried into the code step.
const CLI_AGENT_KEYS: &[&str] = &["provider", "model", "workdir", "output_format", "timeout_ms", "extra_args"];

/// OpenExpertise's published JSON Schema for `experience.yaml`, bundled (`schema/openexpertise-experience.schema.json`).
const OE_SCHEMA: &str = include_str!("../../../../schema/openexpertise-experience.schema.json");

pub(super) fn import(value: &Value, base_dir: Option<&Path>) -> Result<(Workflow, Vec<String>), LoadError> {
    let mut notes = Vec::new();
    let top = value.as_object().expect("detect() checked the top level is a map");
    let mut workflow =
        Workflow::new(top.get("name").and_then(Value::as_str).unwrap_or("Imported OpenExpertise workflow"));
    workflow.description = top.get("description").and_then(Value::as_str).map(str::to_string);
    for key in
        top.keys().filter(|k| !["name", "description", "graph", "state", "runtime", "version"].contains(&k.as_str()))
    {
        notes.push(format!("top-level `{key}` has no Switchyard equivalent and was left out"));
    }
    if let Some(c) = top.get("runtime").and_then(|r| r.get("concurrency")).and_then(Value::as_u64) {
        workflow.defaults.concurrency = Some(c as u32);
    }
    for (key, field) in top.get("state").and_then(|s| s.get("schema")).and_then(Value::as_object).into_iter().flatten()
    {
        let merge = match field.get("merge").and_then(Value::as_str) {
            None | Some("last_wins") => continue,
            Some("set_once") => Merge::SetOnce,
            Some("array_append") => Merge::ArrayAppend,
            Some(other) => {
                return Err(LoadError::new(format!(
                    "state.schema.{key}: unknown merge `{other}`; expected last_wins, set_once or array_append"
                ))
                .with_code("OE_UNKNOWN_MERGE"))
            }
        };
        workflow.state.insert(key.clone(), StateField { merge });
    }

    let graph = top.get("graph").cloned().unwrap_or(Value::Null);
    let raw_nodes = graph["nodes"].as_array().cloned().unwrap_or_default();
    // What OpenExpertise's schema constrains (`version`, `state.schema`, closed shapes) is checked after the checks
    // with their own messages, unless there is no node list: then the schema says what is missing.
    static VALIDATOR: std::sync::OnceLock<jsonschema::Validator> = std::sync::OnceLock::new();
    let check_schema =
        || super::check_published_schema(&VALIDATOR, OE_SCHEMA, value, "OpenExpertise experience", "OE_SCHEMA");
    if raw_nodes.is_empty() {
        if graph.get("nodes").is_none() {
            check_schema()?;
        }
        return Err(LoadError::new("`graph.nodes` is empty: an experience lists its nodes").with_code("NO_NODES"));
    }
    check(top, &raw_nodes)?;
    check_schema()?;
    let mut start_id = "start".to_string();
    while raw_nodes.iter().any(|n| n["id"] == start_id.as_str()) {
        start_id.insert(0, '_');
    }
    workflow.nodes.push(Node::new(start_id.clone(), NodeType::Start));
    let mut reads_writes = false;
    for (i, raw) in raw_nodes.iter().enumerate() {
        let id = raw["id"].as_str().ok_or_else(|| {
            LoadError::new(format!("graph.nodes[{i}]: every node needs an `id`")).with_code("OE_NODE_WITHOUT_ID")
        })?;
        if workflow.node(id).is_some() {
            return Err(LoadError::new(format!("graph.nodes[{i}]: node `{id}` is defined twice"))
                .with_code("DUPLICATE_NODE_ID"));
        }
        reads_writes |= raw.get("reads").is_some() || raw.get("writes").is_some();
        workflow.nodes.push(node(id, raw, base_dir, &mut notes)?);
        if raw["kind"] == "cli-agent" {
            for name in cli_agent_env(raw["provider"].as_str().unwrap_or_default()) {
                if !workflow.env.iter().any(|e| e == name) {
                    workflow.env.push(name.to_string());
                }
            }
        }
    }
    if reads_writes {
        notes.push("`reads` and `writes` are not enforced: every node sees the whole context, and its output merges into state by key".into());
    }

    for (i, raw) in graph["edges"].as_array().into_iter().flatten().enumerate() {
        let (Some(from), Some(to)) = (raw["from"].as_str(), raw["to"].as_str()) else {
            return Err(LoadError::new(format!("graph.edges[{i}]: needs `from` and `to`")).with_code("INVALID_EDGE"));
        };
        let mut edge = Edge::new(from, to);
        if let Some(when) = raw.get("when").and_then(Value::as_str) {
            edge.r#if = Some(translate(when).map_err(|e| {
                LoadError::new(format!("graph.edges[{i}] ({from} -> {to}): `when: {when}` does not parse: {e}"))
                    .with_code("INVALID_EXPRESSION")
            })?);
        }
        workflow.edges.push(edge);
    }
    // Nodes nothing leads to start the run, in parallel.
    let roots: Vec<String> = workflow.nodes[1..]
        .iter()
        .filter(|n| !workflow.edges.iter().any(|e| e.to == n.id && e.from != n.id))
        .map(|n| n.id.clone())
        .collect();
    for root in roots {
        workflow.edges.push(Edge::new(&start_id, root));
    }

    for (i, raw) in graph["loops"].as_array().into_iter().flatten().enumerate() {
        add_loop(&mut workflow, i, raw)?;
    }
    for (i, raw) in graph["pipelines"].as_array().into_iter().flatten().enumerate() {
        add_pipeline(&mut workflow, i, raw, &mut notes)?;
    }
    super::layered_positions(&mut workflow);
    Ok((workflow, notes))
}

/// The node kinds OpenExpertise's schema knows.
const KINDS: &[&str] = &["agent", "tool", "skill", "dataset", "experience", "cli-agent"];

/// The command-line agents a `cli-agent` node runs, as OpenExpertise names them.
const CLI_PROVIDERS: &[&str] = &["claude-code", "codex", "gemini"];

/// What OpenExpertise's validator refuses: no `name`, a node without a known `kind` or without what its kind needs
/// (`impl`, `prompt`), an edge to an unknown node, and `reads` / `writes` naming a field `state.schema` does not
/// declare.
fn check(top: &serde_json::Map<String, Value>, raw_nodes: &[Value]) -> Result<(), LoadError> {
    if top.get("name").and_then(Value::as_str).is_none_or(|n| n.trim().is_empty()) {
        return Err(LoadError::new("`name` is required: give the experience a name").with_code("OE_MISSING_NAME"));
    }
    let declared: Vec<&str> = top
        .get("state")
        .and_then(|s| s.get("schema"))
        .and_then(Value::as_object)
        .map(|s| s.keys().map(String::as_str).collect())
        .unwrap_or_default();
    let ids: Vec<&str> = raw_nodes.iter().filter_map(|n| n["id"].as_str()).collect();
    for (i, raw) in raw_nodes.iter().enumerate() {
        let id = raw["id"].as_str().ok_or_else(|| {
            LoadError::new(format!("graph.nodes[{i}]: every node needs an `id`")).with_code("OE_NODE_WITHOUT_ID")
        })?;
        let kind = raw["kind"].as_str();
        match kind {
            Some(k) if KINDS.contains(&k) => {}
            Some(k) => {
                return Err(LoadError::new(format!(
                    "graph.nodes[{i}] (`{id}`): kind `{k}` is not one of {}",
                    KINDS.join(", ")
                ))
                .with_code("OE_UNKNOWN_KIND"))
            }
            None => {
                return Err(LoadError::new(format!(
                    "graph.nodes[{i}] (`{id}`): `kind` is required ({})",
                    KINDS.join(", ")
                ))
                .with_code("OE_UNKNOWN_KIND"))
            }
        }
        let needs: &[&str] = match kind {
            Some("agent") => &["prompt"],
            Some("dataset") => &["source"],
            Some("cli-agent") => &["provider", "prompt"],
            _ => &["impl"],
        };
        for needs in needs {
            let given = raw.get(*needs).is_some_and(|v| v.as_str().is_none_or(|s| !s.trim().is_empty()));
            if !given {
                return Err(LoadError::new(format!(
                    "graph.nodes[{i}] (`{id}`): a {} node needs `{needs}`",
                    kind.unwrap()
                ))
                .with_code("OE_MISSING_FIELD"));
            }
        }
        if kind == Some("cli-agent") {
            let provider = raw["provider"].as_str().unwrap_or_default();
            if !CLI_PROVIDERS.contains(&provider) {
                return Err(LoadError::new(format!(
                    "graph.nodes[{i}] (`{id}`): cli-agent provider `{provider}` is not one of {}",
                    CLI_PROVIDERS.join(", ")
                ))
                .with_code("OE_UNKNOWN_CLI_PROVIDER"));
            }
        }
        for list in ["writes", "reads"] {
            for field in raw.get(list).and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str) {
                if !declared.contains(&field) {
                    return Err(LoadError::new(format!(
                        "node `{id}` {} undeclared state field `{field}`; declare it in state.schema",
                        list
                    ))
                    .with_code("OE_UNDECLARED_STATE_FIELD"));
                }
            }
        }
    }
    let edges = top.get("graph").and_then(|g| g.get("edges")).and_then(Value::as_array);
    for (i, edge) in edges.into_iter().flatten().enumerate() {
        for end in ["from", "to"] {
            if let Some(id) = edge[end].as_str() {
                if !ids.contains(&id) {
                    return Err(LoadError::new(format!("graph.edges[{i}]: `{end}: {id}` names no node"))
                        .with_code("OE_UNKNOWN_EDGE_NODE"));
                }
            }
        }
    }
    Ok(())
}

fn node(id: &str, raw: &Value, base_dir: Option<&Path>, notes: &mut Vec<String>) -> Result<Node, LoadError> {
    let kind = raw["kind"].as_str().unwrap_or("agent");
    let mut node = match kind {
        "cli-agent" => cli_agent(id, raw, notes),
        "agent" => {
            let mut n = Node::new(id, NodeType::Agent);
            n.user_prompt = raw["prompt"].as_str().map(|p| prompt(id, p, base_dir, notes));
            n
        }
        _ => {
            let mut n = Node::new(id, NodeType::Script);
            let implementation = raw["impl"].as_str().unwrap_or("");
            n.language = Some(
                match Path::new(implementation).extension().and_then(|e| e.to_str()) {
                    Some("py") => "python",
                    Some("ts") => "typescript",
                    _ => "javascript",
                }
                .to_string(),
            );
            if implementation.is_empty() {
                n.code = Some(format!("// {kind}: no impl"));
                notes.push(format!("node `{id}`: a {kind} without `impl` has nothing to run; pin its output"));
            } else {
                n.module = Some(implementation.to_string());
            }
            if kind != "tool" {
                notes.push(format!("node `{id}`: kind `{kind}` runs as a script node"));
            }
            n
        }
    };
    node.description = raw["description"].as_str().map(str::to_string);
    node.output_schema = raw.get("schema").cloned();
    if let Some(fe) = raw.get("for_each") {
        let source = fe["source"].as_str().ok_or_else(|| {
            LoadError::new(format!("node `{id}`: `for_each.source` must be a path like $.items"))
                .with_code("OE_INVALID_FOR_EACH")
        })?;
        let items = translate(source).map_err(|e| {
            LoadError::new(format!("node `{id}`: `for_each.source: {source}` does not parse: {e}"))
                .with_code("INVALID_EXPRESSION")
        })?;
        node.for_each = Some(ForEach { items, concurrency: fe["concurrency"].as_u64().map(|c| c as u32) });
    }
    // `on_error: {policy: skip | fail_run | retry, attempts, base_ms}` (the schema refuses other shapes).
    let policy = &raw["on_error"];
    match policy["policy"].as_str() {
        None | Some("fail_run") => {}
        Some("skip") => node.on_error = Some(OnError::Continue),
        Some("retry") => {
            // OpenExpertise counts attempts, the first included; Switchyard counts retries after it.
            let attempts = policy["attempts"].as_u64().unwrap_or(1).max(1);
            node.retry =
                Some(Retry { max: (attempts - 1) as u32, backoff_ms: Some(policy["base_ms"].as_u64().unwrap_or(500)) });
        }
        Some(other) => notes
            .push(format!("node `{id}`: on_error policy `{other}` is not known; the node stops the run on failure")),
    }
    let own: &[&str] = if kind == "cli-agent" { CLI_AGENT_KEYS } else { &[] };
    if let Some(map) = raw.as_object() {
        for key in map.keys().filter(|k| !NODE_KEYS.contains(&k.as_str()) && !own.contains(&k.as_str())) {
            notes.push(format!("node `{id}`: field `{key}` has no Switchyard equivalent and was left out"));
        }
    }
    Ok(node)
}

/// A `cli-agent` node: a Python code step that runs the command-line agent as OpenExpertise's dispatcher does
/// (`packages/node-kinds-cli-agent`): the command its provider names, with the prompt's `{{field}}` placeholders
/// filled from state, in `workdir` (relative to the experience), no shell, stdin closed, `timeout_ms` (default 10
/// minutes); a non-zero exit fails the node with the first 500 characters of stderr. Text output is written to the
/// node's one `writes` field; JSON output (Claude Code's `{result}` envelope and a ```json fence unwrapped) must be an
/// object, merged into state. Like every code step it runs only with consent.
fn cli_agent(id: &str, raw: &Value, notes: &mut Vec<String>) -> Node {
    let text = |k: &str| raw[k].as_str().unwrap_or_default().to_string();
    let provider = text("provider");
    let model = raw["model"].as_str();
    let extra: Vec<String> =
        raw["extra_args"].as_array().into_iter().flatten().filter_map(Value::as_str).map(str::to_string).collect();
    let json_output = raw["output_format"].as_str() == Some("json");
    // `None` is where the prompt goes; `--model` and `extra_args` follow the command's own arguments.
    let words = |args: &[&str]| args.iter().map(|a| Some(a.to_string())).collect::<Vec<_>>();
    let mut options = model.map_or_else(Vec::new, |m| words(&["--model", m]));
    options.extend(extra.into_iter().map(Some));
    let format = if json_output { "json" } else { "text" };
    let argv: Vec<Option<String>> = match provider.as_str() {
        "claude-code" => [words(&["claude", "-p"]), vec![None], words(&["--output-format", format]), options].concat(),
        "codex" => [words(&["codex", "exec", "--skip-git-repo-check"]), options, vec![None]].concat(),
        _ => [words(&["gemini", "--yolo", "--prompt"]), vec![None], options].concat(),
    };
    let writes: Vec<&str> = raw["writes"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    let timeout_ms = raw["timeout_ms"].as_u64().unwrap_or(600_000);
    let code = format!(
        r#"# OpenExpertise cli-agent ({provider}), as its dispatcher runs it.
import json, re, subprocess
null = None
names = dict(state)
try:
    names["item"] = item
except NameError:
    pass
def fill(m):
    value = names.get(m.group(1))
    if value is None:
        return m.group(0)
    return value if isinstance(value, str) else json.dumps(value)
prompt = re.sub(r"\{{\{{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}}\}}", fill, {prompt})
argv = [prompt if a is None else a for a in {argv}]
try:
    done = subprocess.run(argv, cwd={workdir}, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout={timeout})
except FileNotFoundError:
    raise RuntimeError(f"`{{argv[0]}}` is not installed or not on PATH: install the {provider} command-line agent") from None
except subprocess.TimeoutExpired:
    raise RuntimeError(f"{{argv[0]}} timed out after {timeout_ms} ms") from None
if done.returncode != 0:
    raise RuntimeError(f"{{argv[0]}} exited with code {{done.returncode}}: {{done.stderr[:500]}}")
{output}"#,
        prompt = py(&text("prompt")),
        argv = py(&argv),
        workdir = py(&raw["workdir"].as_str().unwrap_or(".")),
        timeout = timeout_ms as f64 / 1000.0,
        output = if json_output {
            r#"data = done.stdout.strip()
try:
    envelope = json.loads(data)
    if isinstance(envelope, dict) and isinstance(envelope.get("result"), str):
        data = envelope["result"].strip()
except ValueError:
    pass
fenced = re.match(r"^```(?:json)?\s*\n(.*)\n```$", data, re.S)
value = json.loads(fenced.group(1) if fenced else data)
if not isinstance(value, dict):
    raise RuntimeError("the agent's JSON answer is not an object")
return value"#
                .to_string()
        } else {
            match writes.as_slice() {
                [] => "return {}".to_string(),
                [one] => format!("return {{{}: done.stdout}}", py(one)),
                many => {
                    format!("raise RuntimeError('a text cli-agent writes one field; this one declares {}')", many.len())
                }
            }
        },
    );
    let mut node = Node::new(id, NodeType::Script);
    node.language = Some("python".into());
    node.code = Some(code);
    node.timeout_seconds = Some(timeout_ms.div_ceil(1000) + 10);
    notes.push(format!(
        "node `{id}`: a cli-agent runs `{}` as a Python code step (with your consent); it receives PATH, HOME and the {provider} key variables",
        argv.iter().map(|a| a.as_deref().unwrap_or("<prompt>")).collect::<Vec<_>>().join(" ")
    ));
    node
}

/// A value written into generated Python: JSON, read with `null = None` in scope.
fn py<T: serde::Serialize + ?Sized>(value: &T) -> String {
    serde_json::to_string(value).expect("strings and lists serialize")
}

/// The variables a command-line agent needs from the environment: its home (where it keeps its login) and its keys.
fn cli_agent_env(provider: &str) -> &'static [&'static str] {
    match provider {
        "claude-code" => &["HOME", "ANTHROPIC_API_KEY"],
        "codex" => &["HOME", "OPENAI_API_KEY"],
        _ => &["HOME", "GEMINI_API_KEY", "GOOGLE_API_KEY"],
    }
}

/// A prompt: a `./file.md` read next to the experience when it is there (its `{{$item…}}` references translated),
/// else the reference itself, with a note. A document that is not a file (pasted text, a request to a server) has no
/// folder: its references are never read.
fn prompt(id: &str, prompt: &str, base_dir: Option<&Path>, notes: &mut Vec<String>) -> String {
    if !(prompt.starts_with("./") || prompt.starts_with("../")) {
        return template(prompt);
    }
    let Some(base_dir) = base_dir else {
        notes.push(format!(
            "node `{id}`: prompt file {prompt} is not read: this document was not opened from a file; its path is the \
             prompt"
        ));
        return format!("(prompt file {prompt})");
    };
    match std::fs::read_to_string(base_dir.join(prompt)) {
        Ok(text) => template(&text),
        Err(_) => {
            notes.push(format!(
                "node `{id}`: prompt file {prompt} is not next to the experience; its path is the prompt"
            ));
            format!("(prompt file {prompt})")
        }
    }
}

/// `{{$item.key}}`, `{{$index}}` and `{{$.x}}` in OpenExpertise prompts, as this engine's template names.
fn template(text: &str) -> String {
    text.replace("{{$item", "{{ item")
        .replace("{{ $item", "{{ item")
        .replace("{{$index", "{{ index")
        .replace("{{$.", "{{ state.")
}

/// A loop repeats its body until `until` holds or `max_iters` runs; the body's other edges run after it.
fn add_loop(workflow: &mut Workflow, i: usize, raw: &Value) -> Result<(), LoadError> {
    let body = raw["body"].as_str().filter(|b| workflow.node(b).is_some()).ok_or_else(|| {
        LoadError::new(format!("graph.loops[{i}]: `body` must name a node")).with_code("OE_LOOP_UNKNOWN_BODY")
    })?;
    // Without `until` the body simply runs `max_iters` times.
    let until = match raw["until"].as_str() {
        None => "false".to_string(),
        Some(until) => translate(until).map_err(|e| {
            LoadError::new(format!("graph.loops[{i}]: `until` does not parse: {e}")).with_code("INVALID_EXPRESSION")
        })?,
    };
    let max = raw["max_iters"].as_u64().unwrap_or(10).max(1);
    let done = format!("({until}) or iteration >= {max}");
    for e in workflow.edges.iter_mut().filter(|e| e.from == body) {
        e.r#if = Some(match &e.r#if {
            Some(g) => format!("({g}) and ({done})"),
            None => done.clone(),
        });
    }
    if max > 1 {
        let mut again = Edge::new(body, body);
        again.r#if = Some(format!("not ({until}) and iteration < {max}"));
        again.max_iterations = Some(max as i64 - 1);
        workflow.edges.push(again);
    }
    Ok(())
}

/// Pipelines run their stages over each item; here each stage runs over all items in order before the next stage.
fn add_pipeline(workflow: &mut Workflow, i: usize, raw: &Value, notes: &mut Vec<String>) -> Result<(), LoadError> {
    let items = raw["items"].as_str().ok_or_else(|| {
        LoadError::new(format!("graph.pipelines[{i}]: `items` must be a path like $.rows"))
            .with_code("OE_INVALID_PIPELINE")
    })?;
    let items = translate(items).map_err(|e| {
        LoadError::new(format!("graph.pipelines[{i}]: `items` does not parse: {e}")).with_code("INVALID_EXPRESSION")
    })?;
    for stage in raw["stages"].as_array().into_iter().flatten().filter_map(Value::as_str) {
        let node = workflow.nodes.iter_mut().find(|n| n.id == stage).ok_or_else(|| {
            LoadError::new(format!("graph.pipelines[{i}]: stage `{stage}` names no node"))
                .with_code("OE_PIPELINE_UNKNOWN_STAGE")
        })?;
        node.for_each.get_or_insert(ForEach { items: items.clone(), concurrency: Some(1) });
    }
    notes.push(format!(
        "pipeline {}: each stage runs over all items, in item order, before the next stage (OpenExpertise runs each item through all stages first)",
        raw["id"].as_str().unwrap_or("?")
    ));
    Ok(())
}

/// Translates OpenExpertise's `when` DSL (`$.a.b`, `length(x)`, `!`, comparisons, `&&`, `||`, literals, parentheses)
/// into a Jinja expression, through a parse so that precedence and errors are exact.
pub(crate) fn translate(source: &str) -> Result<String, String> {
    let tokens = lex(source)?;
    let mut parser = Parser { tokens, at: 0 };
    let expr = parser.or()?;
    match parser.tokens.get(parser.at) {
        None => Ok(expr),
        Some(t) => Err(format!("unexpected `{}` at position {}", t.text, t.position)),
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Kind {
    Path,
    Number,
    Str,
    Ident,
    Op,
}

#[derive(Debug, Clone)]
struct Token {
    kind: Kind,
    text: String,
    position: usize,
}

fn lex(source: &str) -> Result<Vec<Token>, String> {
    let chars: Vec<char> = source.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let start = i;
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        let word = |i: &mut usize, extra: &dyn Fn(char) -> bool| {
            while *i < chars.len() && (chars[*i].is_alphanumeric() || chars[*i] == '_' || extra(chars[*i])) {
                *i += 1;
            }
        };
        let (kind, text) = if c == '$' {
            i += 1;
            word(&mut i, &|c| c == '.');
            (Kind::Path, chars[start..i].iter().collect::<String>())
        } else if c.is_ascii_digit() {
            word(&mut i, &|c| c == '.');
            (Kind::Number, chars[start..i].iter().collect())
        } else if c.is_alphabetic() || c == '_' {
            word(&mut i, &|_| false);
            (Kind::Ident, chars[start..i].iter().collect())
        } else if c == '\'' || c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != c {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            if i >= chars.len() {
                return Err(format!("unterminated string at position {start}"));
            }
            i += 1;
            (Kind::Str, chars[start + 1..i - 1].iter().collect())
        } else {
            let two: String = chars[i..(i + 2).min(chars.len())].iter().collect();
            if ["==", "!=", "<=", ">=", "&&", "||"].contains(&two.as_str()) {
                i += 2;
                (Kind::Op, two)
            } else if "!<>(),".contains(c) {
                i += 1;
                (Kind::Op, c.to_string())
            } else {
                return Err(format!("unexpected `{c}` at position {start}"));
            }
        };
        tokens.push(Token { kind, text, position: start });
    }
    Ok(tokens)
}

struct Parser {
    tokens: Vec<Token>,
    at: usize,
}

impl Parser {
    fn peek(&self, op: &str) -> bool {
        self.tokens.get(self.at).is_some_and(|t| t.kind == Kind::Op && t.text == op)
    }

    fn expect(&mut self, op: &str) -> Result<(), String> {
        if self.peek(op) {
            self.at += 1;
            Ok(())
        } else {
            Err(match self.tokens.get(self.at) {
                Some(t) => format!("expected `{op}` at position {}, found `{}`", t.position, t.text),
                None => format!("expected `{op}` at the end"),
            })
        }
    }

    fn or(&mut self) -> Result<String, String> {
        let mut left = self.and()?;
        while self.peek("||") {
            self.at += 1;
            left = format!("({left} or {})", self.and()?);
        }
        Ok(left)
    }

    fn and(&mut self) -> Result<String, String> {
        let mut left = self.not()?;
        while self.peek("&&") {
            self.at += 1;
            left = format!("({left} and {})", self.not()?);
        }
        Ok(left)
    }

    fn not(&mut self) -> Result<String, String> {
        if self.peek("!") {
            self.at += 1;
            return Ok(format!("(not {})", self.not()?));
        }
        self.comparison()
    }

    /// An ordering comparison with a missing (or null) side is false, as OpenExpertise evaluates it, never an error.
    fn comparison(&mut self) -> Result<String, String> {
        let (left, left_may_miss) = self.operand()?;
        for op in ["==", "!=", "<=", ">=", "<", ">"] {
            if self.peek(op) {
                self.at += 1;
                let (right, right_may_miss) = self.operand()?;
                let compared = format!("({left} {op} {right})");
                let guards: Vec<String> = [(&left, left_may_miss), (&right, right_may_miss)]
                    .into_iter()
                    .filter(|(_, may_miss)| *may_miss && op != "==" && op != "!=")
                    .map(|(side, _)| format!("{side} is defined and {side} is not none"))
                    .collect();
                if guards.is_empty() {
                    return Ok(compared);
                }
                return Ok(format!("({compared} if ({}) else false)", guards.join(" and ")));
            }
        }
        Ok(left)
    }

    /// A comparison operand, and whether it can be missing (a path, or a parenthesized expression) rather than a
    /// literal or a length.
    fn operand(&mut self) -> Result<(String, bool), String> {
        let may_miss =
            self.tokens.get(self.at).is_some_and(|t| t.kind == Kind::Path || (t.kind == Kind::Op && t.text == "("));
        Ok((self.primary()?, may_miss))
    }

    fn primary(&mut self) -> Result<String, String> {
        let Some(token) = self.tokens.get(self.at).cloned() else {
            return Err("the expression ends too early".into());
        };
        self.at += 1;
        match token.kind {
            Kind::Path => path(&token.text)
                .ok_or_else(|| format!("`{}` at position {} is not a path", token.text, token.position)),
            Kind::Number => Ok(token.text),
            Kind::Str => Ok(serde_json::to_string(&token.text).unwrap()),
            Kind::Ident => match token.text.as_str() {
                "true" | "false" => Ok(token.text),
                "null" => Ok("none".into()),
                "length" => {
                    self.expect("(")?;
                    let inner = self.or()?;
                    self.expect(")")?;
                    // A missing list has length 0.
                    Ok(format!("(({inner} or []) | length)"))
                }
                other => Err(format!("unknown name `{other}` at position {} (paths start with `$.`)", token.position)),
            },
            Kind::Op if token.text == "(" => {
                let inner = self.or()?;
                self.expect(")")?;
                Ok(inner)
            }
            Kind::Op => Err(format!("unexpected `{}` at position {}", token.text, token.position)),
        }
    }
}

/// `$.a.b` → `state.a.b`, `$item.x` → `item.x`, `$index` → `index`.
fn path(text: &str) -> Option<String> {
    let rest = text.strip_prefix('$')?;
    if let Some(fields) = rest.strip_prefix('.') {
        if fields.is_empty() || fields.split('.').any(str::is_empty) {
            return None;
        }
        return Some(format!("state.{fields}"));
    }
    if rest.is_empty() {
        return Some("state".into());
    }
    match rest.split_once('.') {
        Some(("item", fields)) if !fields.is_empty() => Some(format!("item.{fields}")),
        None if rest == "item" || rest == "index" => Some(rest.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::translate;

    #[test]
    fn the_when_dsl_evaluates_with_precedence_and_missing_fields_as_openexpertise_does() {
        use crate::template::{is_true, Scope};
        use serde_json::json;
        let scope = |state: serde_json::Value| {
            let mut s = Scope::new(json!({}));
            for (k, v) in state.as_object().unwrap() {
                s.state.insert(k.clone(), v.clone());
            }
            s.item = Some((json!({"key": 1}), 2));
            s
        };
        let cases = [
            ("length($.similar_issues) > 0", json!({"similar_issues": [1]}), true),
            ("$.is_duplicate == true", json!({"is_duplicate": true}), true),
            ("length($.findings) > 0 && $.risk_score > 0.5", json!({"findings": [1], "risk_score": 0.7}), true),
            ("length($.findings) > 0 && $.risk_score > 0.5", json!({"findings": [1], "risk_score": 0.2}), false),
            ("!$.skipped_by_user", json!({}), true),
            ("$.a || $.b && !$.c", json!({"b": true, "c": true}), false),
            ("$.a || $.b && !$.c", json!({"a": true, "c": true}), true),
            ("($.a || $.b) && $.c != 'x'", json!({"b": 1, "c": "y"}), true),
            ("$.summary.flags == null", json!({"summary": {"flags": null}}), true),
            ("$item.key <= $index", json!({}), true),
            // Missing fields: length 0, comparisons false, never an error.
            ("length($.findings) > 0", json!({}), false),
            ("length($.findings) == 0", json!({}), true),
            ("$.risk_score > 0.5", json!({}), false),
            ("$.risk_score < 0.5", json!({}), false),
            ("$.a.b >= 1", json!({"a": {}}), false),
            ("$.missing == 'x'", json!({}), false),
        ];
        for (source, state, expected) in cases {
            let expression = translate(source).unwrap_or_else(|e| panic!("{source}: {e}"));
            assert_eq!(
                is_true(&expression, &scope(state.clone())),
                Ok(expected),
                "{source} over {state} ({expression})"
            );
        }
        for bad in ["$.a >", "length $.a", "$.a && || $.b", "foo($.a)", "$.a == 'x", "$. > 1", "($.a"] {
            assert!(translate(bad).is_err(), "{bad} should not parse");
        }
    }
}
