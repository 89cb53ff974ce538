// Fork from here, end to end with real gestures: an agent that adds two numbers with a real MCP server's `add` in two
// model turns runs on a model server on 127.0.0.1 (answering the OpenAI way, deterministically, counting what it is
// asked); its Last run tab lists the turns; Fork from here on turn 2, the answer edited with the keyboard, Run fork:
// the new run's agent says the edited answer, the node after it reads it, the model was not asked turn 1 (nor turn 2)
// again, and History links the fork to the run it forked.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { chord, click, KEY, pointOf, type } from "./gestures.mjs";
import { appForFile, nodeSel, root, waitStatus, work } from "./harness.mjs";
import { openAndRun, sumAgent } from "./sum-agent.mjs";

/** What the model server was asked, per node: `adder` is offered tools, `report` is not. */
const asked = sumAgent();

let browser;
appForFile((b) => (browser = b));

/** The text of each entry of the Conversation shown, in order. */
const conversation = () => browser.execute(() => [...document.querySelectorAll('[data-testid="conversation"] li')].map((li) => `${li.dataset.testid}: ${li.innerText.replace(/\s+/g, " ").trim()}`));

/** The node's output as the Last run tab shows it. */
const output = async () => JSON.parse(await browser.execute(() => document.querySelector('[data-testid="run-output"]')?.textContent ?? "null"));

/** The stored run, as `switchyard show --json` prints it. */
const shown = (id) => JSON.parse(execFileSync(join(root, "target/debug/switchyard"), ["show", id, "--json"], { encoding: "utf8" }));

test("an agent's turns are listed in its Last run tab; Fork from here on turn 2 with an edited answer runs on from it without asking turn 1 again", async () => {
  await openAndRun(browser, "fork-sum.yaml", asked);
  assert.equal(asked.report.length, 1);

  // Its Last run tab lists the turns.
  await click(browser, await pointOf(browser, nodeSel("adder")));
  await click(browser, await pointOf(browser, '[data-testid="tab-last-run"]'));
  await browser.$('[data-testid="conversation"]').waitForDisplayed({ timeout: 10000 });
  const turns = await conversation();
  assert.equal(turns.length, 3, JSON.stringify(turns));
  // Each with how long it took.
  assert.match(turns[0], /^turn: Turn 1 · 25 tokens · [\d.]+ m?s\s*Fork from here\s*asks test__add\(\{"a":20,"b":22\}\)$/, JSON.stringify(turns));
  assert.match(turns[1], /^turn-tool: test__add\(\{"a":20,"b":22\}\) → .*42.* · [\d.]+ m?s$/, JSON.stringify(turns));
  assert.match(turns[2], /^turn: Turn 2 · 25 tokens · [\d.]+ m?s\s*Fork from here\s*The sum is .*42.*\.$/, JSON.stringify(turns));

  // Fork from here on turn 2: the dialog shows what the model said there; the answer is edited with the keyboard.
  await click(browser, await pointOf(browser, '[data-testid="fork-turn-2"]'));
  const answerBox = await browser.$('[data-testid="fork-answer"]');
  await answerBox.waitForDisplayed({ timeout: 3000 });
  assert.match(await answerBox.getValue(), /^The sum is .*42.*\.$/);
  await click(browser, await pointOf(browser, '[data-testid="fork-answer"]'));
  await chord(browser, [KEY.control, "a"]);
  await type(browser, "The sum is 43, said the fork.");
  await browser.waitUntil(async () => (await answerBox.getValue()) === "The sum is 43, said the fork.", { timeout: 3000, timeoutMsg: `typed: ${await answerBox.getValue()}` });
  await browser.saveScreenshot(join(work, "fork-dialog.png"));
  const before = { adder: asked.adder.length, report: asked.report.length };
  await click(browser, await pointOf(browser, '[data-testid="fork-run"]'));
  await browser.$('[data-testid="fork-dialog"]').waitForExist({ reverse: true, timeout: 3000 });

  // The new run on the canvas: `adder` says the edited answer, and `report` (live from there) read it.
  await browser.waitUntil(async () => (await output())?.text === "The sum is 43, said the fork.", { timeout: 30000, timeoutMsg: `adder's output: ${JSON.stringify(await output())}` });
  await waitStatus(browser, "report", "succeeded", 60000);
  await browser.waitUntil(async () => asked.report.length === before.report + 1, { timeout: 30000, timeoutMsg: "report was not asked" });
  assert.equal(asked.adder.length, before.adder, "the model was not asked adder's turn 1 (nor turn 2) again");
  assert.match(asked.report.at(-1), /^Report: The sum is 43, said the fork\./);
  // Its conversation: turn 1 and its tool call taken from the run it forked, then the answer given.
  await browser.waitUntil(async () => (await conversation()).some((t) => t.startsWith("turn-said")), { timeout: 10000, timeoutMsg: `conversation: ${JSON.stringify(await conversation())}` });
  const forkedTurns = await conversation();
  assert.equal(forkedTurns.length, 3, JSON.stringify(forkedTurns));
  assert.match(forkedTurns[0], /^turn: Turn 1 · 25 tokens/);
  assert.match(forkedTurns[2], /^turn-said: The answer given for this fork\s*The sum is 43, said the fork\.$/);
  await browser.saveScreenshot(join(work, "fork-last-run.png"));

  // History links the fork to the run it forked; the stored runs say the same.
  await click(browser, await pointOf(browser, '[data-testid="tab-history"]'));
  const link = await browser.$('[data-testid^="history-fork-"]');
  await link.waitForDisplayed({ timeout: 10000 });
  const forkId = (await link.getAttribute("data-testid")).replace("history-fork-", "");
  const forkedId = await browser.execute((id) => [...document.querySelectorAll('[data-testid^="history-"][data-status]')].map((r) => r.dataset.testid.replace("history-", "")).find((r) => r !== id), forkId);
  assert.equal(await link.getText(), `fork of ${forkedId.slice(0, 8)}`);
  const whole = await browser.execute((id) => {
    const link = document.querySelector(`[data-testid="history-fork-${id}"]`);
    const [l, c] = [link.getBoundingClientRect(), link.closest("td").getBoundingClientRect()];
    return l.width > 0 && l.right <= c.right + 1 && l.bottom <= c.bottom + 1;
  }, forkId);
  assert.ok(whole, "the link is seen whole, not cut off by its column");
  await browser.saveScreenshot(join(work, "fork-history.png"));
  // Pressing it shows the run it forked on the canvas: adder's answer as the model gave it.
  await click(browser, await pointOf(browser, `[data-testid="history-fork-${forkId}"]`));
  const rows = () => browser.execute(() => [...document.querySelectorAll('[data-testid="run-list"] tbody tr')].map((r) => r.innerText.replace(/\s+/g, " ").trim()));
  await browser.waitUntil(async () => (await rows()).some((r) => /^Adder .*The sum is \{"result":42\}\.$/.test(r)), { timeout: 10000, timeoutMsg: `run list: ${JSON.stringify(await rows())}` });
  const fork = shown(forkId);
  assert.equal(fork.results.adder.data.text, "The sum is 43, said the fork.");
  assert.match(fork.results.report.data.text, /^Reported: The sum is 43, said the fork\./);
  // Turn 1 and its tool call are the forked run's journal entries (the model server counted no new ask), then the answer.
  assert.deepEqual(fork.turns.adder.map((e) => [e.kind, e.at]), [["turn", "t0"], ["tool", "c0"], ["said", "t1"]], JSON.stringify(fork.turns));
  // (Where and when they were kept is the forked run's: the fork's own log keeps neither for them.)
  const asKept = ({ seq, ts, ms, ...entry }) => (assert.ok(seq > 0 && ts && ms >= 0), entry);
  assert.deepEqual(fork.turns.adder.slice(0, 2), shown(forkedId).turns.adder.slice(0, 2).map(asKept));
  assert.equal(fork.turns.adder[2].text, "The sum is 43, said the fork.");
  console.log(`screenshots: ${join(work, "fork-dialog.png")}, ${join(work, "fork-last-run.png")}, ${join(work, "fork-history.png")}`);
});
