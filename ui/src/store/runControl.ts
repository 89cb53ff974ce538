// Running the open workflow: where a run's answers come from (an answers file or a model), and the run commands —
// start (from the start or from a node), the code consent asked first, cancel, an approval's decision, resume. Every
// run goes through the typed commands; nothing here decides how a workflow runs, and what a run did is the run
// store's. The store (`useRunControl`) keeps only state; the commands are the module's functions (`run`, `cancel`,
// `decide`, …), which read and set the stores they need through `getState`/`setState` (zustand's "no store
// actions" practice): import them as `import * as runControl from "./runControl"`.
import { create } from "zustand";
import { Channel } from "@tauri-apps/api/core";
import type { Consent_Serialize as Consent, Event_Deserialize } from "../bindings";
import type { Event } from "../types";
import { commands, unwrap } from "../api";
import { baseName } from "../model/paths";
import { ANSWERS_FILES, commitEditing, confirmDiscard, pickFile } from "./ask";
import { useDialogs } from "./dialogs";
import { useDocument } from "./document";
import * as storedRuns from "./history";
import { useHistory } from "./history";
import { useLayoutPrefs } from "./layoutPrefs";
import { errorText, failWith, useMessages } from "./messages";
import { freshRunView } from "./replay";
import { frameBatcher, useRun } from "./run";
import { useValidation } from "./validation";
import { useView } from "./view";

/** Where a run's answers come from: an answers file (offline, deterministic) or a model. */
export type RunMode = "answers" | "model";

/**
 * Where a run was asked to start from: a node, with an earlier run's results upstream of it; with `fork`, the node
 * (or its model turn `turn`, from 1) answers what the person gave instead of what the model said in that run.
 */
type From = { run: string; node: string; fork?: { turn: number | null; answer: string } };

/** What the run conductor keeps: only state. What it does are the functions below (`run`, `cancel`, `decide`, …). */
type RunControlState = {
  mode: RunMode;
  answersPath: string | null;
  /** The model picked for runs ("": the workflow's or the app's default). */
  model: string;
  /** When the person last allowed a workflow's code: validation then no longer warns that it needs consent. */
  trustedAt: number;
  /** A run waiting for the person to allow this version of the workflow's code, and where it was to start from. */
  consent: { consent: Consent; from?: From; resume?: string } | null;
};

/** Why Run cannot start now, or null. */
export function runBlocked(errors: { message: string }[], mode: RunMode, answersPath: string | null): string | null {
  if (errors.length) return `${errors.length} error${errors.length > 1 ? "s" : ""}: ${errors[0].message}`;
  if (mode === "answers" && !answersPath) return "choose an answers file, or run with a model";
  return null;
}

/** The answers file the document about to load brings (see `answersForNextDocument`). */
let nextAnswers: string | null = null;

/**
 * The document about to load runs on this answers file (null: on a model). The run source belongs to the document
 * it was chosen for: every document loaded (a file opened, a new one, a stored run opened, replayed or resumed)
 * brings its own, and one that says nothing runs on a model, never on the answers of the workflow shown before it.
 */
export function answersForNextDocument(path: string | null): void {
  nextAnswers = path;
}

const absolute = (path: string) => path.startsWith("/") || /^[A-Za-z]:[\\/]/.test(path);

/**
 * The answers file a stored run brings when it is opened: the one it ran on (when the row names it absolutely), else
 * the one beside its workflow's file; none for a server's run (its answers are the server's) or a run of no file.
 */
export async function answersOfRun(row: { answersPath: string | null }, workflowPath: string | null | undefined, fromServer: boolean): Promise<string | null> {
  if (fromServer) return null;
  if (row.answersPath && absolute(row.answersPath)) return row.answersPath;
  if (!workflowPath) return null;
  return (await commands.scriptBeside(workflowPath).catch(() => null)) ?? null;
}

export const useRunControl = create<RunControlState>(() => ({
  mode: "model",
  answersPath: null,
  model: "",
  trustedAt: 0,
  consent: null,
}));

const set = useRunControl.setState;
const get = useRunControl.getState;

export function setMode(mode: RunMode): void {
  set({ mode });
}

export function setModel(model: string): void {
  set({ model });
}

/** Runs take their answers from this file; null: from a model. */
export function setAnswers(answersPath: string | null): void {
  set({ answersPath, mode: answersPath ? "answers" : "model" });
}

export async function chooseAnswers(): Promise<void> {
  const file = await pickFile(ANSWERS_FILES);
  if (file) setAnswers(file);
}

/**
 * Runs the document; `from`: from a node, with an earlier run's results upstream of it. A workflow whose code steps
 * are not trusted yet first asks (`consent`).
 */
export async function run(from?: From): Promise<void> {
  commitEditing();
  const { mode, answersPath, model } = get();
  const shown = useRun.getState();
  if (shown.status === "running" || shown.status === "paused") return;
  if (runBlocked(useValidation.getState().report.errors, mode, answersPath)) return;
  const doc = useDocument.getState();
  const wf = doc.workflow; // the graph as it is now; later edits do not change this run
  try {
    // Code from a file never runs without consent: once per version of the workflow's code.
    const consent = await unwrap(commands.codeConsent(wf, doc.path));
    if (consent.steps.length > 0 && !consent.trusted) {
      set({ consent: { consent, from } });
      return;
    }
  } catch (e) {
    failWith("The run could not start", e);
    return;
  }
  useDialogs.getState().resetApprovals(true);
  try {
    freshRunView("", wf.nodes.map((n) => n.id));
    const id = await unwrap(
      commands.startRun(
        {
          workflow: wf,
          workflowPath: doc.path,
          input: null,
          answersPath: mode === "answers" ? answersPath : null,
          model: mode === "model" && model ? model : null,
          reuseRun: from && !from.fork ? from.run : null,
          fromNode: from && !from.fork ? from.node : null,
          fork: from?.fork ? { run: from.run, node: from.node, turn: from.fork.turn, answer: from.fork.answer } : null,
        },
        runEventChannel(),
      ),
    );
    useRun.setState({ runId: id });
    void storedRuns.refresh();
  } catch (e) {
    // Refused before it began: there is no run to show as failed, only the reason.
    useRun.getState().reset();
    failWith("The run could not start", e);
  }
}

/** Answers the code consent question: allowed, the version is trusted and the run starts; refused, nothing runs. */
export async function answerConsent(allow: boolean): Promise<void> {
  const asked = get().consent;
  set({ consent: null });
  if (!asked || !allow || !asked.consent.fingerprint) return;
  try {
    await unwrap(commands.trustCode(asked.consent.fingerprint, useDocument.getState().path));
    set({ trustedAt: Date.now() });
  } catch (e) {
    failWith("Could not record your consent", e);
    return;
  }
  if (asked.resume) await resumeRun(asked.resume);
  else await run(asked.from);
}

/** Cancels the run on the canvas. */
export function cancel(): void {
  const id = useRun.getState().runId;
  if (id) commands.cancelRun(id).catch((e) => useMessages.getState().error(errorText(e)));
}

/** Sends the person's decision on approval `node` of the run on the canvas; its dialog closes. */
export async function decide(node: string, decision: "approve" | "reject", note: string): Promise<void> {
  const id = useRun.getState().runId;
  if (!id) return;
  await unwrap(commands.decide(id, node, decision, note));
  useDialogs.getState().approvalDecided(node);
}

/** Continues paused or interrupted run `id` on the canvas, with the document it started with. */
export async function resumeRun(id: string): Promise<void> {
  // The run's own document replaces the one shown: unsaved changes are asked about first, as for Open.
  if (!(await confirmDiscard(`continuing run ${id.slice(0, 8)}`))) return;
  let stored;
  try {
    // The run goes on with the document it started with: its code is asked about as for a new run.
    stored = await unwrap(commands.openRun(id));
    const consent = await unwrap(commands.codeConsent(stored.document.workflow, stored.document.path));
    if (consent.steps.length > 0 && !consent.trusted) {
      set({ consent: { consent, resume: id } });
      return;
    }
  } catch (e) {
    failWith(`Could not continue run ${id.slice(0, 8)}`, e);
    return;
  }
  try {
    const history = await unwrap(commands.runEvents(id));
    const resumed = await unwrap(commands.resumeRun(id, runEventChannel()));
    const doc = resumed.document;
    answersForNextDocument(await answersOfRun(stored.row, doc.path, false));
    useDocument.getState().load(doc.workflow, doc.path, doc.format, doc.notes);
    freshRunView(resumed.runId, doc.workflow.nodes.map((n) => n.id));
    useRun.getState().apply(history as unknown as Event[]); // what happened before the pause; new events follow
    useDialogs.getState().resetApprovals(false);
    useMessages.getState().info(`Continued run ${id.slice(0, 8)}${doc.path ? ` of ${baseName(doc.path)}` : ""}`);
    useLayoutPrefs.getState().setPanel("run");
    useView.getState().requestView("open");
  } catch (e) {
    failWith(`Could not continue run ${id.slice(0, 8)}`, e);
  }
  await storedRuns.refresh();
}

/** Runs the document from `node`, taking the last run's results for every node upstream of it. */
export async function runFrom(node: string): Promise<void> {
  const last = useRun.getState().runId || useHistory.getState().runs.find((r) => r.workflowRef === useDocument.getState().path)?.id;
  if (!last) return useMessages.getState().error("Run the workflow once first: running from a node takes the last run's results for the nodes before it.");
  await run({ run: last, node });
}

/**
 * Forks stored run `runId` at `node` (at its model turn `turn`, from 1; null: its result as a whole): a run of the
 * document where the model said `answer` there, everything before it taken from that run at no model or tool call.
 */
export async function fork(runId: string, node: string, turn: number | null, answer: string): Promise<void> {
  const shown = useRun.getState().runId;
  await run({ run: runId, node, fork: { turn, answer } });
  const started = useRun.getState().runId;
  // Started (not refused, nor waiting for the code consent): the canvas shows the new run.
  if (started && started !== shown) useMessages.getState().info(`Forked run ${runId.slice(0, 8)} at ${turn ? `turn ${turn} of ` : ""}${node}: run ${started.slice(0, 8)} goes on from the answer given`);
}

/** A channel for a run's events, applied to the run store once per animation frame. */
function runEventChannel(): Channel<Event_Deserialize[]> {
  // The generated channel type names the deserialize side; what arrives is what Rust serialized (`Event`).
  const channel = new Channel<Event_Deserialize[]>();
  const batch = frameBatcher((events) => {
    // Only while the canvas shows this run: another run opened meanwhile keeps its own view.
    const shown = useRun.getState().runId;
    const its = shown ? events.filter((e) => e.run === shown) : events;
    if (its.length) useRun.getState().apply(its);
  });
  channel.onmessage = (events) => batch(events as unknown as Event[]);
  return channel;
}

// Another document on the canvas takes the run source it brings, set just before it loaded.
useDocument.subscribe((now, before) => {
  if (now.loaded === before.loaded) return;
  const answers = nextAnswers;
  nextAnswers = null;
  setAnswers(answers);
});
