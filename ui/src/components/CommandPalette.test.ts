import { describe, expect, it } from "vitest";
import type { Node } from "../types";
import { matches, nodeSearchText } from "./CommandPalette";

describe("find", () => {
  const gather = { id: "gather", type: "agent", name: "Gather context", user_prompt: "Collect the logs" } as Node;
  const triage = { id: "investigate", type: "agent", name: "Root cause", user_prompt: "Classify with the schema: {{ gather.text }}" } as Node;

  it("matches every word typed as a plain substring of a node's name, id, type or prompt", () => {
    expect(matches(nodeSearchText(gather), "gath")).toBe(true);
    expect(matches(nodeSearchText(gather), "CONTEXT")).toBe(true);
    expect(matches(nodeSearchText(gather), "logs collect")).toBe(true);
    expect(matches(nodeSearchText(triage), "schema")).toBe(true);
  });

  it("does not match letters scattered through the text, as fuzzy matching would", () => {
    expect(matches("grab a tight hat", "gath")).toBe(false);
    expect(matches(nodeSearchText(gather), "gather zebra")).toBe(false);
  });
});
