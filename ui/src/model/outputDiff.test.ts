import { describe, expect, it } from "vitest";
import { outputDiff } from "./outputDiff";

const marked = (pieces: { text: string; changed: boolean }[]) => pieces.map((p) => (p.changed ? `[${p.text}]` : p.text)).join("");

describe("two outputs side by side", () => {
  it("marks the words only on each side, and each side reads as its text", () => {
    const d = outputDiff("Round 3 of the review", "Round 2 of the review, again");
    expect(marked(d.before)).toBe("Round [3] of the review");
    expect(marked(d.after)).toBe("Round [2] of the review[, again]");
    expect(d.before.map((p) => p.text).join("")).toBe("Round 3 of the review");
    expect(d.after.map((p) => p.text).join("")).toBe("Round 2 of the review, again");
  });

  it("marks nothing when the outputs are the same", () => {
    const d = outputDiff("Looks good.", "Looks good.");
    expect(d.before).toEqual([{ text: "Looks good.", changed: false }]);
    expect(d.after).toEqual([{ text: "Looks good.", changed: false }]);
  });

  it("compares long outputs line by line", () => {
    const lines = Array.from({ length: 400 }, (_, i) => `line ${i} of a long answer`);
    const after = [...lines];
    after[200] = "a line that changed";
    const d = outputDiff(lines.join("\n"), after.join("\n"));
    expect(d.before.filter((p) => p.changed).map((p) => p.text)).toEqual(["line 200 of a long answer\n"]);
    expect(d.after.filter((p) => p.changed).map((p) => p.text)).toEqual(["a line that changed\n"]);
  });
});
