// A run of this computer that another process runs (`switchyard run` in a terminal, sharing the app's run store):
// History lists it while it runs, Open shows it, and the canvas follows it live until it ends.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { click, pointOf } from "./gestures.mjs";
import { appForFile, root, waitMessage, waitStatus, work } from "./harness.mjs";

const cli = join(root, "target/debug/switchyard");

let browser;
appForFile((b) => (browser = b));

/** The runs of the app's store, as the CLI lists them (the environment names the same store). */
function runs() {
  return JSON.parse(execFileSync(cli, ["runs", "--json"], { cwd: root, encoding: "utf8" }));
}

test("a run started in a terminal is listed in History while it runs, and Open follows it live to its end", async () => {
  const answers = join(work, "slow-approval.script.yaml");
  // Slow enough to be opened while it runs: the draft takes 4 s, the approval is decided by the file, and the
  // publish step takes 4 s more.
  writeFileSync(answers, `nodes:
  draft:
    - {text: "Dark mode arrives next week.", delay_ms: 4000}
  publish:
    - {text: "<h1>Dark mode</h1>", delay_ms: 4000}
approvals:
  review: {decision: approve, note: "ship it"}
`);
  const before = new Set(runs().map((r) => r.id));
  const terminal = spawn(cli, ["run", join(root, "examples/approval-flow.yaml"), "--answers", answers], { cwd: root, stdio: "ignore" });
  const ended = new Promise((resolve) => terminal.on("exit", resolve));
  let id;
  await browser.waitUntil(
    () => {
      id = runs().find((r) => !before.has(r.id) && r.status === "running")?.id;
      return Boolean(id);
    },
    { timeout: 15000, interval: 100, timeoutMsg: "the terminal's run never showed as running" },
  );

  // History reads the store when it is shown: the terminal's run is there, running, and not this window's.
  await click(browser, await pointOf(browser, '[data-testid="tab-history"]'));
  const row = await browser.$(`[data-testid="history-${id}"]`);
  await row.waitForDisplayed({ timeout: 10000 });
  assert.equal(await row.getAttribute("data-status"), "running");
  await click(browser, await pointOf(browser, `[data-testid="history-open-${id}"]`));
  await waitMessage(browser, /following it live/);

  // The canvas hears what the terminal's process writes: the draft ends, the approval is taken, publish runs.
  await waitStatus(browser, "draft", "succeeded", 15000);
  await waitStatus(browser, "publish", "succeeded", 20000);
  assert.equal(await (await browser.$('[data-testid="node-revise"]')).getAttribute("data-status"), "skipped");
  assert.equal(await ended, 0, "the terminal's run completed");
  // History, shown again, says so too.
  await click(browser, await pointOf(browser, '[data-testid="tab-history"]'));
  await browser.waitUntil(async () => (await browser.$(`[data-testid="history-${id}"]`).getAttribute("data-status")) === "completed", {
    timeout: 10000,
    timeoutMsg: "History never said the run completed",
  });
});
