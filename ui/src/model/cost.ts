// Costs as the window shows them. The engine computes every cost, rounds it and writes it (`usage::dollars`: one rule
// for the command line, the API and the window); the window shows that text and never formats a number of its own.

/** What a cost cell shows: nothing when no tokens were used, a dash when a model that used them has no price, else
 * the engine's text ("$0.00003"), marked "*" when it is priced with the current settings (`priced: "current"`). */
export function costShown(cost: { costText?: string | null; tokens: number; priced?: "kept" | "current" | null }): string {
  if (cost.costText == null) return cost.tokens ? "—" : "";
  if (!cost.tokens) return "";
  return cost.priced === "current" ? `${cost.costText}*` : cost.costText;
}

/** What hovering a cost cell says: which prices it is at, or why there is none. */
export function costTitle(cost: { costText?: string | null; tokens: number; priced?: "kept" | "current" | null }): string | undefined {
  if (!cost.tokens) return undefined;
  if (cost.costText == null) return "A model it used has no price in the settings";
  return cost.priced === "current"
    ? "* priced with your current settings: the run was recorded before runs kept their prices"
    : "At the prices the run kept when it started";
}
