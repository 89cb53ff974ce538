#!/usr/bin/env node
// Reproduce crates/engine/tests/corpus/openexpertise/expected.json.
//
// Runs OpenExpertise's own loader over every workflow file of the corpus and records whether it
// accepts the file or refuses it (first line of the error message). The call is exactly what
// `oe validate <file>` does (packages/cli/src/commands/validate.ts):
//
//     const spec = parseExperienceYaml(source)   // @openexpertise/schema, packages/schema/src/parser.ts
//     validateExperienceSpec(spec)               // @openexpertise/schema, packages/schema/src/validator.ts
//
// Nothing runs (no node, no LLM, no subprocess). OpenExpertise is not on the npm registry
// (`npm view @openexpertise/schema` → 404), so the module comes from a local build of the
// repository: a checkout of github.com/xingchengxu/OpenExpertise with `pnpm install && pnpm -r build`,
// then point --schema at packages/schema/dist/index.js. Any module exporting the two functions
// above (and, optionally, `buildDag(spec)` — @openexpertise/core — to note cycles `oe run` would
// refuse) works.
//
// Usage:
//   node scripts/corpus/openexpertise_expected.mjs \
//     --schema <path>/packages/schema/dist/index.js \
//     [--core <path>/packages/core/dist/index.js] \
//     [--dir crates/engine/tests/corpus/openexpertise] [--check]
//
// --check compares with the existing expected.json instead of writing it (exit 1 on a difference).
// Notes per file (why a file is what it is, which test it came from) live in NOTES below.

import { readFileSync, writeFileSync, readdirSync, statSync } from 'node:fs'
import { join, relative, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'

const argv = process.argv.slice(2)
const opt = (name, dflt) => {
  const i = argv.indexOf(name)
  return i >= 0 ? argv[i + 1] : dflt
}
const schemaPath = opt('--schema')
if (!schemaPath) {
  console.error('usage: openexpertise_expected.mjs --schema <packages/schema/dist/index.js> [--core <packages/core/dist/index.js>] [--dir <corpus dir>] [--check]')
  process.exit(2)
}
const dir = resolve(opt('--dir', 'crates/engine/tests/corpus/openexpertise'))
const check = argv.includes('--check')

const schemaMod = await import(pathToFileURL(resolve(schemaPath)).href)
const { parseExperienceYaml, validateExperienceSpec } = schemaMod
let buildDag = schemaMod.buildDag
const corePath = opt('--core')
if (corePath) buildDag = (await import(pathToFileURL(resolve(corePath)).href)).buildDag

const T = 'tests-extracted/'
const NOTES = {
  'packages/cli/templates/agent/experience.yaml':
    'raw `oe init` template: `name: {{NAME}}` is a YAML flow mapping until init.ts substitutes the name; the scaffolded file validates',
  'packages/cli/templates/cli-agent/experience.yaml':
    'raw `oe init` template: `name: {{NAME}}` is a YAML flow mapping until init.ts substitutes the name; the scaffolded file validates',
  'packages/cli/templates/full-pipeline/experience.yaml':
    'raw `oe init` template: `name: {{NAME}}` is a YAML flow mapping until init.ts substitutes the name; the scaffolded file validates',
  'packages/cli/templates/tool-only/experience.yaml':
    'raw `oe init` template: `name: {{NAME}}` is a YAML flow mapping until init.ts substitutes the name; the scaffolded file validates',
  'examples/cli-orchestration/experience.yaml':
    'version at 521ac43 (summarize reads [topic]); a later version, not in the stored index, replaces that with args: {topic: ...} as tri-cli-orchestration does',
  'examples/tri-cli-orchestration/experience.yaml': '`args` on a cli-agent node: not in the cli-agent schema variant, accepted because node variants allow extra keys',
  'examples/issue-triage/experience.yaml': 'when: length($.similar_issues) > 0 (evaluated at run time, not by the validator)',
  'examples/review-branch/experience.yaml': 'when: length($.findings) > 0 (evaluated at run time, not by the validator)',
  'packages/skill-experience-creator/assets/templates/pipeline.yaml': 'graph.pipelines; stage_a/stage_b also run in the main DAG pass',
  [T + 'validator.test/accepts-minimal-valid-spec.yaml']: 'packages/schema/tests/validator.test.ts — "accepts a minimal valid spec" (object literal rendered as YAML)',
  [T + 'validator.test/rejects-missing-name.yaml']: 'packages/schema/tests/validator.test.ts — "rejects spec missing required fields" (name: undefined)',
  [T + 'validator.test/rejects-unknown-node-kind.yaml']: 'packages/schema/tests/validator.test.ts — "rejects unknown node kind" (kind: weird fails every variant\'s `kind` const)',
  [T + 'validator.test/rejects-edge-to-nonexistent-node.yaml']: 'packages/schema/tests/validator.test.ts — "rejects edge referencing nonexistent node"',
  [T + 'validator.test/rejects-undeclared-writes.yaml']: 'packages/schema/tests/validator.test.ts — "rejects writes referencing undeclared state field"',
  [T + 'validator.test/rejects-undeclared-reads.yaml']: 'packages/schema/tests/validator.test.ts — "rejects reads referencing undeclared state field"',
  [T + 'validator.test/rejects-duplicate-node-ids.yaml']: 'packages/schema/tests/validator.test.ts — "rejects duplicate node ids"',
  [T + 'validator.test/cli-agent-minimal.yaml']: 'packages/schema/tests/validator.test.ts — cli-agent node kind: "accepts a minimal cli-agent node"',
  [T + 'validator.test/cli-agent-provider-codex.yaml']: 'packages/schema/tests/validator.test.ts — cli-agent node kind: "accepts all three providers" (codex)',
  [T + 'validator.test/cli-agent-provider-gemini.yaml']: 'packages/schema/tests/validator.test.ts — cli-agent node kind: "accepts all three providers" (gemini)',
  [T + 'validator.test/cli-agent-unknown-provider.yaml']: 'packages/schema/tests/validator.test.ts — cli-agent node kind: "rejects unknown provider" (cli-agent variant: /graph/nodes/0/provider: must be equal to one of the allowed values)',
  [T + 'validator.test/cli-agent-missing-prompt.yaml']: 'packages/schema/tests/validator.test.ts — cli-agent node kind: "rejects missing prompt" (cli-agent variant: must have required property \'prompt\')',
  [T + 'validator.test/cli-agent-optional-fields.yaml']: 'packages/schema/tests/validator.test.ts — cli-agent node kind: "accepts optional fields (workdir, output_format, timeout_ms, extra_args, model, schema)"',
  [T + 'error-messages.test/edge-to-typo-node.yaml']: 'packages/schema/tests/error-messages.test.ts — "names the missing destination node"',
  [T + 'parser.test/minimal-valid.yaml']: 'packages/schema/tests/parser.test.ts — "parses a minimal valid experience"',
  [T + 'parser.test/yaml-syntax-error.yaml']: 'packages/schema/tests/parser.test.ts — "surfaces YAML syntax errors with line numbers" (not a whole workflow)',
  [T + 'preflight.test/clean.yaml']: 'packages/authoring/tests/preflight.test.ts — CLEAN draft ("returns ok:true for a clean, fully-referenced draft")',
  [T + 'preflight.test/undeclared-writes.yaml']: 'packages/authoring/tests/preflight.test.ts — "flags an undeclared writes field via validateExperienceSpec"',
  [T + 'preflight.test/dangling-edge.yaml']: 'packages/authoring/tests/preflight.test.ts — "flags a dangling edge via buildDag" (the validator refuses it first)',
  [T + 'preflight.test/malformed-yaml.yaml']: 'packages/authoring/tests/preflight.test.ts — "returns ok:false with a parse-error issue for malformed YAML"',
  [T + 'authoring.ultra.test/hello-author.yaml']: 'packages/authoring/tests/ultra.test.ts — SYNTHESIS.experience_yaml',
  [T + 'authoring.ultra.test/missing-version-state-graph.yaml']: 'packages/authoring/tests/ultra.test.ts — "reports validation errors but still writes the draft"',
  [T + 'ultraexpertise.e2e.test/authored-draft.yaml']: 'e2e/ultraexpertise.e2e.test.ts — "authored draft is structurally valid and runnable"',
  [T + 'ultraexpertise.e2e.test/invalid-round0-undeclared-writes.yaml']: 'e2e/ultraexpertise.e2e.test.ts — "loop auto-fix end-to-end produces a runnable corrected draft" (INVALID_SYNTH)',
  [T + 'cli.test/valid-experience.yaml']: 'packages/cli/tests/cli.test.ts — "exits 0 on valid experience" (oe validate)',
  [T + 'graph.test/demo.yaml']: 'packages/cli/tests/graph.test.ts — YAML fixture of graphCommand tests',
  [T + 'inspect.test/html-report.yaml']: 'packages/cli/tests/inspect.test.ts — "renders a self-contained HTML run report with --html and writes to --out"',
  [T + 'submit.test/my-flow.yaml']: "packages/cli/tests/submit.test.ts — setupExperience() with its defaults ('my-flow', 'A test flow')",
  [T + 'evolve.test/inc-count.yaml']: 'packages/cli/tests/evolve.test.ts — EXPERIENCE_YAML (same text in e2e/evolution.e2e.test.ts)',
  [T + 'cli.ultra.test/weekly-digest-synthesis.yaml']: 'packages/cli/tests/ultra.test.ts — SYNTHESIS.experience_yaml',
  [T + 'cli.ultra.test/weekly-digest-run-draft.yaml']: 'packages/cli/tests/ultra.test.ts — "ultraCommand — --run smoke test" draft',
  [T + 'server.test/oe-validate-valid.yaml']: 'packages/mcp-server/tests/server.test.ts — "oe_validate accepts a well-formed experience and reports valid"',
  [T + 'server.test/oe-validate-missing-graph.yaml']: 'packages/mcp-server/tests/server.test.ts — "oe_validate reports errors when experience is malformed"',
  [T + 'server.test/oe-state-flow-graph.yaml']: 'packages/mcp-server/tests/server.test.ts — "oe_state returns \\"no state yet\\"…" (same text in the oe_evolve test)',
  [T + 'experience.test/child.yaml']: 'packages/node-kinds-experience/tests/experience.test.ts — child/experience.yaml of the nested-experience tests',
  [T + 'multi-kind.e2e.test/mk.yaml']: 'e2e/multi-kind.e2e.test.ts — "runs dataset → tool → agent in sequence"',
  [T + 'cache-resume.e2e.test/agent-cached.yaml']: 'e2e/cache-resume.e2e.test.ts — "second run replays from cache without invoking the LLM"',
  [T + 'cli-agent.e2e.test/two-cli-agents.yaml']: 'e2e/cli-agent.e2e.test.ts — "runs two cli-agent nodes in sequence, state flows between them"',
}

function walk(root) {
  const out = []
  for (const e of readdirSync(root)) {
    const p = join(root, e)
    if (statSync(p).isDirectory()) out.push(...walk(p))
    else if (/\.ya?ml$/.test(e)) out.push(p)
  }
  return out
}

const filesDir = join(dir, 'files')
const result = {}
for (const path of walk(filesDir).sort()) {
  const rel = relative(filesDir, path).split('\\').join('/')
  let entry
  try {
    const spec = parseExperienceYaml(readFileSync(path, 'utf8'))
    validateExperienceSpec(spec)
    entry = { loader: 'accepted' }
    if (buildDag) {
      try {
        buildDag(spec)
      } catch (err) {
        entry.note = `oe run would refuse it: ${String(err.message).split('\n')[0]}`
      }
    }
  } catch (err) {
    const lines = String(err.message).split('\n')
    // "Schema validation failed:" alone says nothing: keep one ajv message with it — the oneOf
    // summary when a node matches no kind variant (ajv lists every variant's complaint before it),
    // else the first.
    const oneOf = lines.slice(1).find((l) => l.endsWith('must match exactly one schema in oneOf'))
    const reason = lines[0].endsWith(':') && lines[1] ? `${lines[0]} ${oneOf ?? lines[1]}` : lines[0]
    entry = { loader: 'refused', reason: `${err.name}: ${reason}` }
  }
  if (NOTES[rel]) entry.note = entry.note ? `${NOTES[rel]}; ${entry.note}` : NOTES[rel]
  result[rel] = entry
}

const text = JSON.stringify(result, null, 2) + '\n'
const out = join(dir, 'expected.json')
if (check) {
  const old = readFileSync(out, 'utf8')
  if (old !== text) {
    console.error('expected.json differs from what the loader says now')
    process.exit(1)
  }
  console.log(`expected.json agrees (${Object.keys(result).length} files)`)
} else {
  writeFileSync(out, text)
  const refused = Object.values(result).filter((e) => e.loader === 'refused').length
  console.log(`${Object.keys(result).length} files, ${refused} refused → ${out}`)
}
