// What stays readable and reachable when the inspector opens and narrows the canvas and the bottom panel: History's
// columns, and a node added from a handle near the right edge of the canvas.
import { test } from "node:test";
import assert from "node:assert/strict";
import { click, drag, emptyCanvasNear, pointOf } from "./gestures.mjs";
import { appForFile, frames, graph, nodeSel, waitStatus } from "./harness.mjs";

let browser;
appForFile((b) => (browser = b));

const handle = (id, h) => `${nodeSel(id)} .react-flow__handle[data-handleid="${h}"]`;

/** The inspector's width on screen (0 when closed). */
const inspectorWidth = () => browser.execute(() => document.querySelector(".pane-inspector")?.getBoundingClientRect().width ?? 0);

test("History's columns stay apart and its buttons in reach beside the open inspector", async () => {
  // A stored run: the example opened at start runs on its answers file and is approved.
  await browser.waitUntil(async () => (await browser.$('[data-testid="run"]')).isEnabled(), { timeout: 8000, timeoutMsg: "Run stays disabled" });
  await click(browser, await pointOf(browser, '[data-testid="run"]'));
  await (await browser.$('[data-testid="approval-approve"]')).waitForDisplayed({ timeout: 15000 });
  await click(browser, await pointOf(browser, '[data-testid="approval-approve"]'));
  await waitStatus(browser, "publish", "succeeded");

  // The inspector open beside History.
  await click(browser, await pointOf(browser, `${nodeSel("draft")} .wf-title`));
  await browser.waitUntil(async () => (await inspectorWidth()) > 200, { timeout: 3000, timeoutMsg: "the inspector did not open" });
  await click(browser, await pointOf(browser, '[data-testid="tab-history"]'));
  await (await browser.$('[data-testid="history"] tbody tr')).waitForDisplayed({ timeout: 8000 });
  await frames(browser);

  const seen = await browser.execute(() => {
    const body = document.querySelector(".bottom-body").getBoundingClientRect();
    // Where each cell's text is drawn: its laid-out text, cut at the cell's inner edge when the cell clips it.
    const drawn = (cell) => {
      const range = document.createRange();
      range.selectNodeContents(cell);
      const text = range.getBoundingClientRect();
      const box = cell.getBoundingClientRect();
      const style = getComputedStyle(cell);
      const clips = style.overflow === "hidden" || style.overflowX === "hidden";
      return { left: Math.max(text.left, box.left), right: clips ? Math.min(text.right, box.right - parseFloat(style.paddingRight)) : text.right, empty: !cell.textContent.trim() };
    };
    const touching = [];
    for (const tr of document.querySelectorAll('[data-testid="history"] tr')) {
      const cells = [...tr.children].map((c) => ({ text: c.textContent.trim(), ...drawn(c) })).filter((c) => !c.empty);
      for (let i = 1; i < cells.length; i++) if (cells[i - 1].right + 6 > cells[i].left) touching.push(`${cells[i - 1].text} | ${cells[i].text}`);
    }
    const open = document.querySelector('[data-testid^="history-open-"]').getBoundingClientRect();
    return { touching, open: { left: open.left, right: open.right }, body: { left: body.left, right: body.right } };
  });
  if (process.env.DEBUG_SHOTS) await browser.saveScreenshot("/tmp/look/history-beside-inspector.png");
  assert.deepEqual(seen.touching, [], "no two columns' text runs together (6 px apart at least)");
  assert.ok(seen.open.left >= seen.body.left && seen.open.right <= seen.body.right, `History's Open button is in view without scrolling sideways: ${JSON.stringify(seen)}`);
});

test("a node added from a handle near the right edge lands in view, not under the inspector that opens for it", async () => {
  // Nothing selected: the inspector closes and the canvas is as wide as it gets.
  await click(browser, await pointOf(browser, '[data-testid="new"]'));
  await browser.waitUntil(async () => (await graph(browser)).nodes.join() === "start", { timeout: 5000, timeoutMsg: "New did not give an empty workflow" });
  await browser.waitUntil(async () => (await inspectorWidth()) < 1, { timeout: 3000, timeoutMsg: "the inspector stays open" });
  const paneBox = () =>
    browser.execute(() => {
      const r = document.querySelector(".react-flow").getBoundingClientRect();
      return { left: r.left, right: r.right, top: r.top, bottom: r.bottom };
    });
  // The start node dragged near the right edge of the canvas, then a click on empty canvas: nothing selected.
  const wide = await paneBox();
  const title = await pointOf(browser, `${nodeSel("start")} .wf-title`);
  await drag(browser, title, { x: Math.round(wide.right - 260), y: title.y });
  await click(browser, await emptyCanvasNear(browser, { x: wide.left + 120, y: wide.top + 120 }, { minDistance: 0 }));
  await browser.waitUntil(async () => (await inspectorWidth()) < 1, { timeout: 3000, timeoutMsg: "the inspector stays open" });
  await frames(browser);
  const pane = await paneBox();
  // A connection dropped close to the right edge, where the inspector will be.
  const from = await pointOf(browser, handle("start", "output"));
  const to = await emptyCanvasNear(browser, { x: pane.right - 50, y: from.y + 40 }, { minDistance: 0 });
  assert.ok(to.x > pane.right - 120, `the drop is near the right edge: ${JSON.stringify({ to, pane })}`);
  await drag(browser, from, to);
  await (await browser.$('[data-testid="canvas-menu"]')).waitForDisplayed({ timeout: 3000 });
  await click(browser, await pointOf(browser, '[data-testid="menu-add-agent"]'));
  await browser.waitUntil(async () => (await inspectorWidth()) > 200, { timeout: 3000, timeoutMsg: "the inspector did not open for the new node" });
  const whole = () =>
    browser.execute(() => {
      const canvas = document.querySelector(".react-flow").getBoundingClientRect();
      const card = document.querySelector('[data-testid="node-agent"]')?.getBoundingClientRect();
      return Boolean(card) && card.left >= canvas.left && card.right <= canvas.right && card.top >= canvas.top && card.bottom <= canvas.bottom;
    });
  await browser.waitUntil(whole, { timeout: 3000, timeoutMsg: "the new agent is not whole in view beside the inspector" });
  if (process.env.DEBUG_SHOTS) await browser.saveScreenshot("/tmp/look/added-near-right-edge.png");
  assert.equal(await (await browser.$('[data-testid="inspector-id"]')).getValue(), "agent", "the inspector shows the new node");
});
