// A child run's approval, decided from its parent in the app (issue 32): the parent pauses on its workflow node, the
// approval dialog names the path (parent's node › child's node) and asks what the child asks, and Approve — a real
// pointer click — lets the child and then the parent go on.
import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { click, pointOf } from "./gestures.mjs";
import { appForFile, openFile, root, shotPath, statusOf, waitStatus } from "./harness.mjs";

let browser;
appForFile((b) => (browser = b));

test("a child run's approval is decided from the parent's approval dialog, and the parent goes on", async () => {
  await openFile(browser, join(root, "examples/summarize-with-review.yaml"));
  assert.match(await (await browser.$('[data-testid="answers-path"]')).getText(), /summarize-with-review\.script\.yaml/);
  await browser.waitUntil(async () => (await browser.$('[data-testid="run"]')).isEnabled(), { timeout: 8000, timeoutMsg: "Run stays disabled" });
  await click(browser, await pointOf(browser, '[data-testid="run"]'));

  const dialog = await browser.$('[data-testid="approval-dialog"]');
  await dialog.waitForDisplayed({ timeout: 20000 });
  assert.equal(await (await browser.$('[data-testid="approval-path"]')).getText(), "Approval: summarize › review");
  assert.match(await dialog.getText(), /Publish this summary\? Switchyard 2 adds sub-workflows/, "the child's message, rendered in the child");
  assert.match(await (await browser.$('[data-testid="approval-child"]')).getText(), /Inside the child run of summarize/);
  assert.equal(await (await browser.$('[data-testid="approval-tool"]')).isExisting(), false, "not shown as a tool call");
  await waitStatus(browser, "summarize", "waiting");
  assert.equal(await statusOf(browser, "post"), "pending", "the parent does not go past a child that waits");
  await browser.saveScreenshot(shotPath("child-approval-dialog"));

  await click(browser, await pointOf(browser, '[data-testid="approval-approve"]'));
  await dialog.waitForExist({ reverse: true, timeout: 10000 });
  await waitStatus(browser, "summarize", "succeeded", 20000);
  await waitStatus(browser, "post", "succeeded", 20000);
});

test("History lists the child run under the parent it ran in, and its arrow shows it", async () => {
  // The run the test before made: the parent's row, and its child's below it once opened.
  await click(browser, await pointOf(browser, '[data-testid="tab-history"]'));
  const parentRow = await browser.$('[data-testid="history"] tbody tr[data-depth="0"]');
  await parentRow.waitForDisplayed({ timeout: 8000 });
  const toggle = await browser.$('[data-testid^="history-children-"]');
  await toggle.waitForDisplayed({ timeout: 8000 });
  assert.match(await parentRow.getText(), /Summarize with review/);
  assert.match(await parentRow.getText(), /1 child run/);
  assert.equal(await (await browser.$('[data-testid="history"] tbody tr[data-depth="1"]')).isExisting(), false, "closed at first");
  await click(browser, await pointOf(browser, '[data-testid^="history-children-"]'));
  const childRow = await browser.$('[data-testid="history"] tbody tr[data-depth="1"]');
  await childRow.waitForDisplayed({ timeout: 5000 });
  assert.match(await childRow.getText(), /summarize/);
  assert.match(await childRow.getText(), /Review a summary/);
  assert.match(await childRow.getText(), /Completed/i);
  await browser.saveScreenshot(shotPath("history-child-run"));
});
