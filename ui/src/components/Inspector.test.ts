import { afterEach, describe, expect, it } from "vitest";
import type { Node } from "../types";
import { useNodeTypes, type FieldSpec, type NodeTypeSpec } from "../model/nodeTypes";
import generated from "../generated/node-types.json";
import { getPath, readInput, setPath } from "./Inspector";

const agent = (extra: Partial<Node> = {}) => ({ id: "a", type: "agent", ...extra }) as Node;

afterEach(() => useNodeTypes.getState().set(generated as NodeTypeSpec[]));

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

  it("takes what a nested object requires from the node type's catalogue, and seeds nothing the catalogue does not ask for", () => {
    const catalogue = [{ key: "retry.max", required: null }, { key: "retry.backoff_ms", required: 500 }] as FieldSpec[];
    expect(setPath(agent(), "retry.max", 3, catalogue)).toEqual({ retry: { max: 3, backoff_ms: 500 } });
    expect(setPath(agent({ retry: { max: 3, backoff_ms: 500 } } as Partial<Node>), "retry.backoff_ms", undefined, catalogue)).toEqual({ retry: undefined });
    expect(setPath(agent({ retry: { max: 3, backoff_ms: 500 } } as Partial<Node>), "retry.max", undefined, catalogue)).toEqual({ retry: { backoff_ms: 500 } });
    expect(setPath(agent(), "retry.backoff_ms", 250, [])).toEqual({ retry: { backoff_ms: 250 } });
  });

  it("reads the node type's fields from the catalogue the engine sent when none are given", () => {
    const specs = (generated as NodeTypeSpec[]).map((t) => (t.type !== "agent" ? t : { ...t, fields: t.fields.map((f) => (f.key === "retry.max" ? { ...f, required: 5 } : f)) }));
    useNodeTypes.getState().set(specs);
    expect(setPath(agent(), "retry.backoff_ms", 250)).toEqual({ retry: { backoff_ms: 250, max: 5 } });
    expect(setPath({ id: "s", type: "script" } as Node, "retry.backoff_ms", 250), "the script type's own fields still say 1").toEqual({ retry: { backoff_ms: 250, max: 1 } });
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
