import { describe, expect, it } from "vitest";
import type { Edge, Node, Workflow } from "../types";
import { displayName, edgeTitle, namedMessage, namedValue } from "./names";

const doc = (nodes: Partial<Node>[], edges: Partial<Edge>[] = []): Workflow => ({ switchyard: 1, name: "t", nodes: nodes as Node[], edges: edges as Edge[] });
const triage = doc(
  [
    { id: "start", type: "start" },
    { id: "agent_3", type: "agent", name: "Summarise" },
    { id: "triage", type: "if", name: "Severity", conditions: [{ operator: "contains", value: "high" }, { operator: "contains", value: "low" }] as Node["conditions"] },
    { id: "page", type: "agent", name: "Page on-call" },
    { id: "review", type: "approval" },
  ],
  [
    { from: "start", to: "agent_3" },
    { from: "agent_3", to: "triage" },
    { from: "triage", to: "page", handle: "condition-0" },
    { from: "triage", to: "review", handle: "false" },
  ],
);

describe("names the app shows for ids", () => {
  it("shows a node by its name, with its id only where two nodes would show alike", () => {
    expect(displayName(triage, "agent_3")).toBe("Summarise");
    expect(displayName(triage, "review")).toBe("review");
    expect(displayName(triage, "gone")).toBe("gone");
    const twins = doc([{ id: "a", type: "agent", name: "Review" }, { id: "b", type: "agent", name: "Review" }, { id: "c", type: "agent" }]);
    expect(displayName(twins, "a")).toBe("Review (a)");
    expect(displayName(twins, "b")).toBe("Review (b)");
    expect(displayName(twins, "c")).toBe("c");
  });

  it("names a problem's branch as the card does: a condition by its value, the other branch else", () => {
    expect(namedMessage("branch `condition-0` is not connected; when it matches, the branch ends here", triage, "triage")).toBe("branch “high” is not connected; when it matches, the branch ends here");
    expect(namedMessage("branch `false` is not connected; when nothing matches, the branch ends here", triage, "triage")).toBe("branch “else” is not connected; when nothing matches, the branch ends here");
    expect(namedMessage("branch `timeout` is not connected; that decision ends the branch here", triage, "review")).toBe("branch “timeout” is not connected; that decision ends the branch here");
  });

  it("names nodes and edges in a problem by their names, and leaves other code words alone", () => {
    expect(namedMessage("self-loop on `agent_3` has no max_iterations", triage, null)).toBe("self-loop on “Summarise” has no max_iterations");
    expect(namedMessage("edge agent_3->triage has max_iterations 0; it must be at least 1", triage)).toBe("edge Summarise → Severity has max_iterations 0; it must be at least 1");
    expect(namedMessage("edge a->b ends at `x`, which is not a node; fix `to` or add the node", triage)).toBe("edge a->b ends at `x`, which is not a node; fix `to` or add the node");
    expect(namedMessage("the only target handle is `input`", triage, "page")).toBe("the only target handle is `input`");
  });

  it("shows an edge by its ends' names and its branch", () => {
    expect(edgeTitle(triage, "triage->page")).toBe("Severity → Page on-call (high)");
    expect(edgeTitle(triage, "triage->review:false")).toBe("Severity → review (else)");
    expect(edgeTitle(triage, "start->agent_3")).toBe("start → Summarise");
    expect(edgeTitle(triage, "x->y")).toBe("x->y");
  });

  it("shows an if node's output as the branch its card names, and the nodes a route went to by name", () => {
    expect(namedValue('equals {"branch":"condition-0"}', triage, "triage")).toBe("equals branch “high”");
    expect(namedValue('{"branch": "false"}', triage, "triage")).toBe("branch “else”");
    expect(namedValue('{"branch":"condition-1"}', triage, null)).toBe("branch “low”");
    expect(namedValue('{"branch":"false","label":"else"}', triage, "triage")).toBe("branch “else”");
    expect(namedValue('equals {"branch":"condition-0","label":"high"}', triage, "triage")).toBe("equals branch “high”");
    expect(namedValue('{"branch":"false","other":1}', triage, "triage")).toBe('{"branch":"false","other":1}');
    expect(namedValue("{not json}", triage, "triage")).toBe("{not json}");
    expect(namedValue("routes to page", triage, "triage")).toBe("routes to Page on-call");
    expect(namedValue("went to review, page", triage, "triage")).toBe("went to review, Page on-call");
    expect(namedValue("`agent_3` did not run", triage, "agent_3")).toBe("“Summarise” did not run");
    expect(namedValue('contains "high"', triage, "agent_3")).toBe('contains "high"');
  });
});

describe("names in a large workflow", () => {
  // What displayName means, one search per question: the indexed version must say the same in every case.
  const reference = (w: Workflow, id: string) => {
    const node = w.nodes.find((n) => n.id === id);
    if (!node) return id;
    const shown = node.name || node.id;
    const twins = w.nodes.some((n) => n.id !== id && ((n.name || n.id) === shown || n.id === shown));
    return twins && shown !== id ? `${shown} (${id})` : shown;
  };

  it("names every node as a search through all nodes would, duplicated ids and names that are ids included", () => {
    const w = doc([
      { id: "a", type: "agent", name: "Review" },
      { id: "b", type: "agent", name: "Review" },
      { id: "c", type: "agent", name: "d" },
      { id: "d", type: "agent" },
      { id: "e", type: "agent", name: "Solo" },
      { id: "e", type: "agent", name: "Other" },
      { id: "f", type: "agent", name: "Twin" },
      { id: "f", type: "agent", name: "Twin" },
      { id: "g", type: "agent", name: "g" },
    ]);
    for (const id of ["a", "b", "c", "d", "e", "f", "g", "missing"]) expect(displayName(w, id)).toBe(reference(w, id));
  });

  it("sees an edit: another node list is indexed again", () => {
    const before = doc([{ id: "a", type: "agent", name: "Review" }, { id: "b", type: "agent" }]);
    expect(displayName(before, "a")).toBe("Review");
    const after = { ...before, nodes: [...before.nodes, { id: "c", type: "agent", name: "Review" } as Node] };
    expect(displayName(after, "a")).toBe("Review (a)");
    expect(displayName(before, "a")).toBe("Review");
  });

  it("finds an edge by id or by its ends, the first in order, as before", () => {
    const w = doc([{ id: "x", type: "agent", name: "X" }, { id: "y", type: "agent", name: "Y" }], [{ from: "x", to: "y", handle: "error" }, { id: "named", from: "y", to: "x" }]);
    expect(edgeTitle(w, "x->y")).toBe("X → Y (on failure)");
    expect(edgeTitle(w, "x->y:error")).toBe("X → Y (on failure)");
    expect(edgeTitle(w, "named")).toBe("Y → X");
    expect(edgeTitle(w, "y->x")).toBe("Y → X");
    expect(edgeTitle(w, "nowhere")).toBe("nowhere");
  });
});
