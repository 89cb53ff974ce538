// Where a run's answers come from belongs to the workflow they were chosen for: History → Open, Resume, New and Open
// bring the run source of the workflow they show, never the answers file of the one shown before. Real pointer
// gestures on the real app; the runs to open are made by the command line in the app's run store.
import { before, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { click, pointOf } from "./gestures.mjs";
import { appForFile, root, waitMessage, waitStatus, work } from "./harness.mjs";

const cli = join(root, "target/debug/switchyard");

let browser;
appForFile((b) => (browser = b));

/** A run of `file` by the command line, in the app's run store (the environment names the same store); its id. */
function cliRun(file, answers) {
  execFileSync(cli, ["run", file, ...(answers ? ["--answers", answers] : []), "--json"], { cwd: root, stdio: "ignore" });
  const runs = JSON.parse(execFileSync(cli, ["runs", "--json"], { cwd: root, encoding: "utf8" }));
  const id = runs.find((r) => r.workflow === file)?.id;
  assert.ok(id, `the command line's run of ${file} is in the store (${JSON.stringify(runs)})`);
  return id;
}

/** What the toolbar's run source control says: the answers file's name, or the model's. */
async function runSource() {
  return browser.execute(() => {
    const answers = document.querySelector('[data-testid="answers-path"]');
    const model = document.querySelector('[data-testid="run-model"]');
    return answers ? `answers: ${answers.textContent}` : model ? `model: ${model.textContent}` : "nothing";
  });
}

async function waitSource(pattern, what) {
  let seen = "";
  await browser
    .waitUntil(async () => pattern.test((seen = await runSource())), { timeout: 5000 })
    .catch(() => assert.fail(`${what}: the run source reads "${seen}"`));
}

/** Shows History with every workflow's runs (it lists the open workflow's own unless asked). */
async function openHistory() {
  await click(browser, await pointOf(browser, '[data-testid="tab-history"]'));
  await (await browser.$('[data-testid="history"]')).waitForDisplayed({ timeout: 5000 });
  const every = '[data-testid="history"] input[type="checkbox"]'; // "Show every workflow's runs"
  const all = await browser.$(every);
  if (!(await all.isSelected()) && (await all.isEnabled())) await click(browser, await pointOf(browser, every));
}

let fixLoop; // a workflow with its own answers file beside it, run once
let paused; // a run of a workflow with no answers file beside it, paused at its approval
let solo; // a run of a workflow that ran on no answers file, with none beside it

before(() => {
  // review-fix-loop, with its answers file beside it under the name the app looks for.
  const loop = join(work, "fixloop.yaml");
  copyFileSync(join(root, "examples/review-fix-loop.yaml"), loop);
  copyFileSync(join(root, "examples/review-fix-loop.script.yaml"), join(work, "fixloop.script.yaml"));
  fixLoop = cliRun(loop, join(work, "fixloop.script.yaml"));
  // approval-flow under another name, with no answers file beside it: run on answers kept elsewhere, it pauses at
  // its approval.
  const pausing = join(work, "pausing.yaml");
  copyFileSync(join(root, "examples/approval-flow.yaml"), pausing);
  mkdirSync(join(work, "answers"), { recursive: true });
  copyFileSync(join(root, "examples/approval-flow.script.yaml"), join(work, "answers/pausing-answers.yaml"));
  paused = cliRun(pausing, join(work, "answers/pausing-answers.yaml"));
  // A workflow with no agent runs with no answers file and no model.
  const alone = join(work, "solo.yaml");
  writeFileSync(alone, "switchyard: 1\nname: Just a start\nnodes:\n  - {id: start, type: start, initial_input: hello}\nedges: []\n");
  solo = cliRun(alone, null);
});


/** Where a History row's button is, once the table is scrolled to it as a person scrolls to a row below the fold. */
async function rowButton(selector) {
  await browser.execute((sel) => document.querySelector(sel)?.scrollIntoView({ block: "nearest" }), selector);
  return pointOf(browser, selector);
}

test("History → Resume of another workflow's run goes on with that run's answers file, not the open workflow's", async () => {
  await waitSource(/answers: approval-flow\.script\.yaml/, "the example opens with the answers file beside it");
  await openHistory();
  await click(browser, await rowButton(`[data-testid="history-resume-${paused}"]`));
  await waitMessage(browser, new RegExp(`Continued run ${paused.slice(0, 8)}`));
  // The resumed run waits for its approval: the dialog asking for it is put off for later.
  const later = await browser.$('[data-testid="approval-later"]');
  if (await later.waitForDisplayed({ timeout: 3000 }).then(() => true, () => false)) await click(browser, await pointOf(browser, '[data-testid="approval-later"]'));
  await waitSource(/answers: pausing-answers\.yaml/, "the resumed run's workflow runs on the answers file that run ran on");
});

test("History → Open of another workflow's run selects that workflow's answers, and Run runs on them", async () => {
  await openHistory();
  await click(browser, await rowButton(`[data-testid="history-open-${fixLoop}"]`));
  await waitMessage(browser, new RegExp(`Run ${fixLoop.slice(0, 8)}`));
  await waitSource(/answers: fixloop\.script\.yaml/, "the opened run's workflow runs on its own answers file");

  await browser.waitUntil(async () => (await browser.$('[data-testid="run"]')).isEnabled(), { timeout: 8000, timeoutMsg: "Run stays disabled" });
  await click(browser, await pointOf(browser, '[data-testid="run"]'));
  await waitStatus(browser, "done", "succeeded", 20000);
  const row = await (await browser.$('[data-testid="run-row-done-1"]')).getText();
  assert.match(row, /Signup form validates/, `the last agent answered from fixloop's answers: ${row}`);
});

test("History → Open of a run that used no answers file runs on a model, not on the answers of the workflow before", async () => {
  await waitSource(/answers: fixloop\.script\.yaml/, "fixloop's answers are in use");
  await openHistory();
  await click(browser, await rowButton(`[data-testid="history-open-${solo}"]`));
  await waitMessage(browser, new RegExp(`Run ${solo.slice(0, 8)}`));
  await waitSource(/^model: /, "the opened run's workflow has no answers file");
});

test("New, then Open of the example, each bring their own run source", async () => {
  await browser.execute(() => (window.__switchyardDialog = { discard: true }));
  await click(browser, await pointOf(browser, '[data-testid="new"]'));
  await waitSource(/^model: /, "a new workflow runs on a model");
  await browser.execute((p) => (window.__switchyardDialog = { open: p, discard: true }), join(root, "examples/approval-flow.yaml"));
  await click(browser, await pointOf(browser, '[data-testid="open"]'));
  await waitSource(/answers: approval-flow\.script\.yaml/, "the example runs on the answers file beside it");
  await browser.execute(() => delete window.__switchyardDialog);
});
