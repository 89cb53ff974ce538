// Renaming a node rewrites what reads it: every template and expression the engine evaluates (the same fields the
// engine's reference check reads, crates/document/src/validate/templates.rs `sources`) that names the old id as a
// variable — `{{ draft.text }}`, `draft.output.score > 3` — names the new one. Text outside template tags, string
// literals and attribute names (`x.draft`) are left alone.
import type { Edge, Node, Workflow } from "../types";

const TAG = /(\{\{[\s\S]*?\}\}|\{%[\s\S]*?%\})/g;
const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** `code` with the variable `from` renamed to `to`, outside string literals. */
function renameInCode(code: string, from: string, to: string): string {
  const name = new RegExp(`(?<![\\w.$])${escape(from)}(?![\\w$])`, "g");
  // Split into string literals (kept) and the code between them (renamed).
  return code
    .split(/("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')/)
    .map((part, i) => (i % 2 ? part : part.replace(name, to)))
    .join("");
}

/** A template with `from` renamed inside its `{{ }}` and `{% %}` tags. */
export const renameInTemplate = (text: string, from: string, to: string): string =>
  text.includes("{") ? text.replace(TAG, (tag) => renameInCode(tag, from, to)) : text;

/** An expression (an `if` condition, a `for_each` list, an edge guard) with `from` renamed. */
export const renameInExpression = renameInCode;

function renameInNode(n: Node, from: string, to: string): Node {
  let out = n;
  const patch = (key: "system_prompt" | "user_prompt" | "message") => {
    const text = n[key];
    if (typeof text !== "string") return;
    const next = renameInTemplate(text, from, to);
    if (next !== text) out = { ...out, [key]: next };
  };
  patch("system_prompt");
  patch("user_prompt");
  patch("message");
  if (n.conditions?.some((c) => c.operator === "expression")) {
    const conditions = n.conditions.map((c) => (c.operator === "expression" ? { ...c, value: renameInCode(c.value, from, to) } : c));
    if (conditions.some((c, i) => c.value !== n.conditions![i].value)) out = { ...out, conditions };
  }
  if (n.for_each?.items) {
    const items = renameInCode(n.for_each.items, from, to);
    if (items !== n.for_each.items) out = { ...out, for_each: { ...n.for_each, items } };
  }
  return out;
}

/** The workflow with node `from` called `to`: the node, its edges' ends, and every reference to it. */
export function renameNode(w: Workflow, from: string, to: string): Workflow {
  const edge = (e: Edge): Edge => {
    let out = e;
    if (e.from === from || e.to === from) out = { ...out, from: e.from === from ? to : e.from, to: e.to === from ? to : e.to };
    if (e.if) {
      const guard = renameInCode(e.if, from, to);
      if (guard !== e.if) out = { ...out, if: guard };
    }
    return out;
  };
  return {
    ...w,
    nodes: w.nodes.map((n) => renameInNode(n.id === from ? { ...n, id: to } : n, from, to)),
    edges: w.edges.map(edge),
  };
}
