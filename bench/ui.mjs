// `npm run bench:ui`: the built UI in headless Chromium with IPC mocked (ui/bench.html). Prints JSON lines:
// open_2000_ms (open a 2,000-node workflow until painted), pan_fps (frames per second while panning it),
// events_per_s and lost_final_statuses (10,000 run events per second through the app's per-frame batching).
import { createServer } from "node:http";
import { readFile } from "node:fs/promises";
import { extname, join, resolve } from "node:path";
import { chromium } from "playwright-core";
import { chromiumPath, HEADLESS } from "../scripts/chromium.mjs";

const executablePath = chromiumPath();

const dist = resolve(import.meta.dirname, "../dist");
const types = { ".html": "text/html", ".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml" };
const server = createServer(async (req, res) => {
  const path = join(dist, decodeURIComponent(new URL(req.url, "http://x").pathname));
  try {
    const body = await readFile(path.endsWith("/") ? join(path, "index.html") : path);
    res.writeHead(200, { "content-type": types[extname(path)] ?? "application/octet-stream" });
    res.end(body);
  } catch {
    res.writeHead(404).end();
  }
});
await new Promise((r) => server.listen(0, "127.0.0.1", r));
const base = `http://127.0.0.1:${server.address().port}`;

const browser = await chromium.launch({
  executablePath,
  args: HEADLESS,
});
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  const opens = [];
  for (let i = 0; i < 3; i++) {
    await page.goto(`${base}/bench.html?nodes=2000`);
    await page.evaluate(() => window.__benchReady);
    opens.push(await page.evaluate(() => window.__bench.open_ms));
  }
  const open = Math.min(...opens);
  console.log(JSON.stringify({ metric: "open_2000_ms", value: open, runs: opens, target: "< 1000", ok: open < 1000 }));

  // Pan by dragging the empty canvas for ~2 s (as a person does) and count the frames the page painted.
  await page.evaluate(() => {
    window.__frames = 0;
    window.__counting = true;
    const tick = () => {
      window.__frames++;
      if (window.__counting) requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
  });
  const started = Date.now();
  await page.mouse.move(700, 520);
  await page.mouse.down();
  let step = 0;
  while (Date.now() - started < 2000) {
    const x = 700 + 300 * Math.sin(step / 15);
    const y = 520 + 120 * Math.cos(step / 20);
    await page.mouse.move(x, y);
    step++;
  }
  await page.mouse.up();
  const fps = await page.evaluate(() => {
    window.__counting = false;
    return window.__frames;
  }) / ((Date.now() - started) / 1000);
  console.log(JSON.stringify({ metric: "pan_fps", value: Math.round(fps), target: ">= 50", ok: fps >= 50 }));

  // Capacity: 50,000 events offered as fast as the page takes them.
  const burst = await page.evaluate(() => window.__sendEvents(50000, 1e9));
  const perSecond = Math.round(burst.applied / burst.seconds);
  console.log(JSON.stringify({ metric: "events_per_s", value: perSecond, applied: burst.applied, seconds: Number(burst.seconds.toFixed(2)), target: ">= 10000", ok: perSecond >= 10000 && burst.lost === 0 }));
  // Steady: 10,000 events per second for a second; every node must end in the status its last event gave it.
  const steady = await page.evaluate(() => window.__sendEvents(10000, 10000));
  console.log(JSON.stringify({ metric: "lost_final_statuses", value: steady.lost + burst.lost, at_10000_per_s: steady.lost, in_burst: burst.lost, target: 0, ok: steady.lost + burst.lost === 0 }));
} finally {
  await browser.close();
  server.close();
}
