// `npm run bench:ui` opens this page in headless Chromium. IPC is mocked (no Rust), a 2,000-node workflow is
// opened in the real canvas, and the run store is fed 10,000 events per second through the same per-frame batching
// the app uses. Results are published on window.__bench for bench/ui.mjs to read.
import { createRoot } from "react-dom/client";
import { mockIPC, mockWindows } from "@tauri-apps/api/mocks";
import "@xyflow/react/dist/style.css";
import "../styles.css";
import type { Event, Workflow } from "../types";
import { App } from "../App";
import { frameBatcher, useRun } from "../store/run";
import { useView } from "../store/view";

declare global {
  interface Window {
    __bench: Record<string, number | string>;
    __benchReady: Promise<void>;
    __sendEvents: (count: number, perSecond: number) => Promise<{ applied: number; lost: number; seconds: number }>;
  }
}

const N = Number(new URLSearchParams(location.search).get("nodes") ?? 2000);

function bigWorkflow(n: number): Workflow {
  const cols = Math.ceil(Math.sqrt(n));
  const nodes: Workflow["nodes"] = [{ id: "start", type: "start", position: { x: -260, y: 0 } }];
  const edges: Workflow["edges"] = [];
  for (let i = 0; i < n - 1; i++) {
    nodes.push({ id: `n${i}`, type: "agent", position: { x: (i % cols) * 240, y: Math.floor(i / cols) * 120 } } as Workflow["nodes"][number]);
    edges.push({ from: i === 0 ? "start" : `n${i - 1}`, to: `n${i}` } as Workflow["edges"][number]);
  }
  return { switchyard: 1, name: `bench ${n}`, nodes, edges };
}

window.__bench = {};
const workflow = bigWorkflow(N);
const t0 = performance.now();
mockIPC((cmd) => {
  switch (cmd) {
    case "startup_file":
      return { path: "/bench.yaml", answersPath: null };
    case "open_file":
      return { workflow, format: "switchyard", notes: [], path: "/bench.yaml" };
    case "validate":
      return { errors: [], warnings: [] };
    case "get_settings":
      return { settings: { providers: [], limits: {} }, problem: null };
    case "list_runs":
      return [];
    case "load_prefs":
      return { recentFiles: [], theme: "light" };
    case "default_model":
      return { model: null, source: "none", detail: "bench" };
    default:
      return null;
  }
});
// The window API (title, close) asks for the current window's label.
mockWindows("main");

let maxInDom = 0;
new MutationObserver(() => {
  maxInDom = Math.max(maxInDom, document.querySelectorAll(".react-flow__node").length);
}).observe(document.getElementById("root")!, { childList: true, subtree: true });

// Open = from loading this page until the workflow is on the canvas, fitted, and painted.
window.__benchReady = new Promise((resolve) => {
  const stop = useView.subscribe((s, p) => {
    if (s.shown === p.shown) return;
    stop();
    requestAnimationFrame(() =>
      requestAnimationFrame(() => {
        window.__bench.open_ms = Math.round(performance.now() - t0);
        window.__bench.nodes_in_dom = document.querySelectorAll(".react-flow__node").length;
        window.__bench.max_nodes_in_dom = maxInDom;
        resolve();
      }),
    );
  });
});

/** Feeds `count` node events at `perSecond` through the app's batching, then checks every final status arrived. */
window.__sendEvents = async (count: number, perSecond: number) => {
  const ids = workflow.nodes.map((n) => n.id);
  useRun.getState().begin("bench", ids);
  let applied = 0;
  const batch = frameBatcher((events) => {
    applied += events.length;
    useRun.getState().apply(events);
  });
  const start = performance.now();
  let seq = 0;
  const expected = new Map<string, string>();
  const chunk = 200; // events per message, like the shell's per-frame batches
  while (seq < count) {
    const events: Event[] = [];
    for (let i = 0; i < chunk && seq < count; i++, seq++) {
      const node = ids[seq % ids.length];
      const exit = seq % 2 === 1;
      const status = (seq / 2) % 7 === 0 ? "failed" : "success";
      events.push(
        (exit
          ? { seq, run: "bench", ts: "", type: "node:exit", node, iteration: 1, durationMs: 1, result: { status, data: {}, toolCalls: [] } }
          : { seq, run: "bench", ts: "", type: "node:enter", node, iteration: 1, instruction: "" }) as Event,
      );
      if (exit) expected.set(node, status === "success" ? "succeeded" : "failed");
    }
    batch(events);
    const due = start + (seq / perSecond) * 1000;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  }
  await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
  const seconds = (performance.now() - start) / 1000;
  const nodes = useRun.getState().nodes;
  let lost = 0;
  for (const [node, status] of expected) if (nodes[node]?.status !== status) lost++;
  return { applied, lost, seconds };
};

createRoot(document.getElementById("root")!).render(<App />);
