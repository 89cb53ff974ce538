// Who did what to a run, in the window's words (docs/server.md, "Identities"): who started it and how, who decided an
// approval and when. The engine records names; these only say them.
import type { Origin } from "../bindings";

/** How a run's start is said: "by alice via the API"; nothing for a run started on this machine. */
export function originSaid(origin: Origin | undefined): string | null {
  if (!origin || origin.via === "local") return null;
  const via = { api: "the API", webhook: "a webhook", schedule: "a schedule", mcp: "MCP" }[origin.via];
  return origin.by ? `by ${origin.by} via ${via}` : `via ${via}`;
}

/** A time of the run's log as a clock shows it here: "10:42". */
export function clock(ts: string): string {
  const t = new Date(ts);
  if (Number.isNaN(t.getTime())) return "";
  return `${String(t.getHours()).padStart(2, "0")}:${String(t.getMinutes()).padStart(2, "0")}`;
}

const SAID = { approve: "approved", reject: "rejected", timeout: "timed out" } as const;

/** A decision as the run list says it: "approved by alice, 10:42" ("approved, 10:42" when no one is named). */
export function decidedSaid(decision: keyof typeof SAID, by: string | null | undefined, ts: string): string {
  const at = clock(ts);
  return `${SAID[decision]}${by ? ` by ${by}` : ""}${at ? `, ${at}` : ""}`;
}

/** A decision someone else made on an approval whose dialog is open: "bob approved this at 10:42". */
export function decidedElsewhere(decision: keyof typeof SAID, by: string | null | undefined, ts: string): string {
  const at = clock(ts);
  return `${by ?? "Someone else"} ${SAID[decision]} this${at ? ` at ${at}` : ""}`;
}
