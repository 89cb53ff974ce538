// The Evals tab on the real app: a copy of review-fix-loop with its evaluation file is opened, Run all passes every
// case; then the loop's limit is lowered in the inspector (real keys) and saved, so the case that loops until the limit
// regresses — its `fix` ran twice, not three times. Run all again shows the regression; selecting the case shows the
// compare view: `fix` coloured regressed on the canvas, its two outputs side by side with the difference marked.
// The cases' answers stand in for every model: nothing here needs a model server.
import { test } from "node:test";
import assert from "node:assert/strict";
import { copyFileSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { chord, click, drag, KEY, pointOf, type } from "./gestures.mjs";
import { appForFile, fit, frames, graph, messages, nodeSel, openFile, root, shotPath, waitMessage, work } from "./harness.mjs";

let browser;
appForFile((b) => (browser = b));

const CASES = ["two-failed-reviews-are-fixed-then-done", "a-clean-first-review-skips-the-fix", "a-review-that-never-passes-stops-after-three-fixes"];
const LOOPING = CASES[2];
const row = (id) => `[data-testid="eval-case-${id}"]`;
const attr = async (selector, name) => (await browser.$(selector)).getAttribute(name);

async function waitVerdicts(wanted, timeout = 30000) {
  await browser.waitUntil(async () => (await Promise.all(CASES.map((id) => attr(row(id), "data-verdict")))).every((v, i) => v === wanted[i]), {
    timeout,
    timeoutMsg: `the cases did not end as ${JSON.stringify(wanted)} (are ${JSON.stringify(await Promise.all(CASES.map((id) => attr(row(id), "data-verdict"))))})`,
  });
}

/** A picture for the docs, once the messages have faded (they would cover the canvas's right side). */
async function picture(name) {
  await browser.waitUntil(async () => (await messages(browser)).length === 0, { timeout: 10000, timeoutMsg: "the messages stayed" });
  await browser.pause(300);
  await browser.saveScreenshot(shotPath(name));
}

/** The bottom panel, taller (its separator dragged up), so the cases and the compare view show whole. */
async function tallerBottomPanel(px) {
  const panel = () => browser.execute(() => document.querySelector(".bottom-panel").getBoundingClientRect().height);
  const before = await panel();
  const from = await pointOf(browser, ".resize-handle.horizontal");
  await drag(browser, from, { x: from.x, y: from.y - px });
  await frames(browser);
  assert.ok((await panel()) > before + px / 2, `dragging the separator up made the bottom panel taller (${before} → ${await panel()})`);
}

test("Evals tab: Run all passes, a saved edit regresses a case, and the compare view shows what changed", async () => {
  for (const name of ["review-fix-loop.yaml", "review-fix-loop.script.yaml", "review-fix-loop.evals.yaml"]) copyFileSync(join(root, "examples", name), join(work, name));
  const workflow = join(work, "review-fix-loop.yaml");
  await openFile(browser, workflow);
  await fit(browser);

  // The tab lists the cases of review-fix-loop.evals.yaml, none run yet.
  await click(browser, await pointOf(browser, '[data-testid="tab-evals"]'));
  await (await browser.$(row(LOOPING))).waitForDisplayed({ timeout: 10000 });
  await tallerBottomPanel(120);
  await fit(browser);
  for (const id of CASES) assert.match(await (await browser.$(row(id))).getText(), /not run yet/);
  assert.match(await (await browser.$(row(LOOPING))).getText(), /a-review-that-never-passes-stops-after-three-fixes/);

  // Run all: every case passes; no comparison yet (nothing was evaluated before).
  await click(browser, await pointOf(browser, '[data-testid="eval-run-all"]'));
  await waitVerdicts(["passed", "passed", "passed"]);
  await waitMessage(browser, /3 test cases: 3 of 3 passed/);
  assert.equal(await (await browser.$('[data-testid="eval-summary"]')).isExisting(), false, "no comparison on the first evaluation");
  await browser.saveScreenshot(shotPath("evals-tab-all-passed"));

  // Lower the loop's limit from 3 to 2 in the inspector, with the keyboard, and save.
  await click(browser, await pointOf(browser, '[data-testid="edge-label-review->fix"]'));
  await browser.waitUntil(async () => (await graph(browser)).selectedEdges.join() === "review->fix", { timeout: 3000, timeoutMsg: "clicking the label chip did not select the loop's edge" });
  await click(browser, await pointOf(browser, '[data-testid="inspector-max-iterations"]'));
  await chord(browser, [KEY.control, "a"]);
  await type(browser, "2");
  await chord(browser, [KEY.tab]); // commits the field
  await chord(browser, [KEY.control, "s"]);
  await browser.waitUntil(() => /max_iterations: 2/.test(readFileSync(workflow, "utf8")), { timeout: 5000, timeoutMsg: "the limit of 2 was not saved" });
  await chord(browser, [KEY.escape]);
  await chord(browser, [KEY.escape]); // the selection cleared: the inspector closes
  await browser.waitUntil(async () => (await graph(browser)).selectedEdges.length === 0, { timeout: 3000, timeoutMsg: "Escape did not clear the selection" });
  await fit(browser);

  // Run all again: the looping case regresses (fix ran twice); the others are unchanged.
  await click(browser, await pointOf(browser, '[data-testid="eval-run-all"]'));
  await waitVerdicts(["passed", "passed", "failed"]);
  await browser.waitUntil(async () => (await attr(row(LOOPING), "data-change")) === "regressed", { timeout: 10000, timeoutMsg: "the looping case was not marked regressed" });
  assert.equal(await attr(row(CASES[0]), "data-change"), "unchanged");
  assert.equal(await attr(row(CASES[1]), "data-change"), "unchanged");
  assert.equal(await (await browser.$('[data-testid="eval-summary"]')).getText(), "vs the evaluation before: 1 regressed, 0 improved, 2 unchanged");
  const failures = await (await browser.$(`[data-testid="eval-failures-${LOOPING}"]`)).getText();
  assert.match(failures, /fix: expected equals "Round 3", got Round 2/);
  assert.match(await (await browser.$('[data-testid="tab-evals"]')).getText(), /Evals\s*1/, "the tab counts the regression");
  await picture("evals-tab-regressed");

  // Select the regressed case: the compare view colours the canvas and shows fix's outputs before and now.
  await click(browser, await pointOf(browser, `${row(LOOPING)} .verdict-cell`)); // anywhere on the row
  await (await browser.$('[data-testid="compare-outputs"]')).waitForDisplayed({ timeout: 3000 });
  assert.equal(await attr('[data-testid="compare-outputs"]', "data-node"), "fix", "the regressed node is shown first");
  assert.equal(await attr(nodeSel("fix"), "data-compare"), "regressed");
  for (const id of ["start", "implement", "review"]) assert.equal(await attr(nodeSel(id), "data-compare"), "unchanged", `${id} is unchanged`);
  assert.equal(await attr(nodeSel("done"), "data-compare"), "", "done ran in neither evaluation");
  const outline = await browser.execute((sel) => getComputedStyle(document.querySelector(sel)).outlineStyle, nodeSel("fix"));
  assert.equal(outline, "solid", "the regressed node is outlined on the canvas");
  assert.equal(await (await browser.$('[data-testid="compare-before"]')).getText(), "Round 3");
  assert.equal(await (await browser.$('[data-testid="compare-after"]')).getText(), "Round 2");
  const marks = await browser.execute(() => ({
    removed: [...document.querySelectorAll('[data-testid="compare-before"] mark.removed')].map((m) => m.textContent),
    added: [...document.querySelectorAll('[data-testid="compare-after"] mark.added')].map((m) => m.textContent),
  }));
  assert.deepEqual(marks, { removed: ["3"], added: ["2"] });
  await fit(browser);
  await picture("evals-compare");
  // The same in the dark theme: the colours are the theme's own.
  await click(browser, await pointOf(browser, '[data-testid="theme"]'));
  await browser.waitUntil(async () => (await browser.execute(() => document.documentElement.dataset.theme)) === "dark", { timeout: 3000 });
  await picture("evals-compare-dark");
  await click(browser, await pointOf(browser, '[data-testid="theme"]'));

  // Another node from the compare view: its outputs are the same, nothing marked.
  await click(browser, await pointOf(browser, '[data-testid="compare-node-review"]'));
  await browser.waitUntil(async () => (await attr('[data-testid="compare-outputs"]', "data-node")) === "review", { timeout: 3000, timeoutMsg: "picking review did not show its outputs" });
  assert.equal(await browser.execute(() => document.querySelectorAll('[data-testid="compare-outputs"] mark').length), 0);
  await chord(browser, [KEY.escape]);

  // History marks the cases' runs; Open run shows the regressed case's run on the canvas as History opens a run.
  await click(browser, await pointOf(browser, '[data-testid="tab-history"]'));
  await browser.waitUntil(async () => (await browser.$$('[data-testid^="history-eval-"]')).length >= 6, { timeout: 5000, timeoutMsg: "History does not mark the six runs of test cases" });
  await click(browser, await pointOf(browser, '[data-testid="tab-evals"]'));
  await click(browser, await pointOf(browser, `[data-testid="eval-open-${LOOPING}"]`));
  await waitMessage(browser, /Run \w+ \(completed\) as it ran/);
  await browser.waitUntil(async () => (await attr(nodeSel("fix"), "data-status")) === "succeeded", { timeout: 5000, timeoutMsg: "the case's run did not show on the canvas" });
  assert.equal(await attr(nodeSel("done"), "data-status"), "skipped");
  const fixRuns = await browser.$$('[data-testid^="run-row-fix-"]');
  assert.equal(fixRuns.length, 2, "fix ran twice in the regressed case's run");
});
