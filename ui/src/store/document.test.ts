import { beforeEach, describe, expect, it } from "vitest";
import type { Workflow } from "../types";
import { edgeKey, edgeKeys, emptyWorkflow, holdDraft, nodeIds, useDocument, withoutItems } from "./document";

const doc = () => useDocument.getState();

describe("document editing", () => {
  beforeEach(() => doc().load(emptyWorkflow(), null));

  it("undoes and redoes every edit", () => {
    const a = doc().addNode("agent", { x: 10, y: 20 });
    doc().connect({ from: "start", to: a } as Workflow["edges"][number]);
    doc().updateNode(a, { user_prompt: "hi" });
    expect(doc().workflow.nodes[1]).toMatchObject({ id: "agent", type: "agent", user_prompt: "hi", position: { x: 10, y: 20 } });
    doc().undo();
    expect(doc().workflow.nodes[1].user_prompt).toBeUndefined();
    doc().undo();
    expect(doc().workflow.edges).toEqual([]);
    doc().undo();
    expect(doc().workflow.nodes.map((n) => n.id)).toEqual(["start"]);
    doc().undo(); // nothing left: no change
    expect(doc().workflow.nodes).toHaveLength(1);
    doc().redo();
    doc().redo();
    doc().redo();
    expect(doc().workflow.nodes[1].user_prompt).toBe("hi");
    expect(doc().dirty).toBe(true);
  });

  it("folds drag frames into one undo step", () => {
    const a = doc().addNode("agent", { x: 0, y: 0 });
    const move = (x: number) => (w: Workflow) => ({ ...w, nodes: w.nodes.map((n) => (n.id === a ? { ...n, position: { x, y: 0 } } : n)) });
    doc().edit(move(5));
    doc().editQuietly(move(10));
    doc().editQuietly(move(15));
    expect(doc().workflow.nodes[1].position).toEqual({ x: 15, y: 0 });
    doc().undo();
    expect(doc().workflow.nodes[1].position).toEqual({ x: 0, y: 0 });
  });

  it("renaming a node renames its edges", () => {
    const a = doc().addNode("agent", { x: 0, y: 0 });
    doc().connect({ from: "start", to: a } as Workflow["edges"][number]);
    doc().updateNode(a, { id: "writer" });
    expect(doc().workflow.edges[0]).toMatchObject({ from: "start", to: "writer" });
  });

  it("deletes the selection with its edges", () => {
    const a = doc().addNode("agent", { x: 0, y: 0 });
    const b = doc().addNode("agent", { x: 0, y: 0 });
    doc().connect({ from: "start", to: a } as Workflow["edges"][number]);
    doc().connect({ from: a, to: b } as Workflow["edges"][number]);
    doc().select({ nodes: [a], edges: [] });
    doc().deleteSelection();
    expect(doc().workflow.nodes.map((n) => n.id)).toEqual(["start", b]);
    expect(doc().workflow.edges).toEqual([]);
    doc().select({ nodes: [], edges: [] });
    doc().connect({ from: "start", to: b, handle: "output" } as Workflow["edges"][number]);
    doc().select({ nodes: [], edges: [edgeKey(doc().workflow.edges[0])] });
    doc().deleteSelection();
    expect(doc().workflow.edges).toEqual([]);
  });

  it("copies, pastes and duplicates with fresh ids and internal edges", () => {
    const a = doc().addNode("agent", { x: 0, y: 0 });
    const b = doc().addNode("agent", { x: 100, y: 0 });
    doc().connect({ from: a, to: b } as Workflow["edges"][number]);
    doc().connect({ from: "start", to: a } as Workflow["edges"][number]);
    doc().select({ nodes: [a, b, "start"], edges: [] });
    doc().copySelection();
    doc().paste();
    const ids = doc().workflow.nodes.map((n) => n.id);
    expect(ids).toEqual(["start", "agent", "agent_2", "agent_3", "agent_2_2"]);
    const pasted = doc().workflow.edges.slice(2);
    expect(pasted).toEqual([expect.objectContaining({ from: "agent_3", to: "agent_2_2" })]);
    expect(doc().selection.nodes).toEqual(["agent_3", "agent_2_2"]);
    // Down and right of the originals, covering none of them.
    const [x, y] = [doc().workflow.nodes[3].position!.x!, doc().workflow.nodes[3].position!.y!];
    expect(x).toBe(y);
    expect(x % 40).toBe(0);
    for (const n of doc().workflow.nodes.slice(0, 3)) expect(Math.abs(n.position!.x! - x) >= 200 || Math.abs(n.position!.y! - y) >= 70).toBe(true);
    doc().duplicateSelection();
    expect(doc().workflow.nodes).toHaveLength(7);
  });

  it("deletes a selected node with its edges and brings both back with one undo", () => {
    const a = doc().addNode("agent", { x: 300, y: 0 });
    const b = doc().addNode("agent", { x: 600, y: 0 }, { node: a, handle: "output" });
    doc().connect({ from: "start", to: a } as Workflow["edges"][number]);
    const before = doc().workflow;
    doc().select({ nodes: [a], edges: [] });
    expect(doc().deleteSelection()).toBeNull();
    expect(doc().workflow.nodes.map((n) => n.id)).toEqual(["start", b]);
    expect(doc().workflow.edges).toEqual([]);
    doc().undo();
    expect(doc().workflow).toBe(before); // one step restores the node and both of its edges
  });

  it("deletes exactly what is selected, nodes and edges together", () => {
    const a = doc().addNode("agent", { x: 300, y: 0 }, { node: "start", handle: "output" });
    const b = doc().addNode("agent", { x: 600, y: 0 }, { node: a, handle: "error" });
    const c = doc().addNode("agent", { x: 900, y: 0 }, { node: b, handle: "output" });
    const errorEdge = doc().workflow.edges.find((e) => e.handle === "error")!;
    doc().select({ nodes: [c], edges: [edgeKey(errorEdge)] });
    doc().deleteSelection();
    expect(doc().workflow.nodes.map((n) => n.id)).toEqual(["start", a, b]);
    expect(doc().workflow.edges.map((e) => `${e.from}->${e.to}`)).toEqual([`start->${a}`]);
  });

  it("keeps the only start node and says why", () => {
    doc().select({ nodes: ["start"], edges: [] });
    expect(doc().deleteSelection()).toMatch(/start node stays/);
    expect(doc().workflow.nodes.map((n) => n.id)).toEqual(["start"]);
  });

  it("adds a node already connected from a handle", () => {
    const id = doc().addNode("approval", { x: 300, y: 0 }, { node: "start", handle: "output" });
    expect(doc().workflow.edges).toEqual([{ from: "start", to: id }]);
    expect(doc().selection).toEqual({ nodes: [id], edges: [] });
    doc().undo();
    expect(doc().workflow.nodes).toHaveLength(1);
    expect(doc().workflow.edges).toHaveLength(0);
  });

  it("keeps a renamed node selected, with its edges following the new id", () => {
    const a = doc().addNode("agent", { x: 300, y: 0 }, { node: "start", handle: "output" });
    doc().updateNode(a, { id: "draft" });
    expect(doc().selection.nodes).toEqual(["draft"]);
    expect(doc().workflow.edges).toEqual([{ from: "start", to: "draft" }]);
  });

  it("makes what is typed in one field, one keystroke after another, one undo step", () => {
    const a = doc().addNode("agent", { x: 0, y: 0 });
    for (const text of ["H", "He", "Hello"]) doc().updateNode(a, { user_prompt: text }, `${a}/user_prompt`);
    doc().endTyping(); // the person left the field
    doc().updateNode(a, { user_prompt: "Hello!" }, `${a}/user_prompt`);
    doc().undo();
    expect(doc().workflow.nodes[1].user_prompt).toBe("Hello");
    doc().undo();
    expect(doc().workflow.nodes[1].user_prompt).toBeUndefined();
    expect(doc().workflow.nodes[1].id).toBe(a);
  });

  it("commits a held draft before any other change, so a click in the palette never leaves it behind", () => {
    const a = doc().addNode("agent", { x: 0, y: 0 });
    holdDraft(() => doc().updateNode(a, { id: "writer" }));
    const b = doc().addNode("agent", { x: 300, y: 0 });
    expect(doc().workflow.nodes.map((n) => n.id)).toEqual(["start", "writer", b]);
    expect(b).toBe("agent"); // the id it took was free once the draft was in
    doc().undo();
    expect(doc().workflow.nodes.map((n) => n.id)).toEqual(["start", "writer"]);
  });
});

describe("withoutItems", () => {
  const chain = (n: number): Workflow => ({
    switchyard: 1,
    name: "chain",
    nodes: Array.from({ length: n }, (_, i) => ({ id: `n${i}`, type: "agent", position: { x: i, y: 0 } }) as Workflow["nodes"][number]),
    edges: Array.from({ length: n - 1 }, (_, i) => ({ from: `n${i}`, to: `n${i + 1}` }) as Workflow["edges"][number]),
  });

  it("removes the nodes named, every edge touching them, and the edges named", () => {
    const w = chain(6);
    const after = withoutItems(w, ["n2"], ["n4->n5"]);
    expect(after.nodes.map((n) => n.id)).toEqual(["n0", "n1", "n3", "n4", "n5"]);
    expect(after.edges.map(edgeKey)).toEqual(["n0->n1", "n3->n4"]);
    expect(w.nodes).toHaveLength(6); // the document it was given is unchanged
  });

  it("keeps the node list itself when only edges go, so the canvas re-adopts no node", () => {
    const w = chain(3);
    const after = withoutItems(w, [], ["n0->n1"]);
    expect(after.nodes).toBe(w.nodes);
    expect(after.edges.map(edgeKey)).toEqual(["n1->n2"]);
  });
});

describe("ids and edge keys of a document", () => {
  it("are worked out once per list, and a new list has its own", () => {
    const w = { switchyard: 1, name: "w", nodes: [{ id: "a", type: "start" }, { id: "b", type: "agent" }], edges: [{ from: "a", to: "b" }] } as Workflow;
    expect(nodeIds(w.nodes)).toBe(nodeIds(w.nodes));
    expect([...nodeIds(w.nodes)]).toEqual(["a", "b"]);
    expect([...edgeKeys(w.edges)]).toEqual(["a->b"]);
    const without = withoutItems(w, ["b"], []);
    expect([...nodeIds(without.nodes)]).toEqual(["a"]);
    expect(edgeKeys(without.edges).size).toBe(0);
  });
});
