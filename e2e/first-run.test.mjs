// A new user's first minutes, on the real app with real pointer and keyboard gestures and the real local model
// (scripts/e2e.sh starts llama.cpp's server and the app finds it, as it finds Ollama or llama.cpp on a person's
// machine): build start → agent → if → two agents → join, run it with no setting touched, save, and close the window
// with its close button. Also: what is typed in a field is what Ctrl+S saves and Ctrl+Enter runs, and closing with
// unsaved changes asks Save / Don't save / Cancel.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { join } from "node:path";
import { chord, click, drag, emptyCanvasNear, KEY, pointOf, type } from "./gestures.mjs";
import { alive, appPid, fit, graph, launch, messages, nodeSel, pressCloseButton, shotPath, statusOf, waitStatus, work } from "./harness.mjs";

const node = nodeSel;
const handle = (id, h) => `${node(id)} .react-flow__handle[data-handleid="${h}"]`;
const MODEL_TIMEOUT = 240000; // a small model on one thread of a loaded 2-core machine

async function waitGone(pid, timeout = 15000) {
  const end = Date.now() + timeout;
  while (alive(pid)) {
    if (Date.now() > end) throw new Error(`the app (pid ${pid}) is still running ${timeout} ms after its close button`);
    await sleep(100);
  }
}

/** Clicks a field of the inspector and replaces its text by typing; the field keeps the focus (nothing commits it). */
async function typeInto(browser, testId, text) {
  await browser.execute((id) => document.querySelector(`[data-testid="${id}"]`)?.scrollIntoView({ block: "center" }), testId);
  await click(browser, await pointOf(browser, `[data-testid="${testId}"]`));
  await chord(browser, [KEY.control, "a"]);
  await type(browser, text);
}

/** Types into a field, then Tab (commits) and Escape (leaves the inspector's fields for the canvas). */
async function setField(browser, testId, text) {
  await typeInto(browser, testId, text);
  await chord(browser, [KEY.tab]);
  await chord(browser, [KEY.escape]);
}

/** Drags a connection out of a handle into empty canvas and picks a node type where it lands; returns the new id. */
async function addConnected(browser, fromId, fromHandle, dx, dy, typeName) {
  const from = await pointOf(browser, handle(fromId, fromHandle));
  const to = await emptyCanvasNear(browser, { x: from.x + dx, y: from.y + dy }, { minDistance: 0 });
  await drag(browser, from, to);
  await (await browser.$('[data-testid="canvas-menu"]')).waitForDisplayed({ timeout: 3000 });
  const before = (await graph(browser)).nodes;
  await click(browser, await pointOf(browser, `[data-testid="menu-add-${typeName}"]`));
  await browser.waitUntil(async () => (await graph(browser)).nodes.length === before.length + 1, { timeout: 3000, timeoutMsg: "no node was added" });
  const id = (await graph(browser)).nodes.find((n) => !before.includes(n));
  // It lands whole in view, not under the inspector that opened for it (the view follows it once the pane is open).
  const inView = () =>
    browser.execute((sel) => {
      const pane = document.querySelector(".react-flow").getBoundingClientRect();
      const card = document.querySelector(sel).getBoundingClientRect();
      return card.left >= pane.left && card.right <= pane.right && card.top >= pane.top && card.bottom <= pane.bottom;
    }, node(id));
  await browser.waitUntil(inView, { timeout: 3000, timeoutMsg: `the new node ${id} is not whole in view` });
  return id;
}

async function rename(browser, id, to) {
  await click(browser, await pointOf(browser, `${node(id)} .wf-title`));
  await browser.waitUntil(async () => (await (await browser.$('[data-testid="inspector-id"]')).getValue()) === id, { timeout: 3000, timeoutMsg: `the inspector does not show ${id}` });
  await setField(browser, "inspector-id", to);
  await browser.$(node(to)).waitForExist({ timeout: 3000 });
}

test("a new user builds start → agent → if → two agents → join, runs it on the local model with no settings, saves, and closes the window", async () => {
  const browser = await launch();
  const pid = appPid(browser);
  try {
    await click(browser, await pointOf(browser, '[data-testid="new"]'));
    await browser.waitUntil(async () => (await graph(browser)).nodes.join() === "start", { timeout: 5000, timeoutMsg: "New did not give an empty workflow" });
    // The run source is the model found on this computer, shown by its name, not a placeholder.
    await browser.waitUntil(async () => /local\//.test(await (await browser.$('[data-testid="run-model"]')).getText()), { timeout: 10000, timeoutMsg: "the toolbar names no model found on this computer" });

    // The start node's input, in plain text.
    await click(browser, await pointOf(browser, `${node("start")} .wf-title`));
    await setField(browser, "field-initial_input", "My cat is hungry");
    assert.match(await (await browser.$('[data-testid="input-read-as"]')).getText().catch(() => "Read as text"), /text/);

    const agent = await addConnected(browser, "start", "output", 170, 0, "agent");
    await rename(browser, agent, "reply");
    await setField(browser, "field-user_prompt", "Repeat in three words: {{ input }}");
    await fit(browser);

    const branch = await addConnected(browser, "reply", "output", 170, 0, "if");
    await rename(browser, branch, "pet");
    // Two conditions: the first (a new if node comes with one) is named "cat" (contains "cat"), the second "dog".
    await setField(browser, "condition-0", "cat");
    await click(browser, await pointOf(browser, '[data-testid="add-condition"]'));
    await setField(browser, "condition-1", "dog");
    await fit(browser);

    const onCat = await addConnected(browser, "pet", "condition-0", 170, -90, "agent");
    await rename(browser, onCat, "cat_reply");
    await fit(browser);
    const onElse = await addConnected(browser, "pet", "false", 170, 90, "agent");
    await rename(browser, onElse, "other_reply");
    await fit(browser);
    const joined = await addConnected(browser, "cat_reply", "output", 170, 80, "agent");
    await rename(browser, joined, "summary");
    await fit(browser);
    await drag(browser, await pointOf(browser, handle("other_reply", "output")), await pointOf(browser, `${node("summary")} .wf-summary`));
    await browser.waitUntil(async () => (await graph(browser)).edges.includes("other_reply->summary"), { timeout: 3000, timeoutMsg: "other_reply is not connected to summary" });

    // The if node's branches read as their conditions on the edges, not as handle ids.
    const conditions = await browser.execute(() => document.querySelectorAll('[data-testid="node-pet"] .wf-out-label').length);
    assert.equal(conditions, 3, "pet has two conditions and else");
    const chip = await browser.execute(() => [...document.querySelectorAll('[data-testid^="edge-label-pet->"]')].map((c) => c.textContent));
    assert.ok(chip.includes("cat"), `an edge out of "pet" reads "cat" (chips: ${JSON.stringify(chip)})`);
    assert.ok(chip.includes("else"), `the other edge reads "else" (chips: ${JSON.stringify(chip)})`);

    // Run: on the local model, no setting touched.
    await browser.waitUntil(async () => (await browser.$('[data-testid="run"]')).isEnabled(), { timeout: 8000, timeoutMsg: "Run stays disabled" });
    await click(browser, await pointOf(browser, '[data-testid="run"]'));
    await waitStatus(browser, "summary", "succeeded", MODEL_TIMEOUT);
    for (const id of ["start", "reply", "pet"]) assert.equal(await statusOf(browser, id), "succeeded", `${id} succeeded`);
    const ran = [await statusOf(browser, "cat_reply"), await statusOf(browser, "other_reply")].sort();
    assert.deepEqual(ran, ["skipped", "succeeded"], "exactly one branch ran");
    // The run list speaks of node names and of the branch by its condition.
    const petRow = await (await browser.$('[data-testid="run-row-pet-1"]')).getText();
    assert.match(petRow, /→ (cat|dog|else)/, `the if node's row names the branch: ${petRow}`);
    const replyRow = await (await browser.$('[data-testid="run-row-reply-1"]')).getText();
    assert.match(replyRow, /\d+/, `the agent's row has its duration and tokens: ${replyRow}`);
    // Tokens as the server reports them; llama-cpp-python's server reports none for streamed answers, and the cell
    // says so rather than staying blank.
    const tokens = await browser.execute(() => {
      const td = document.querySelector('[data-testid="run-row-reply-1"] td:nth-child(5)');
      return { text: td?.textContent ?? "", title: td?.getAttribute("title") ?? "" };
    });
    assert.ok(/^\d+$/.test(tokens.text) || (tokens.text === "not reported" && /tokens not reported by this model server/.test(tokens.title)), `the tokens cell is a count or says none was reported: ${JSON.stringify(tokens)}`);
    if (!/^\d+$/.test(tokens.text)) {
      // The inspector's Last run of that step says it in words too (a click on the row opens it).
      await click(browser, await pointOf(browser, '[data-testid="run-row-reply-1"] td:nth-child(3)'));
      await browser.waitUntil(async () => /tokens not reported by this model server/.test(await (await browser.$('[data-testid="run-details"]')).getText().catch(() => "")), { timeout: 3000, timeoutMsg: "Last run does not say the tokens were not reported" });
    }
    const words = (await messages(browser)).join(" ");
    assert.doesNotMatch(words, /--model|--allow-code|switchyard trust|[A-Z]{3,}_[A-Z_]{3,}:/, `no message in the engine's words: ${words}`);

    // Save (Ctrl+S asks where, the first time), then close with the close button: the app ends.
    const file = join(work, "first-run.yaml");
    await browser.execute((p) => (window.__switchyardDialog = { save: p }), file);
    await chord(browser, [KEY.control, "s"]);
    await browser.waitUntil(() => existsSync(file), { timeout: 5000, timeoutMsg: "Ctrl+S wrote no file" });
    assert.match(readFileSync(file, "utf8"), /My cat is hungry/);
    assert.match(await browser.execute(() => document.title), /first-run\.yaml/, "the window title names the file");
    await pressCloseButton(pid);
    await waitGone(pid);
  } catch (e) {
    await browser.saveScreenshot(shotPath(`first-run-failed-${Date.now()}`)).catch(() => undefined);
    throw e;
  } finally {
    await browser.deleteSession().catch(() => undefined);
  }
});

test("Ctrl+S and Ctrl+Enter while a field has the focus save and run what it shows", async () => {
  const browser = await launch();
  const pid = appPid(browser);
  try {
    await click(browser, await pointOf(browser, '[data-testid="new"]'));
    await browser.waitUntil(async () => (await graph(browser)).nodes.join() === "start", { timeout: 5000 });
    const file = join(work, "typed.yaml");
    await browser.execute((p) => (window.__switchyardDialog = { save: p }), file);
    await click(browser, await pointOf(browser, `${node("start")} .wf-title`));
    await typeInto(browser, "field-initial_input", "first words");
    await chord(browser, [KEY.control, "s"]); // the field still has the focus
    await browser.waitUntil(() => existsSync(file), { timeout: 5000, timeoutMsg: "Ctrl+S wrote no file" });
    assert.match(readFileSync(file, "utf8"), /first words/, "Ctrl+S saved the text as typed");
    assert.equal(await browser.execute(() => document.activeElement?.getAttribute("data-testid")), "field-initial_input", "the focus stays in the field");
    assert.doesNotMatch(await browser.execute(() => document.title), /^•/, "no unsaved mark after saving");

    await typeInto(browser, "field-initial_input", "second words");
    assert.match(await browser.execute(() => document.title), /./);
    await chord(browser, [KEY.control, KEY.enter]); // runs what the field shows
    await waitStatus(browser, "start", "succeeded", 20000);
    const row = await (await browser.$('[data-testid="run-row-start-1"]')).getText();
    assert.match(row, /second words/, `the run started with the text in the field: ${row}`);

    // Unsaved now: the close button asks first. Cancel keeps the window; Don't save closes it.
    assert.match(await browser.execute(() => document.title), /^•/, "the title marks unsaved changes");
    await pressCloseButton(pid);
    await (await browser.$('[data-testid="close-dialog"]')).waitForDisplayed({ timeout: 5000 });
    assert.match(await (await browser.$('[data-testid="close-dialog"]')).getText(), /Save[\s\S]*Don.t save[\s\S]*Cancel/);
    await click(browser, await pointOf(browser, '[data-testid="close-cancel"]'));
    await (await browser.$('[data-testid="close-dialog"]')).waitForExist({ reverse: true, timeout: 3000 });
    assert.ok(alive(pid), "Cancel keeps the app open");
    await pressCloseButton(pid);
    await (await browser.$('[data-testid="close-dialog"]')).waitForDisplayed({ timeout: 5000 });
    // The window closes while the click is being sent: the driver may lose the session in the middle of it.
    await click(browser, await pointOf(browser, '[data-testid="close-discard"]')).catch((e) => {
      if (!/invalid session/i.test(String(e))) throw e;
    });
    await waitGone(pid);
    assert.match(readFileSync(file, "utf8"), /first words/, "Don't save left the file as it was");
  } catch (e) {
    await browser.saveScreenshot(shotPath(`first-run-failed-${Date.now()}`)).catch(() => undefined);
    throw e;
  } finally {
    await browser.deleteSession().catch(() => undefined);
  }
});
