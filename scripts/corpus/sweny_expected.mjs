#!/usr/bin/env node
// Reproduce crates/engine/tests/corpus/sweny/{files,expected.json} and the case table of its SOURCE.md.
//
// What it does
// ------------
// 1. extract: copies SWEny's own workflow files (examples/, packages/*/src/workflows/, packages/core/sweny-publish/,
//    and any other tracked .yml/.yaml/.json whose top level has `nodes`, `entry` or `edges`) into files/ keeping
//    repository paths; writes the starter templates embedded in packages/core/src/cli/templates.ts
//    (WORKFLOW_TEMPLATES[].yaml) to files/embedded/cli-templates/<id>.yml; then runs SWEny's own vitest suite
//    (packages/core, minus integration tests and src/cli/publish.test.ts, which mocks the schema module) with a
//    recording setup file that wraps every validator entry point a test can call — parseWorkflow, validateWorkflow,
//    workflowZ.parse/safeParse, loadAndValidateWorkflow, validateParsed, validateWorkflowFile, and spawns of
//    `sweny workflow validate <file>` — and logs the argument and the test's name. Each distinct argument that is a
//    whole workflow (an object with `nodes` and at least two of id/name/entry/edges), or each file a test wrote and
//    handed to a file-level validator (verbatim, whatever it contains), becomes
//    files/tests-extracted/<test-file-stem>/<slug>.(yml|json). Object cases are written as YAML with a header
//    comment naming the test. A few cases from packages/mcp tests (which parse workflow files via the built package)
//    are added by hand (MANUAL below).
// 2. expect: runs SWEny's loader on every file in files/ and writes expected.json. The call is exactly what
//    `sweny workflow validate <file>` does (packages/core/src/cli/main.ts workflowValidateAction):
//        loadAndValidateWorkflow(file)            // packages/core/src/loader.ts, no knownSkills
//    = read file; .yml/.yaml -> yaml.parse, anything else -> JSON.parse; preflightLegacyVerify; workflowZ.parse
//    (Zod); validateWorkflow(parsed) (structural). Refusal reason = "<code>: <first line of first message>".
//    A note adds: the other error codes if several; what the test itself called and got; and whether
//    `sweny workflow run` would still refuse the file for UNKNOWN_SKILL even with all eight built-in skills known
//    (run passes the discovered skill ids as knownSkills; validate passes none).
//    With --cli it also spawns `node packages/core/dist/cli/main.js workflow validate <file> --json` for every file
//    and fails if the CLI's verdict differs from the function's.
//
// Usage
// -----
//    git -C /work/.mirror/swenyai+sweny/repo archive d9f39959471f823f6febf1ee31f20d5ccd329081 | tar -x -C /tmp/sw
//    (cd /tmp/sw && npm ci --ignore-scripts && cd packages/core && npm run build)      # node >= 20
//    node scripts/corpus/sweny_expected.mjs --src /tmp/sw [--cli]          # extract + expect
//    node scripts/corpus/sweny_expected.mjs --src /tmp/sw --expect-only    # re-run the loader on files/ only
//
// It writes only under crates/engine/tests/corpus/sweny/ (files/ is emptied first unless --expect-only) and, while
// extracting, a recorder (.corpus-record/, vitest.corpus-record.config.ts) inside the --src tree.
// Not run by the test suite.

import * as fs from "node:fs";
import * as path from "node:path";
import { spawnSync } from "node:child_process";
import { createRequire } from "node:module";
import { pathToFileURL, fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const CORPUS = path.resolve(here, "../../crates/engine/tests/corpus/sweny");
const FILES = path.join(CORPUS, "files");

const args = process.argv.slice(2);
const opt = (name) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const SRC = path.resolve(opt("--src") ?? "/tmp/sw");
const CORE = path.join(SRC, "packages/core");
const EXPECT_ONLY = args.includes("--expect-only");
const USE_CLI = args.includes("--cli");

const require = createRequire(path.join(CORE, "package.json"));
const YAML = require("yaml");
const dist = (p) => import(pathToFileURL(path.join(CORE, "dist", p)).href);

// ── helpers ─────────────────────────────────────────────────────────────
const isObj = (x) => x !== null && typeof x === "object" && !Array.isArray(x);
function canon(x) {
  if (Array.isArray(x)) return x.map(canon);
  if (isObj(x)) return Object.fromEntries(Object.keys(x).sort().map((k) => [k, canon(x[k])]));
  return x;
}
const key = (x) => JSON.stringify(canon(x));
const slugify = (s) =>
  s.toLowerCase().replace(/\[\]/g, "-array").replace(/[^a-z0-9]+/g, "-").replace(/^-+|-+$/g, "").slice(0, 70).replace(/-+$/, "") || "case";
const rel = (p) => path.relative(SRC, p);
function walk(dir, out = []) {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    if (["node_modules", "dist", ".git", ".corpus-record"].includes(e.name)) continue;
    const p = path.join(dir, e.name);
    if (e.isDirectory()) walk(p, out);
    else out.push(p);
  }
  return out;
}
function writeFile(relPath, content) {
  const p = path.join(FILES, relPath);
  fs.mkdirSync(path.dirname(p), { recursive: true });
  fs.writeFileSync(p, content);
}
function isWholeWorkflow(raw) {
  if (!isObj(raw) || !("nodes" in raw)) return false;
  return ["id", "name", "entry", "edges"].filter((k) => k in raw).length >= 2;
}

// Cases from packages/mcp tests, which read workflow files through the built @sweny-ai/core
// (handlers/list-workflows.ts: parseWorkflow(parseYaml(content))); copied by hand.
const MCP_CUSTOM_WORKFLOW_YAML = `
id: my-custom
name: My Custom Workflow
description: A test custom workflow
entry: start
nodes:
  start:
    name: Start
    instruction: Do the thing
    skills: []
  finish:
    name: Finish
    instruction: Wrap up
    skills: []
edges:
  - from: start
    to: finish
`;
const MANUAL = [
  {
    testFile: "packages/mcp/src/__tests__/list-workflows.test.ts",
    testName: "listWorkflows > finds custom workflows in .sweny/workflows/ (also resolveCustomWorkflowFile tests)",
    ext: ".yml",
    content: MCP_CUSTOM_WORKFLOW_YAML,
    call: "listWorkflows → listed as custom, runnable",
  },
  {
    testFile: "packages/mcp/src/__tests__/list-workflows.test.ts",
    testName: "listWorkflows > skips invalid workflow files without crashing",
    ext: ".yml",
    content: "this is not valid workflow yaml",
    call: "listWorkflows → file skipped (parseWorkflow throws)",
  },
  {
    testFile: "packages/mcp/src/__tests__/run-workflow.test.ts",
    testName: "runWorkflow custom workflows (file-run path) > (fixture custom.yml written by freshProject)",
    ext: ".yml",
    content: [
      "id: my-custom",
      "name: My Custom Workflow",
      "description: A test custom workflow",
      "entry: start",
      "nodes:",
      "  start:",
      "    name: Start",
      "    instruction: Do the thing",
      "    skills: []",
      "edges: []",
    ].join("\n"),
    call: "runWorkflow resolves and spawns it",
  },
];

// ── the recorder (vitest setup file written into the SWEny tree) ────────
function recorderSource(out) {
  const s = (p) => JSON.stringify(path.join(CORE, p));
  return `// Written by switchyard scripts/corpus/sweny_expected.mjs — records validator calls made by tests.
import { vi, expect } from "vitest";
import * as fs from "node:fs";
import * as path from "node:path";
const OUT = ${JSON.stringify(out)};
const g = globalThis as any;
g.__recDepth = g.__recDepth ?? 0;
function clone(x: unknown): unknown {
  try { return JSON.parse(JSON.stringify(x, (_k, v) => (v instanceof Set ? [...v] : v))); }
  catch { return { __unclonable: String(x) }; }
}
function write(entry: Record<string, unknown>) {
  let testName, testPath;
  try { const st = expect.getState(); testName = st.currentTestName; testPath = st.testPath; } catch {}
  fs.appendFileSync(OUT, JSON.stringify({ ...entry, testName, testPath }) + "\\n");
}
function summarize(fn: string, r: any) {
  if (fn === "validateWorkflow") return { errors: (r ?? []).map((e: any) => e.code) };
  if (fn === "workflowZ.safeParse") return { success: r?.success, issues: r?.success ? undefined : r?.error?.issues?.map((i: any) => i.path.join(".") + ": " + i.message) };
  if (fn === "loadAndValidateWorkflow" || fn === "validateParsed") return { ok: r?.ok, errors: r?.ok ? undefined : r?.errors?.map((e: any) => e.code ?? e.message) };
  if (fn === "validateWorkflowFile") return { valid: r?.valid, errors: r?.errors };
  return { ok: true };
}
function wrap(fnName: string, fn: (...a: any[]) => any, argMap: (a: any[]) => Record<string, unknown>) {
  return (...a: any[]) => {
    const rec = g.__recDepth === 0 ? argMap(a) : null;
    g.__recDepth++;
    try {
      const r = fn(...a);
      if (rec) write({ fn: fnName, ...rec, outcome: summarize(fnName, r) });
      return r;
    } catch (e) {
      if (rec) write({ fn: fnName, ...rec, outcome: { threw: String((e as Error)?.message ?? e).slice(0, 400) } });
      throw e;
    } finally { g.__recDepth--; }
  };
}
const fileArg = (f: string) => { let content = null; try { content = fs.readFileSync(f, "utf-8"); } catch {} return { file: f, ext: path.extname(f), content }; };
vi.mock(${s("src/schema.ts")}, async (importOriginal) => {
  const mod: any = await importOriginal();
  const z = mod.workflowZ;
  if (!z.__rec) {
    const p = z.parse.bind(z), sp = z.safeParse.bind(z);
    z.parse = wrap("workflowZ.parse", p, (a) => ({ raw: clone(a[0]) }));
    z.safeParse = wrap("workflowZ.safeParse", sp, (a) => ({ raw: clone(a[0]) }));
    z.__rec = true;
  }
  return { ...mod,
    parseWorkflow: wrap("parseWorkflow", mod.parseWorkflow, (a) => ({ raw: clone(a[0]) })),
    validateWorkflow: wrap("validateWorkflow", mod.validateWorkflow, (a) => ({ raw: clone(a[0]), knownSkills: a[1] ? [...a[1]] : null })) };
});
vi.mock(${s("src/loader.ts")}, async (importOriginal) => {
  const mod: any = await importOriginal();
  return { ...mod,
    loadAndValidateWorkflow: wrap("loadAndValidateWorkflow", mod.loadAndValidateWorkflow, (a) => ({ ...fileArg(a[0]), knownSkills: a[1]?.knownSkills ? [...a[1].knownSkills] : null })),
    validateParsed: wrap("validateParsed", mod.validateParsed, (a) => ({ raw: clone(a[0]), knownSkills: a[1]?.knownSkills ? [...a[1].knownSkills] : null })) };
});
vi.mock(${s("src/cli/publish.ts")}, async (importOriginal) => {
  const mod: any = await importOriginal();
  return { ...mod, validateWorkflowFile: wrap("validateWorkflowFile", mod.validateWorkflowFile, (a) => fileArg(a[0])) };
});
vi.mock("node:child_process", async (importOriginal) => {
  const mod: any = await importOriginal();
  const orig = mod.spawnSync;
  const spawnSync = (cmd: string, argv: string[] = [], o?: any) => {
    const i = Array.isArray(argv) ? argv.indexOf("validate") : -1;
    if (i > 0 && argv[i - 1] === "workflow" && argv[i + 1]) {
      const rec = fileArg(argv[i + 1]);
      const r = orig(cmd, argv, o);
      write({ fn: "cli:sweny workflow validate", ...rec, outcome: { exit: r.status } });
      return r;
    }
    return orig(cmd, argv, o);
  };
  return { ...mod, spawnSync, default: { ...(mod.default ?? mod), spawnSync } };
});
`;
}

function runRecorder() {
  const dir = path.join(CORE, ".corpus-record");
  fs.mkdirSync(dir, { recursive: true });
  const out = path.join(dir, "calls.jsonl");
  fs.rmSync(out, { force: true });
  fs.writeFileSync(path.join(dir, "setup.ts"), recorderSource(out));
  const cfg = path.join(CORE, "vitest.corpus-record.config.ts");
  fs.writeFileSync(
    cfg,
    `import { defineConfig } from "vitest/config";\nexport default defineConfig({ test: { setupFiles: [${JSON.stringify(
      path.join(dir, "setup.ts"),
    )}], fileParallelism: false } });\n`,
  );
  const r = spawnSync(
    "npx",
    ["vitest", "run", "-c", cfg, "--exclude", "src/__tests__/integration/**", "--exclude", "dist/**", "--exclude", "src/cli/publish.test.ts"],
    { cwd: CORE, encoding: "utf-8", stdio: ["ignore", "pipe", "pipe"] },
  );
  const summary = (r.stdout + r.stderr).split("\n").filter((l) => /Test Files|Tests /.test(l));
  console.error("SWEny test run (failures unrelated to validation are expected: no dist bundle check, root perms):\n" + summary.join("\n"));
  return fs.readFileSync(out, "utf-8").trim().split("\n").filter(Boolean).map((l) => JSON.parse(l));
}

// ── extract ─────────────────────────────────────────────────────────────
async function extract() {
  const { workflowZ } = await dist("schema.js");
  const { WORKFLOW_TEMPLATES } = await dist("cli/templates.js");
  fs.rmSync(FILES, { recursive: true, force: true });
  const provenance = {}; // file -> { origin, tests: [{testFile, testName, call}] }
  const seen = new Map(); // canonical object key -> file

  // Real files.
  const explicit = new Set(["examples/", "packages/core/src/workflows/", "packages/core/sweny-publish/"]);
  for (const abs of walk(SRC)) {
    const r = rel(abs);
    if (!/\.(ya?ml|json)$/.test(r) || /(^|\/)(package(-lock)?|tsconfig[^/]*)\.json$/.test(r)) continue;
    if (r.startsWith(".github/") || r.startsWith("spec/public/schemas/")) continue;
    const text = fs.readFileSync(abs, "utf-8");
    let parsed;
    try {
      parsed = /\.ya?ml$/.test(r) ? YAML.parse(text) : JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    const looks = isObj(parsed) && ["nodes", "entry", "edges"].some((k) => k in parsed);
    if (![...explicit].some((d) => r.startsWith(d)) && !looks) continue;
    writeFile(r, text);
    provenance[r] = { origin: `repository file ${r}`, tests: [] };
    if (isObj(parsed)) {
      seen.set(key(parsed), r);
      const z = workflowZ.safeParse(parsed);
      if (z.success) seen.set(key(z.data), r);
    }
  }
  // Templates embedded in code.
  for (const t of WORKFLOW_TEMPLATES) {
    const r = `embedded/cli-templates/${t.id}.yml`;
    writeFile(r, t.yaml);
    provenance[r] = { origin: `WORKFLOW_TEMPLATES["${t.id}"].yaml in packages/core/src/cli/templates.ts (sweny new starter)`, tests: [] };
    const parsed = YAML.parse(t.yaml);
    seen.set(key(parsed), r);
    const z = workflowZ.safeParse(parsed);
    if (z.success) seen.set(key(z.data), r);
  }

  // Test cases.
  const calls = runRecorder();
  const stemOf = (testPath) => {
    const r = path.relative(path.join(CORE, "src"), testPath);
    const base = path.basename(r).replace(/\.test\.ts$/, "");
    return r.includes("__tests__") ? base : `src-${r.replace(/\//g, "-").replace(/\.test\.ts$/, "")}`;
  };
  const stemFix = (s) => s.replace(/^src-cli-/, "cli-"); // colocated cli tests: cli-e2e, cli-marketplace, …
  const used = new Set();
  const skipped = { partial: 0, noTest: 0, missingFile: 0 };
  const testCalls = (c) => {
    const k = c.knownSkills ? `, knownSkills=[${c.knownSkills.join(",")}]` : "";
    const o = c.outcome;
    let res;
    if (o.threw !== undefined) res = `threw: ${o.threw.split("\n")[0].slice(0, 160)}`;
    else if (o.errors !== undefined && c.fn === "validateWorkflow") res = o.errors.length ? `[${o.errors.join(", ")}]` : "[] (no errors)";
    else if (o.success !== undefined) res = o.success ? "success" : `failure (${(o.issues ?? []).join("; ").slice(0, 160)})`;
    else if (o.ok !== undefined) res = o.ok ? "ok" : `not ok [${(o.errors ?? []).join(", ")}]`;
    else if (o.valid !== undefined) res = o.valid ? "valid" : `invalid (${(o.errors ?? []).join("; ").slice(0, 160)})`;
    else if (o.exit !== undefined) res = `exit ${o.exit}`;
    else res = "returned";
    return `${c.fn}(…${k}) → ${res}`;
  };
  // Per test, the Zod-parsed forms of the objects it passed in, so a later validateWorkflow(parsed) merges into them.
  const parsedInTest = new Map();
  const addTest = (file, c, testFile) => {
    const entry = { testFile, testName: c.testName, call: testCalls(c) };
    const list = provenance[file].tests;
    if (!list.some((t) => t.testFile === entry.testFile && t.testName === entry.testName && t.call === entry.call)) list.push(entry);
  };
  for (const c of calls) {
    if (!c.testName || !c.testPath) {
      skipped.noTest++;
      continue;
    }
    const testFile = path.relative(SRC, c.testPath);
    const stem = stemFix(stemOf(c.testPath));
    const leaf = c.testName.split(" > ").slice(-1)[0];
    let content, ext, k;
    if ("raw" in c) {
      if (!isWholeWorkflow(c.raw)) {
        skipped.partial++;
        continue;
      }
      k = key(c.raw);
      const tkey = `${testFile}::${c.testName}`;
      const prior = parsedInTest.get(tkey) ?? new Map();
      parsedInTest.set(tkey, prior);
      if (!seen.has(k) && prior.has(k)) k = prior.get(k);
      const z = workflowZ.safeParse(c.raw);
      if (z.success && !prior.has(key(z.data))) prior.set(key(z.data), k);
      if (seen.has(k)) {
        addTest(seen.get(k), c, testFile);
        continue;
      }
      ext = ".yml";
      const header = `# SWEny test case, extracted from ${testFile}\n# test: ${c.testName}\n`;
      content = header + YAML.stringify(c.raw, { lineWidth: 0 });
    } else {
      if (c.content == null) {
        skipped.missingFile++;
        continue;
      }
      content = c.content;
      ext = c.ext || ".yml";
      k = "file:" + ext + ":" + content;
      if (seen.has(k)) {
        addTest(seen.get(k), c, testFile);
        continue;
      }
    }
    let slug = slugify(leaf);
    let name = `tests-extracted/${stem}/${slug}${ext}`;
    for (let i = 2; used.has(name); i++) name = `tests-extracted/${stem}/${slug}-${i}${ext}`;
    used.add(name);
    writeFile(name, content);
    seen.set(k, name);
    provenance[name] = { origin: `test case in ${testFile}`, tests: [] };
    addTest(name, c, testFile);
  }
  for (const m of MANUAL) {
    const k = "file:" + m.ext + ":" + m.content;
    if (seen.has(k)) {
      provenance[seen.get(k)].tests.push({ testFile: m.testFile, testName: m.testName, call: m.call });
      continue;
    }
    const stem = path.basename(m.testFile).replace(/\.test\.ts$/, "");
    let name = `tests-extracted/mcp-${stem}/${slugify(m.testName.split(" > ").slice(-1)[0])}${m.ext}`;
    writeFile(name, m.content);
    seen.set(k, name);
    provenance[name] = { origin: `test fixture in ${m.testFile} (copied by hand)`, tests: [{ testFile: m.testFile, testName: m.testName, call: m.call }] };
  }
  console.error(`skipped recorded calls: ${JSON.stringify(skipped)}`);
  return provenance;
}

// ── expect ──────────────────────────────────────────────────────────────
async function expectAll(provenance) {
  const { loadAndValidateWorkflow } = await dist("loader.js");
  const { builtinSkills } = await dist("skills/index.js");
  const builtinIds = new Set(builtinSkills.map((s) => s.id));
  const prevPath = path.join(CORPUS, "expected.json");
  const prev = fs.existsSync(prevPath) ? JSON.parse(fs.readFileSync(prevPath, "utf-8")) : {};
  const files = walk(FILES).map((p) => path.relative(FILES, p)).filter((p) => /\.(ya?ml|json)$/.test(p)).sort();
  const out = {};
  const mismatches = [];
  for (const f of files) {
    const abs = path.join(FILES, f);
    const r = loadAndValidateWorkflow(abs);
    const notes = [];
    let entry;
    if (r.ok) {
      entry = { loader: "accepted" };
      const run = loadAndValidateWorkflow(abs, { knownSkills: builtinIds });
      if (!run.ok) notes.push(`sweny workflow run with only the built-in skills known would refuse: ${run.errors.map((e) => e.message).join("; ")}`);
    } else {
      const e = r.errors[0];
      const first = String(e.message).replace(abs, "<file>").split("\n")[0];
      entry = { loader: "refused", reason: e.code ? `${e.code}: ${first}` : first };
      if (r.errors.length > 1) notes.push(`${r.errors.length} errors: ${r.errors.map((x) => (x.code ? `${x.code} ${x.message.split("\n")[0]}` : x.message.split("\n")[0]).replace(abs, "<file>")).join(" | ")}`);
    }
    const p = provenance?.[f];
    if (p) {
      for (const t of p.tests) notes.push(`in ${path.basename(t.testFile)} "${t.testName}": ${t.call}`);
    } else if (prev[f]?.note) notes.push(prev[f].note);
    if (notes.length) entry.note = notes.join(" || ");
    out[f] = entry;
    if (USE_CLI) {
      const c = spawnSync("node", [path.join(CORE, "dist/cli/main.js"), "workflow", "validate", abs, "--json"], { encoding: "utf-8" });
      let valid;
      try {
        valid = JSON.parse(c.stdout).valid;
      } catch {
        valid = `unparseable (${c.status})`;
      }
      if (valid !== r.ok) mismatches.push(`${f}: function ok=${r.ok}, CLI valid=${valid}`);
    }
  }
  fs.writeFileSync(prevPath, JSON.stringify(out, null, 2) + "\n");
  const acc = Object.values(out).filter((e) => e.loader === "accepted").length;
  console.error(`${files.length} files: ${acc} accepted, ${files.length - acc} refused`);
  if (USE_CLI) console.error(mismatches.length ? `CLI MISMATCHES:\n${mismatches.join("\n")}` : "CLI cross-check: all agree");
  return out;
}

// ── SOURCE.md case table ────────────────────────────────────────────────
function writeCaseTable(provenance, expected) {
  const p = path.join(CORPUS, "SOURCE.md");
  if (!fs.existsSync(p) || !provenance) return;
  const md = fs.readFileSync(p, "utf-8");
  const rows = Object.keys(expected).map((f) => {
    const e = expected[f];
    const v = e.loader === "accepted" ? "accepted" : `refused — ${e.reason}`;
    const pr = provenance[f];
    const tests = pr.tests.map((t) => `\`${t.testFile}\` › ${t.testName}`).join("<br>");
    return `| \`${f}\` | ${v.replace(/\|/g, "\\|")} | ${pr.origin}${tests ? "<br>" + tests.replace(/\|/g, "\\|") : ""} |`;
  });
  const table = ["| file | SWEny loader | from |", "|---|---|---|", ...rows].join("\n");
  const next = md.replace(/<!-- cases:begin -->[\s\S]*<!-- cases:end -->/, `<!-- cases:begin -->\n${table}\n<!-- cases:end -->`);
  fs.writeFileSync(p, next);
}

const provenance = EXPECT_ONLY ? null : await extract();
const expected = await expectAll(provenance);
writeCaseTable(provenance, expected);
