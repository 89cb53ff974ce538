// A replay steps through an agent's turns, end to end with real gestures: the agent of e2e/sum-agent.mjs (two model
// turns with a real MCP server's `add`, on a model server on 127.0.0.1) runs; History → Replay; the person selects the
// agent, opens its Last run tab and steps the timeline with the arrow keys: the bar stops at turn 1 (asking add), at
// the tool call, at turn 2, with the agent running on the canvas and its Conversation marking the turn shown.
import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { chord, click, KEY, pointOf } from "./gestures.mjs";
import { appForFile, nodeSel, statusOf, work } from "./harness.mjs";
import { openAndRun, sumAgent } from "./sum-agent.mjs";

const asked = sumAgent();

let browser;
appForFile((b) => (browser = b));

/** What the replay bar says now. */
const now = () => browser.execute(() => document.querySelector('[data-testid="replay-now"]')?.textContent ?? "");

test("a replay steps through the agent's turns and tool call, the agent running on the canvas and its turn marked in its Conversation", async () => {
  await openAndRun(browser, "replay-sum.yaml", asked);

  // History → Replay of the run just made (the newest).
  await click(browser, await pointOf(browser, '[data-testid="tab-history"]'));
  await browser.$('[data-testid^="history-replay-"]').waitForDisplayed({ timeout: 10000 });
  await click(browser, await pointOf(browser, '[data-testid^="history-replay-"]'));
  await browser.$('[data-testid="replay-bar"]').waitForDisplayed({ timeout: 10000 });
  const play = await browser.$('[data-testid="replay-play"]');
  await browser.waitUntil(async () => (await play.getAttribute("aria-label")) === "Play", { timeout: 20000, timeoutMsg: "the replay did not stop at its end" });
  const before = asked.adder.length + asked.report.length;

  // The person selects the agent and opens its Last run tab.
  await click(browser, await pointOf(browser, nodeSel("adder")));
  await click(browser, await pointOf(browser, '[data-testid="tab-last-run"]'));
  await browser.$('[data-testid="conversation"]').waitForDisplayed({ timeout: 10000 });

  // Then steps the timeline from its start with the keyboard: the slider takes focus from a click at its left end.
  await click(browser, await pointOf(browser, '[data-testid="replay-timeline"]', 0.01, 0.5));
  await chord(browser, [KEY.home]);
  await browser.waitUntil(async () => /^1\//.test(await now()), { timeout: 3000, timeoutMsg: `Home did not go to the start: ${await now()}` });
  const seen = [];
  for (let i = 0; i < 30 && !/Adder: turn 2/.test(seen.at(-1) ?? ""); i++) {
    const was = await now();
    await chord(browser, [KEY.right]);
    await browser.waitUntil(async () => (await now()) !== was, { timeout: 3000, timeoutMsg: `the right arrow did not step on from ${was}` });
    seen.push(await now());
  }
  const said = seen.map((s) => s.replace(/^\d+\/\d+ · /, "").replace(/ \+[\d.]+ s$/, ""));
  const at = (pattern) => said.findIndex((s) => pattern.test(s));
  const [enter, turn1, call, turn2] = [at(/^Adder starts$/), at(/^Adder: turn 1 — asks add\(20, 22\)$/), at(/^Adder: add → .*42/), at(/^Adder: turn 2 — says “The sum is .*42.*\.”$/)];
  assert.ok(enter >= 0 && enter < turn1 && turn1 < call && call < turn2, `the steps, in order: ${JSON.stringify(said)}`);
  assert.equal(turn2, said.length - 1, "stepping stopped at turn 2");

  // At turn 2 the agent runs on the canvas, the node after it has not started, and the Conversation marks turn 2.
  assert.equal(await statusOf(browser, "adder"), "running");
  assert.equal(await statusOf(browser, "report"), "pending");
  const marked = () => browser.execute(() => [...document.querySelectorAll('[data-testid="conversation"] li.current')].map((li) => li.innerText.replace(/\s+/g, " ").trim()));
  await browser.waitUntil(async () => (await marked()).length === 1, { timeout: 3000, timeoutMsg: `marked: ${JSON.stringify(await marked())}` });
  assert.match((await marked())[0], /^Turn 2 · 25 tokens · [\d.]+ m?s/);
  const inView = await browser.execute(() => {
    const li = document.querySelector('[data-testid="conversation"] li.current');
    let box = li.parentElement;
    while (box && getComputedStyle(box).overflowY === "visible") box = box.parentElement;
    const [r, b] = [li.getBoundingClientRect(), (box ?? document.documentElement).getBoundingClientRect()];
    return r.top >= b.top - 1 && r.bottom <= b.bottom + 1;
  });
  assert.ok(inView, "the marked turn is scrolled into view");
  const shot = join(work, "replay-turn-2.png");
  await browser.saveScreenshot(shot);

  // One step back: the tool call, with its own mark.
  await chord(browser, [KEY.left]);
  await browser.waitUntil(async () => /Adder: add → /.test(await now()), { timeout: 3000, timeoutMsg: `one step back: ${await now()}` });
  await browser.waitUntil(async () => /^test__add\(/.test((await marked())[0] ?? ""), { timeout: 3000, timeoutMsg: `marked: ${JSON.stringify(await marked())}` });
  assert.equal(asked.adder.length + asked.report.length, before, "a replay asks no model");
  console.log(`screenshot: ${shot}`);
});
