#!/usr/bin/env node
// Reproduce crates/engine/tests/corpus/agentflow/{files,expected.json}.
//
// AgentFlow (CodeSignal/learn_bespoke-agentflow) has no workflow files in its repository and no test that holds a
// workflow graph (its only test, apps/web/src/app/workflow-editor.test.ts, checks port rendering; the engine's and
// server's "test" scripts only type-check). The whole graphs the repository does hold are written to files/:
//   docs-extracted/api/workflowgraph.json            docs/api.md, the ```json block under "## WorkflowGraph"
//   docs-extracted/api/workflowrunresult-workflow.json docs/api.md, the `workflow` member of the "## WorkflowRunResult"
//                                                     block (the same empty graph is the `graph` of its request examples)
//   embedded/editor-default-canvas.json               what the web editor starts with and saves to localStorage
//                                                     (WorkflowEditor constructor: addDefaultStartNode(), then
//                                                     saveWorkflowState() writes {nodes, connections}); produced by
//                                                     running the editor's own addNode/getDefaultData code
//
// How AgentFlow treats a workflow file, run here with AgentFlow's own code (bundled from the source tree with the
// tree's esbuild; nothing re-implemented):
//   1. server   GET /api/default-workflow (apps/server/src/routes/workflows.ts): the file is put at
//               $PROJECT_ROOT/.config/default-workflow.json, the router's handler is called with a fake req/res;
//               JSON.parse + validateGraph (nodes and connections are arrays) -> 200, or 400 "default-workflow.json
//               is not a valid workflow graph", or 500 "Failed to read default workflow".
//   2. editor   loadDefaultWorkflow (apps/web/src/app/workflow-editor.ts): isValidGraphInput (every node has a string
//               id and type) else the graph is silently ignored; loadWorkflow -> upgradeLegacyNodes (type input ->
//               approval, if.data.condition -> conditions, handle true -> condition-0, agent tools normalised).
//   3. preflight getRunDisableReason() — the editor's run-readiness check (apps/web/docs/run-readiness.md): one start
//               node, no broken connections, subagent-link rules, start connected, something reachable, each
//               reachable if/approval has a branch. A non-null reason disables Run.
//   Verdict: "accepted" when 1–3 all pass; otherwise "refused" with the first failing step's message.
//   4. note     POST /api/run with the upgraded graph (what the editor sends), a stub LLM answering "ok" (at most 25
//               calls): the engine's runtime outcome (normalizeGraph, "No start node found", subagent constraints in
//               validateSubagentGraphConstraints, unknown node types skipped with a warning).
//
// Usage
// -----
//    git -C /work/.mirror/CodeSignal+learn_bespoke-agentflow/repo archive f838e200d751e8b26eaccc5861af29a31d526f7b | tar -x -C /tmp/af
//    (cd /tmp/af && npm ci --ignore-scripts)                                   # node >= 20
//    node scripts/corpus/agentflow_expected.mjs --src /tmp/af                 # (re)write files/ and expected.json
//    node scripts/corpus/agentflow_expected.mjs --src /tmp/af --expect-only   # only re-judge files/
//
// Writes only under crates/engine/tests/corpus/agentflow/ and a temp dir. Not run by the test suite.

import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { createRequire } from "node:module";
import { pathToFileURL, fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const CORPUS = path.resolve(here, "../../crates/engine/tests/corpus/agentflow");
const FILES = path.join(CORPUS, "files");
const args = process.argv.slice(2);
const i = args.indexOf("--src");
const SRC = path.resolve(i >= 0 ? args[i + 1] : "/tmp/af");
const EXPECT_ONLY = args.includes("--expect-only");

const require = createRequire(path.join(SRC, "package.json"));
const esbuild = require("esbuild");
const TMP = fs.mkdtempSync(path.join(os.tmpdir(), "agentflow-expected-"));
const alias = {
  "@agentic/types": path.join(SRC, "packages/types/src/index.ts"),
  "@agentic/workflow-engine": path.join(SRC, "packages/workflow-engine/src/index.ts"),
};

async function bundle(entry, out, format) {
  await esbuild.build({
    entryPoints: [path.join(SRC, entry)],
    outfile: path.join(TMP, out),
    bundle: true,
    platform: "node",
    format,
    alias,
    nodePaths: [path.join(SRC, "node_modules")],
    logLevel: "error",
  });
  return path.join(TMP, out);
}

// ── AgentFlow's code ────────────────────────────────────────────────────
const PROJECT_ROOT = path.join(TMP, "project");
fs.mkdirSync(path.join(PROJECT_ROOT, ".config"), { recursive: true });
process.env.PROJECT_ROOT = PROJECT_ROOT; // read by apps/server/src/config.ts at import
const routerPath = await bundle("apps/server/src/routes/workflows.ts", "workflows.cjs", "cjs");
const editorPath = await bundle("apps/web/src/app/workflow-editor.ts", "workflow-editor.mjs", "esm");
const { createWorkflowRouter } = require(routerPath);
const { WorkflowEditor } = await import(pathToFileURL(editorPath).href);

let llmCalls = 0;
const stubLlm = {
  async respond() {
    if (++llmCalls > 25) throw new Error("stub LLM: more than 25 calls (loop)");
    return "ok";
  },
};
const router = createWorkflowRouter(stubLlm);
function handler(method, route) {
  const layer = router.stack.find((l) => l.route?.path === route && l.route.methods[method]);
  return layer.route.stack[0].handle;
}
function call(h, body) {
  return new Promise((resolve) => {
    const res = {
      statusCode: 200,
      status(c) { this.statusCode = c; return this; },
      json(b) { resolve({ status: this.statusCode, body: b }); return this; },
      setHeader() {}, flushHeaders() {}, on() {}, write() {}, end() {},
    };
    Promise.resolve(h({ body, params: {} }, res)).catch((e) => resolve({ status: "threw", body: String(e) }));
  });
}
function editorWith(nodes, connections) {
  const ed = Object.create(WorkflowEditor.prototype);
  Object.assign(ed, { nodes, connections, nextNodeId: 1, canvas: null, stateReady: false, runButton: null });
  for (const m of ["render", "renderNode", "updateRunButton", "scheduleSave"]) ed[m] = () => {};
  return ed;
}

// ── files ───────────────────────────────────────────────────────────────
function write(rel, obj) {
  const p = path.join(FILES, rel);
  fs.mkdirSync(path.dirname(p), { recursive: true });
  fs.writeFileSync(p, JSON.stringify(obj, null, 2) + "\n");
}
function jsonBlockAfter(md, heading) {
  const at = md.indexOf(heading);
  const m = /```json\n([\s\S]*?)```/.exec(md.slice(at));
  return JSON.parse(m[1]);
}
if (!EXPECT_ONLY) {
  fs.rmSync(FILES, { recursive: true, force: true });
  const api = fs.readFileSync(path.join(SRC, "docs/api.md"), "utf-8");
  write("docs-extracted/api/workflowgraph.json", jsonBlockAfter(api, "## WorkflowGraph"));
  write("docs-extracted/api/workflowrunresult-workflow.json", jsonBlockAfter(api, "## WorkflowRunResult").workflow);
  const ed = editorWith([], []);
  ed.addDefaultStartNode();
  write("embedded/editor-default-canvas.json", { nodes: ed.nodes, connections: ed.connections });
}

// ── judge ───────────────────────────────────────────────────────────────
const getDefault = handler("get", "/default-workflow");
const postRun = handler("post", "/run");
const files = [];
(function walk(d) {
  for (const e of fs.readdirSync(d, { withFileTypes: true })) {
    const p = path.join(d, e.name);
    if (e.isDirectory()) walk(p);
    else if (p.endsWith(".json")) files.push(path.relative(FILES, p));
  }
})(FILES);
files.sort();
const out = {};
for (const f of files) {
  const notes = [];
  let entry;
  fs.copyFileSync(path.join(FILES, f), path.join(PROJECT_ROOT, ".config/default-workflow.json"));
  const loaded = await call(getDefault, {});
  if (loaded.status !== 200) {
    const b = loaded.body ?? {};
    entry = { loader: "refused", reason: `server GET /api/default-workflow ${loaded.status}: ${b.error ?? b}${b.details ? `: ${b.details}` : ""}` };
  } else {
    const graph = loaded.body;
    const ed = editorWith([], []);
    if (!ed.isValidGraphInput(graph)) {
      entry = { loader: "refused", reason: "editor isValidGraphInput: false (graph ignored, canvas keeps its default start node)" };
    } else {
      const before = JSON.stringify(graph);
      ed.loadWorkflow(graph);
      const after = { nodes: ed.nodes, connections: ed.connections };
      if (JSON.stringify(after) !== before) notes.push(`editor upgradeLegacyNodes changed the graph: ${JSON.stringify(after)}`);
      const reason = ed.getRunDisableReason();
      entry = reason ? { loader: "refused", reason: `editor run preflight (getRunDisableReason): ${reason}` } : { loader: "accepted" };
      notes.push("loads: server validateGraph ok, editor isValidGraphInput ok");
      llmCalls = 0;
      const run = await call(postRun, { graph: JSON.parse(JSON.stringify(after)) });
      if (run.status !== 200) notes.push(`POST /api/run ${run.status}: ${JSON.stringify(run.body)}`);
      else {
        const errs = (run.body.logs ?? []).filter((l) => l.type === "error" || l.type === "warn").map((l) => `${l.type} ${l.nodeId}: ${l.content}`);
        notes.push(`POST /api/run with a stub LLM: status ${run.body.status}${errs.length ? ` (${errs.join("; ")})` : ""}`);
      }
    }
  }
  if (notes.length) entry.note = notes.join(" || ");
  out[f] = entry;
}
fs.writeFileSync(path.join(CORPUS, "expected.json"), JSON.stringify(out, null, 2) + "\n");
const acc = Object.values(out).filter((e) => e.loader === "accepted").length;
console.error(`${files.length} files: ${acc} accepted, ${files.length - acc} refused`);
fs.rmSync(TMP, { recursive: true, force: true });
