import { describe, expect, it } from "vitest";
import { costShown, costTitle } from "./cost";

describe("a cost as the window shows it", () => {
  it("is the engine's text, never a number formatted here, and nothing or a dash when there is none", () => {
    // The number is the engine's, rounded; the text is what the command line prints for it too (`usage::dollars`).
    expect(costShown({ costText: "$0.00003", tokens: 12 })).toBe("$0.00003");
    expect(costShown({ costText: "$12.50", tokens: 9000 })).toBe("$12.50");
    expect(costShown({ costText: null, tokens: 0 })).toBe("");
    expect(costShown({ costText: "$0.00", tokens: 0 })).toBe("", );
    expect(costShown({ costText: null, tokens: 40 })).toBe("—");
    expect(costTitle({ costText: null, tokens: 40 })).toMatch(/no price/);
    expect(costTitle({ costText: null, tokens: 0 })).toBeUndefined();
  });

  it("marks a cost priced with the current settings, and says so on hover", () => {
    const old = { costText: "$0.006", tokens: 12, priced: "current" as const };
    expect(costShown(old)).toBe("$0.006*");
    expect(costTitle(old)).toMatch(/priced with your current settings/);
    expect(costShown({ ...old, priced: "kept" })).toBe("$0.006");
    expect(costTitle({ ...old, priced: "kept" })).toMatch(/prices the run kept/);
  });
});
