// Real pointer and keyboard gestures for the end-to-end tests: WebDriver actions (pointer and key sources), never
// element.click() on a hidden seam. Coordinates are viewport CSS pixels taken from the page's own layout.

/**
 * The centre of the first element matching `selector` (or a point inside it at fractions fx, fy), once it is on
 * screen and has stopped moving: a view still gliding to a node (a reveal, a fit) would otherwise send the pointer
 * where it was a frame ago.
 */
export async function pointOf(browser, selector, fx = 0.5, fy = 0.5) {
  const p = await browser.execute(
    (sel, fx, fy) =>
      new Promise((resolve) => {
        const at = () => {
          const el = document.querySelector(sel);
          if (!el) return null;
          const r = el.getBoundingClientRect();
          return { x: Math.round(r.left + r.width * fx), y: Math.round(r.top + r.height * fy) };
        };
        let last = at();
        let frames = 0;
        // Not there yet (a panel that closes a frame later widens the canvas, and React Flow then draws the nodes
        // that came into view): it is waited for, as a person waits to see it, for up to 60 frames.
        const next = () => {
          const now = at();
          frames += 1;
          if ((now && last && now.x === last.x && now.y === last.y) || frames > 60) return resolve(now);
          last = now;
          requestAnimationFrame(next);
        };
        requestAnimationFrame(next);
      }),
    selector,
    fx,
    fy,
  );
  if (!p) throw new Error(`nothing on screen matches ${selector}`);
  return p;
}

/** A point on an edge's path, halfway along it, in viewport pixels. */
export async function edgeMidpoint(browser, edgeId, at = 0.5) {
  const p = await browser.execute(
    (id, at) => {
      const path = document.querySelector(`[data-testid="rf__edge-${CSS.escape(id)}"] path.react-flow__edge-path`);
      if (!path) return null;
      const q = path.getPointAtLength(path.getTotalLength() * at);
      // Map flow coordinates through the viewport's own transform (WebKit's getScreenCTM ignores CSS transforms).
      const viewport = document.querySelector(".react-flow__viewport");
      const m = new DOMMatrix(getComputedStyle(viewport).transform);
      const pane = viewport.parentElement.getBoundingClientRect();
      return { x: Math.round(pane.left + m.e + m.a * q.x), y: Math.round(pane.top + m.f + m.d * q.y) };
    },
    edgeId,
    at,
  );
  if (!p) throw new Error(`no edge ${edgeId} on screen`);
  return p;
}

/** What element (its closest data-testid, or tag and class) is at a point: for messages when a gesture misses. */
export async function whatIsAt(browser, { x, y }) {
  return browser.execute(
    (x, y) => {
      const el = document.elementFromPoint(x, y);
      const tagged = el?.closest("[data-testid]");
      return tagged ? tagged.getAttribute("data-testid") : el ? `${el.tagName.toLowerCase()}.${el.className}` : "nothing";
    },
    x,
    y,
  );
}

export const KEY = { shift: "\uE008", control: "\uE009", escape: "\uE00C", delete: "\uE017", backspace: "\uE003", tab: "\uE004", enter: "\uE007", home: "\uE011", left: "\uE012", right: "\uE014" };

async function perform(browser, pointerActions, modifiers = []) {
  const pointer = { type: "pointer", id: "mouse", parameters: { pointerType: "mouse" }, actions: pointerActions };
  if (!modifiers.length) {
    await browser.performActions([pointer]);
  } else {
    // Key and pointer sources tick together: hold the modifiers for the whole pointer sequence.
    const n = pointerActions.length;
    const keys = { type: "key", id: "keyboard", actions: [...modifiers.map((k) => ({ type: "keyDown", value: k })), ...Array.from({ length: n }, () => ({ type: "pause", duration: 0 })), ...modifiers.map((k) => ({ type: "keyUp", value: k }))] };
    const padded = { ...pointer, actions: [...Array.from({ length: modifiers.length }, () => ({ type: "pause", duration: 0 })), ...pointerActions, ...Array.from({ length: modifiers.length }, () => ({ type: "pause", duration: 0 }))] };
    await browser.performActions([keys, padded]);
  }
  await browser.releaseActions();
}

/** A click at a point, with modifier keys held (KEY.shift, KEY.control). */
export async function click(browser, { x, y }, { modifiers = [], button = 0 } = {}) {
  await perform(
    browser,
    [
      { type: "pointerMove", origin: "viewport", x, y, duration: 0 },
      { type: "pointerDown", button },
      { type: "pause", duration: 60 },
      { type: "pointerUp", button },
    ],
    modifiers,
  );
}

export const rightClick = (browser, point) => click(browser, point, { button: 2 });

/** A press, a movement in several steps (as a hand moves), a pause, and a release. */
export async function drag(browser, from, to, { modifiers = [], steps = 12 } = {}) {
  const moves = [];
  for (let i = 1; i <= steps; i++) moves.push({ type: "pointerMove", origin: "viewport", x: Math.round(from.x + ((to.x - from.x) * i) / steps), y: Math.round(from.y + ((to.y - from.y) * i) / steps), duration: 30 });
  await perform(
    browser,
    [
      { type: "pointerMove", origin: "viewport", x: from.x, y: from.y, duration: 0 },
      { type: "pointerDown", button: 0 },
      { type: "pause", duration: 80 },
      ...moves,
      { type: "pause", duration: 120 },
      { type: "pointerUp", button: 0 },
    ],
    modifiers,
  );
}

/** Keys pressed in order; a chord like [KEY.control, "z"] is held together. */
export async function chord(browser, keys) {
  await browser.performActions([{ type: "key", id: "keyboard", actions: [...keys.map((k) => ({ type: "keyDown", value: k })), ...keys.slice().reverse().map((k) => ({ type: "keyUp", value: k }))] }]);
  await browser.releaseActions();
}

/** Types text into whatever has focus, key by key. */
// Characters typed with Shift on a US keyboard, by the key that carries them: WebKitWebDriver under Xvfb sends the
// key without its shift, so these are typed as a person types them, Shift held.
const SHIFTED = { "{": "[", "}": "]", '"': "'", ":": ";", _: "-", "<": ",", ">": ".", "?": "/", "|": "\\", "~": "`", "!": "1", "@": "2", "#": "3", $: "4", "%": "5", "^": "6", "&": "7", "*": "8", "(": "9", ")": "0", "+": "=" };

export async function type(browser, text) {
  const keys = [...text].flatMap((c) => {
    const base = SHIFTED[c] ?? (c >= "A" && c <= "Z" ? c.toLowerCase() : null);
    if (base === null) return [{ type: "keyDown", value: c }, { type: "keyUp", value: c }];
    return [{ type: "keyDown", value: KEY.shift }, { type: "keyDown", value: base }, { type: "keyUp", value: base }, { type: "keyUp", value: KEY.shift }];
  });
  await browser.performActions([{ type: "key", id: "keyboard", actions: keys }]);
  await browser.releaseActions();
}

/** The nearest point to `near` (tried in rings, right of it first) where the canvas is empty: no node, edge or panel. */
export async function emptyCanvasNear(browser, near, { minDistance = 120 } = {}) {
  const p = await browser.execute(
    (x0, y0, min) => {
      const pane = document.querySelector(".react-flow__pane").getBoundingClientRect();
      const empty = (x, y) => {
        if (x < pane.left + 20 || x > pane.right - 20 || y < pane.top + 20 || y > pane.bottom - 20) return false;
        // Clear of everything within 45 px around: a dropped node has room, and no handle is near enough for the
        // connection to snap to it.
        for (const [dx, dy] of [[0, 0], [45, 0], [-45, 0], [0, 45], [0, -45], [32, 32], [-32, 32], [32, -32], [-32, -32]]) {
          const el = document.elementFromPoint(x + dx, y + dy);
          if (!el || !el.classList.contains("react-flow__pane")) return false;
        }
        return true;
      };
      for (let r = min; r < 600; r += 30)
        for (const a of [0, -0.4, 0.4, -0.8, 0.8, 1.6, -1.6, Math.PI])
          if (empty(x0 + r * Math.cos(a), y0 + r * Math.sin(a))) return { x: Math.round(x0 + r * Math.cos(a)), y: Math.round(y0 + r * Math.sin(a)) };
      return null;
    },
    near.x,
    near.y,
    minDistance,
  );
  if (!p) throw new Error(`no empty canvas near ${JSON.stringify(near)}`);
  return p;
}
