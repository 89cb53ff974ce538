// The app under test: a fresh window of the real Tauri binary (embedded UI) per test file, through tauri-driver.
import { execFileSync, spawn } from "node:child_process";
import { closeSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync } from "node:fs";
import { connect, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { after, afterEach, before } from "node:test";
import { remote } from "webdriverio";
import { click, pointOf } from "./gestures.mjs";

export const root = resolve(import.meta.dirname, "..");
export const appBinary = join(root, "target/debug/switchyard-app");
export const work = mkdtempSync(join(tmpdir(), "switchyard-e2e-"));

/**
 * The tauri-driver of each window this test file launched, newest last. Each window gets a driver of its own (and so a
 * WebKitWebDriver of its own, which holds one session at most): a window a failed test left open, or whose session
 * was never ended, can then never keep the next window from opening ("Maximum number of active sessions").
 */
const drivers = [];
const windowDriver = new WeakMap();

/** Ends a driver's whole process group: tauri-driver, its WebKitWebDriver and any app window it still holds. */
function stopDriver(driver) {
  try {
    process.kill(-driver.pid, "SIGKILL");
  } catch {
    /* it had ended already */
  }
}
process.on("exit", () => drivers.forEach(stopDriver));

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

const listening = (port) =>
  new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => (socket.destroy(), resolve(true)));
    socket.once("error", () => resolve(false));
  });

/** Starts a tauri-driver on free ports, in a process group of its own, and waits until it takes connections. */
async function startDriver() {
  const [port, nativePort] = [await freePort(), await freePort()];
  mkdirSync(join(root, "target"), { recursive: true });
  const log = openSync(join(root, "target/tauri-driver.log"), "a");
  const driver = spawn("tauri-driver", ["--port", String(port), "--native-port", String(nativePort)], { detached: true, stdio: ["ignore", log, log] });
  closeSync(log);
  driver.unref(); // the test file's process ends when its tests do; its exit handler then stops the driver
  drivers.push(driver);
  const ended = new Promise((resolve) => driver.once("exit", () => resolve(true)));
  for (const deadline = Date.now() + 15000; !(await listening(port)); ) {
    const gone = await Promise.race([ended, new Promise((r) => setTimeout(() => r(false), 100))]);
    if (gone || Date.now() > deadline) {
      stopDriver(driver);
      throw new Error(`tauri-driver did not take connections on port ${port} (see target/tauri-driver.log)`);
    }
  }
  return { driver, port };
}

export async function launch() {
  // A window an earlier test left behind goes first, with its driver: each test starts from one fresh window.
  drivers.forEach(stopDriver);
  const { driver, port } = await startDriver();
  const browser = await remote({
    hostname: "127.0.0.1",
    port,
    logLevel: "error",
    capabilities: { "tauri:options": { application: appBinary }, "wdio:enforceWebDriverClassic": true },
  });
  windowDriver.set(browser, driver);
  // WebKitWebDriver's "get element text" returns nothing for text near the app's SVG icons (its visibility atom fails
  // on them). A person reads what is rendered: the element's innerText, which is empty for what is hidden.
  await browser.overwriteCommand("getText", async function () {
    return browser.execute((el) => el.innerText, this);
  }, true);
  try {
    await browser.$('[data-testid="node-start"]').waitForExist({ timeout: 20000 });
  } catch (error) {
    // A window that never showed its canvas still holds WebKitWebDriver's one session: end it, or every later launch
    // fails with "Maximum number of active sessions" instead of its own error.
    await browser.saveScreenshot(shotPath("launch-failed")).catch(() => undefined);
    await browser.deleteSession().catch(() => undefined);
    throw error;
  }
  return browser;
}

/** One app window for the tests of a file: opened before the first test, closed after the last. */
export function appForFile(onOpen) {
  let browser;
  before(async () => {
    browser = await launch();
    onOpen(browser);
  });
  // A picture of the window after each test, to look at when one fails (target/e2e-shots/).
  afterEach(async (t) => {
    await browser?.saveScreenshot(shotPath(t.name)).catch(() => undefined);
  });
  after(async () => {
    await browser?.deleteSession().catch(() => undefined);
  });
}

/** Where the picture of the window after test `name` goes. */
export function shotPath(name) {
  const dir = join(root, "target/e2e-shots");
  mkdirSync(dir, { recursive: true });
  return join(dir, `${name.replace(/[^\w]+/g, "-").slice(0, 80)}.png`);
}

/**
 * Where a picture meant for the docs goes: docs/screenshots/ only when scripts/screenshot.sh asks for it (SCREENSHOTS),
 * else beside the other pictures of a test run, so `npm test` never writes into the tracked tree.
 */
export function docsShotPath(name) {
  if (process.env.SCREENSHOTS) return join(process.env.SCREENSHOTS, `${name}.png`);
  return shotPath(`docs-${name}`);
}

/** The selector of a node's card on the canvas. */
export const nodeSel = (id) => `[data-testid="node-${id}"]`;

export const nodeEl = (browser, id) => browser.$(`[data-testid="node-${id}"]`);
export const statusOf = async (browser, id) => (await nodeEl(browser, id)).getAttribute("data-status");

export async function waitStatus(browser, id, wanted, timeout = 15000) {
  await browser.waitUntil(async () => (await statusOf(browser, id)) === wanted, { timeout, timeoutMsg: `${id} never became ${wanted} (is ${await statusOf(browser, id)})` });
}

/** Every message shown (information and errors), newest last. */
export async function messages(browser) {
  return browser.execute(() => [...document.querySelectorAll('[data-testid="message"], [data-testid="message-error"]')].map((m) => m.textContent));
}

export async function waitMessage(browser, pattern, timeout = 8000) {
  await browser.waitUntil(async () => (await messages(browser)).some((m) => pattern.test(m)), { timeout, timeoutMsg: `no message matching ${pattern} (saw ${JSON.stringify(await messages(browser))})` });
}

/**
 * Opens a file through the Open button; only the OS dialogs are replaced (they cannot be driven over WebDriver): the
 * file picker names `path`, and "Discard unsaved changes?" is answered yes.
 */
export async function openFile(browser, path) {
  await browser.execute((p) => (window.__switchyardDialog = { open: p, discard: true }), path);
  await click(browser, await pointOf(browser, '[data-testid="open"]')); // the pointer, as a person clicks it
  const name = path.split("/").pop().replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  await waitMessage(browser, new RegExp(`(Opened|Imported).*${name}`));
  await browser.execute(() => delete window.__switchyardDialog);
}

/** The document as the app holds it, read from the canvas (ids of nodes and edges on screen or not). */
export async function graph(browser) {
  return browser.execute(() => ({
    nodes: [...document.querySelectorAll(".react-flow__node")].map((n) => n.getAttribute("data-id")),
    edges: [...document.querySelectorAll(".react-flow__edge")].map((e) => e.getAttribute("data-testid").replace("rf__edge-", "")),
    selectedNodes: [...document.querySelectorAll(".react-flow__node.selected")].map((n) => n.getAttribute("data-id")),
    selectedEdges: [...document.querySelectorAll(".react-flow__edge.selected")].map((e) => e.getAttribute("data-testid").replace("rf__edge-", "")),
  }));
}

export async function problemsText(browser) {
  await (await browser.$('[data-testid="tab-problems"]')).click();
  return (await browser.$('[data-testid="problems"]')).getText();
}

/** Resolves after the page has painted twice: a change made by the last action is on screen. */
export async function frames(browser) {
  await browser.execute(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
}

/** Fits the whole workflow in view (Shift+1, as a person would) and waits for it to be drawn. */
export async function fit(browser) {
  await browser.performActions([{ type: "key", id: "keyboard", actions: [{ type: "keyDown", value: "\uE008" }, { type: "keyDown", value: "1" }, { type: "keyUp", value: "1" }, { type: "keyUp", value: "\uE008" }] }]);
  await browser.releaseActions();
  await frames(browser);
}

/** The process id of the app window `browser` drives: the `switchyard-app` started (through WebKitWebDriver) by its tauri-driver. */
export function appPid(browser) {
  const driver = windowDriver.get(browser)?.pid;
  const parentOf = (pid) => Number(readFileSync(`/proc/${pid}/stat`, "utf8").replace(/^.*\) /, "").split(" ")[1]);
  const found = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (!readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0")[0].endsWith("switchyard-app")) continue;
      for (let p = Number(entry), hops = 0; p > 1 && hops < 6; p = parentOf(p), hops++) if (p === driver) found.push(Number(entry));
    } catch {
      /* a process that ended while we looked */
    }
  }
  if (found.length !== 1) throw new Error(`expected one app process under tauri-driver ${driver}, found ${JSON.stringify(found)}`);
  return found[0];
}

/** Whether process `pid` is still running (a zombie counts as ended). */
export function alive(pid) {
  try {
    return !/^\S+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}

/** Presses the window's close button: the X client message a window manager sends (e2e/close-window.py). */
export async function pressCloseButton(pid) {
  execFileSync("python3", [join(root, "e2e/close-window.py"), String(pid)], { stdio: "pipe" });
}
