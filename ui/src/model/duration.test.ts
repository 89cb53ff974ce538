import { describe, expect, it } from "vitest";
import { formatDuration } from "./duration";

describe("durations", () => {
  it("are written as the command line writes them, from milliseconds to minutes", () => {
    expect([0, 999, 1000, 4049, 59999, 60000, 226000, 3599999].map(formatDuration)).toEqual([
      "0 ms",
      "999 ms",
      "1.0 s",
      "4.0 s",
      "60.0 s",
      "1m00s",
      "3m46s",
      "59m59s",
    ]);
  });

  it("are blank when there is none", () => {
    expect([null, undefined, Number.NaN].map(formatDuration)).toEqual(["", "", ""]);
  });
});
