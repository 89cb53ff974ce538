// What a person reads is what is so: a card that has not run shows no red, its port names never sit on its title,
// errors go away by themselves and do not come back when said again, and every command that would lose unsaved
// changes asks the same Save / Don't save / Cancel. Real pointer and keyboard gestures on the real app.
import { test } from "node:test";
import assert from "node:assert/strict";
import { chord, click, KEY, pointOf, type } from "./gestures.mjs";
import { appForFile, fit, graph, nodeSel } from "./harness.mjs";

let browser;
appForFile((b) => (browser = b));

async function inspect(id) {
  await click(browser, await pointOf(browser, `${nodeSel(id)} .wf-title`));
  await browser.waitUntil(async () => (await (await browser.$('[data-testid="inspector-id"]')).getValue()) === id, { timeout: 3000, timeoutMsg: `the inspector does not show ${id}` });
}

async function typeInto(testId, text) {
  await browser.execute((id) => document.querySelector(`[data-testid="${id}"]`)?.scrollIntoView({ block: "center" }), testId);
  await click(browser, await pointOf(browser, `[data-testid="${testId}"]`));
  await chord(browser, [KEY.control, "a"]);
  await type(browser, text);
}

test("an agent that has not run shows no red and no 'error' on its card, and no port name covers a node's title", async () => {
  await fit(browser);
  const draft = await browser.execute((sel) => {
    const card = document.querySelector(sel);
    const port = card.querySelector('.react-flow__handle[data-handleid="error"]');
    const style = getComputedStyle(port);
    return { labels: [...card.querySelectorAll(".wf-out-label")].map((l) => l.textContent), port: style.backgroundColor, card: getComputedStyle(card).backgroundColor, title: port.getAttribute("title") };
  }, nodeSel("draft"));
  assert.deepEqual(draft.labels, [], `the agent's card names no port (it shows ${JSON.stringify(draft.labels)})`);
  assert.equal(draft.port, draft.card, "the port it leaves by on failure is a hollow ring, the card's colour, not a red dot");
  assert.match(draft.title, /on failure/, "hovering the port says what it is");

  // A long name on a node whose ports are named: the names never overlap.
  await inspect("review");
  await typeInto("field-name", "Review the announcement before it goes out");
  await chord(browser, [KEY.escape]);
  const overlaps = await browser.execute((sel) => {
    const card = document.querySelector(sel);
    const title = card.querySelector(".wf-title").getBoundingClientRect();
    return [...card.querySelectorAll(".wf-out-label")]
      .filter((l) => {
        const r = l.getBoundingClientRect();
        return r.left < title.right && title.left < r.right && r.top < title.bottom && title.top < r.bottom;
      })
      .map((l) => l.textContent);
  }, nodeSel("review"));
  assert.deepEqual(overlaps, [], `port names drawn over the title: ${JSON.stringify(overlaps)}`);
});

test("an error said again while it is shown stays put, and goes away by itself", async () => {
  await inspect("start");
  await chord(browser, [KEY.delete]);
  const toast = await browser.$('[data-testid="message-error"]');
  await toast.waitForDisplayed({ timeout: 3000 });
  assert.match(await toast.getText(), /start node stays/);
  await browser.execute(() => (document.querySelector('[data-testid="message-error"]').dataset.seen = "yes"));
  await chord(browser, [KEY.delete]); // the same refusal again
  await browser.pause(600); // a message that went away and came back would be a new one by now (sonner animates in 400 ms)
  const shown = await browser.execute(() => [...document.querySelectorAll('[data-testid="message-error"]')].filter((m) => m.dataset.removed !== "true").map((m) => m.dataset.seen ?? "new"));
  assert.deepEqual(shown, ["yes"], "the error stayed as it was, and no copy of it came");
  await browser.waitUntil(async () => !(await browser.$('[data-testid="message-error"]').isExisting()), { timeout: 20000, interval: 500, timeoutMsg: "the error never went away" });
});

test("New with unsaved changes asks Save / Don't save / Cancel, as closing does; Cancel keeps them", async () => {
  await inspect("start");
  await typeInto("field-initial_input", "keep me");
  await chord(browser, [KEY.escape]);
  await click(browser, await pointOf(browser, '[data-testid="new"]'));
  const dialog = await browser.$('[data-testid="close-dialog"]');
  await dialog.waitForDisplayed({ timeout: 3000 });
  const text = await dialog.getText();
  assert.match(text, /Save changes to .* before starting a new workflow\?/);
  assert.match(text, /Don.t save[\s\S]*Cancel[\s\S]*Save/);
  await click(browser, await pointOf(browser, '[data-testid="close-cancel"]'));
  await dialog.waitForExist({ reverse: true, timeout: 3000 });
  await inspect("start");
  assert.equal(await (await browser.$('[data-testid="field-initial_input"]')).getValue(), "keep me", "Cancel kept the document");
  await chord(browser, [KEY.escape]);

  await click(browser, await pointOf(browser, '[data-testid="new"]'));
  await dialog.waitForDisplayed({ timeout: 3000 });
  await click(browser, await pointOf(browser, '[data-testid="close-discard"]'));
  await browser.waitUntil(async () => (await graph(browser)).nodes.join() === "start", { timeout: 5000, timeoutMsg: "Don't save did not give a new workflow" });
});
