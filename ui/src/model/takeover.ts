// A run taken over after its worker stopped answering (`workflow:taken-over`), said as `switchyard show` says it.
import type { Event } from "../types";

export const TAKEN_OVER = "taken over after its worker stopped answering";

/** "taken over after its worker stopped answering (vm:4121; now vm:4188)". */
export function takenOver(e: Event & { type: "workflow:taken-over" }): string {
  return e.by ? `${TAKEN_OVER} (${e.from}; now ${e.by})` : `${TAKEN_OVER} (${e.from})`;
}
