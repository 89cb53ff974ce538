// The run commands are plain functions that reach into the stores they need: stored runs for "run from here", the
// approval dialogs for a decision; the run control store keeps only state.
import { beforeEach, describe, expect, it } from "vitest";
import { mockIPC } from "@tauri-apps/api/mocks";
import type { Workflow } from "../types";
import { useDialogs } from "./dialogs";
import { useDocument } from "./document";
import { useHistory, type RunSummary } from "./history";
import { useMessages } from "./messages";
import { useRun } from "./run";
import * as runControl from "./runControl";
import { useRunControl } from "./runControl";
import { useValidation } from "./validation";

const workflow = { switchyard: 1, name: "Pets", nodes: [{ id: "start", type: "start" }, { id: "vet", type: "agent" }], edges: [{ from: "start", to: "vet" }] } as unknown as Workflow;
const stored = (id: string, workflowRef: string) => ({ id, workflowRef, status: "completed" }) as unknown as RunSummary;

function engine() {
  const calls: { cmd: string; args: Record<string, unknown> }[] = [];
  mockIPC((cmd, args) => {
    calls.push({ cmd, args: args as Record<string, unknown> });
    if (cmd === "code_consent") return { steps: [], fingerprint: null, trusted: true };
    if (cmd === "start_run") return "run-new";
    if (cmd === "list_runs") return [];
    return null;
  });
  return calls;
}

beforeEach(() => {
  useDocument.getState().load(workflow, "/w/pets.yaml");
  useRun.getState().reset();
  useValidation.getState().setReport({ errors: [], warnings: [] });
  useRunControl.setState({ mode: "model", answersPath: null, model: "", consent: null });
  useMessages.setState({ messages: [] });
});

describe("run from a node", () => {
  it("takes the results of this workflow's latest stored run when no run is on the canvas", async () => {
    const calls = engine();
    useHistory.setState({ runs: [stored("run-other", "/w/other.yaml"), stored("run-pets", "/w/pets.yaml"), stored("run-pets-older", "/w/pets.yaml")] });
    await runControl.runFrom("vet");
    const start = calls.find((c) => c.cmd === "start_run");
    expect(start?.args.request).toMatchObject({ reuseRun: "run-pets", fromNode: "vet", workflowPath: "/w/pets.yaml" });
    expect(useRun.getState().runId).toBe("run-new");
  });

  it("says what to do first when this workflow never ran", async () => {
    const calls = engine();
    useHistory.setState({ runs: [stored("run-other", "/w/other.yaml")] });
    await runControl.runFrom("vet");
    expect(calls.some((c) => c.cmd === "start_run")).toBe(false);
    expect(useMessages.getState().messages.map((m) => m.text)).toEqual([expect.stringMatching(/^Run the workflow once first/)]);
  });
});

describe("a fork of a run", () => {
  it("starts through start_run with the fork (never also a run from a node) and says what it forked", async () => {
    const calls = engine();
    useRun.setState({ runId: "run-old", status: "completed" });
    await runControl.fork("run-old", "vet", 2, "It is a cold.");
    const start = calls.find((c) => c.cmd === "start_run");
    expect(start?.args.request).toMatchObject({ reuseRun: null, fromNode: null, fork: { run: "run-old", node: "vet", turn: 2, answer: "It is a cold." }, workflowPath: "/w/pets.yaml" });
    expect(useRun.getState().runId).toBe("run-new");
    expect(useMessages.getState().messages.map((m) => m.text)).toEqual(["Forked run run-old at turn 2 of vet: run run-new goes on from the answer given"]);
  });

  it("a plain run carries no fork", async () => {
    const calls = engine();
    await runControl.run();
    expect(calls.find((c) => c.cmd === "start_run")?.args.request).toMatchObject({ fork: null, reuseRun: null });
  });
});

describe("a run refused before it begins", () => {
  it("shows no run, failed or otherwise, and says why with the refusal's code", async () => {
    mockIPC((cmd) => {
      if (cmd === "code_consent") return { steps: [], fingerprint: null, trusted: true };
      if (cmd === "start_run") throw { code: "CHANGED_HERE", message: "this canvas has changes that /srv/pets.yaml on the server does not have", problems: [] };
      return null;
    });
    await runControl.run();
    expect(useRun.getState()).toMatchObject({ status: "idle", runId: null, error: null });
    const [shown] = useMessages.getState().messages;
    expect(shown).toMatchObject({ kind: "error", code: "CHANGED_HERE" });
    expect(shown.text).toMatch(/^The run could not start: this canvas has changes/);
  });
});

describe("an approval's decision", () => {
  it("is sent for the run on the canvas, and its dialog closes with its note gone", async () => {
    const calls = engine();
    useRun.setState({ runId: "run-1" });
    useDialogs.setState({ reviewing: "legal", approvalNotes: { legal: "check clause 4", other: "keep" } });
    await runControl.decide("legal", "approve", "check clause 4");
    expect(calls.find((c) => c.cmd === "decide")?.args).toEqual({ runId: "run-1", node: "legal", decision: "approve", note: "check clause 4" });
    expect(useDialogs.getState()).toMatchObject({ reviewing: null, approvalNotes: { other: "keep" } });
  });
});

describe("the run control store", () => {
  it("keeps only state: what it does are the module's functions", () => {
    const kept = useRunControl.getState();
    expect(Object.keys(kept).sort()).toEqual(["answersPath", "consent", "mode", "model", "trustedAt"]);
    expect(Object.values(kept).some((v) => typeof v === "function")).toBe(false);
  });

  it("answers from a file set the mode to answers, and none set it back to a model", () => {
    runControl.setAnswers("/w/pets.script.yaml");
    expect(useRunControl.getState()).toMatchObject({ mode: "answers", answersPath: "/w/pets.script.yaml" });
    runControl.setAnswers(null);
    expect(useRunControl.getState()).toMatchObject({ mode: "model", answersPath: null });
  });
});
