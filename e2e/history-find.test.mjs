// History as a person uses it once runs pile up: runs made in a terminal (`switchyard run`, sharing the app's run
// store), found in the app by status, by the short id History prints, and by the workflow's name, and the list paged
// with Show more. Every gesture is the pointer or the keyboard.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { chord, click, KEY, pointOf, type } from "./gestures.mjs";
import { appForFile, root, shotPath, work } from "./harness.mjs";

const cli = join(root, "target/debug/switchyard");

let browser;
appForFile((b) => (browser = b));

/** The ids of the runs History shows now, top to bottom. */
const shownIds = () => browser.execute(() => [...document.querySelectorAll('[data-testid="history"] tbody tr')].map((r) => r.getAttribute("data-testid").replace(/^history-/, "")));

/** Where to press `selector`, scrolled into view first as a person scrolls the list to it. */
async function reach(selector) {
  await browser.execute((sel) => document.querySelector(sel).scrollIntoView({ block: "center" }), selector);
  return pointOf(browser, selector);
}

/** Puts the search box's text to `text` as a person does: click in it, select what is there, type. */
async function search(text) {
  await click(browser, await reach('[data-testid="history-search"]'));
  await chord(browser, [KEY.control, "a"]);
  if (text) await type(browser, text);
  else await chord(browser, [KEY.backspace]);
}

test("History finds a failed run by its status, a run by the short id it prints and by its workflow, and Show more lists the rest", async () => {
  // 104 runs of one workflow made in a terminal, and one that fails: more than History's first page (100 rows).
  const name = `paging ${process.pid}`;
  const wf = join(work, "paging.yaml");
  writeFileSync(wf, `switchyard: 1\nname: ${name}\nnodes:\n  - {id: start, type: start}\n  - {id: say, type: agent, user_prompt: Hello}\nedges:\n  - {from: start, to: say}\n`);
  const ok = join(work, "paging.script.yaml");
  writeFileSync(ok, "nodes: {say: {text: hi}}\n");
  const bad = join(work, "paging-fails.script.yaml");
  writeFileSync(bad, 'nodes: {say: {status: failed, error: "the model server said no"}}\n');
  const idOf = (json) => JSON.parse(json).runId;
  const made = [];
  for (let i = 0; i < 104; i++) made.push(idOf(execFileSync(cli, ["run", wf, "--answers", ok, "--json"], { cwd: root, encoding: "utf8" })));
  let failedId;
  try {
    execFileSync(cli, ["run", wf, "--answers", bad, "--json"], { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  } catch (e) {
    failedId = idOf(e.stdout);
  }
  assert.ok(failedId, "the run on the failing answers failed, as the terminal says");

  // History, every workflow's runs, then only what failed: the status list is set with the keyboard (Shift+Tab from
  // the search box to it, then the first letters of "failed"), as a person does without opening its menu.
  await click(browser, await pointOf(browser, '[data-testid="tab-history"]'));
  await click(browser, await pointOf(browser, '[data-testid="history"] input[type="checkbox"]')); // Show every workflow's runs
  await browser.$(`[data-testid="history-${made[made.length - 1]}"]`).waitForExist({ timeout: 10000 });
  await search(name);
  await browser.waitUntil(async () => (await shownIds()).length === 100, { timeout: 5000, timeoutMsg: "the first page of the search is not 100 rows" });
  const more = await browser.$('[data-testid="history-more"]');
  assert.match(await more.getText(), /Show more \(5 more\)/);
  await click(browser, await reach('[data-testid="history-more"]')); // below the hundredth row
  await browser.waitUntil(async () => (await shownIds()).length === 105, { timeout: 5000, timeoutMsg: "Show more did not list the last 5 runs" });
  assert.deepEqual(new Set(await shownIds()), new Set([...made, failedId]), "the search lists the workflow's runs and nothing else");
  assert.equal(await browser.$('[data-testid="history-more"]').isExisting(), false, "nothing is left to show");

  await click(browser, await reach('[data-testid="history-search"]'));
  await chord(browser, [KEY.shift, KEY.tab]);
  assert.equal(await browser.execute(() => document.activeElement?.getAttribute("data-testid")), "history-status", "Shift+Tab reaches the status list");
  await type(browser, "fa");
  await browser.waitUntil(async () => (await shownIds()).join() === failedId, { timeout: 5000, timeoutMsg: `the status filter did not leave the failed run alone: ${JSON.stringify(await shownIds())}` });
  assert.equal(await browser.$(`[data-testid="history-${failedId}"]`).getAttribute("data-status"), "failed");
  await browser.saveScreenshot(shotPath("history-find-failed"));

  // Any status again (Home: the list's first choice), and the short id History prints finds the one run.
  await chord(browser, [KEY.home]);
  await browser.waitUntil(async () => (await shownIds()).length === 100, { timeout: 5000, timeoutMsg: "Home did not bring back every status" });
  const short = made[17].slice(0, 8);
  await search(short);
  await browser.waitUntil(async () => (await shownIds()).join() === made[17], { timeout: 5000, timeoutMsg: `the short id ${short} did not find its run alone: ${JSON.stringify(await shownIds())}` });
  const row = await (await browser.$(`[data-testid="history-${made[17]}"]`)).getText();
  assert.match(row, new RegExp(short), "the row prints the short id that found it");

  // A search nothing matches says so; clearing it lists runs again.
  await search("no such run anywhere");
  await browser.waitUntil(async () => /No run matches/.test(await (await browser.$('[data-testid="history"]')).getText()), { timeout: 5000, timeoutMsg: "an empty search says nothing" });
  await search("");
  await browser.waitUntil(async () => (await shownIds()).length === 100, { timeout: 5000, timeoutMsg: "clearing the search did not list the first page again" });
});
