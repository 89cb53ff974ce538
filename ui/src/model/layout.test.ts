import { describe, expect, it } from "vitest";
import type { Edge, Node, Workflow } from "../types";
import { minNodeHeight, NODE_WIDTH } from "./handles";
import { chipSize, curvePoints, edgeLabel, placeLabels, type Placed } from "./labels";
import { layout, needsLayout, setLayoutView, wrapRows } from "./layout";
import { fitZoom, LEGIBLE_PX } from "./placement";
import { TITLE_PX } from "../components/WorkflowNode";

const wf = (nodes: Partial<Node>[], edges: Partial<Edge>[]): Workflow => ({ switchyard: 1, name: "t", nodes: nodes as Node[], edges: edges as Edge[] });
const box = (n: Node) => ({ x: n.position!.x!, y: n.position!.y!, width: NODE_WIDTH, height: minNodeHeight(n) });
const apart = (a: { x: number; y: number; width: number; height: number }, b: typeof a) =>
  a.x + a.width <= b.x || b.x + b.width <= a.x || a.y + a.height <= b.y || b.y + b.height <= a.y;
/** The canvas of a 1400 × 900 window with the palette and the bottom panel's tabs (measured in the app). */
const CANVAS = { width: 1330, height: 760 };
setLayoutView(CANVAS);
/** Whether `b` comes after `a` in reading order: to its right in the same row, or in a row below. */
const ahead = (a: Node, b: Node) => b.position!.x! > a.position!.x! || b.position!.y! >= a.position!.y! + minNodeHeight(a);
/** The size of the laid-out picture. */
const extent = (nodes: Node[]) => {
  const boxes = nodes.map(box);
  const [x0, y0] = [Math.min(...boxes.map((b) => b.x)), Math.min(...boxes.map((b) => b.y))];
  return { width: Math.max(...boxes.map((b) => b.x + b.width)) - x0, height: Math.max(...boxes.map((b) => b.y + b.height)) - y0 };
};
const chain = (n: number): Workflow =>
  wf([{ id: "start", type: "start" }, ...Array.from({ length: n - 1 }, (_, i) => ({ id: `a${i}`, type: "agent" as const }))], Array.from({ length: n - 1 }, (_, i) => ({ from: i ? `a${i - 1}` : "start", to: `a${i}` })));
const assertNoOverlap = (nodes: Node[]) => {
  for (let i = 0; i < nodes.length; i++)
    for (const b of nodes.slice(i + 1)) expect(apart(box(nodes[i]), box(b)), `${nodes[i].id} and ${b.id} overlap`).toBe(true);
};

/** SWEny's triage (shared/fixtures/sweny/triage.yml, its real `when` texts), grown to 12 nodes with a review loop. */
const sweny = () => {
  const nodes: Partial<Node>[] = [
    { id: "start", type: "start" },
    { id: "gather", type: "agent" },
    { id: "investigate", type: "agent" },
    { id: "severity", type: "if", conditions: [{ value: "investigate.highest_severity == 'critical'" }, { value: "investigate.novel_count > 3" }] as Node["conditions"] },
    { id: "create_issue", type: "agent" },
    { id: "skip", type: "agent" },
    { id: "implement", type: "agent" },
    { id: "create_pr", type: "agent" },
    { id: "review", type: "approval" },
    { id: "merge", type: "script" },
    { id: "notify", type: "agent" },
    { id: "done", type: "script" },
  ];
  const edges: Partial<Edge>[] = [
    { from: "start", to: "gather" },
    { from: "gather", to: "investigate", when: "the gathered context names at least one affected service" },
    { from: "investigate", to: "severity", when: "novel_count is greater than 0 AND highest_severity is medium or higher" },
    { from: "investigate", to: "skip", when: "novel_count is 0, OR highest_severity is low" },
    { from: "severity", to: "create_issue", handle: "condition-0" },
    { from: "severity", to: "create_issue", handle: "condition-1" },
    { from: "severity", to: "skip", handle: "false" },
    { from: "create_issue", to: "implement", when: "at least one novel finding has fix_complexity simple or moderate AND fix_approach is provided" },
    { from: "create_issue", to: "notify", when: "all novel findings have fix_complexity complex, OR no clear fix_approach" },
    { from: "skip", to: "notify" },
    { from: "implement", to: "notify", when: 'implement.test_status is "skipped" (Step 0b found an open PR already exists for the issue identifier)' },
    { from: "implement", to: "create_pr", when: 'implement.test_status is "pass" or "no-framework" (no existing PR; fix was implemented or there is no test framework)' },
    { from: "create_pr", to: "review", when: "a pull request was opened and its checks are green" },
    { from: "review", to: "merge", handle: "approve" },
    { from: "review", to: "implement", handle: "reject", when: "the reviewer asked for changes to the fix", max_iterations: 3 },
    { from: "review", to: "notify", handle: "timeout" },
    { from: "merge", to: "notify", when: "the merge went through without conflicts" },
    { from: "notify", to: "done" },
  ];
  return wf(nodes, edges);
};

describe("layout", () => {
  it("lays a SWEny-like file out in reading order, no two cards overlapping, with room between layers for each label", async () => {
    const doc = sweny();
    const laid = await layout(doc);
    const at = new Map(laid.nodes.map((n) => [n.id, n]));
    // Every forward step goes left to right, or on to the next row (review -> implement is the loop back).
    for (const e of doc.edges) if (!(e.from === "review" && e.to === "implement")) expect(ahead(at.get(e.from)!, at.get(e.to)!), `${e.from} -> ${e.to}`).toBe(true);
    const main = ["start", "gather", "investigate", "severity", "create_issue", "implement", "create_pr", "review", "merge", "notify", "done"];
    main.slice(1).forEach((id, i) => expect(ahead(at.get(main[i])!, at.get(id)!)).toBe(true));
    assertNoOverlap(laid.nodes);
    for (const n of laid.nodes) expect(Number.isInteger(n.position!.x) && Number.isInteger(n.position!.y)).toBe(true);
    // A labelled edge between neighbouring layers leaves its chip room between the two cards (seen in one row, on a
    // canvas wide enough for it).
    setLayoutView({ width: 100000, height: CANVAS.height });
    const row = new Map((await layout(doc)).nodes.map((n) => [n.id, n]));
    setLayoutView(CANVAS);
    for (const e of doc.edges) {
      const text = edgeLabel(e);
      const [from, to] = [row.get(e.from)!.position!, row.get(e.to)!.position!];
      if (!text || (e.from === "review" && e.to === "implement")) continue;
      const gap = to.x! - (from.x! + NODE_WIDTH);
      expect(gap, `${e.from} -> ${e.to}`).toBeGreaterThanOrEqual(chipSize(text).width);
    }
    // The chips, placed over the laid-out cards, keep off the cards and off each other.
    const items = doc.edges
      .filter((e) => edgeLabel(e))
      .map((e, i) => {
        const [s, t] = [box(at.get(e.from)!), box(at.get(e.to)!)];
        return { id: `e${i}`, text: edgeLabel(e), points: curvePoints({ x: s.x + s.width, y: s.y + 28 }, { x: t.x, y: t.y + t.height / 2 }) };
      })
      // Forward edges within a row (the others are drawn as steps between the rows).
      .filter((it) => it.points[0].x < it.points[it.points.length - 1].x);
    const cards = laid.nodes.map(box);
    const chips = Object.values(placeLabels(items, { obstacles: cards })).map((c: Placed) => ({ ...c, x: c.x - c.width / 2, y: c.y - c.height / 2 }));
    expect(chips).toHaveLength(items.length);
    for (let i = 0; i < chips.length; i++) {
      for (const c of cards) expect(apart(chips[i], c)).toBe(true);
      for (const o of chips.slice(i + 1)) expect(apart(chips[i], o)).toBe(true);
    }
  }, 30000);

  it("keeps everything but the positions, and gives the same picture twice", async () => {
    const doc = sweny();
    const laid = await layout(doc);
    expect(laid.edges).toBe(doc.edges);
    expect(laid.name).toBe(doc.name);
    laid.nodes.forEach((n, i) => expect({ ...n, position: undefined }).toEqual({ ...doc.nodes[i], position: undefined }));
    expect((await layout(doc)).nodes.map((n) => n.position)).toEqual(laid.nodes.map((n) => n.position));
  });

  it("orders an if node's targets as its handles are ordered", async () => {
    const laid = await layout(
      wf(
        [{ id: "s", type: "start" }, { id: "f", type: "if", conditions: [{ value: "a" }, { value: "b" }] as Node["conditions"] }, { id: "x", type: "agent" }, { id: "y", type: "agent" }, { id: "z", type: "agent" }],
        // Listed in the reverse order, so that only the ports can put them right.
        [{ from: "s", to: "f" }, { from: "f", to: "z", handle: "false" }, { from: "f", to: "y", handle: "condition-1" }, { from: "f", to: "x", handle: "condition-0" }],
      ),
    );
    const y = (id: string) => laid.nodes.find((n) => n.id === id)!.position!.y!;
    expect(y("x")).toBeLessThan(y("y"));
    expect(y("y")).toBeLessThan(y("z"));
  });

  it("survives loops and self loops, and hangs subagents below their agent, clear of the other cards", async () => {
    const laid = await layout(
      wf(
        [
          { id: "start", type: "start" },
          { id: "a", type: "agent", tools: { subagents: true } as Node["tools"] },
          { id: "c", type: "agent" },
          { id: "d", type: "agent" },
          { id: "b", type: "agent" },
          { id: "helper", type: "agent", tools: { subagents: true } as Node["tools"] },
          { id: "helper2", type: "agent" },
          { id: "deep", type: "agent" },
        ],
        [
          { from: "start", to: "a" },
          { from: "start", to: "c" },
          { from: "start", to: "d" },
          { from: "a", to: "b" },
          { from: "c", to: "b" },
          { from: "b", to: "a", max_iterations: 3 },
          { from: "b", to: "b", max_iterations: 2 },
          { from: "a", to: "helper", handle: "subagent" },
          { from: "a", to: "helper2", handle: "subagent" },
          { from: "helper", to: "deep", handle: "subagent" },
        ],
      ),
    );
    const at = new Map(laid.nodes.map((n) => [n.id, n.position!]));
    expect(at.get("start")!.x!).toBeLessThan(at.get("a")!.x!);
    expect(at.get("a")!.x!).toBeLessThan(at.get("b")!.x!);
    // Below the parent, indented past its middle (where the subagent handle is), each under the one before.
    expect(at.get("helper")!.y!).toBeGreaterThan(at.get("a")!.y! + 84);
    expect(at.get("helper")!.x!).toBeGreaterThan(at.get("a")!.x! + NODE_WIDTH / 2);
    expect(at.get("deep")!.y!).toBeGreaterThan(at.get("helper")!.y!);
    expect(at.get("deep")!.x!).toBeGreaterThan(at.get("helper")!.x!);
    expect(at.get("helper2")!.y!).toBeGreaterThan(at.get("deep")!.y!);
    // Subagents are not a step of the flow: they are not a layer to the right of their parent.
    expect(at.get("helper")!.x!).toBeLessThan(at.get("b")!.x!);
    assertNoOverlap(laid.nodes);
  });

  it("places every node of a broken file", async () => {
    const laid = await layout(
      wf(
        [{ id: "start", type: "start" }, { id: "p", type: "agent" }, { id: "q", type: "agent" }, { id: "r", type: "if" }, { id: "lonely", type: "script" }],
        [
          { from: "start", to: "p" },
          { from: "p", to: "q", handle: "subagent" },
          { from: "q", to: "p", handle: "subagent" }, // a ring of subagents
          { from: "ghost", to: "r", handle: "subagent" }, // from a node that does not exist
          { from: "p", to: "r", handle: "no-such-handle" },
          { from: "r", to: "start" }, // into a node with no input
          { from: "r", to: "nowhere" },
          { from: "r", to: "r", handle: "false" },
        ],
      ),
    );
    expect(laid.nodes).toHaveLength(5);
    for (const n of laid.nodes) expect(Number.isInteger(n.position!.x) && Number.isInteger(n.position!.y)).toBe(true);
    assertNoOverlap(laid.nodes);
  });

  it("lays out 200 nodes without overlaps", async () => {
    const nodes: Partial<Node>[] = [{ id: "n0", type: "start" }];
    const edges: Partial<Edge>[] = [];
    for (let i = 1; i < 200; i++) {
      nodes.push({ id: `n${i}`, type: i % 9 === 0 ? "script" : "agent" });
      const from = Math.max(0, i - 1 - ((i * 7) % 5));
      edges.push({ from: `n${from}`, to: `n${i}`, ...(i % 2 ? { when: `the result of step ${from} is worth following up` } : {}) });
      if (i % 23 === 0) edges.push({ from: `n${i}`, to: `n${i - 4}`, max_iterations: 2 });
    }
    const laid = await layout(wf(nodes, edges));
    assertNoOverlap(laid.nodes);
    const at = new Map(laid.nodes.map((n) => [n.id, n]));
    for (const e of edges) if (e.max_iterations == null) expect(ahead(at.get(e.from!)!, at.get(e.to!)!)).toBe(true);
  }, 30000);

  it("wraps a long chain into rows, so that fitted on the canvas of a 1400 × 900 window its titles stay legible", async () => {
    for (const n of [7, 12, 30]) {
      const laid = await layout(chain(n));
      assertNoOverlap(laid.nodes);
      const zoom = Math.min(1.25, fitZoom(extent(laid.nodes), CANVAS));
      expect(zoom * TITLE_PX, `a chain of ${n}: titles at zoom ${zoom.toFixed(2)}`).toBeGreaterThanOrEqual(LEGIBLE_PX);
      // Rows, not one flat line: the picture is no wider than the canvas at legible zoom.
      const rows = new Set(laid.nodes.map((m) => m.position!.y)).size;
      if (n >= 12) expect(rows, `a chain of ${n}`).toBeGreaterThan(1);
      laid.nodes.slice(1).forEach((m, i) => expect(ahead(laid.nodes[i], m)).toBe(true));
    }
    // Four cards fit in one row at full size: not wrapped.
    expect(new Set((await layout(chain(4))).nodes.map((m) => m.position!.y)).size).toBe(1);
  });

  it("cuts a branching flow into rows where it narrows, through as few edges as it can", () => {
    // a → b → (c1 | c2) → d → e, one column each, 280 apart: one row is too wide for a 700-wide canvas.
    const at = (id: string, col: number, row = 0) => ({ id, x: col * 280, y: row * 124, width: 220, height: 84 });
    const kids = [at("a", 0), at("b", 1), at("c1", 2), at("c2", 2, 1), at("d", 3), at("e", 4)];
    const edge = (from: string, to: string) => ({ id: `${from}${to}`, sources: [`${from}::output`], targets: [`${to}::input`] });
    const edges = [edge("a", "b"), edge("b", "c1"), edge("b", "c2"), edge("c1", "d"), edge("c2", "d"), edge("d", "e")];
    const rows = wrapRows(kids, { width: 900, height: 700 }, edges);
    const y = new Map(rows.map((k) => [k.id, k.y!]));
    // Two rows, and the branch (c1, c2) is never split from both its ends: the cut crosses one edge, not two.
    expect(new Set(rows.map((k) => k.x)).size).toBeLessThan(5);
    expect(y.get("c1")! === y.get("b")! || y.get("c1")! === y.get("d")!).toBe(true);
    const cut = edges.filter((e) => Math.abs(y.get(e.sources[0].split("::")[0])! - y.get(e.targets[0].split("::")[0])!) > 200).length;
    expect(cut).toBe(1);
    // Each row starts at the left.
    expect(Math.min(...rows.filter((k) => y.get(k.id)! > 200).map((k) => k.x!))).toBe(12);
  });

  it("keeps the picture as it is when wrapping gains nothing", () => {
    const kids = [0, 1, 2].map((i) => ({ id: `n${i}`, x: i * 280, y: 0, width: 220, height: 84 }));
    expect(wrapRows(kids, CANVAS)).toBe(kids);
  });
});

describe("layout of large workflows (quickLayered, above LARGE nodes)", () => {
  const overlaps = (nodes: Node[]) => {
    const boxes = nodes.map(box).sort((a, b) => a.x - b.x);
    const found: string[] = [];
    for (let i = 0; i < boxes.length; i++)
      for (let j = i + 1; j < boxes.length && boxes[j].x < boxes[i].x + boxes[i].width; j++) if (!apart(boxes[i], boxes[j])) found.push(`${i}/${j}`);
    return found;
  };

  it("lays out 1,500 nodes with branches, labels, loops and subagents: left to right, no overlaps", async () => {
    const nodes: Partial<Node>[] = [{ id: "n0", type: "start" }];
    const edges: Partial<Edge>[] = [];
    for (let i = 1; i < 1500; i++) {
      nodes.push({ id: `n${i}`, type: i % 9 === 0 ? "script" : "agent" });
      const from = Math.max(0, i - 1 - ((i * 7) % 5));
      edges.push({ from: `n${from}`, to: `n${i}`, ...(i % 2 ? { when: `the result of step ${from} is worth following up` } : {}) });
      if (i % 23 === 0) edges.push({ from: `n${i}`, to: `n${i - 4}`, max_iterations: 2 });
    }
    for (let i = 0; i < 20; i++) {
      nodes.push({ id: `s${i}`, type: "agent" });
      edges.push({ from: `n${i * 50 + 1}`, to: `s${i}`, handle: "subagent" });
    }
    const laid = await layout(wf(nodes, edges));
    expect(laid.nodes.every((n) => Number.isInteger(n.position?.x) && Number.isInteger(n.position?.y))).toBe(true);
    expect(overlaps(laid.nodes)).toEqual([]);
    const nodesAt = new Map(laid.nodes.map((n) => [n.id, n]));
    const at = new Map(laid.nodes.map((n) => [n.id, n.position!]));
    for (const e of edges) if (e.max_iterations == null && e.handle !== "subagent") expect(ahead(nodesAt.get(e.from!)!, nodesAt.get(e.to!)!)).toBe(true);
    // A subagent hangs below its agent.
    for (let i = 0; i < 20; i++) expect(at.get(`s${i}`)!.y!).toBeGreaterThan(at.get(`n${i * 50 + 1}`)!.y!);
    // The same picture twice.
    expect((await layout(wf(nodes, edges))).nodes.map((n) => n.position)).toEqual(laid.nodes.map((n) => n.position));
  });

  // How long it takes is a figure `npm run bench:ui` prints, not a budget here: a loaded machine would fail it.
  it("lays out a 5,000-node chain in rows that fit the canvas whole at 5 % or more", async () => {
    const doc = chain(5000);
    const laid = await layout(doc);
    expect(overlaps(laid.nodes)).toEqual([]);
    expect(laid.nodes.slice(1).filter((m, i) => !ahead(laid.nodes[i], m)).map((m) => m.id)).toEqual([]);
    // Each row starts at the left; the whole picture fits the canvas at a zoom where cards are still shapes.
    expect(laid.nodes[0].position!.x).toBe(12);
    expect(fitZoom(extent(laid.nodes), CANVAS)).toBeGreaterThanOrEqual(0.05);
  }, 30000);
});

describe("needsLayout", () => {
  it("knows a file without positions", () => {
    expect(needsLayout(wf([], []))).toBe(false);
    expect(needsLayout(wf([{ id: "a", type: "start" }], []))).toBe(true);
    expect(needsLayout(wf([{ id: "a", type: "start", position: { x: 5, y: 5 } }], []))).toBe(false);
    expect(needsLayout(wf([{ id: "a", type: "start" }, { id: "b", type: "agent" }], []))).toBe(true);
    expect(needsLayout(wf([{ id: "a", type: "start", position: { x: 0, y: 0 } }, { id: "b", type: "agent", position: { x: 0, y: 0 } }], []))).toBe(true);
    expect(needsLayout(wf([{ id: "a", type: "start", position: { x: 0, y: 0 } }, { id: "b", type: "agent", position: { x: 300, y: 0 } }], []))).toBe(false);
    // Some placed and some not: the user's places are kept.
    expect(needsLayout(wf([{ id: "a", type: "start", position: { x: 0, y: 0 } }, { id: "b", type: "agent" }, { id: "c", type: "agent", position: { x: 300, y: 0 } }], []))).toBe(false);
  });
});
