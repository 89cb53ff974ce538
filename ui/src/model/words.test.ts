import { describe, expect, it } from "vitest";
import { APP_FIX, inAppWords } from "./words";

describe("the app's words", () => {
  it("adds what to press in the app after a problem whose fix depends on where it is shown", () => {
    const said = inAppWords("`reply` has no model, and no model server answers on this machine", "NO_MODEL");
    expect(said).toMatch(/^`reply` has no model, and no model server answers on this machine\. Start a local model server/);
    expect(said).toMatch(/Settings/);
  });

  it("never names a command-line flag", () => {
    for (const fix of Object.values(APP_FIX)) expect(fix).not.toMatch(/--[a-z]|switchyard /);
  });

  it("leaves other problems as the engine says them", () => {
    expect(inAppWords("the edge has no target", "EDGE_TARGET_MISSING")).toBe("the edge has no target");
    expect(inAppWords("plain", undefined)).toBe("plain");
  });
});
