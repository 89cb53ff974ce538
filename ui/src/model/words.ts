// What to do about a problem, in the app's words. The engine states problems neutrally and gives each a stable code;
// where the fix depends on where it is shown, the command line adds its flags and the app adds what to press here.
// Codes are shown small beside the sentence, never instead of it.

/** The app's fix for each code whose fix is front-end specific. */
export const APP_FIX: Record<string, string> = {
  NO_MODEL: "Start a local model server (Ollama or llama.cpp's), add a provider in Settings, or run with an answers file (the run source menu left of Run).",
  UNKNOWN_PROVIDER: "Add the provider in Settings, or run with an answers file (the run source menu left of Run).",
  CODE_NEEDS_CONSENT: "Press Run: the app shows the code and asks before any of it runs.",
  UNKNOWN_MCP_SERVER: "Add the server under MCP servers in Settings.",
  UNKNOWN_MCP_TOOL: "In Settings, Test servers lists the tools each server has.",
  SETTINGS_UNREADABLE: "Open Settings and save them again.",
  SETTINGS_PARSE_ERROR: "Open Settings and save them again.",
  SETTINGS_INVALID: "Open Settings: each problem is marked at its field.",
  RUN_NOT_ENDED: "Its Resume button in History continues it.",
  NO_WORKFLOW_FILE: "Save the workflow to a file and run it again.",
  INVALID_EVALS: "Fix the evaluation file beside the workflow, then press Run all again.",
  ANSWERS_UNREADABLE: "Fix the answers the test case names in the evaluation file, then press Run again.",
};

/** A problem's sentence with the app's fix after it, when the fix depends on the app. */
export function inAppWords(message: string, code?: string | null): string {
  const fix = code ? APP_FIX[code] : undefined;
  return fix && !message.includes(fix) ? `${message.replace(/[.;\s]+$/, "")}. ${fix}` : message;
}

/** A test case's verdict, as the Evals tab says it. */
export const VERDICT_WORDS: Record<string, string> = { passed: "passed", failed: "failed", flaky: "flaky", error: "could not run" };

/** How a test case compares with the evaluation before. */
export const CHANGE_WORDS: Record<string, string> = { regressed: "regressed", improved: "improved", unchanged: "unchanged", new: "new" };

/** What became of a node between the evaluation before and this one (its colour in the compare view). */
export const NODE_CHANGE_WORDS: Record<string, string> = { regressed: "regressed", changed: "output changed", unchanged: "unchanged" };
