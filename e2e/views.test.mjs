// What a person sees and finds: a workflow opens readable (titles and edge labels measured on screen), Find lists
// matches as you type, the model choosing a route shows while it chooses (a real model), and a replay's timeline
// takes the canvas back to an earlier moment of the run. Real pointer and keyboard gestures on the real app.
import { test } from "node:test";
/* global MutationObserver -- the functions given to browser.execute run in the page */
import assert from "node:assert/strict";
import { join } from "node:path";
import { chord, click, drag, KEY, pointOf, type, whatIsAt } from "./gestures.mjs";
import { appForFile, frames, openFile, root, statusOf, waitStatus } from "./harness.mjs";

let browser;
appForFile((b) => (browser = b));

test("a workflow opens with every title at least 12 px and every edge label at least 10 px on screen, whole on hover", async () => {
  await openFile(browser, join(root, "examples/alert-triage.yaml"));
  await frames(browser);
  const m = await browser.execute(() => {
    const zoom = new DOMMatrix(getComputedStyle(document.querySelector(".react-flow__viewport")).transform).a;
    const px = (el) => parseFloat(getComputedStyle(el).fontSize) * zoom;
    const pane = document.querySelector(".react-flow").getBoundingClientRect();
    const cards = [...document.querySelectorAll(".react-flow__node")].map((n) => n.getBoundingClientRect());
    return {
      zoom,
      titles: [...document.querySelectorAll(".wf-title")].map(px),
      chips: [...document.querySelectorAll(".edge-chip")].map((c) => ({ px: px(c), text: c.textContent, title: c.getAttribute("title") })),
      inView: cards.filter((r) => r.left >= pane.left && r.right <= pane.right && r.top >= pane.top && r.bottom <= pane.bottom).length,
      nodes: cards.length,
    };
  });
  assert.ok(m.titles.length >= 6, "the example's nodes are drawn");
  for (const t of m.titles) assert.ok(t >= 12, `a title is ${t.toFixed(1)} px on screen (zoom ${m.zoom.toFixed(2)})`);
  assert.ok(m.chips.length >= 2, "its edge labels are drawn");
  for (const c of m.chips) {
    assert.ok(c.px >= 10, `the label "${c.text}" is ${c.px.toFixed(1)} px on screen`);
    if (c.text.endsWith("…")) assert.ok(c.title && c.title.length > c.text.length, `the shortened label "${c.text}" is whole on hover`);
  }
  assert.equal(m.inView, m.nodes, "at 1280×800 the whole example is in view when it opens");
});

test("Find lists matching nodes as you type, and Enter brings the one picked into view, selected", async () => {
  await chord(browser, [KEY.control, "k"]);
  await (await browser.$('[data-testid="find"]')).waitForDisplayed({ timeout: 3000 });
  const listed = () => browser.execute(() => [...document.querySelectorAll('[data-testid^="find-node-"]')].map((e) => e.getAttribute("data-testid").slice(10)));
  assert.equal((await listed()).length, 6, "with nothing typed, every node is listed");
  await type(browser, "dupl");
  await browser.waitUntil(async () => (await listed()).join() === "skip", { timeout: 3000, timeoutMsg: "typing did not narrow the list to the one node named Note duplicate" });
  for (let i = 0; i < 4; i++) await chord(browser, [KEY.backspace]);
  await type(browser, "gath");
  await browser.waitUntil(async () => (await listed())[0] === "gather", { timeout: 3000, timeoutMsg: "the node whose name starts with what was typed is not listed first" });
  assert.deepEqual((await listed()).sort(), ["gather", "investigate"], "a node whose prompt reads the gather node is listed too");
  for (let i = 0; i < 4; i++) await chord(browser, [KEY.backspace]);
  await type(browser, "findings");
  await browser.waitUntil(async () => await (await browser.$('[data-testid="find-node-investigate"]')).isExisting(), { timeout: 3000, timeoutMsg: "a prompt's text does not find its node" });
  await chord(browser, [KEY.enter]);
  await (await browser.$('[data-testid="find"]')).waitForExist({ reverse: true, timeout: 3000 });
  await browser.waitUntil(async () => (await browser.execute(() => [...document.querySelectorAll(".react-flow__node.selected")].map((n) => n.getAttribute("data-id")))).join() === "investigate", { timeout: 3000, timeoutMsg: "Enter did not select the node" });
});

test("while the model chooses a route, the node and the run list say so (a real model)", async () => {
  await openFile(browser, join(root, "examples/alert-triage.yaml"));
  // Run on the model found on this computer instead of the answers file beside the example.
  const source = await pointOf(browser, '[data-testid="run-source"]');
  assert.match(await whatIsAt(browser, source), /^(run-source|answers-path|run-model)$/, "nothing covers the run source, not even a message arriving");
  await click(browser, source);
  await (await browser.$('[data-testid="source-default-model"]')).waitForDisplayed({ timeout: 3000 });
  await click(browser, await pointOf(browser, '[data-testid="source-default-model"]'));
  await browser.waitUntil(async () => /local\//.test(await (await browser.$('[data-testid="run-model"]')).getText()), { timeout: 5000, timeoutMsg: "the run source does not name the local model" });
  await browser.execute(() => {
    window.__sawChoosing = { node: false, row: false };
    new MutationObserver(() => {
      if (document.querySelector(".wf-node.choosing")) window.__sawChoosing.node = true;
      if ([...document.querySelectorAll(".run-list td.status")].some((td) => /choosing a route/.test(td.textContent))) window.__sawChoosing.row = true;
    }).observe(document.body, { subtree: true, childList: true, attributes: true, attributeFilter: ["class"], characterData: true });
  });
  await click(browser, await pointOf(browser, '[data-testid="run"]'));
  await browser.waitUntil(async () => ["succeeded", "failed"].includes(await statusOf(browser, "notify")) || /failed|completed/.test(await (await browser.$('[data-testid="tab-run"]')).getText()), { timeout: 240000, timeoutMsg: "the real-model run did not end" });
  const saw = await browser.execute(() => window.__sawChoosing);
  assert.ok(saw.node, "the node showed that the model was choosing its route");
  assert.ok(saw.row, "the run list showed it too");
  // The routing call is answered whole (not streamed), with its usage: the routing node's row counts its tokens.
  const tokens = await browser.execute(() => document.querySelector('[data-testid="run-row-investigate-1"] td:nth-child(5)')?.textContent ?? "");
  assert.match(tokens, /^\d+$/, `the routing node's row counts the tokens of the model's choice: "${tokens}"`);
});

test("a replay's timeline takes the canvas back to an earlier moment of the run", async () => {
  await openFile(browser, join(root, "examples/review-fix-loop.yaml")); // its answers file is beside it
  await click(browser, await pointOf(browser, '[data-testid="run"]'));
  await waitStatus(browser, "done", "succeeded");
  await click(browser, await pointOf(browser, '[data-testid="tab-history"]'));
  const replay = await browser.$('[data-testid^="history-replay-"]');
  await replay.waitForDisplayed({ timeout: 5000 });
  await click(browser, await pointOf(browser, '[data-testid^="history-replay-"]'));
  await (await browser.$('[data-testid="replay-bar"]')).waitForDisplayed({ timeout: 10000 });
  // It plays step by step: at first, done has not run yet.
  assert.notEqual(await statusOf(browser, "done"), "succeeded", "the replay starts at the beginning, not at the end");
  await waitStatus(browser, "done", "succeeded", 60000);
  // The player stops at the last step; a drag while it still plays would be overtaken by its next tick.
  const play = await browser.$('[data-testid="replay-play"]');
  await browser.waitUntil(async () => (await play.getAttribute("aria-label")) === "Play", { timeout: 10000, timeoutMsg: "the replay did not stop at its end" });
  // Drag the timeline's handle back to its start: the canvas shows the run before `done` ran.
  const bar = await pointOf(browser, '[data-testid="replay-timeline"]');
  const left = await pointOf(browser, '[data-testid="replay-timeline"]', 0.02, 0.5);
  const right = await pointOf(browser, '[data-testid="replay-timeline"]', 0.99, 0.5);
  await drag(browser, right, { x: left.x + Math.round((bar.x - left.x) / 3), y: left.y });
  await browser.waitUntil(async () => (await statusOf(browser, "done")) !== "succeeded", { timeout: 3000, timeoutMsg: "dragging the timeline back did not take the canvas back" });
  const now = await (await browser.$('[data-testid="replay-now"]')).getText();
  assert.match(now, /^\d+\/\d+/, `the timeline says where it is: ${now}`);
  await click(browser, await pointOf(browser, '[data-testid="replay-close"]'));
  await waitStatus(browser, "done", "succeeded", 3000);
});
