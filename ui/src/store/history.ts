// Stored runs: the list History shows, newest first, and a stored run brought back onto the canvas — as it ran, or
// played again from its recording. Knows nothing of starting, resuming or deciding runs. The store keeps the list;
// refreshing it and showing a run are the module's functions (`import * as history from "./history"`).
import { create } from "zustand";
import { Channel } from "@tauri-apps/api/core";
import type { Event_Deserialize } from "../bindings";
import type { Event } from "../types";
import { commands, unwrap } from "../api";
import { confirmDiscard } from "./ask";
import { useDialogs } from "./dialogs";
import { useDocument } from "./document";
import { useLayoutPrefs } from "./layoutPrefs";
import { baseName } from "../model/paths";
import { failWith, useMessages } from "./messages";
import { freshRunView, useReplay } from "./replay";
import type { TurnView } from "./turns";
import { frameBatcher, STATUS_WORDS, useRun } from "./run";
import { answersForNextDocument, answersOfRun } from "./runControl";
import { useView } from "./view";
import { onServer } from "../transport";

export type { RunSummary_Serialize as RunSummary } from "../bindings";
import type { RunSummary_Serialize as RunSummary } from "../bindings";

/** What History's filter asks: a status (empty: any), and text that begins a run's id (the short id History shows)
 * or is in its workflow's name or file. */
export type RunFilter = { status: string; search: string };

/** The runs `filter` asks for, in their order. */
export function filterRuns(runs: RunSummary[], filter: RunFilter): RunSummary[] {
  const text = filter.search.trim().toLowerCase();
  return runs.filter(
    (r) =>
      (!filter.status || r.status === filter.status) &&
      (!text || r.id.toLowerCase().startsWith(text) || r.workflow.toLowerCase().includes(text) || (r.workflowRef ?? "").toLowerCase().includes(text)),
  );
}

type HistoryState = {
  /** Stored runs, newest first: this computer's, and the runs of the server the settings name (`server` set). */
  runs: RunSummary[];
  /** Why the server the settings name could not be read, if it could not (its runs are then left out). */
  serverProblem: string | null;
};

/** The stored runs History lists; what is done with them is the functions below (`refresh`, `openRun`, …). */
export const useHistory = create<HistoryState>(() => ({ runs: [], serverProblem: null }));

/** Loads the document a stored run started with, and an empty run view for it. */
async function showStoredRun(id: string) {
  const opened = await unwrap(commands.openRun(id));
  const doc = opened.document;
  // A server's run names a file on the server: here it opens as not saved yet, so Save never writes to that path.
  const fromServer = Boolean(useHistory.getState().runs.find((r) => r.id === id)?.server);
  // Run again, it runs as it did: on the answers file it ran on (or its workflow's), never the one shown before.
  answersForNextDocument(await answersOfRun(opened.row, doc.path, fromServer || onServer()));
  useDocument.getState().load(doc.workflow, doc.format === "switchyard" && !fromServer ? doc.path : null, doc.format, doc.notes);
  freshRunView(id, doc.workflow.nodes.map((n) => n.id));
  return opened;
}

/** A stored run is on the canvas: its approvals start anew, and the run list shows. */
function runShown() {
  useDialogs.getState().resetApprovals(false);
  useLayoutPrefs.getState().setPanel("run");
}

/** Nothing more happens to a run in these (as `StoredStatus::ended` in the engine). */
const ENDED: string[] = ["completed", "failed", "cancelled"];

/** A followed run's events, applied once per frame while the canvas still shows that run. */
function followChannel(id: string): Channel<Event_Deserialize[]> {
  const channel = new Channel<Event_Deserialize[]>();
  const batch = frameBatcher((events) => {
    if (useRun.getState().runId === id) useRun.getState().apply(events);
  });
  channel.onmessage = (events) => batch(events as unknown as Event[]);
  return channel;
}

/** Reads the stored runs again: this computer's, and the server's the settings name. */
export async function refresh(): Promise<void> {
  // In a browser, this computer's runs are the server's: there is no other server to ask.
  const [local, server] = await Promise.all([commands.listRuns().catch(() => null), onServer() ? null : commands.serverRuns().catch(() => null)]);
  const runs = local?.status === "ok" && Array.isArray(local.data) ? local.data : null;
  const remote = server?.status === "ok" && Array.isArray(server.data) ? server.data : [];
  if (runs === null && !remote.length) return;
  const merged = [...(runs ?? []), ...remote].sort((a, b) => b.started.localeCompare(a.started));
  useHistory.setState({ runs: merged, serverProblem: server?.status === "error" ? server.error.message : null });
}

/** Shows a stored run on the canvas: the document it ran, its statuses, outputs and trace. */
export async function openRun(id: string): Promise<void> {
  if (!(await confirmDiscard(`opening run ${id.slice(0, 8)}`))) return;
  try {
    const opened = await showStoredRun(id);
    const events = opened.events as unknown as Event[];
    useRun.getState().apply(events);
    const listed = useHistory.getState().runs.find((r) => r.id === id);
    const status = opened.row.status;
    const onAServer = onServer() || Boolean(listed?.server);
    // A run whose process died here shows as it was left. On a server, another worker takes it on by itself.
    if (status === "interrupted" && !onAServer) useRun.setState({ status: "failed", error: "interrupted: History → Resume runs it on" });
    runShown();
    // A run that goes on elsewhere is followed live: a server's run until it ends (its workers carry it on when
    // someone decides, or when its worker died), a run of this computer's store while another process runs it
    // (`switchyard run`).
    const elsewhere = !listed?.live && (onAServer ? !ENDED.includes(status) : status === "running" || status === "ready");
    if (elsewhere) await unwrap(commands.followRun(id, events.at(-1)?.seq ?? 0, followChannel(id)));
    useMessages.getState().info(`Run ${id.slice(0, 8)} (${STATUS_WORDS[opened.row.status] ?? opened.row.status})${elsewhere ? ": following it live" : " as it ran"}`);
    useView.getState().requestView("open");
  } catch (e) {
    failWith(`Could not open run ${id.slice(0, 8)}`, e);
  }
}

/** Plays a stored run again through the engine, from its recorded answers: no model call. */
export async function replayRun(id: string): Promise<void> {
  if (!(await confirmDiscard(`replaying run ${id.slice(0, 8)}`))) return;
  try {
    const opened = await showStoredRun(id);
    runShown();
    // The engine plays the run again from its recording (no model or tool call), which checks that the recording
    // still gives the same run; the person then watches it step by step on a timeline, from the events the run
    // recorded (a replay gives exactly those: the engine's tests hold it to that).
    await unwrap(commands.replayRun(id, new Channel<Event_Deserialize[]>()));
    const recorded = (await unwrap(commands.runEvents(id))) as unknown as Event[];
    // Each agent's turns and tool calls, read once: the timeline stops at each of them inside its node. A run
    // whose turns cannot be read is still replayed, node by node.
    const turns = await unwrap(commands.runTurns(id)).catch(() => null);
    const byNode: Record<string, TurnView[]> = {};
    for (const [node, list] of Object.entries(turns ?? {})) if (list) byNode[node] = list;
    useReplay.getState().load(id, opened.document.workflow.nodes.map((n) => n.id), recorded, byNode);
    useMessages.getState().info(`Replaying run ${id.slice(0, 8)} from its recording: no model or tool is called. Drag the timeline to any moment.`);
    useView.getState().requestView("open");
  } catch (e) {
    failWith(`Could not replay run ${id.slice(0, 8)}`, e);
  }
}

/**
 * Adds a run that ended to its workflow's evaluation file (`NAME.evals.yaml` beside it) as a test case: its input,
 * answers and decisions, and what each node did. As `switchyard eval add RUN_ID`. `workflowPath`: for a run made
 * before the workflow's first save (it names no file), the file the workflow was saved to since.
 */
export async function saveTestCase(id: string, workflowPath?: string | null): Promise<void> {
  try {
    const saved = await unwrap(commands.saveTestCase(id, workflowPath ?? null));
    const n = saved.expectations;
    const calls = saved.recordedCalls;
    // A run on a model keeps its calls: the case asks the model again only where an edit changed what it asks.
    const kept = calls ? `, ${calls} model call${calls === 1 ? "" : "s"} kept` : "";
    useMessages.getState().info(`Saved as test case ${saved.caseId} in ${baseName(saved.path)} (${n} expectation${n === 1 ? "" : "s"}${kept})`);
  } catch (e) {
    failWith(`Could not save run ${id.slice(0, 8)} as a test case`, e);
  }
}
