// `npm run bench:app` loads this page in the real app's webview to measure a plain React Flow canvas with the same
// nodes as the app's benchmark workflow: default nodes, the same positions and edges, nothing else (no custom node
// types, minimap, controls or background). The layout comes from the query string so that it matches the YAML
// bench/app.mjs generates: `nodes` (start + agents), `cols`, `dx`, `dy`, `prefix`; `x`, `y`, `zoom` give the
// viewport to open with (the app's at the moment it was measured); `left`, `top`, `width`, `height` place the canvas
// where the app's canvas is, so the same part of the graph is on screen. `visible=1` turns on React Flow's
// onlyRenderVisibleElements (the app uses it), for a second, like-for-like comparison.
import { createRoot } from "react-dom/client";
import { ReactFlow, type Edge, type Node } from "@xyflow/react";
import "@xyflow/react/dist/style.css";

const q = new URLSearchParams(location.search);
const num = (key: string, fallback: number) => (q.has(key) ? Number(q.get(key)) : fallback);
const n = num("nodes", 2000);
const cols = num("cols", Math.ceil(Math.sqrt(n)));
const dx = num("dx", 280);
const dy = num("dy", 160);
const prefix = q.get("prefix") ?? "n";

// Start at (-dx, 0), then agents `${prefix}${i}` on a grid, chained one after another (as bench/app.mjs writes them).
const nodes: Node[] = [{ id: "start", position: { x: -dx, y: 0 }, data: { label: "start" } }];
const edges: Edge[] = [];
for (let i = 0; i < n - 1; i++) {
  const id = `${prefix}${i}`;
  const from = i === 0 ? "start" : `${prefix}${i - 1}`;
  nodes.push({ id, position: { x: (i % cols) * dx, y: Math.floor(i / cols) * dy }, data: { label: id } });
  edges.push({ id: `${from}->${id}`, source: from, target: id });
}
const onlyVisible = q.get("visible") === "1";
const viewport = { x: num("x", 0), y: num("y", 0), zoom: num("zoom", 1) };
const box = q.has("width")
  ? { position: "absolute" as const, left: num("left", 0), top: num("top", 0), width: num("width", 0), height: num("height", 0) }
  : { width: "100vw", height: "100vh" };

(window as unknown as { __bare: { nodes: number; edges: number } }).__bare = { nodes: nodes.length, edges: edges.length };

createRoot(document.getElementById("root")!).render(
  <div style={box} data-testid="bare-canvas">
    <ReactFlow defaultNodes={nodes} defaultEdges={edges} defaultViewport={viewport} onlyRenderVisibleElements={onlyVisible} minZoom={0.05} maxZoom={2.5} proOptions={{ hideAttribution: true }} />
  </div>,
);
