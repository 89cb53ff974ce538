import { describe, expect, it } from "vitest";
import { takenOver } from "./takeover";

describe("a takeover", () => {
  it("says the run was taken over after its worker stopped answering, naming both workers", () => {
    const e = { seq: 7, run: "r", ts: "2026-12-02T08:00:00.000Z", type: "workflow:taken-over", from: "vm:41", by: "vm:42" } as const;
    expect(takenOver(e)).toBe("taken over after its worker stopped answering (vm:41; now vm:42)");
    expect(takenOver({ ...e, by: undefined })).toBe("taken over after its worker stopped answering (vm:41)");
  });
});
