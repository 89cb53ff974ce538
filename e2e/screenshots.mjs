// Pictures of the main views for docs/screenshots/ (scripts/screenshot.sh), taken from the real app driven with
// real gestures. Not part of `npm test`; look at every picture before calling a view done.
import { test } from "node:test";
import { join } from "node:path";
import { chord, click, drag, edgeMidpoint, emptyCanvasNear, KEY, pointOf, rightClick, type } from "./gestures.mjs";
import { appForFile, fit, openFile, root, waitStatus } from "./harness.mjs";

const out = process.env.SCREENSHOTS ?? join(root, "docs/screenshots");
let browser;
appForFile((b) => (browser = b));

/** Waits for the canvas to settle (two frames after the last change), then saves a picture. */
async function shot(name) {
  await browser.execute(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
  await browser.saveScreenshot(join(out, `${name}.png`));
}

test("main views", async () => {
  await openFile(browser, join(root, "examples/alert-triage.yaml"));
  await shot("canvas"); // as it opens: readable zoom around the start node
  await fit(browser);
  await shot("canvas-fit");

  await click(browser, await edgeMidpoint(browser, "investigate->create_issue"));
  await shot("edge-inspector");

  await rightClick(browser, await pointOf(browser, ".react-flow__pane", 0.06, 0.9));
  await shot("pane-menu");
  await chord(browser, [KEY.escape]);

  const from = await pointOf(browser, '[data-testid="node-notify"] .react-flow__handle[data-handleid="output"]');
  await drag(browser, from, await emptyCanvasNear(browser, { x: from.x + 60, y: from.y + 110 }, { minDistance: 0 }));
  await shot("connect-picker");
  await chord(browser, [KEY.escape]);

  await click(browser, await pointOf(browser, '[data-testid="run"]'));
  await waitStatus(browser, "notify", "succeeded");
  await click(browser, await pointOf(browser, '[data-testid="node-investigate"] .wf-title'));
  await click(browser, await pointOf(browser, '[data-testid="tab-last-run"]'));
  await shot("run");

  await openFile(browser, join(root, "examples/approval-flow.yaml"));
  await fit(browser);
  await click(browser, await pointOf(browser, '[data-testid="run"]'));
  await waitStatus(browser, "review", "waiting");
  await shot("approval-dialog");
  await click(browser, await pointOf(browser, '[data-testid="approval-later"]'));
  await shot("approval");
  await click(browser, await pointOf(browser, '[data-testid="review-review"]'));
  await click(browser, await pointOf(browser, '[data-testid="approval-approve"]'));
  await waitStatus(browser, "publish", "succeeded");
  await click(browser, await pointOf(browser, '[data-testid="tab-history"]'));
  await shot("history");
  await click(browser, await pointOf(browser, '[data-testid^="history-replay-"]'));
  await (await browser.$('[data-testid="replay-bar"]')).waitForDisplayed({ timeout: 10000 });
  await waitStatus(browser, "publish", "succeeded", 30000);
  const a = await pointOf(browser, '[data-testid="replay-timeline"]', 0.99, 0.5);
  const b = await pointOf(browser, '[data-testid="replay-timeline"]', 0.45, 0.5);
  await drag(browser, a, b);
  await shot("replay");
  await click(browser, await pointOf(browser, '[data-testid="replay-close"]'));

  await chord(browser, [KEY.control, "k"]);
  await (await browser.$('[data-testid="find"]')).waitForDisplayed({ timeout: 3000 });
  await type(browser, "pub");
  await shot("find");
  await chord(browser, [KEY.escape]);

  await click(browser, await pointOf(browser, '[data-testid="new"]'));
  await browser.waitUntil(async () => /local\//.test(await (await browser.$('[data-testid="run-model"]')).getText()), { timeout: 5000 });
  await shot("new-workflow"); // the model found on this computer, named in the toolbar

  await openFile(browser, join(root, "../shared/fixtures/sweny/triage.yml"));
  await shot("import-sweny");
  await openFile(browser, join(root, "../shared/fixtures/the_edge_agent/parallel_fanout.yaml"));
  await shot("import-tea");

  await click(browser, await pointOf(browser, '[data-testid="settings-button"]'));
  await (await browser.$('[data-testid="settings"]')).waitForDisplayed({ timeout: 5000 }); // loaded on first use
  await shot("settings");
  await chord(browser, [KEY.escape]);
  await (await browser.$('[data-testid="settings"]')).waitForExist({ reverse: true, timeout: 3000 });

  await click(browser, await pointOf(browser, '[data-testid="theme"]'));
  await openFile(browser, join(root, "examples/review-fix-loop.yaml"));
  await fit(browser);
  await click(browser, await pointOf(browser, '[data-testid="run"]'));
  await waitStatus(browser, "done", "succeeded");
  await shot("dark");
  await click(browser, await pointOf(browser, '[data-testid="theme"]'));
});
