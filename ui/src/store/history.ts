// Stored runs: the list History shows, newest first, and a stored run brought back onto the canvas — as it ran, or
// played again from its recording. Knows nothing of starting, resuming or deciding runs. The store keeps the list;
// refreshing it and showing a run are the module's functions (`import * as history from "./history"`).
import { create } from "zustand";
import { Channel } from "@tauri-apps/api/core";
import type { CommandError, Event_Deserialize, RunFilter_Deserialize } from "../bindings";

/** A command's answer as the bindings give it. */
type Answer<T> = { status: "ok"; data: T } | { status: "error"; error: CommandError };
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

/** What History's filter asks: a status (empty: any), text that begins a run's id (the short id History shows) or is
 * in its workflow's name or file, and how long ago runs started (an age such as `1h`; empty: any time). The stores
 * read it (`list_runs`): every run is found, not only those listed so far. */
export type RunFilter = { status: string; search: string; since: string };

/** How many runs History lists at first, and how many more each "Show more" adds. */
export const PAGE_ROWS = 100;
/** The most runs one `list_runs` gives; more are read page after page. */
const MAX_PAGE = 1000;

/** A document's runs: those started from its file (`path`), or before its first save with its name (`name`). */
export type Mine = { path: string; name: string };

type HistoryState = {
  /** Stored runs, newest first: this computer's, and the runs of the server the settings name (`server` set). */
  runs: RunSummary[];
  /** Why the server the settings name could not be read, if it could not (its runs are then left out). */
  serverProblem: string | null;
  filter: RunFilter;
  /** Only this document's runs (and every run that waits for someone), or `null`: every workflow's. */
  mine: Mine | null;
  /** How many runs History shows; `runs` holds up to a page more, so "Show more" can say how many it adds. */
  shown: number;
};

/** The stored runs History lists; what is done with them is the functions below (`refresh`, `openRun`, …). */
export const useHistory = create<HistoryState>(() => ({
  runs: [],
  serverProblem: null,
  filter: { status: "", search: "", since: "" },
  mine: null,
  shown: PAGE_ROWS,
}));

/** Sets what History asks for and reads it again; a new filter starts at the first page. */
export function setFilter(filter: RunFilter, mine: Mine | null): Promise<void> {
  const { filter: was, mine: wasMine } = useHistory.getState();
  const same = JSON.stringify([was, wasMine]) === JSON.stringify([filter, mine]);
  useHistory.setState({ filter, mine, ...(same ? {} : { shown: PAGE_ROWS }) });
  return same ? Promise.resolve() : refresh();
}

/** Shows a page more. */
export function showMore(): Promise<void> {
  useHistory.setState((s) => ({ shown: s.shown + PAGE_ROWS }));
  return refresh();
}

/** Statuses of runs that wait for someone: shown with this document's whatever their workflow. */
const WAITING = ["paused", "interrupted", "ready"];

/** The store queries the filter makes: every run, or this document's three kinds (its file's, its name's before a
 * save, and every waiting run), merged after. */
function queries(filter: RunFilter, mine: Mine | null): { filter: RunFilter_Deserialize; keep?: (r: RunSummary) => boolean }[] {
  const base: RunFilter_Deserialize = {
    status: filter.status ? [filter.status] : [],
    search: filter.search.trim() || null,
    since: filter.since || null,
  };
  if (!mine) return [{ filter: base }];
  const waiting = filter.status ? WAITING.filter((s) => s === filter.status) : WAITING;
  return [
    // Its file's runs, with their child runs (listed under them), whatever workflow those ran.
    { filter: { ...base, workflow: mine.path, withChildren: true } },
    // A run made before the workflow's first save names no file: it is this workflow's when it has its name.
    { filter: { ...base, workflow: mine.name }, keep: (r) => !r.workflowRef && !r.server },
    ...(waiting.length ? [{ filter: { ...base, status: waiting }, keep: (r: RunSummary) => r.status !== "ready" || r.server != null }] : []),
  ];
}

/** Up to `want` runs of one list (this computer's or the server's), newest first, a page at a time. */
async function read(list: (f: RunFilter_Deserialize) => Promise<Answer<RunSummary[]>>, filter: RunFilter_Deserialize, want: number): Promise<Answer<RunSummary[]>> {
  const runs: RunSummary[] = [];
  while (runs.length < want) {
    const limit = Math.min(MAX_PAGE, want - runs.length);
    const page = await list({ ...filter, limit, before: runs.at(-1)?.id ?? null });
    if (page.status === "error") return runs.length ? { status: "ok", data: runs } : page;
    if (!Array.isArray(page.data)) break;
    runs.push(...page.data);
    if (page.data.length < limit) break;
  }
  return { status: "ok", data: runs };
}

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
  const { filter, mine, shown } = useHistory.getState();
  const want = shown + PAGE_ROWS;
  const asked = queries(filter, mine);
  // In a browser, this computer's runs are the server's: there is no other server to ask.
  const lists = [(f: RunFilter_Deserialize) => commands.listRuns(f), ...(onServer() ? [] : [(f: RunFilter_Deserialize) => commands.serverRuns(f)])];
  const answers = await Promise.all(lists.map((list) => Promise.all(asked.map((q) => read(list, q.filter, want).catch(() => null)))));
  const found = new Map<string, RunSummary>();
  let serverProblem: string | null = null;
  let readAny = false;
  answers.forEach((perQuery, list) =>
    perQuery.forEach((answer, q) => {
      if (answer?.status === "error") {
        if (list === 1) serverProblem = answer.error.message;
        return;
      }
      if (!answer) return;
      readAny = true;
      for (const r of answer.data) if (!asked[q].keep || asked[q].keep(r)) found.set(r.id, r);
    }),
  );
  // The same filter still asked (not changed while this was read): else a newer refresh shows its own answer.
  if (!readAny || JSON.stringify([filter, mine]) !== JSON.stringify([useHistory.getState().filter, useHistory.getState().mine])) return;
  const runs = [...found.values()].sort((a, b) => b.started.localeCompare(a.started));
  useHistory.setState({ runs, serverProblem });
}

/** The runs a crash cut short (interrupted), whatever History shows: offered when the window opens. */
export async function interruptedRuns(): Promise<RunSummary[]> {
  const answer = await commands.listRuns({ status: ["interrupted"], limit: MAX_PAGE }).catch(() => null);
  return answer?.status === "ok" && Array.isArray(answer.data) ? answer.data : [];
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
