// A person builds the approval-flow example from an empty canvas with the mouse and keyboard only, runs it with
// the example's answers file, and approves it in the dialog.
import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { chord, click, drag, emptyCanvasNear, KEY, pointOf, type } from "./gestures.mjs";
import { appForFile, fit, graph, nodeSel, root, statusOf, waitStatus } from "./harness.mjs";

let browser;
appForFile((b) => (browser = b));

const node = nodeSel;
const handle = (id, h) => `${node(id)} .react-flow__handle[data-handleid="${h}"]`;

/** Replaces the text of an inspector field by clicking it, selecting all and typing; Tab commits it. */
async function setField(testId, text) {
  // Scrolled into view first, as a person scrolls the inspector to a field below the fold.
  await browser.execute((id) => document.querySelector(`[data-testid="${id}"]`)?.scrollIntoView({ block: "center" }), testId);
  await click(browser, await pointOf(browser, `[data-testid="${testId}"]`));
  await chord(browser, [KEY.control, "a"]);
  await type(browser, text);
  await chord(browser, [KEY.tab]); // commits the field
  await chord(browser, [KEY.escape]); // and leaves the inspector's fields, so canvas keys reach the canvas
}

/** Drags a connection from a handle to empty canvas at an offset, and picks a node type in the palette that opens. */
async function addConnected(fromId, fromHandle, dx, dy, typeName) {
  const from = await pointOf(browser, handle(fromId, fromHandle));
  const to = await emptyCanvasNear(browser, { x: from.x + dx, y: from.y + dy }, { minDistance: 0 });
  if (process.env.DEBUG_SHOTS) await browser.saveScreenshot(`/tmp/look/build-${fromId}-before.png`);
  await drag(browser, from, to);
  if (process.env.DEBUG_SHOTS) {
    await browser.saveScreenshot(`/tmp/look/build-${fromId}-after.png`);
    console.log("drag", from, to);
  }
  await (await browser.$('[data-testid="canvas-menu"]')).waitForDisplayed({ timeout: 3000 });
  const before = (await graph(browser)).nodes;
  await click(browser, await pointOf(browser, `[data-testid="menu-add-${typeName}"]`));
  await browser.waitUntil(async () => (await graph(browser)).nodes.length === before.length + 1, { timeout: 3000, timeoutMsg: "no node was added" });
  const id = (await graph(browser)).nodes.find((n) => !before.includes(n));
  // The inspector opens for the new node; the view keeps the node whole in view beside it.
  await browser.waitUntil(
    () =>
      browser.execute((sel) => {
        const pane = document.querySelector(".react-flow").getBoundingClientRect();
        const card = document.querySelector(sel).getBoundingClientRect();
        return card.left >= pane.left && card.right <= pane.right && card.top >= pane.top && card.bottom <= pane.bottom;
      }, node(id)),
    { timeout: 3000, timeoutMsg: `the new node ${id} is not whole in view` },
  );
  return id;
}

async function rename(id, to) {
  await click(browser, await pointOf(browser, `${node(id)} .wf-title`));
  await browser.waitUntil(async () => (await (await browser.$('[data-testid="inspector-id"]')).getValue()) === id, { timeout: 3000, timeoutMsg: `the inspector does not show ${id}` });
  await setField("inspector-id", to);
  await browser.$(node(to)).waitForExist({ timeout: 3000 });
}

test("build the approval flow from an empty canvas, run it and approve", async () => {
  await click(browser, await pointOf(browser, '[data-testid="new"]'));
  await browser.waitUntil(async () => (await graph(browser)).nodes.join() === "start", { timeout: 5000, timeoutMsg: "New did not give an empty workflow" });

  // draft: from the palette, connected by dragging start's output onto its body.
  await click(browser, await pointOf(browser, '[data-testid="add-agent"]'));
  await browser.$(node("agent")).waitForExist({ timeout: 3000 });
  await setField("inspector-id", "draft");
  await browser.$(node("draft")).waitForExist({ timeout: 3000 });
  await setField("field-user_prompt", "Draft a short announcement: {{ PREVIOUS_OUTPUT }}");
  await fit(browser);
  await drag(browser, await pointOf(browser, handle("start", "output")), await pointOf(browser, `${node("draft")} .wf-summary`));
  await browser.waitUntil(async () => (await graph(browser)).edges.includes("start->draft"), { timeout: 3000, timeoutMsg: "start is not connected to draft" });

  // review: dragged out of draft's output into empty canvas.
  await rename(await addConnected("draft", "output", 150, 0, "approval"), "review");
  await setField("field-message", "Publish this announcement?");
  await fit(browser);

  // publish and revise, out of the approve and reject handles.
  await rename(await addConnected("review", "approve", 120, -110, "agent"), "publish");
  await fit(browser);
  await rename(await addConnected("review", "reject", 120, 110, "agent"), "revise");
  await fit(browser);

  const built = await graph(browser);
  assert.deepEqual(built.nodes.sort(), ["draft", "publish", "review", "revise", "start"]);
  assert.deepEqual(built.edges.sort(), ["draft->review", "review->publish:approve", "review->revise:reject", "start->draft"]);

  // Run with the example's answers file (the OS file picker is the one thing a test names for the person).
  await browser.execute((p) => (window.__switchyardDialog = { open: p }), join(root, "examples/approval-flow.script.yaml"));
  // The run source menu, left of Run: "Choose answers file…".
  await click(browser, await pointOf(browser, '[data-testid="run-source"]'));
  await (await browser.$('[data-testid="choose-answers"]')).waitForDisplayed({ timeout: 3000 });
  await click(browser, await pointOf(browser, '[data-testid="choose-answers"]'));
  await browser.waitUntil(async () => /approval-flow\.script\.yaml/.test(await (await browser.$('[data-testid="answers-path"]')).getText()), { timeout: 3000 });
  await browser.execute(() => delete window.__switchyardDialog);
  await browser.waitUntil(async () => (await browser.$('[data-testid="run"]')).isEnabled(), { timeout: 5000, timeoutMsg: `Run stays disabled: ${await (await browser.$('[data-testid="run-blocked"]')).getText().catch(() => "")}` });
  await chord(browser, [KEY.control, KEY.enter]);
  await waitStatus(browser, "review", "waiting");
  assert.equal(await statusOf(browser, "draft"), "succeeded");
  const dialog = await browser.$('[data-testid="approval-dialog"]');
  await dialog.waitForDisplayed({ timeout: 5000 });
  // Put off with Later, the approval waits on its node; Review… there brings the dialog back.
  await click(browser, await pointOf(browser, '[data-testid="approval-later"]'));
  await dialog.waitForExist({ reverse: true, timeout: 3000 });
  await click(browser, await pointOf(browser, '[data-testid="review-review"]'));
  await dialog.waitForDisplayed({ timeout: 3000 });
  await click(browser, await pointOf(browser, '[data-testid="approval-note"]'));
  await type(browser, "ship it");
  await click(browser, await pointOf(browser, '[data-testid="approval-approve"]'));
  await waitStatus(browser, "publish", "succeeded");
  await waitStatus(browser, "revise", "skipped");
});
