// Token counts as the run views show them. A model server that reports no usage gives no count: the views say so
// rather than show nothing or 0, and never estimate one (llama-cpp-python streams no usage at all).

import type { NodeType } from "../types";
import { asksModel } from "./nodeTypes";

/** What the run views say for a model step whose server reported no token usage. */
export const TOKENS_UNREPORTED = "tokens not reported by this model server";

/**
 * Whether a step that ended has no token count because its model server reported none: it succeeded, it called a
 * model (an agent, run on a model rather than an answers file, which calls none), and no usage came with it.
 */
export function tokensUnreported(step: { tokens: number | null; succeeded: boolean; type?: string; onModel: boolean }): boolean {
  return step.tokens == null && step.succeeded && step.onModel && asksModel(step.type as NodeType | undefined);
}
