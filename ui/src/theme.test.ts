// Both themes keep every text colour readable: WCAG AA (4.5:1) against the background and panels they are drawn on.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const css = readFileSync(join(__dirname, "styles.css"), "utf8");

/** The custom properties of the first rule whose selector is exactly `selector`. */
function variables(selector: string): Record<string, string> {
  const vars: Record<string, string> = {};
  const rule = new RegExp(`(^|\\n)${selector.replace(/[[\]()"=]/g, "\\$&")}\\s*\\{([^}]*)\\}`, "g");
  for (const m of css.matchAll(rule)) for (const [, name, value] of m[2].matchAll(/--([\w-]+):\s*(#[0-9a-fA-F]{6})/g)) vars[name] = value;
  return vars;
}

const luminance = (hex: string) => {
  const [r, g, b] = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16) / 255).map((c) => (c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4));
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
};
const contrast = (a: string, b: string) => {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return (hi + 0.05) / (lo + 0.05);
};

const TEXT = ["fg", "muted", "ok", "bad", "warn", "wait", "run", "skip"];

describe("themes", () => {
  const light = variables(":root");
  const dark = { ...light, ...variables(':root[data-theme="dark"]') };
  for (const [name, theme] of [["light", light], ["dark", dark]] as const)
    it(`${name}: every text colour has AA contrast on the background and on panels`, () => {
      for (const text of TEXT)
        for (const surface of ["bg", "panel", "node"]) expect(contrast(theme[text], theme[surface]), `${text} on ${surface}`).toBeGreaterThanOrEqual(4.5);
      expect(contrast(theme["accent-fg"], theme["accent-bg"]), "primary button").toBeGreaterThanOrEqual(4.5);
    });
  for (const [name, theme] of [["light", light], ["dark", dark]] as const)
    it(`${name}: edges, handles and the minimap's nodes stand out 3:1 from what they are drawn on`, () => {
      for (const surface of ["bg", "panel"]) expect(contrast(theme["xy-edge-stroke"], theme[surface]), `edges on ${surface}`).toBeGreaterThanOrEqual(3);
      expect(contrast(theme["muted"], theme["node"]), "handles on a node").toBeGreaterThanOrEqual(3);
      expect(contrast(theme["minimap-node"], theme["minimap-bg"]), "minimap nodes").toBeGreaterThanOrEqual(3);
    });
});
