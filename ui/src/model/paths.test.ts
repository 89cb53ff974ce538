import { describe, expect, it } from "vitest";
import { baseName, childPath } from "./paths";

describe("a workflow node's child file", () => {
  it("is found beside its parent's file, as the engine finds it, with . and .. resolved", () => {
    expect(childPath("/work/flows/parent.yaml", "children/review.yaml")).toBe("/work/flows/children/review.yaml");
    expect(childPath("/work/flows/parent.yaml", "./review.yaml")).toBe("/work/flows/review.yaml");
    expect(childPath("/work/flows/parent.yaml", "../shared/review.yaml")).toBe("/work/shared/review.yaml");
    expect(childPath("/work/flows/parent.yaml", "/elsewhere/x.yaml")).toBe("/elsewhere/x.yaml");
    expect(childPath("/parent.yaml", "../../x.yaml")).toBe("/x.yaml");
    expect(baseName(childPath("/a/b.yaml", "c/d.yaml"))).toBe("d.yaml");
  });
});
