// The session: what the person is doing with the open workflow — opening and saving it, the answers file or model a
// run uses, runs started, resumed, decided and cancelled, settings and preferences. Components call these actions;
// every file and run goes through the typed commands, and nothing here decides how a workflow runs.
import { create } from "zustand";
import { Channel } from "@tauri-apps/api/core";
import { ask, open as nativeOpen, save as nativeSave } from "@tauri-apps/plugin-dialog";
import type { Consent_Serialize as Consent, DefaultModel_Serialize, Event_Deserialize } from "../bindings";
import type { Event, Settings } from "../types";
import { commands, unwrap } from "../api";
import { layout, needsLayout } from "../model/layout";
import { useNodeTypes, type NodeTypeSpec } from "../model/nodeTypes";
import { emptyWorkflow, useDocument } from "./document";
import { errorCode, errorText, useMessages } from "./messages";
import { inAppWords } from "../model/words";
import { frameBatcher, useRun } from "./run";
import { useReplay } from "./replay";
import { useValidation } from "./validation";

const FILTERS = [{ name: "Workflows", extensions: ["yaml", "yml", "json"] }];
const ANSWERS_FILTERS = [{ name: "Answers files", extensions: ["yaml", "yml", "json"] }];
const MAX_RECENT = 8;
const POSITIONLESS_FORMATS = new Set(["sweny", "tea", "openexpertise"]);
/** A path's file name. */
export const baseName = (path: string) => path.split("/").pop() ?? path;

// End-to-end tests cannot click in the OS file picker, so they may name the path it would return. Only the picker is
// replaced; opening and saving still go through the real commands.
type DialogOverride = { open?: string; save?: string; discard?: boolean };
const dialogOverride = () => (window as unknown as { __switchyardDialog?: DialogOverride }).__switchyardDialog;
const pickFile = async (filters: typeof FILTERS): Promise<string | null> => {
  const o = dialogOverride()?.open;
  if (o) return o;
  const file = await nativeOpen({ multiple: false, filters });
  return typeof file === "string" ? file : null;
};
const pickSavePath = async (defaultPath: string): Promise<string | null> => dialogOverride()?.save ?? (await nativeSave({ filters: FILTERS, defaultPath }));

export type Theme = "light" | "dark";
/** Where a run's answers come from: an answers file (offline, deterministic) or a model. */
export type RunMode = "answers" | "model";

/**
 * Commits the field being edited. Inspector fields commit when they lose focus (one undo step per edit, not per key),
 * so every command that reads the document — save, run, export, switching files, closing — calls this first and acts
 * on what the person sees. The focus goes back to the field.
 */
export function commitEditing(): void {
  const el = document.activeElement as HTMLInputElement | HTMLTextAreaElement | null;
  if (!el || !el.matches?.("input, textarea") || el.closest("[role=dialog]")) return;
  const range = "selectionStart" in el ? [el.selectionStart, el.selectionEnd] : null;
  el.blur();
  el.focus({ preventScroll: true });
  try {
    if (range && range[0] != null) el.setSelectionRange(range[0], range[1]);
  } catch {
    /* inputs of some types have no selection */
  }
}
export type { RunSummary_Serialize as RunSummary } from "../bindings";
import type { RunSummary_Serialize as RunSummary } from "../bindings";
/** The bottom panel's tabs. */
export type PanelTab = "run" | "problems" | "events" | "history" | "notes";
export type { CommandError, SettingsProblem } from "../bindings";
import type { CommandError } from "../bindings";

/** A request to the canvas to move its viewport: `open` shows a newly opened workflow readably. */
export type ViewRequest = { kind: "open" | "fit"; nonce: number };

type SessionState = {
  mode: RunMode;
  answersPath: string | null;
  model: string;
  settings: Settings | null;
  /** Why the settings file could not be read (the app then runs on defaults). */
  settingsProblem: CommandError | null;
  /** Stored runs, newest first. */
  history: RunSummary[];
  panel: PanelTab;
  recentFiles: string[];
  theme: Theme;
  /** Notes typed in approval dialogs, kept when a dialog is put off with "Later". */
  approvalNotes: Record<string, string>;
  /** The approval the person asked to review, and those put off. */
  reviewing: string | null;
  dismissed: string[];
  view: ViewRequest;
  /** The nonce of the last view request the canvas has drawn (the open view included). */
  shownView: number;
  /** The inspector's tab for a node, and which iteration its "Last run" tab shows (null: the latest). */
  inspector: { tab: "settings" | "run"; iteration: number | null };
  dialogs: { help: boolean; settings: boolean; find: boolean; close: boolean };
  /** The model a node naming none runs on, as found at start-up and after Settings change. */
  defaultModel: DefaultModel_Serialize | null;
  /** When the person last allowed a workflow's code: validation then no longer warns that it needs consent. */
  trustedAt: number;
  /** A run waiting for the person to allow this version of the workflow's code, and where it was to start from. */
  consent: { consent: Consent; from?: { run: string; node: string }; resume?: string } | null;

  init: () => Promise<void>;
  /** Finds the model runs use by default: Settings' default, else a model server on this machine. */
  discoverModel: () => Promise<void>;
  /** The answer to "save before closing?": save then close, close without saving, or stay. */
  closeWindow: (answer: "save" | "discard" | "cancel") => Promise<void>;
  /** Opens a recent file (asking first about unsaved changes). */
  openRecent: (path: string) => Promise<void>;
  open: (path: string) => Promise<void>;
  openPicked: () => Promise<void>;
  newWorkflow: () => Promise<void>;
  save: () => Promise<void>;
  saveAs: () => Promise<void>;
  /** Writes canonical YAML to a file the person picks; the open document keeps its own path and unsaved state. */
  exportYaml: () => Promise<void>;
  setMode: (mode: RunMode) => void;
  setModel: (model: string) => void;
  chooseAnswers: () => Promise<void>;
  clearAnswers: () => void;
  /** Runs the document; `from`: from a node, with an earlier run's results upstream of it. A workflow whose code
   * steps are not trusted yet first asks (`consent`). */
  run: (from?: { run: string; node: string }) => Promise<void>;
  /** Answers the code consent question: allowed, the version is trusted and the run starts; refused, nothing runs. */
  answerConsent: (allow: boolean) => Promise<void>;
  cancel: () => void;
  decide: (node: string, decision: "approve" | "reject", note: string) => Promise<void>;
  resumeRun: (id: string) => Promise<void>;
  refreshHistory: () => Promise<void>;
  /** Shows a stored run on the canvas: the document it ran, its statuses, outputs and trace. */
  openRun: (id: string) => Promise<void>;
  /** Plays a stored run again through the engine, from its recorded answers: no model call. */
  replayRun: (id: string) => Promise<void>;
  /** Runs the document from `node`, taking the last run's results for every node upstream of it. */
  runFrom: (node: string) => Promise<void>;
  setPanel: (tab: PanelTab) => void;
  setTheme: (theme: Theme) => void;
  setSettings: (settings: Settings) => void;
  layout: () => Promise<void>;
  requestView: (kind: ViewRequest["kind"]) => void;
  /** The canvas drew the view asked for with this nonce. */
  viewShown: (nonce: number) => void;
  setDialog: (name: keyof SessionState["dialogs"], open: boolean) => void;
  inspect: (tab: "settings" | "run", iteration?: number | null) => void;
  setApprovalNote: (node: string, note: string) => void;
  review: (node: string | null) => void;
  dismissApproval: (node: string) => void;
};

/** Why Run cannot start now, or null. */
export function runBlocked(errors: { message: string }[], mode: RunMode, answersPath: string | null): string | null {
  if (errors.length) return `${errors.length} error${errors.length > 1 ? "s" : ""}: ${errors[0].message}`;
  if (mode === "answers" && !answersPath) return "choose an answers file, or run with a model";
  return null;
}

export const useSession = create<SessionState>((set, get) => {
  const info = (text: string) => useMessages.getState().info(text);
  const fail = (text: string) => useMessages.getState().error(text);
  /**
   * An error from a command, in the app's words, with its code shown small beside it. `file`: the file it concerns,
   * named once — by the message when the message already names it, else by the prefix.
   */
  const failWith = (prefix: string, e: unknown, file?: string) => {
    const message = errorText(e);
    const code = errorCode(e);
    const lead = file && !message.includes(file) && !message.includes(baseName(file)) ? `${prefix} ${baseName(file)}` : prefix;
    useMessages.getState().error(`${lead}: ${inAppWords(message, code)}`, code);
  };

  /** Preferences are a convenience: failing to keep them never interrupts the person. */
  const savePrefs = () => {
    const { recentFiles, theme } = get();
    Promise.resolve()
      .then(() => commands.savePrefs({ recentFiles, theme }))
      .catch(() => undefined);
  };
  const remember = (path: string) => {
    set((s) => ({ recentFiles: [path, ...s.recentFiles.filter((p) => p !== path)].slice(0, MAX_RECENT) }));
    savePrefs();
  };
  /** The run view starts anew: for run `runId` (its nodes pending), or empty (null); a replay on the canvas ends. */
  const freshRunView = (runId: string | null, nodeIds: string[] = []) => {
    useReplay.getState().discard();
    if (runId === null) useRun.getState().reset();
    else useRun.getState().begin(runId, nodeIds);
  };
  /** Loads the document a stored run started with, and an empty run view for it. */
  const showStoredRun = async (id: string) => {
    const opened = await unwrap(commands.openRun(id));
    const doc = opened.document;
    useDocument.getState().load(doc.workflow, doc.format === "switchyard" ? doc.path : null, doc.format, doc.notes);
    freshRunView(id, doc.workflow.nodes.map((n) => n.id));
    return opened;
  };
  const confirmDiscard = async () => {
    commitEditing();
    return !useDocument.getState().dirty || (dialogOverride()?.discard ?? (await ask("Discard unsaved changes?", { title: "Switchyard", kind: "warning" })));
  };
  const writeTo = async (file: string) => {
    try {
      await unwrap(commands.saveFile(file, useDocument.getState().workflow));
      useDocument.getState().markSaved(file);
      remember(file);
      info(`Saved ${baseName(file)}`);
    } catch (e) {
      failWith("Could not save", e, file);
    }
  };

  return {
    mode: "model",
    answersPath: null,
    model: "",
    settings: null,
    settingsProblem: null,
    history: [],
    panel: "problems",
    recentFiles: [],
    theme: "light",
    approvalNotes: {},
    reviewing: null,
    consent: null,
    dismissed: [],
    view: { kind: "open", nonce: 0 },
    shownView: -1,
    inspector: { tab: "settings", iteration: null },
    dialogs: { help: false, settings: false, find: false, close: false },
    defaultModel: null,
    trustedAt: 0,

    init: async () => {
      try {
        const specs = await commands.nodeTypes();
        if (Array.isArray(specs) && specs.length) useNodeTypes.getState().set(specs as NodeTypeSpec[]);
      } catch (e) {
        failWith("Could not read the node types from the engine", e);
      }
      try {
        const prefs = await commands.loadPrefs();
        set({ recentFiles: Array.isArray(prefs?.recentFiles) ? prefs.recentFiles : [], theme: prefs?.theme === "dark" ? "dark" : "light" });
      } catch {
        /* defaults */
      }
      const startup = await commands.startupFile().catch(() => null);
      if (startup) {
        await get().open(startup.path);
        if (startup.answersPath) set({ answersPath: startup.answersPath });
      }
      const s = await commands.getSettings().catch((e) => ({ settings: null, problem: { code: "SETTINGS_UNREADABLE", message: errorText(e), problems: [] } }));
      set({ settings: s?.settings ?? ({ providers: [], limits: { timeout_ms: 120000, retries: 2, max_tool_turns: 8 } } as unknown as Settings), settingsProblem: (s?.problem as CommandError | null) ?? null });
      if (s?.problem) fail(`Settings: ${s.problem.message} — the app uses defaults until Settings are saved again.`);
      await get().discoverModel();
      await get().refreshHistory();
      // Runs whose process died are offered at once: they can go on where they stopped.
      const interrupted = get().history.filter((r) => r.status === "interrupted");
      if (interrupted.length) {
        set({ panel: "history" });
        fail(`${interrupted.length} run${interrupted.length > 1 ? "s were" : " was"} interrupted when Switchyard stopped: History → Continue runs it on; nodes that completed do not run again.`);
      }
    },

    open: async (file) => {
      try {
        const opened = await unwrap(commands.openFile(file));
        let workflow = opened.workflow;
        const imported = opened.format !== "switchyard";
        // Files of systems that keep no positions (SWEny, TEA, OpenExpertise), and canonical files without them, are
        // laid out by ELK; the importer's own placement is only a fallback for the command line.
        if (POSITIONLESS_FORMATS.has(opened.format) || needsLayout(workflow)) workflow = await layout(workflow);
        // The run source follows the file: its answers file when one lies beside it, else the model; the message
        // says which. Decided before the document shows, so the toolbar never shows another file's source.
        const beside = await Promise.resolve().then(() => commands.scriptBeside(opened.path ?? file)).catch(() => null);
        const script = beside ?? null;
        set({ answersPath: script, mode: script ? "answers" : "model" });
        useDocument.getState().load(workflow, imported ? null : opened.path, opened.format, opened.notes);
        freshRunView(null);
        set({ dismissed: [], reviewing: null, approvalNotes: {} });
        remember(file);
        const scriptNote = script ? ` · runs offline with answers from ${baseName(script)}` : "";
        info(imported ? `Imported ${opened.format} file ${baseName(file)}${opened.notes.length ? ` (${opened.notes.length} notes)` : ""}${scriptNote}` : `Opened ${baseName(file)}${scriptNote}`);
        get().requestView("open");
      } catch (e) {
        failWith("Could not open", e, file);
      }
    },

    discoverModel: async () => {
      const found = await Promise.resolve()
        .then(() => commands.defaultModel())
        .catch((e) => ({ status: "error" as const, error: { message: errorText(e) } }));
      set({ defaultModel: found.status === "ok" ? found.data : { model: null, source: "none", detail: (found.error as { message: string }).message } });
    },

    closeWindow: async (answer) => {
      commitEditing();
      if (answer === "cancel") return set((s) => ({ dialogs: { ...s.dialogs, close: false } }));
      if (answer === "save") {
        await get().save();
        if (useDocument.getState().dirty) return; // not saved (the person cancelled the file picker, or it failed)
      }
      set((s) => ({ dialogs: { ...s.dialogs, close: false } }));
      if (!("__TAURI_INTERNALS__" in window)) return;
      const { getCurrentWindow } = await import("@tauri-apps/api/window");
      await getCurrentWindow().destroy();
    },

    openRecent: async (file) => {
      if (!(await confirmDiscard())) return;
      await get().open(file);
    },

    openPicked: async () => {
      if (!(await confirmDiscard())) return;
      const file = await pickFile(FILTERS);
      if (file) await get().open(file);
    },

    newWorkflow: async () => {
      if (!(await confirmDiscard())) return;
      useDocument.getState().load(emptyWorkflow(), null);
      freshRunView(null);
      set({ answersPath: null, mode: "model", dismissed: [], reviewing: null, approvalNotes: {} });
      get().requestView("open");
    },

    save: async () => {
      commitEditing();
      const path = useDocument.getState().path;
      if (!path) return get().saveAs();
      await writeTo(path);
    },

    saveAs: async () => {
      commitEditing();
      const { path, workflow } = useDocument.getState();
      const file = await pickSavePath(path ?? `${workflow.name.replace(/\W+/g, "-").toLowerCase()}.yaml`);
      if (file) await writeTo(file);
    },

    exportYaml: async () => {
      commitEditing();
      const { path, workflow } = useDocument.getState();
      const suggested = (path ? baseName(path).replace(/\.(json|ya?ml)$/i, "") : workflow.name.replace(/\W+/g, "-").toLowerCase()) + ".yaml";
      const file = await pickSavePath(path ? path.replace(/[^/]*$/, suggested) : suggested);
      if (!file) return;
      try {
        await unwrap(commands.saveFile(file, workflow));
        info(`Exported canonical YAML to ${baseName(file)}`);
      } catch (e) {
        failWith("Could not export to", e, file);
      }
    },

    setMode: (mode) => set({ mode }),
    setModel: (model) => set({ model }),
    chooseAnswers: async () => {
      const file = await pickFile(ANSWERS_FILTERS);
      if (file) set({ answersPath: file, mode: "answers" });
    },
    clearAnswers: () => set({ answersPath: null, mode: "model" }),

    run: async (from?: { run: string; node: string }) => {
      commitEditing();
      const { mode, answersPath, model } = get();
      const run = useRun.getState();
      if (run.status === "running" || run.status === "paused") return;
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
      set({ dismissed: [], reviewing: null, approvalNotes: {} });
      try {
        freshRunView("", wf.nodes.map((n) => n.id));
        const id = await unwrap(
          commands.startRun(
            { workflow: wf, workflowPath: doc.path, input: null, answersPath: mode === "answers" ? answersPath : null, model: mode === "model" && model ? model : null, reuseRun: from?.run ?? null, fromNode: from?.node ?? null },
            runEventChannel(),
          ),
        );
        useRun.setState({ runId: id });
        void get().refreshHistory();
      } catch (e) {
        useRun.setState({ status: "failed", error: errorText(e) });
        failWith("The run could not start", e);
      }
    },

    answerConsent: async (allow) => {
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
      if (asked.resume) await get().resumeRun(asked.resume);
      else await get().run(asked.from);
    },

    cancel: () => {
      const id = useRun.getState().runId;
      if (id) commands.cancelRun(id).catch((e) => fail(errorText(e)));
    },

    decide: async (node, decision, note) => {
      const id = useRun.getState().runId;
      if (!id) return;
      await unwrap(commands.decide(id, node, decision, note));
      set((s) => {
        const notes = { ...s.approvalNotes };
        delete notes[node];
        return { approvalNotes: notes, reviewing: null };
      });
    },

    resumeRun: async (id) => {
      try {
        // The run goes on with the document it started with: its code is asked about as for a new run.
        const stored = await unwrap(commands.openRun(id));
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
        useDocument.getState().load(doc.workflow, doc.path, doc.format, doc.notes);
        freshRunView(resumed.runId, doc.workflow.nodes.map((n) => n.id));
        useRun.getState().apply(history as unknown as Event[]); // what happened before the pause; new events follow
        set({ dismissed: [], reviewing: null });
        info(`Continued run ${id.slice(0, 8)}${doc.path ? ` of ${baseName(doc.path)}` : ""}`);
        set({ panel: "run" });
        get().requestView("open");
      } catch (e) {
        failWith(`Could not continue run ${id.slice(0, 8)}`, e);
      }
      await get().refreshHistory();
    },

    refreshHistory: async () => {
      const runs = await commands.listRuns().catch(() => null);
      if (runs?.status === "ok") set({ history: runs.data });
    },

    openRun: async (id) => {
      if (!(await confirmDiscard())) return;
      try {
        const opened = await showStoredRun(id);
        useRun.getState().apply(opened.events as unknown as Event[]);
        // A run whose process died shows as it was left.
        if (opened.row.status === "interrupted") useRun.setState({ status: "failed", error: "interrupted: History → Continue runs it on" });
        set({ dismissed: [], reviewing: null, panel: "run" });
        info(`Run ${id.slice(0, 8)} (${opened.row.status}) as it ran`);
        get().requestView("open");
      } catch (e) {
        failWith(`Could not open run ${id.slice(0, 8)}`, e);
      }
    },

    replayRun: async (id) => {
      if (!(await confirmDiscard())) return;
      try {
        const opened = await showStoredRun(id);
        set({ dismissed: [], reviewing: null, panel: "run" });
        // The engine plays the run again from its recording (no model or tool call), which checks that the recording
        // still gives the same run; the person then watches it step by step on a timeline, from the events the run
        // recorded (a replay gives exactly those: the engine's tests hold it to that).
        await unwrap(commands.replayRun(id, new Channel<Event_Deserialize[]>()));
        const recorded = (await unwrap(commands.runEvents(id))) as unknown as Event[];
        useReplay.getState().load(id, opened.document.workflow.nodes.map((n) => n.id), recorded);
        info(`Replaying run ${id.slice(0, 8)} from its recording: no model or tool is called. Drag the timeline to any moment.`);
        get().requestView("open");
      } catch (e) {
        failWith(`Could not replay run ${id.slice(0, 8)}`, e);
      }
    },

    runFrom: async (node) => {
      const last = useRun.getState().runId || get().history.find((r) => r.workflowRef === useDocument.getState().path)?.id;
      if (!last) return fail("Run the workflow once first: running from a node takes the last run's results for the nodes before it.");
      await get().run({ run: last, node });
    },

    setPanel: (panel) => set({ panel }),

    setTheme: (theme) => {
      set({ theme });
      savePrefs();
    },
    setSettings: (settings) => {
      set({ settings, settingsProblem: null });
      void get().discoverModel();
    },

    layout: async () => {
      const laid = await layout(useDocument.getState().workflow);
      // Only the positions are taken, onto the document as it is now: an edit made while ELK worked is kept.
      const at = new Map(laid.nodes.map((n) => [n.id, n.position]));
      useDocument.getState().edit((w) => ({ ...w, nodes: w.nodes.map((n) => (at.has(n.id) ? { ...n, position: at.get(n.id) } : n)) }));
      get().requestView("fit");
    },

    requestView: (kind) => set((s) => ({ view: { kind, nonce: s.view.nonce + 1 } })),
    viewShown: (nonce) => set({ shownView: nonce }),
    setDialog: (name, open) => set((s) => ({ dialogs: { ...s.dialogs, [name]: open } })),
    inspect: (tab, iteration = null) => set({ inspector: { tab, iteration } }),
    setApprovalNote: (node, note) => set((s) => ({ approvalNotes: { ...s.approvalNotes, [node]: note } })),
    review: (node) => set((s) => ({ reviewing: node, dismissed: node ? s.dismissed.filter((d) => d !== node) : s.dismissed })),
    dismissApproval: (node) => set((s) => ({ dismissed: [...s.dismissed, node], reviewing: null })),
  };
});

/** A channel for a run's events, applied to the run store once per animation frame. */
function runEventChannel(): Channel<Event_Deserialize[]> {
  // The generated channel type names the deserialize side; what arrives is what Rust serialized (`Event`).
  const channel = new Channel<Event_Deserialize[]>();
  const batch = frameBatcher((events) => useRun.getState().apply(events));
  channel.onmessage = (events) => batch(events as unknown as Event[]);
  return channel;
}
