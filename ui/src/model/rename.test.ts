import { describe, expect, it } from "vitest";
import type { Workflow } from "../types";
import { renameInExpression, renameInTemplate, renameNode } from "./rename";

describe("renaming a node's references", () => {
  it("renames the variable inside template tags only", () => {
    expect(renameInTemplate("Draft says {{ draft.text }} and {% if draft.output.ok %}yes{% endif %}; the draft", "draft", "essay")).toBe(
      "Draft says {{ essay.text }} and {% if essay.output.ok %}yes{% endif %}; the draft",
    );
  });

  it("leaves longer names, attributes and string literals alone", () => {
    expect(renameInTemplate("{{ drafts.text }} {{ x.draft }} {{ 'draft' }} {{ draft_2.text }} {{ draft['text'] }}", "draft", "essay")).toBe(
      "{{ drafts.text }} {{ x.draft }} {{ 'draft' }} {{ draft_2.text }} {{ essay['text'] }}",
    );
    expect(renameInExpression('draft.output.score > 3 and "draft" in tags', "draft", "essay")).toBe('essay.output.score > 3 and "draft" in tags');
  });

  it("rewrites prompts, messages, expression conditions, for_each lists and edge guards, and keeps untouched nodes as they were", () => {
    const untouched = { id: "other", type: "agent", user_prompt: "{{ PREVIOUS_OUTPUT }}" };
    const w = {
      switchyard: 1,
      name: "t",
      nodes: [
        { id: "start", type: "start" },
        { id: "draft", type: "agent", user_prompt: "write" },
        { id: "review", type: "agent", user_prompt: "Review {{ draft.text }}", system_prompt: "{{draft.text}}" },
        { id: "ok", type: "approval", message: "Ship {{ draft.text }}?" },
        { id: "check", type: "if", conditions: [{ operator: "expression", value: "draft.output.n > 1" }, { operator: "contains", value: "draft.text" }] },
        { id: "each", type: "agent", for_each: { items: "draft.output.items" } },
        untouched,
      ],
      edges: [
        { from: "start", to: "draft" },
        { from: "draft", to: "review", if: "draft.output.ok" },
      ],
    } as unknown as Workflow;
    const out = renameNode(w, "draft", "essay");
    const byId = Object.fromEntries(out.nodes.map((n) => [n.id, n]));
    expect(byId.essay).toBeTruthy();
    expect(byId.review.user_prompt).toBe("Review {{ essay.text }}");
    expect(byId.review.system_prompt).toBe("{{essay.text}}");
    expect(byId.ok.message).toBe("Ship {{ essay.text }}?");
    expect(byId.check.conditions).toEqual([{ operator: "expression", value: "essay.output.n > 1" }, { operator: "contains", value: "draft.text" }]);
    expect(byId.each.for_each?.items).toBe("essay.output.items");
    expect(out.edges).toEqual([{ from: "start", to: "essay" }, { from: "essay", to: "review", if: "essay.output.ok" }]);
    expect(out.nodes[6]).toBe(untouched);
  });
});
