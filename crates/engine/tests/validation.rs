//! SEMANTICS §7: each rule, as a table of small documents and the finding they must produce.

mod support;

use support::*;
use switchyard_engine::validate::{validate, Options, Purpose, Severity};

const S: &str = "  - {id: start, type: start}\n";

/// (what, nodes and edges after the start node, expected code, expected node or edge, severity)
fn cases() -> Vec<(&'static str, String, &'static str, &'static str, Severity)> {
    use Severity::*;
    vec![
        ("no start", "nodes:\n  - {id: a, type: agent}".into(), "NO_START", "", Error),
        ("two starts", format!("nodes:\n{S}  - {{id: s2, type: start}}"), "MULTIPLE_START", "s2", Error),
        ("duplicate id", format!("nodes:\n{S}  - {{id: a, type: agent}}\n  - {{id: a, type: agent}}\nedges:\n  - {{from: start, to: a}}"), "DUPLICATE_NODE_ID", "a", Error),
        ("dangling target", format!("nodes:\n{S}edges:\n  - {{from: start, to: ghost}}"), "EDGE_TARGET_MISSING", "start->ghost", Error),
        ("dangling source", format!("nodes:\n{S}  - {{id: a, type: agent}}\nedges:\n  - {{from: start, to: a}}\n  - {{from: ghost, to: a}}"), "EDGE_SOURCE_MISSING", "ghost->a", Error),
        ("unknown handle", format!("nodes:\n{S}  - {{id: a, type: agent}}\nedges:\n  - {{from: start, to: a, handle: approve}}"), "UNKNOWN_HANDLE", "start->a", Error),
        ("condition index out of range", format!("nodes:\n{S}  - {{id: c, type: if, conditions: [{{operator: contains, value: x}}]}}\n  - {{id: a, type: agent}}\nedges:\n  - {{from: start, to: c}}\n  - {{from: c, to: a, handle: condition-1}}"), "UNKNOWN_HANDLE", "c->a", Error),
        ("unknown target handle", format!("nodes:\n{S}  - {{id: a, type: agent}}\nedges:\n  - {{from: start, to: a, target_handle: side}}"), "UNKNOWN_TARGET_HANDLE", "start->a", Error),
        ("unbounded self-loop", format!("nodes:\n{S}  - {{id: a, type: agent}}\n  - {{id: b, type: agent}}\nedges:\n  - {{from: start, to: a}}\n  - {{from: a, to: a, when: again}}\n  - {{from: a, to: b, when: done}}"), "SELF_LOOP_UNBOUNDED", "a->a", Error),
        ("unbounded cycle", format!("nodes:\n{S}  - {{id: a, type: agent}}\n  - {{id: b, type: agent}}\n  - {{id: c, type: agent}}\nedges:\n  - {{from: start, to: a}}\n  - {{from: a, to: b}}\n  - {{from: b, to: a, when: again}}\n  - {{from: b, to: c, when: done}}"), "UNBOUNDED_CYCLE", "a", Error),
        ("max_iterations zero", format!("nodes:\n{S}  - {{id: a, type: agent}}\nedges:\n  - {{from: start, to: a}}\n  - {{from: a, to: a, max_iterations: 0}}"), "MAX_ITERATIONS_BELOW_ONE", "a->a", Error),
        ("can never end", format!("nodes:\n{S}  - {{id: a, type: agent}}\n  - {{id: b, type: agent}}\nedges:\n  - {{from: start, to: a}}\n  - {{from: a, to: b}}\n  - {{from: b, to: a, max_iterations: 2}}\n  - {{from: b, to: a, if: 'true'}}"), "NO_TERMINAL_REACHABLE", "start", Error),
        ("when on an if node", format!("nodes:\n{S}  - {{id: c, type: if, conditions: [{{operator: contains, value: x}}]}}\n  - {{id: a, type: agent}}\nedges:\n  - {{from: start, to: c}}\n  - {{from: c, to: a, handle: 'false', when: maybe}}"), "WHEN_ON_BRANCHING_NODE", "c->a", Error),
        ("when on an approval", format!("nodes:\n{S}  - {{id: r, type: approval}}\n  - {{id: a, type: agent}}\nedges:\n  - {{from: start, to: r}}\n  - {{from: r, to: a, handle: approve, when: maybe}}"), "WHEN_ON_BRANCHING_NODE", "r->a", Error),
        ("when and if mixed", format!("nodes:\n{S}  - {{id: a, type: agent}}\n  - {{id: b, type: agent}}\n  - {{id: c, type: agent}}\nedges:\n  - {{from: start, to: a}}\n  - {{from: a, to: b, when: nl}}\n  - {{from: a, to: c, if: 'true'}}"), "MIXED_WHEN_AND_IF", "a", Error),
        ("bad guard expression", format!("nodes:\n{S}  - {{id: a, type: agent}}\nedges:\n  - {{from: start, to: a, if: 'state.x >'}}"), "INVALID_EXPRESSION", "start->a", Error),
        ("bad condition expression", format!("nodes:\n{S}  - {{id: c, type: if, conditions: [{{operator: expression, value: '(('}}]}}\nedges:\n  - {{from: start, to: c}}"), "INVALID_EXPRESSION", "c", Error),
        ("bad for_each expression", format!("nodes:\n{S}  - {{id: a, type: agent, for_each: {{items: 'a b c'}}}}\nedges:\n  - {{from: start, to: a}}"), "INVALID_EXPRESSION", "a", Error),
        ("bad template", format!("nodes:\n{S}  - {{id: a, type: agent, user_prompt: 'Hi {{{{ name'}}\nedges:\n  - {{from: start, to: a}}"), "INVALID_TEMPLATE", "a", Error),
        ("bad output schema", format!("nodes:\n{S}  - {{id: a, type: agent, output_schema: {{type: objekt}}}}\nedges:\n  - {{from: start, to: a}}"), "INVALID_OUTPUT_SCHEMA", "a", Error),
        ("field for another type", format!("nodes:\n{S}  - {{id: a, type: agent, conditions: []}}\nedges:\n  - {{from: start, to: a}}"), "FIELD_NOT_FOR_TYPE", "a", Error),
        ("model without provider", format!("nodes:\n{S}  - {{id: a, type: agent, model: gpt-5}}\nedges:\n  - {{from: start, to: a}}"), "INVALID_MODEL_REF", "a", Error),
        ("subagent from a non-agent", format!("nodes:\n{S}  - {{id: r, type: approval}}\n  - {{id: a, type: agent}}\nedges:\n  - {{from: start, to: r}}\n  - {{from: r, to: a, handle: subagent}}"), "SUBAGENT_NOT_AGENT", "r->a", Error),
        ("subagents off", format!("nodes:\n{S}  - {{id: p, type: agent}}\n  - {{id: c, type: agent}}\nedges:\n  - {{from: start, to: p}}\n  - {{from: p, to: c, handle: subagent}}"), "SUBAGENT_DISABLED", "p->c", Error),
        ("subagent target handle", format!("nodes:\n{S}  - {{id: p, type: agent, tools: {{subagents: true}}}}\n  - {{id: c, type: agent}}\nedges:\n  - {{from: start, to: p}}\n  - {{from: p, to: c, handle: subagent, target_handle: side}}"), "SUBAGENT_TARGET_HANDLE", "p->c", Error),
        ("subagent self", format!("nodes:\n{S}  - {{id: p, type: agent, tools: {{subagents: true}}}}\nedges:\n  - {{from: start, to: p}}\n  - {{from: p, to: p, handle: subagent}}"), "SUBAGENT_SELF", "p->p", Error),
        ("subagent cycle", format!("nodes:\n{S}  - {{id: p, type: agent, tools: {{subagents: true}}}}\n  - {{id: q, type: agent, tools: {{subagents: true}}}}\nedges:\n  - {{from: start, to: p}}\n  - {{from: p, to: q, handle: subagent}}\n  - {{from: q, to: p, handle: subagent}}"), "SUBAGENT_CYCLE", "p", Error),
        ("two parents", format!("nodes:\n{S}  - {{id: p, type: agent, tools: {{subagents: true}}}}\n  - {{id: q, type: agent, tools: {{subagents: true}}}}\n  - {{id: c, type: agent}}\nedges:\n  - {{from: start, to: p}}\n  - {{from: p, to: q}}\n  - {{from: p, to: c, handle: subagent}}\n  - {{from: q, to: c, handle: subagent}}"), "SUBAGENT_MULTIPLE_PARENTS", "q->c", Error),
        ("subagent in the flow", format!("nodes:\n{S}  - {{id: p, type: agent, tools: {{subagents: true}}}}\n  - {{id: c, type: agent}}\nedges:\n  - {{from: start, to: p}}\n  - {{from: p, to: c}}\n  - {{from: p, to: c, handle: subagent}}"), "SUBAGENT_HAS_EXECUTION_EDGES", "c", Error),
        ("call_first of a server not listed", format!("nodes:\n{S}  - {{id: a, type: agent, tools: {{mcp: [files], call_first: github/search}}}}\nedges:\n  - {{from: start, to: a}}"), "CALL_FIRST_NOT_OFFERED", "a", Error),
        ("call_first of a subagent not offered", format!("nodes:\n{S}  - {{id: p, type: agent, tools: {{call_first: helper}}}}\nedges:\n  - {{from: start, to: p}}"), "CALL_FIRST_NOT_OFFERED", "p", Error),
        ("unreachable", format!("nodes:\n{S}  - {{id: lost, type: agent}}"), "UNREACHABLE_NODE", "lost", Warning),
        ("if branch unconnected", format!("nodes:\n{S}  - {{id: c, type: if, conditions: [{{operator: contains, value: x}}]}}\n  - {{id: a, type: agent}}\nedges:\n  - {{from: start, to: c}}\n  - {{from: c, to: a, handle: condition-0}}"), "UNCONNECTED_BRANCH", "c", Warning),
        ("approval branch unconnected", format!("nodes:\n{S}  - {{id: r, type: approval}}\n  - {{id: a, type: agent}}\nedges:\n  - {{from: start, to: r}}\n  - {{from: r, to: a, handle: approve}}"), "UNCONNECTED_BRANCH", "r", Warning),
        ("empty condition value", format!("nodes:\n{S}  - {{id: c, type: if, conditions: [{{operator: equal, value: ''}}]}}\nedges:\n  - {{from: start, to: c}}"), "EMPTY_CONDITION", "c", Warning),
        ("unknown name in a prompt", format!("nodes:\n{S}  - {{id: a, type: agent, user_prompt: '{{{{ nosuchnode.text }}}}'}}\nedges:\n  - {{from: start, to: a}}"), "UNKNOWN_REFERENCE", "a", Warning),
        ("unknown name in a system prompt", format!("nodes:\n{S}  - {{id: a, type: agent, system_prompt: 'You are {{{{ persona }}}}'}}\nedges:\n  - {{from: start, to: a}}"), "UNKNOWN_REFERENCE", "a", Warning),
        ("unknown name in an approval message", format!("nodes:\n{S}  - {{id: r, type: approval, message: 'Ship {{{{ relase.text }}}}?'}}\n  - {{id: a, type: agent}}\nedges:\n  - {{from: start, to: r}}\n  - {{from: r, to: a, handle: approve}}\n  - {{from: r, to: a, handle: reject}}"), "UNKNOWN_REFERENCE", "r", Warning),
        ("unknown name in a condition", format!("nodes:\n{S}  - {{id: c, type: if, conditions: [{{operator: expression, value: 'scores.total > 3'}}]}}\n  - {{id: a, type: agent}}\nedges:\n  - {{from: start, to: c}}\n  - {{from: c, to: a, handle: condition-0}}\n  - {{from: c, to: a, handle: 'false'}}"), "UNKNOWN_REFERENCE", "c", Warning),
        ("unknown name in for_each", format!("nodes:\n{S}  - {{id: a, type: agent, for_each: {{items: 'dimensions'}}}}\nedges:\n  - {{from: start, to: a}}"), "UNKNOWN_REFERENCE", "a", Warning),
        ("unknown name in an edge guard", format!("nodes:\n{S}  - {{id: a, type: agent}}\nedges:\n  - {{from: start, to: a, if: 'ready'}}"), "UNKNOWN_REFERENCE", "start->a", Warning),
        ("item outside for_each", format!("nodes:\n{S}  - {{id: a, type: agent, user_prompt: 'Look at {{{{ item }}}}'}}\nedges:\n  - {{from: start, to: a}}"), "UNKNOWN_REFERENCE", "a", Warning),
        ("item in the for_each list itself", format!("nodes:\n{S}  - {{id: a, type: agent, for_each: {{items: 'item.parts'}}}}\nedges:\n  - {{from: start, to: a}}"), "UNKNOWN_REFERENCE", "a", Warning),
        ("reading a parallel branch", format!("nodes:\n{S}  - {{id: a, type: agent}}\n  - {{id: b, type: agent, user_prompt: '{{{{ a.text }}}}'}}\nedges:\n  - {{from: start, to: a}}\n  - {{from: start, to: b}}"), "REFERENCE_NOT_UPSTREAM", "b", Warning),
        ("reading a later node", format!("nodes:\n{S}  - {{id: a, type: agent, user_prompt: '{{{{ b.text }}}}'}}\n  - {{id: b, type: agent}}\nedges:\n  - {{from: start, to: a}}\n  - {{from: a, to: b}}"), "REFERENCE_NOT_UPSTREAM", "a", Warning),
        ("reading itself off a loop", format!("nodes:\n{S}  - {{id: a, type: agent, user_prompt: 'again: {{{{ a.text }}}}'}}\nedges:\n  - {{from: start, to: a}}"), "REFERENCE_NOT_UPSTREAM", "a", Warning),
        ("a condition reading a later node", format!("nodes:\n{S}  - {{id: c, type: if, conditions: [{{operator: expression, value: 'a.data.ok'}}]}}\n  - {{id: a, type: agent}}\nedges:\n  - {{from: start, to: c}}\n  - {{from: c, to: a, handle: condition-0}}\n  - {{from: c, to: a, handle: 'false'}}"), "REFERENCE_NOT_UPSTREAM", "c", Warning),
        ("a guard reading a later node", format!("nodes:\n{S}  - {{id: a, type: agent}}\n  - {{id: b, type: agent}}\nedges:\n  - {{from: start, to: a, if: 'b.text'}}\n  - {{from: a, to: b}}"), "REFERENCE_NOT_UPSTREAM", "start->a", Warning),
        ("a subagent reading past its caller", format!("nodes:\n{S}  - {{id: p, type: agent, tools: {{subagents: true}}}}\n  - {{id: c, type: agent, user_prompt: '{{{{ after.text }}}}'}}\n  - {{id: after, type: agent}}\nedges:\n  - {{from: start, to: p}}\n  - {{from: p, to: after}}\n  - {{from: p, to: c, handle: subagent}}"), "REFERENCE_NOT_UPSTREAM", "c", Warning),
        ("reading a subagent, which never stores a result", format!("nodes:\n{S}  - {{id: p, type: agent, tools: {{subagents: true}}}}\n  - {{id: c, type: agent}}\n  - {{id: after, type: agent, user_prompt: '{{{{ c.text }}}}'}}\nedges:\n  - {{from: start, to: p}}\n  - {{from: p, to: after}}\n  - {{from: p, to: c, handle: subagent}}"), "REFERENCE_NOT_UPSTREAM", "after", Warning),
    ]
}

#[test]
fn every_rule_produces_its_located_finding() {
    for (what, body, code, at, severity) in cases() {
        let wf = workflow(&body);
        let report = validate(&wf, &Options::default());
        let list = match severity {
            Severity::Error => &report.errors,
            Severity::Warning => &report.warnings,
        };
        let finding =
            list.iter().find(|f| f.code == code).unwrap_or_else(|| panic!("{what}: no {code} in {:?}", report));
        let located = finding.node.as_deref().or(finding.edge.as_deref()).unwrap_or("");
        assert_eq!(located, at, "{what}: {code} names the wrong place: {finding:?}");
        assert!(finding.message.len() > 20, "{what}: the message should say what to do: {}", finding.message);
    }
}

#[test]
fn bounded_cycles_and_self_loops_are_accepted() {
    let wf = workflow(
        "nodes:
  - {id: start, type: start}
  - {id: implement, type: agent}
  - {id: test, type: agent}
  - {id: retry, type: agent}
  - {id: done, type: agent}
edges:
  - {from: start, to: implement}
  - {from: implement, to: test}
  - {from: test, to: implement, when: tests failed, max_iterations: 3}
  - {from: test, to: retry, when: flaky}
  - {from: retry, to: retry, when: again, max_iterations: 2}
  - {from: retry, to: done}
  - {from: test, to: done, when: passed}",
    );
    let report = validate(&wf, &Options::default());
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);
}

#[test]
fn providers_are_checked_unless_a_script_answers() {
    let wf = workflow(
        "defaults: {model: openai/gpt-4.1-mini}
nodes:
  - {id: start, type: start}
  - {id: a, type: agent}
  - {id: b, type: agent, model: local/smollm2}
edges:
  - {from: start, to: a}
  - {from: a, to: b}",
    );
    // About to run here: the machine lacks the provider, so the node cannot run.
    let running = Options { providers: Some(vec!["local".into()]), purpose: Purpose::Run, ..Options::default() };
    let report = validate(&wf, &running);
    let unknown: Vec<_> =
        report.errors.iter().filter(|f| f.code == "UNKNOWN_PROVIDER").map(|f| f.node.clone().unwrap()).collect();
    assert_eq!(unknown, ["a"]);
    assert!(report.errors[0].message.contains("openai"));
    // Checking the file: it is valid, this machine lacks the provider; a warning on the node.
    let checking = Options { purpose: Purpose::Check, ..running.clone() };
    let report = validate(&wf, &checking);
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    let warned: Vec<_> =
        report.warnings.iter().filter(|f| f.code == "UNKNOWN_PROVIDER").map(|f| f.node.clone().unwrap()).collect();
    assert_eq!(warned, ["a"]);
    assert!(validate(&wf, &Options { providers: None, purpose: Purpose::Run, ..Options::default() }).is_ok());
}

#[test]
fn a_templated_model_name_is_checked_when_the_node_runs_not_before() {
    let wf = workflow(
        "nodes:
  - {id: start, type: start}
  - {id: a, type: agent, model: '{{ state.model }}'}
  - {id: b, type: agent, model: 'nowhere/{{ state.size }}'}
edges:
  - {from: start, to: a}
  - {from: a, to: b}",
    );
    let running = Options { providers: Some(vec!["local".into()]), purpose: Purpose::Run, ..Options::default() };
    let report = validate(&wf, &running);
    assert!(report.errors.is_empty() && report.warnings.is_empty(), "{:?} {:?}", report.errors, report.warnings);
}

#[test]
fn nodes_that_need_a_model_and_name_none_are_flagged_only_when_no_default_can_be_found() {
    let wf = workflow(
        "nodes:
  - {id: start, type: start}
  - {id: a, type: agent}
  - {id: b, type: agent, model: local/smollm2}
  - {id: pinned, type: agent, pinned: {text: fixed}}
  - {id: c, type: script, code: 'return {}', language: lua}
  - {id: d, type: script, pinned: {}}
edges:
  - {from: start, to: a}
  - {from: a, to: b}
  - {from: b, to: pinned}
  - {from: pinned, to: c}
  - {from: c, to: d, when: the script found something}
  - {from: c, to: b, when: try again, max_iterations: 2}",
    );
    let flagged = |options: &Options| -> Vec<String> {
        let report = validate(&wf, options);
        let found: Vec<_> = report.warnings.iter().filter(|f| f.code == "NO_MODEL").collect();
        assert!(report.errors.iter().all(|f| f.code != "NO_MODEL"), "NO_MODEL is a warning");
        found.iter().map(|f| f.node.clone().unwrap()).collect()
    };
    let none_found = Options { providers: Some(vec!["local".into()]), no_default_model: true, ..Options::default() };
    // The agent with no model, and the script node that routes with `when` (the model chooses its route).
    assert_eq!(flagged(&none_found), ["a", "c"]);
    let report = validate(&wf, &none_found);
    let message = &report.warnings.iter().find(|f| f.code == "NO_MODEL").unwrap().message;
    assert!(message.starts_with("`a` has no model, and no model server answers on this machine"), "{message}");
    assert!(!message.contains("--"), "no command-line flags in engine messages: {message}");
    // Unknown (never looked), scripted, or a workflow default: nothing to flag.
    assert!(flagged(&Options { no_default_model: false, ..none_found.clone() }).is_empty());
    assert!(flagged(&Options { providers: None, ..none_found.clone() }).is_empty());
    let mut with_default = wf.clone();
    with_default.defaults.model = Some("local/smollm2".into());
    assert!(validate(&with_default, &none_found).warnings.iter().all(|f| f.code != "NO_MODEL"));
}

#[test]
fn validating_a_large_graph_is_linear_enough_to_run_on_every_edit() {
    // Correctness at scale (timing lives in the benchmark): a 20,000-node chain with a bounded loop.
    let mut body = String::from("nodes:\n  - {id: start, type: start}\n");
    let mut edges = String::from("edges:\n  - {from: start, to: n0}\n");
    for i in 0..20_000 {
        body.push_str(&format!("  - {{id: n{i}, type: agent}}\n"));
        if i > 0 {
            edges.push_str(&format!("  - {{from: n{}, to: n{i}}}\n", i - 1));
        }
    }
    edges.push_str("  - {from: n19999, to: n0, max_iterations: 1}\n");
    let wf = workflow(&format!("{body}{edges}"));
    let report = validate(&wf, &Options::default());
    assert!(report.is_ok(), "{:?}", &report.errors[..report.errors.len().min(3)]);
}

#[test]
fn an_unknown_reference_says_what_it_names_where_and_what_to_use_instead() {
    let wf = workflow(
        "nodes:
  - {id: start, type: start}
  - {id: draft, type: agent}
  - {id: polish, type: agent, user_prompt: 'Polish {{ nosuchnode.text }} and {{ nosuchnode.title }}'}
  - {id: check, type: agent, user_prompt: 'Check {{ draf.text }}'}
edges:
  - {from: start, to: draft}
  - {from: draft, to: polish}
  - {from: polish, to: check}",
    );
    let report = validate(&wf, &Options::default());
    let unknown: Vec<_> = report.warnings.iter().filter(|f| f.code == "UNKNOWN_REFERENCE").collect();
    assert_eq!(unknown.len(), 2, "one finding per name and field: {unknown:?}");
    assert_eq!(
        unknown[0].message,
        "`{{ nosuchnode.text }}` in user_prompt names no node or context variable; use a node id such as `draft`, or PREVIOUS_OUTPUT"
    );
    assert!(unknown[1].message.contains("did you mean `draft`?"), "{}", unknown[1].message);
    assert!(report.is_ok(), "references are warnings, not errors");
}

#[test]
fn a_reference_not_upstream_names_both_nodes_and_the_fix() {
    let wf = workflow(
        "nodes:
  - {id: start, type: start}
  - {id: draft, type: agent, user_prompt: 'Use {{ review.text }}'}
  - {id: review, type: agent}
edges:
  - {from: start, to: draft}
  - {from: draft, to: review}",
    );
    let report = validate(&wf, &Options::default());
    let finding = report.warnings.iter().find(|f| f.code == "REFERENCE_NOT_UPSTREAM").unwrap();
    assert_eq!(finding.node.as_deref(), Some("draft"));
    assert!(finding.message.contains("`{{ review.text }}` in user_prompt reads `review`"), "{}", finding.message);
    assert!(finding.message.contains("before `draft` runs"), "{}", finding.message);
}

#[test]
fn references_that_hold_a_value_when_evaluated_pass() {
    // Ancestors one and two hops up, built-in context names, Jinja globals and local names, `item` inside for_each,
    // a loop reading its later nodes through the back edge and itself, a guard reading its source, and a subagent
    // reading its caller's ancestors.
    let wf = workflow(
        "nodes:
  - {id: start, type: start}
  - id: implement
    type: agent
    user_prompt: |
      {{ start.text }} {{ input.topic }} {{ state.score }} {{ PREVIOUS_OUTPUT }} {{ iteration }}
      {% set n = namespace(k=1) %}{% for x in range(2) %}{{ x }}{{ loop.index }}{{ n.k }}{% endfor %}
      {{ fix.text }} {{ implement.text }}
  - {id: review, type: agent, user_prompt: '{{ implement.text }}'}
  - {id: fix, type: agent, system_prompt: '{{ review.text }}', tools: {subagents: true}}
  - {id: helper, type: agent, user_prompt: '{{ implement.text }} {{ review.text }}'}
  - id: gate
    type: if
    conditions: [{operator: expression, value: 'review.data.ok and start.text'}]
  - id: fan
    type: agent
    for_each: {items: 'state.parts'}
    user_prompt: '{{ item }} #{{ index }} of {{ implement.text }}'
  - {id: done, type: approval, message: 'Ship {{ fan.items }}?'}
edges:
  - {from: start, to: implement}
  - {from: implement, to: review}
  - {from: review, to: fix, if: 'not review.data.ok'}
  - {from: review, to: gate, if: 'review.data.ok'}
  - {from: fix, to: implement, max_iterations: 3}
  - {from: fix, to: helper, handle: subagent}
  - {from: gate, to: fan, handle: condition-0}
  - {from: gate, to: fan, handle: 'false'}
  - {from: fan, to: done}",
    );
    let report = validate(&wf, &Options::default());
    let found: Vec<_> = report.warnings.iter().filter(|f| f.code.contains("REFERENCE")).collect();
    assert!(found.is_empty(), "{found:#?}");
    assert!(report.is_ok(), "{:?}", report.errors);
}

#[test]
fn references_are_checked_in_one_pass_on_large_graphs() {
    // Correctness at scale (timing lives in the benchmark): every node reads its predecessor and the start node,
    // and the last one reads a node that comes after it.
    let mut body = String::from("nodes:\n  - {id: start, type: start}\n");
    let mut edges = String::from("edges:\n  - {from: start, to: n0}\n");
    for i in 0..20_000 {
        let previous = if i == 0 { "start".to_string() } else { format!("n{}", i - 1) };
        body.push_str(&format!(
            "  - {{id: n{i}, type: agent, user_prompt: '{{{{ {previous}.text }}}} {{{{ start.text }}}}'}}\n"
        ));
        if i > 0 {
            edges.push_str(&format!("  - {{from: n{}, to: n{i}}}\n", i - 1));
        }
    }
    body.push_str(
        "  - {id: last, type: agent, user_prompt: '{{ n19999.text }} {{ tail.text }}'}\n  - {id: tail, type: agent}\n",
    );
    edges.push_str("  - {from: n19999, to: last}\n  - {from: last, to: tail}\n");
    let wf = workflow(&format!("{body}{edges}"));
    let report = validate(&wf, &Options::default());
    let found: Vec<_> = report.warnings.iter().filter(|f| f.code.contains("REFERENCE")).collect();
    assert_eq!(found.len(), 1, "{:?}", &found[..found.len().min(3)]);
    assert_eq!((found[0].code, found[0].node.as_deref()), ("REFERENCE_NOT_UPSTREAM", Some("last")));
}

#[test]
fn every_code_step_is_reported_as_needing_consent_and_one_that_cannot_run_says_why() {
    let wf = workflow(
        "nodes:
  - {id: start, type: start}
  - {id: py, type: script, language: python, code: 'return {}'}
  - {id: pinned, type: script, language: python, code: 'return {}', pinned: {a: 1}}
  - {id: prolog, type: script, language: prolog, code: 'x :- y.'}
  - {id: empty, type: script, language: python}
  - {id: both, type: script, language: javascript, code: 'return {}', module: ./m.mjs}
edges:
  - {from: start, to: py}
  - {from: py, to: pinned}
  - {from: pinned, to: prolog}
  - {from: prolog, to: empty}
  - {from: empty, to: both}",
    );
    let report = switchyard_engine::validate::validate(&wf, &Default::default());
    let found: Vec<(&str, &str)> =
        report.errors.iter().chain(&report.warnings).filter_map(|f| Some((f.code, f.node.as_deref()?))).collect();
    for expected in [
        ("CODE_NEEDS_CONSENT", "py"),
        ("UNSUPPORTED_LANGUAGE", "prolog"),
        ("NO_CODE", "empty"),
        ("CODE_AND_MODULE", "both"),
        ("CODE_NEEDS_CONSENT", "both"),
    ] {
        assert!(found.contains(&expected), "{expected:?} missing from {found:?}");
    }
    assert!(!found.iter().any(|(_, node)| *node == "pinned"), "a pinned step runs no code: {found:?}");
}

#[test]
fn call_first_may_name_a_listed_servers_tool_or_an_offered_subagent() {
    for yaml in [
        "nodes:\n  - {id: start, type: start}\n  - {id: a, type: agent, tools: {mcp: [files], call_first: files/read}}\nedges:\n  - {from: start, to: a}",
        "nodes:\n  - {id: start, type: start}\n  - {id: a, type: agent, tools: {mcp: [files/read], call_first: files/read}}\nedges:\n  - {from: start, to: a}",
        "nodes:\n  - {id: start, type: start}\n  - {id: p, type: agent, tools: {subagents: true, call_first: c}}\n  - {id: c, type: agent}\nedges:\n  - {from: start, to: p}\n  - {from: p, to: c, handle: subagent}",
    ] {
        let report = validate(&workflow(yaml), &Options::default());
        assert!(!report.errors.iter().any(|f| f.code == "CALL_FIRST_NOT_OFFERED"), "{yaml}: {report:?}");
    }
}

#[test]
fn a_single_tool_its_server_does_not_list_is_named_with_what_the_server_has() {
    let wf = workflow(
        "nodes:\n  - {id: start, type: start}\n  - {id: a, type: agent, tools: {mcp: [calc/ad, other/x], call_first: calc/ad}}\nedges:\n  - {from: start, to: a}",
    );
    let listed = Options {
        mcp_tools: [("calc".to_string(), vec!["add".to_string(), "echo".to_string()])].into(),
        ..Options::default()
    };
    let report = validate(&wf, &listed);
    let found: Vec<_> = report.warnings.iter().filter(|f| f.code == "UNKNOWN_MCP_TOOL").collect();
    assert_eq!(found.len(), 1, "once per tool, and only for the listed server: {report:?}");
    assert_eq!(found[0].node.as_deref(), Some("a"));
    assert!(found[0].message.contains("`ad`") && found[0].message.contains("add, echo"), "{}", found[0].message);
    let fixed = workflow(
        "nodes:\n  - {id: start, type: start}\n  - {id: a, type: agent, tools: {mcp: [calc/add]}}\nedges:\n  - {from: start, to: a}",
    );
    assert!(!validate(&fixed, &listed).warnings.iter().any(|f| f.code == "UNKNOWN_MCP_TOOL"));
}

#[test]
fn triggers_are_webhooks_or_schedules_named_once_with_a_cron_a_server_can_fire_and_no_secret_in_the_file() {
    let with = |triggers: &str| workflow(&format!("triggers:\n{triggers}nodes:\n{S}"));
    let good = with(
        "  - {webhook: new-ticket, secret_env: TICKETS_HOOK_SECRET}\n  - {schedule: nightly, cron: '0 3 * * *', input: {scope: all}}\n",
    );
    assert_eq!(good.triggers[1].name(), "nightly");
    assert!(validate(&good, &Options::default()).is_ok(), "{:?}", validate(&good, &Options::default()));
    let cases = [
        ("  - {cron: '0 3 * * *'}\n", "INVALID_TRIGGER", "trigger 1: name it as `webhook: NAME`"),
        ("  - {webhook: a, schedule: a, cron: '* * * * *'}\n", "INVALID_TRIGGER", "not both"),
        ("  - {webhook: New Tickets}\n", "INVALID_TRIGGER", "not a name a URL can hold"),
        ("  - {webhook: hook, cron: '* * * * *'}\n", "INVALID_TRIGGER", "remove `cron`"),
        ("  - {webhook: hook, input: 1}\n", "INVALID_TRIGGER", "the request's body"),
        ("  - {schedule: nightly}\n", "INVALID_TRIGGER", "needs `cron`"),
        ("  - {schedule: nightly, cron: '0 3 * * *', secret_env: X}\n", "INVALID_TRIGGER", "only webhooks are signed"),
        (
            "  - {schedule: nightly, cron: '0 3 * *'}\n",
            "INVALID_CRON",
            "trigger `nightly`: `0 3 * *` is not a cron expression (4 fields)",
        ),
        ("  - {schedule: nightly, cron: '61 3 * * *'}\n", "INVALID_CRON", "write five fields"),
        (
            "  - {webhook: a}\n  - {schedule: a, cron: '0 3 * * *'}\n",
            "DUPLICATE_TRIGGER",
            "trigger `a`: another trigger",
        ),
    ];
    for (triggers, code, says) in cases {
        let report = validate(&with(triggers), &Options::default());
        let finding = report.errors.iter().find(|f| f.code == code).unwrap_or_else(|| panic!("{triggers}: {report:?}"));
        assert!(finding.message.contains(says), "{triggers}: {}", finding.message);
    }
    // A secret written where its variable's name belongs is refused, and the message does not repeat it.
    let report = validate(&with("  - {webhook: hook, secret_env: 'whsec_9f8e7d6c5b4a'}\n"), &Options::default());
    let finding = report.errors.iter().find(|f| f.code == "INVALID_TRIGGER").expect("refused");
    assert!(finding.message.contains("not the secret") && !finding.message.contains("9f8e7d"), "{}", finding.message);
    // Unknown fields of a trigger are refused when the file is read.
    let text = format!("switchyard: 1\nname: t\ntriggers:\n  - {{webhook: a, secrt_env: X}}\nnodes:\n{S}");
    let error = switchyard_engine::format::load_str(&text, None, None).unwrap_err();
    assert!(error.to_string().contains("secrt_env"), "{error}");
}

#[test]
fn a_lone_unbounded_self_loop_is_its_own_error_and_not_also_a_run_that_can_never_end() {
    let wf = workflow(&format!(
        "nodes:\n{S}  - {{id: a, type: agent, model: openai/gpt-4o}}\nedges:\n  - {{from: start, to: a}}\n  - {{from: a, to: a}}"
    ));
    let report = validate(&wf, &Options::default());
    let codes: Vec<(&str, Option<&str>)> =
        report.errors.iter().map(|f| (f.code, f.edge.as_deref().or(f.node.as_deref()))).collect();
    assert_eq!(codes, [("SELF_LOOP_UNBOUNDED", Some("a->a"))], "{:?}", report.errors);
    // A loop through two nodes that nothing leaves still can never end.
    let wf = workflow(&format!(
        "nodes:\n{S}  - {{id: a, type: agent}}\n  - {{id: b, type: agent}}\nedges:\n  - {{from: start, to: a}}\n  - {{from: a, to: b}}\n  - {{from: b, to: a}}"
    ));
    assert!(validate(&wf, &Options::default()).codes().contains(&"NO_TERMINAL_REACHABLE"));
}
