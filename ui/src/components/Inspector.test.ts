import { describe, expect, it } from "vitest";
import type { Node } from "../types";
import { getPath, readInput, setPath } from "./Inspector";

const agent = (extra: Partial<Node> = {}) => ({ id: "a", type: "agent", ...extra }) as Node;

describe("inspector fields", () => {
  it("reads and writes nested fields by their dotted key", () => {
    const n = agent({ for_each: { items: "state.xs" } } as Partial<Node>);
    expect(getPath(n, "for_each.items")).toBe("state.xs");
    expect(setPath(n, "for_each.concurrency", 4)).toEqual({ for_each: { items: "state.xs", concurrency: 4 } });
  });

  it("removes a nested object when its required field is cleared, and seeds it when another field creates it", () => {
    const n = agent({ retry: { max: 2, backoff_ms: 100 } } as Partial<Node>);
    expect(setPath(n, "retry.max", undefined)).toEqual({ retry: undefined });
    expect(setPath(agent(), "retry.backoff_ms", 250)).toEqual({ retry: { backoff_ms: 250, max: 1 } });
  });

  it("drops tool flags that are turned off, and the tools object with the last one", () => {
    const n = agent({ tools: { subagents: true } } as Partial<Node>);
    expect(setPath(n, "tools.web_search", true)).toEqual({ tools: { subagents: true, web_search: true } });
    expect(setPath(n, "tools.subagents", undefined)).toEqual({ tools: undefined });
  });

  it("clears a top-level field set to an empty value", () => {
    expect(setPath(agent({ model: "local/x" }), "model", "")).toEqual({ model: undefined });
  });
});

describe("the start node's input", () => {
  it("is read as JSON when it is JSON, and as plain text otherwise, as the command line reads --input", () => {
    expect(readInput('{"ticket": 42}')).toEqual({ value: { ticket: 42 }, readAs: "json" });
    expect(readInput("[1, 2]")).toEqual({ value: [1, 2], readAs: "json" });
    expect(readInput("my cat is hungry")).toEqual({ value: "my cat is hungry", readAs: "text" });
    expect(readInput("{not json")).toEqual({ value: "{not json", readAs: "text" });
    expect(readInput("   ")).toEqual({ value: undefined, readAs: "empty" });
  });
});
