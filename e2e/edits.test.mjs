// What is typed in the inspector is in the document whatever the next gesture is: a click or a drag in the palette
// (which takes no focus) keeps it, undo takes a field's typing back as one step, and a half-typed id is committed
// before the palette adds a node. Real pointer and keyboard gestures on the real app.
import { test } from "node:test";
import assert from "node:assert/strict";
import { chord, click, drag, emptyCanvasNear, KEY, pointOf, type } from "./gestures.mjs";
import { appForFile, fit, graph, nodeSel } from "./harness.mjs";

let browser;
appForFile((b) => (browser = b));

const field = (testId) => browser.$(`[data-testid="${testId}"]`);

/** Clicks a node's title (after fitting the workflow in view when it is not drawn): the inspector shows its fields. */
async function inspect(id) {
  const title = `${nodeSel(id)} .wf-title`;
  const clickable = () =>
    browser.execute((sel) => {
      const el = document.querySelector(sel);
      const r = el?.getBoundingClientRect();
      return Boolean(r && el.contains(document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2)));
    }, title);
  if (!(await clickable())) {
    await clickEmptyCanvas();
    await fit(browser);
  }
  await click(browser, await pointOf(browser, title));
  await browser.waitUntil(async () => (await (await field("inspector-id")).getValue()) === id, { timeout: 3000, timeoutMsg: `the inspector does not show ${id}` });
}

/** Clicks a field of the inspector and replaces its text by typing; the field keeps the focus. */
async function typeInto(testId, text) {
  await browser.execute((id) => document.querySelector(`[data-testid="${id}"]`)?.scrollIntoView({ block: "center" }), testId);
  await click(browser, await pointOf(browser, `[data-testid="${testId}"]`));
  await chord(browser, [KEY.control, "a"]);
  await type(browser, text);
}

/** Waits for the node the palette added (it is selected, and shown whole), and returns its id. */
async function added(before) {
  let id;
  await browser.waitUntil(async () => (id = (await graph(browser)).selectedNodes.find((n) => !before.includes(n))) !== undefined, { timeout: 3000, timeoutMsg: "the palette added no node" });
  return id;
}

/** Somewhere on the empty canvas, for the focus to leave the inspector as a person's click there does. */
async function clickEmptyCanvas() {
  const pane = await browser.execute(() => {
    const r = document.querySelector(".react-flow__pane").getBoundingClientRect();
    return { x: Math.round(r.left + r.width / 2), y: Math.round(r.top + r.height / 2) };
  });
  await click(browser, await emptyCanvasNear(browser, pane, { minDistance: 0 }));
}

test("the start node's input typed just before a click in the palette is kept, and one undo takes the typing back", async () => {
  await inspect("start");
  const original = await (await field("field-initial_input")).getValue();
  await typeInto("field-initial_input", "My cat is hungry");
  // The next gesture is a click on the palette's Agent: no click on the canvas or another field in between.
  const before = (await graph(browser)).nodes;
  await click(browser, await pointOf(browser, '[data-testid="add-agent"]'));
  const agent = await added(before);

  await inspect("start");
  assert.equal(await (await field("field-initial_input")).getValue(), "My cat is hungry", "the start node kept the input typed before the palette click");

  // Undo: first the added agent, then the whole typing at once (not a key at a time); redo brings the text back.
  await clickEmptyCanvas();
  await chord(browser, [KEY.control, "z"]);
  await browser.waitUntil(async () => !(await graph(browser)).nodes.includes(agent), { timeout: 3000, timeoutMsg: "undo did not take the added agent away" });
  await chord(browser, [KEY.control, "z"]);
  await inspect("start");
  assert.equal(await (await field("field-initial_input")).getValue(), original, "one undo took the whole typing back");
  await clickEmptyCanvas();
  await chord(browser, [KEY.control, KEY.shift, "z"]);
  await inspect("start");
  assert.equal(await (await field("field-initial_input")).getValue(), "My cat is hungry", "redo brought it back");
});

test("an agent's prompt typed just before dragging a node out of the palette is kept", async () => {
  await inspect("draft");
  await typeInto("field-user_prompt", "Announce dark mode in three lines");
  const before = (await graph(browser)).nodes;
  const from = await pointOf(browser, '[data-testid="add-script"]');
  const draft = await pointOf(browser, `${nodeSel("draft")}`);
  await drag(browser, from, await emptyCanvasNear(browser, { x: draft.x, y: draft.y + 160 }, { minDistance: 0 }));
  const script = await added(before);
  assert.deepEqual((await graph(browser)).selectedNodes, [script], "the dropped node is selected");

  await inspect("draft");
  assert.equal(await (await field("field-user_prompt")).getValue(), "Announce dark mode in three lines", "the prompt typed before the drag is kept");
});

test("a node's new id, typed and not yet confirmed, is given to the node before the palette adds another", async () => {
  await inspect("publish");
  await typeInto("inspector-id", "blog_post");
  const before = (await graph(browser)).nodes;
  await click(browser, await pointOf(browser, '[data-testid="add-agent"]'));
  await added(before);
  await clickEmptyCanvas();
  await fit(browser); // every node drawn
  const nodes = (await graph(browser)).nodes;
  assert.ok(nodes.includes("blog_post") && !nodes.includes("publish"), `publish was renamed blog_post (nodes: ${nodes.join(", ")})`);
});

test("an If condition is in the document as it is typed, nothing in the inspector moves, and Tab goes on past the remove button", async () => {
  await clickEmptyCanvas();
  const before = (await graph(browser)).nodes;
  await click(browser, await pointOf(browser, '[data-testid="add-if"]'));
  const check = await added(before);
  const top = () => browser.execute(() => Math.round(document.querySelector('[data-testid="condition-0"]').getBoundingClientRect().top));
  const at = await top();
  await click(browser, await pointOf(browser, '[data-testid="condition-0"]'));
  await type(browser, "urgent");
  // The card names the branch by its condition while the field still has the focus.
  await browser.waitUntil(async () => (await browser.execute((sel) => [...document.querySelectorAll(`${sel} .wf-out-label`)].map((l) => l.textContent), nodeSel(check))).includes("urgent"), {
    timeout: 3000,
    timeoutMsg: "the card does not name the branch by the condition being typed",
  });
  assert.equal(await top(), at, "the condition field stayed where it was while its problems went away");
  await chord(browser, [KEY.tab]);
  const focused = await browser.execute(() => ({ text: document.activeElement?.textContent, label: document.activeElement?.getAttribute("aria-label"), testId: document.activeElement?.getAttribute("data-testid") }));
  assert.notEqual(focused.label, "remove condition 0", `Tab from the condition must not land on its remove button (focus: ${JSON.stringify(focused)})`);
  assert.equal(focused.testId, "add-condition", "Tab goes on to the next control that adds rather than removes");
  assert.equal(await top(), at, "nothing moved on Tab either");
});
