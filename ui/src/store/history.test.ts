// Saving a stored run as a test case: the command's answer becomes a message, as does its refusal with its code.
import { beforeEach, describe, expect, it } from "vitest";
import { mockIPC } from "@tauri-apps/api/mocks";
import { useHistory } from "./history";
import { useMessages } from "./messages";

function engine(answer: (args: Record<string, unknown>) => unknown) {
  const calls: { cmd: string; args: Record<string, unknown> }[] = [];
  mockIPC((cmd, args) => {
    calls.push({ cmd, args: args as Record<string, unknown> });
    if (cmd === "save_test_case") return answer(args as Record<string, unknown>);
    return null;
  });
  return calls;
}

beforeEach(() => {
  useMessages.setState({ messages: [] });
});

describe("save as test case", () => {
  it("asks the engine for the run and says where the case went", async () => {
    const calls = engine(() => ({ path: "/w/approval-flow.evals.yaml", caseId: "run-1a2b3c4d", expectations: 6 }));
    await useHistory.getState().saveTestCase("1a2b3c4d-5e6f");
    expect(calls.filter((c) => c.cmd === "save_test_case").map((c) => c.args)).toEqual([{ runId: "1a2b3c4d-5e6f" }]);
    expect(useMessages.getState().messages).toEqual([
      expect.objectContaining({ kind: "info", text: "Saved as test case run-1a2b3c4d in approval-flow.evals.yaml (6 expectations)" }),
    ]);
  });

  it("shows a refusal with its code, in the app's words", async () => {
    engine(() => {
      throw { code: "RUN_NOT_ENDED", message: "run 1a2b3c4d-5e6f has not ended; resume it to let it end first", problems: [] };
    });
    await useHistory.getState().saveTestCase("1a2b3c4d-5e6f");
    const [shown] = useMessages.getState().messages;
    expect(shown.kind).toBe("error");
    expect(shown.code).toBe("RUN_NOT_ENDED");
    expect(shown.text).toMatch(/^Could not save run 1a2b3c4d as a test case: run 1a2b3c4d-5e6f has not ended; resume it to let it end first\. Its Resume button in History continues it\.$/);
  });
});
