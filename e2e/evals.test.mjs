// A run becomes a test case from History: the app appends it to the workflow's evaluation file, as
// `switchyard eval add` does. Real pointer clicks on the real app; the workflow is a copy in a temporary directory, so
// the evaluation file is created there.
import { test } from "node:test";
import assert from "node:assert/strict";
import { copyFileSync, existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { click, pointOf } from "./gestures.mjs";
import { appForFile, fit, messages, openFile, root, shotPath, waitMessage, waitStatus, work } from "./harness.mjs";

let browser;
appForFile((b) => (browser = b));

test("Save as test case on a finished run writes approval-flow.evals.yaml beside the workflow", async () => {
  for (const name of ["approval-flow.yaml", "approval-flow.script.yaml"]) copyFileSync(join(root, "examples", name), join(work, name));
  const evals = join(work, "approval-flow.evals.yaml");
  assert.equal(existsSync(evals), false);
  await openFile(browser, join(work, "approval-flow.yaml"));
  await fit(browser);
  // The answers file beside the workflow is picked for it.
  await browser.waitUntil(async () => /approval-flow\.script\.yaml/.test(await (await browser.$('[data-testid="answers-path"]')).getText()), { timeout: 5000, timeoutMsg: "the script beside the copy was not picked" });
  await click(browser, await pointOf(browser, '[data-testid="run"]'));
  await waitStatus(browser, "review", "waiting");
  await (await browser.$('[data-testid="approval-dialog"]')).waitForDisplayed();
  await click(browser, await pointOf(browser, '[data-testid="approval-approve"]'));
  await waitStatus(browser, "publish", "succeeded");

  await click(browser, await pointOf(browser, '[data-testid="tab-history"]'));
  const row = await browser.$('[data-testid="history"] tr[data-status="completed"]');
  await row.waitForDisplayed({ timeout: 5000 });
  const id = (await row.getAttribute("data-testid")).replace(/^history-/, "");
  const save = await browser.$(`[data-testid="history-save-case-${id}"]`);
  assert.match(await save.getAttribute("title"), /evaluation file as a test case/);
  // The earlier messages have faded, so the picture shows this one alone.
  await browser.waitUntil(async () => (await messages(browser)).length === 0, { timeout: 10000, timeoutMsg: "earlier messages stayed" });
  await click(browser, await pointOf(browser, `[data-testid="history-save-case-${id}"]`));
  const caseId = `run-${id.slice(0, 8)}`;
  await waitMessage(browser, new RegExp(`Saved as test case ${caseId} in approval-flow\\.evals\\.yaml \\(\\d+ expectations\\)`));
  await browser.pause(600); // the message has slid in
  await browser.saveScreenshot(shotPath("save-as-test-case"));

  const text = readFileSync(evals, "utf8");
  assert.match(text, /^workflow: approval-flow\.yaml$/m);
  assert.match(text, new RegExp(`- id: ${caseId}\\b`));
  assert.match(text, /approval:/);
  assert.match(text, /route:/);

  // A second save of the same run is another case with the next free id, appended to the same file.
  await click(browser, await pointOf(browser, `[data-testid="history-save-case-${id}"]`));
  await waitMessage(browser, new RegExp(`Saved as test case ${caseId}-2 `));
  const again = readFileSync(evals, "utf8");
  assert.ok(again.startsWith(text), "the first case is kept as it was");
  assert.match(again, new RegExp(`- id: ${caseId}-2\\b`));
});
