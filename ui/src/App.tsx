// The window: toolbar, palette, canvas, inspector, bottom panel and dialogs. Files, runs and settings go through
// the typed commands in ./bindings; nothing here decides how a workflow runs.
import { useCallback, useEffect, useMemo, useRef, useState } from "react";
import { ReactFlowProvider, useReactFlow } from "@xyflow/react";
import { Channel } from "@tauri-apps/api/core";
import { ask, open as nativeOpen, save as nativeSave } from "@tauri-apps/plugin-dialog";
import type { Event_Deserialize } from "./bindings";
import type { Event, NodeType, Settings } from "./types";
import { commands, unwrap } from "./api";
import { Canvas, openFitOptions } from "./components/Canvas";
import { Inspector } from "./components/Inspector";
import { ApprovalDialog, BottomPanel, HelpPanel } from "./components/Panels";
import { SettingsDialog } from "./components/SettingsDialog";
import { layout } from "./model/layout";
import { emptyWorkflow, useDocument } from "./store/document";
import { frameBatcher, useRun } from "./store/run";
import { scheduleValidation, useValidation } from "./store/validation";

const FILTERS = [{ name: "Workflows", extensions: ["yaml", "yml", "json"] }];

// End-to-end tests cannot click in the OS file picker, so they may name the path it would return. Only the picker is
// replaced; opening and saving still go through the real commands.
type DialogOverride = { open?: string; save?: string };
const dialogOverride = () => (window as unknown as { __switchyardDialog?: DialogOverride }).__switchyardDialog;
const openDialog: typeof nativeOpen = (async (options) => dialogOverride()?.open ?? nativeOpen(options)) as typeof nativeOpen;
const saveDialog: typeof nativeSave = async (options) => dialogOverride()?.save ?? nativeSave(options);
const RECENT_KEY = "switchyard.recent";

function recentFiles(): string[] {
  try {
    return JSON.parse(localStorage.getItem(RECENT_KEY) ?? "[]");
  } catch {
    return [];
  }
}

function remember(path: string) {
  localStorage.setItem(RECENT_KEY, JSON.stringify([path, ...recentFiles().filter((p) => p !== path)].slice(0, 8)));
}

const PALETTE: { type: NodeType; label: string }[] = [
  { type: "start", label: "▶ Start" },
  { type: "agent", label: "✦ Agent" },
  { type: "if", label: "◇ If" },
  { type: "approval", label: "‖ Approval" },
  { type: "script", label: "{} Script" },
];

function Workbench() {
  const flow = useReactFlow();
  const workflow = useDocument((s) => s.workflow);
  const path = useDocument((s) => s.path);
  const dirty = useDocument((s) => s.dirty);
  const errors = useValidation((s) => s.report.errors);
  const runStatus = useRun((s) => s.status);
  const runId = useRun((s) => s.runId);
  const pending = useRun((s) => s.pending);
  const [scriptPath, setScriptPath] = useState<string | null>(null);
  const [mode, setMode] = useState<"script" | "model">("script");
  const [model, setModel] = useState("");
  const [settings, setSettings] = useState<Settings | null>(null);
  const [message, setMessage] = useState<string | null>(null);
  const [connectProblem, setConnectProblem] = useState<string | null>(null);
  const [reviewing, setReviewing] = useState<string | null>(null);
  const [dismissed, setDismissed] = useState<string[]>([]);
  const [help, setHelp] = useState(false);
  const [showSettings, setShowSettings] = useState(false);
  const [pausedRuns, setPausedRuns] = useState<{ id: string; workflowPath: string }[]>([]);
  const [find, setFind] = useState<string | null>(null);
  const [theme, setTheme] = useState<"light" | "dark">(() => (localStorage.getItem("switchyard.theme") as "light" | "dark") ?? "light");
  const findInput = useRef<HTMLInputElement>(null);

  useEffect(() => {
    document.documentElement.dataset.theme = theme;
    localStorage.setItem("switchyard.theme", theme);
  }, [theme]);

  const scripted = mode === "script";
  useEffect(() => scheduleValidation(workflow, scripted), [workflow, scripted]);

  const load = useCallback(
    async (file: string) => {
      try {
        const opened = await unwrap(commands.openFile(file));
        useDocument.getState().load(opened.workflow, opened.format === "switchyard" ? opened.path : null, opened.format, opened.notes);
        useRun.getState().reset();
        remember(file);
        setMessage(opened.format === "switchyard" ? `Opened ${file}` : `Imported ${opened.format} file ${file}${opened.notes.length ? ` (${opened.notes.length} notes)` : ""}`);
        // Fit once the canvas has the new nodes (two frames); React Flow's `fitView` prop would mount every node
        // of a large graph just to measure it.
        requestAnimationFrame(() =>
          requestAnimationFrame(async () => {
            await flow.fitView(openFitOptions(opened.workflow.nodes.map((n) => n.id)));
            window.dispatchEvent(new CustomEvent("switchyard:opened", { detail: file }));
          }),
        );
      } catch (e) {
        setMessage(`Could not open ${file}: ${e instanceof Error ? e.message : e}`);
      }
    },
    [flow],
  );

  useEffect(() => {
    (async () => {
      const startup = await commands.startupFile();
      if (startup) {
        await load(startup.path);
        if (startup.scriptPath) setScriptPath(startup.scriptPath);
      }
      const s = await commands.getSettings();
      if (s.status === "ok") setSettings(s.data);
      await refreshPaused();
    })();
  }, [load]);

  /** Runs paused in this or an earlier session, which can be continued. */
  const refreshPaused = async () => {
    const runs = await commands.listRuns();
    if (runs.status === "ok") setPausedRuns(runs.data.filter((r) => r.status === "paused" && !r.live).map((r) => ({ id: r.id, workflowPath: r.workflowPath })));
  };

  const resumeStored = async (id: string) => {
    const channel = runEventChannel();
    try {
      const history = await unwrap(commands.runEvents(id));
      const resumed = await unwrap(commands.resumeRun(id, channel));
      const doc = resumed.document;
      useDocument.getState().load(doc.workflow, doc.path, doc.format, doc.notes);
      useRun.getState().begin(resumed.runId, doc.workflow.nodes.map((n) => n.id));
      useRun.getState().apply(history as unknown as Event[]); // what happened before the pause; new events follow
      setDismissed([]);
      setMessage(`Resumed run ${id.slice(0, 8)} of ${doc.path}`);
      requestAnimationFrame(() => flow.fitView(openFitOptions(doc.workflow.nodes.map((n) => n.id))));
    } catch (e) {
      setMessage(`Could not resume: ${e instanceof Error ? e.message : e}`);
    }
    await refreshPaused();
  };

  const models = useMemo(() => {
    const refs = new Set<string>();
    for (const p of settings?.providers ?? []) if (p.default_model) refs.add(`${p.id}/${p.default_model}`);
    if (settings?.default_model) refs.add(settings.default_model);
    for (const n of workflow.nodes) if (n.model) refs.add(n.model);
    if (workflow.defaults?.model) refs.add(workflow.defaults.model);
    return [...refs];
  }, [settings, workflow]);

  const openFile = async () => {
    const file = await openDialog({ multiple: false, filters: FILTERS });
    if (typeof file === "string") await load(file);
  };

  const saveAs = async (extension: "yaml" | "json" = "yaml") => {
    const file = await saveDialog({ filters: FILTERS, defaultPath: path ?? `${workflow.name.replace(/\W+/g, "-").toLowerCase()}.${extension}` });
    if (!file) return;
    try {
      await unwrap(commands.saveFile(file, useDocument.getState().workflow));
      useDocument.getState().markSaved(file);
      remember(file);
      setMessage(`Saved ${file}`);
    } catch (e) {
      setMessage(String(e));
    }
  };

  const save = async () => {
    if (!path) return saveAs();
    try {
      await unwrap(commands.saveFile(path, useDocument.getState().workflow));
      useDocument.getState().markSaved(path);
      setMessage(`Saved ${path}`);
    } catch (e) {
      setMessage(String(e));
    }
  };

  const chooseScript = async () => {
    const file = await openDialog({ multiple: false, filters: [{ name: "Script files", extensions: ["yaml", "yml", "json"] }] });
    if (typeof file === "string") setScriptPath(file);
  };

  const blocked = errors.length ? `${errors.length} error${errors.length > 1 ? "s" : ""}: ${errors[0].message}` : mode === "script" && !scriptPath ? "choose a script file, or run with a model" : null;
  const running = runStatus === "running" || runStatus === "paused";

  const run = async () => {
    if (blocked || running) return;
    const wf = useDocument.getState().workflow; // the graph as it is now; later edits do not change this run
    const channel = runEventChannel();
    setDismissed([]);
    try {
      useRun.getState().begin("", wf.nodes.map((n) => n.id));
      const id = await unwrap(
        commands.startRun({ workflow: wf, workflowPath: useDocument.getState().path, input: null, scriptPath: mode === "script" ? scriptPath : null, model: mode === "model" && model ? model : null }, channel),
      );
      useRun.setState({ runId: id });
    } catch (e) {
      useRun.setState({ status: "failed", error: String(e) });
    }
  };

  const decide = async (node: string, decision: "approve" | "reject", note: string) => {
    if (!runId) return;
    await unwrap(commands.decide(runId, node, decision, note));
    setReviewing(null);
  };

  const doLayout = () => {
    useDocument.getState().edit(layout);
    setTimeout(() => flow.fitView({ padding: 0.2 }), 50);
  };

  const findNode = (query: string) => {
    const q = query.toLowerCase();
    const hit = useDocument.getState().workflow.nodes.find((n) => n.id.toLowerCase().includes(q) || (n.name ?? "").toLowerCase().includes(q));
    if (!hit) return setMessage(`No node matches "${query}"`);
    useDocument.getState().select({ nodes: [hit.id], edges: [] });
    flow.setCenter((hit.position?.x ?? 0) + 100, (hit.position?.y ?? 0) + 35, { zoom: 1.2, duration: 300 });
    setFind(null);
  };

  // Keyboard shortcuts (not while typing in a field).
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      const typing = (e.target as HTMLElement)?.closest?.("input, textarea, select");
      const mod = e.ctrlKey || e.metaKey;
      const doc = useDocument.getState();
      if (mod && e.key.toLowerCase() === "s") return e.preventDefault(), void save();
      if (mod && e.key.toLowerCase() === "o") return e.preventDefault(), void openFile();
      if (mod && e.key.toLowerCase() === "f") return e.preventDefault(), setFind("");
      if (mod && e.key === "Enter") return e.preventDefault(), void run();
      if (e.key === "F1") return e.preventDefault(), setHelp(true);
      if (typing) return;
      if (mod && e.key.toLowerCase() === "z") return e.preventDefault(), e.shiftKey ? doc.redo() : doc.undo();
      if (mod && e.key.toLowerCase() === "y") return e.preventDefault(), doc.redo();
      if (mod && e.key.toLowerCase() === "c") return doc.copySelection();
      if (mod && e.key.toLowerCase() === "v") return doc.paste();
      if (mod && e.key.toLowerCase() === "d") return e.preventDefault(), doc.duplicateSelection();
      if (mod && e.key.toLowerCase() === "l") return e.preventDefault(), doLayout();
      if (e.key === "?") return setHelp(true);
      if (e.key === "Escape") return setFind(null), setHelp(false);
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  });

  useEffect(() => {
    if (find !== null) findInput.current?.focus();
  }, [find]);

  useEffect(() => {
    const onReview = (e: globalThis.Event) => setReviewing((e as CustomEvent<string>).detail);
    window.addEventListener("switchyard:review", onReview);
    return () => window.removeEventListener("switchyard:review", onReview);
  }, []);

  // Ask before closing with unsaved changes (only inside the app window).
  useEffect(() => {
    if (!("__TAURI_INTERNALS__" in window)) return;
    let unlisten: (() => void) | undefined;
    import("@tauri-apps/api/window").then(({ getCurrentWindow }) =>
      getCurrentWindow()
        .onCloseRequested(async (event) => {
          if (useDocument.getState().dirty && !(await ask("Discard unsaved changes?", { title: "Switchyard", kind: "warning" }))) event.preventDefault();
        })
        .then((u) => (unlisten = u)),
    );
    return () => unlisten?.();
  }, []);

  const approval = pending.find((p) => p.node === reviewing) ?? pending.find((p) => !dismissed.includes(p.node));

  return (
    <div className="app">
      <header className="toolbar">
        <strong className="brand">Switchyard</strong>
        <button onClick={() => confirmDiscard().then((ok) => ok && useDocument.getState().load(emptyWorkflow(), null))}>New</button>
        <button onClick={openFile} data-testid="open">Open…</button>
        <select className="recent" value="" onChange={(e) => e.target.value && load(e.target.value)} title="Recent files">
          <option value="">Recent</option>
          {recentFiles().map((p) => <option key={p} value={p}>{p.split("/").pop()}</option>)}
        </select>
        <button onClick={save} title="Ctrl+S">Save{dirty ? " •" : ""}</button>
        <button onClick={() => saveAs("yaml")} data-testid="export">Export YAML…</button>
        <span className="sep" />
        <button onClick={() => useDocument.getState().undo()} title="Ctrl+Z">Undo</button>
        <button onClick={() => useDocument.getState().redo()} title="Ctrl+Shift+Z">Redo</button>
        <button onClick={doLayout} title="Ctrl+L">Layout</button>
        <button onClick={() => flow.fitView({ padding: 0.2 })}>Fit</button>
        <button onClick={() => setFind("")} title="Ctrl+F">Find</button>
        <span className="sep" />
        <select value={mode} onChange={(e) => setMode(e.target.value as "script" | "model")} data-testid="run-mode">
          <option value="script">Script file</option>
          <option value="model">Model</option>
        </select>
        {mode === "script" ? (
          <button onClick={chooseScript} title={scriptPath ?? ""} data-testid="script-path">{scriptPath ? scriptPath.split("/").pop() : "Choose script…"}</button>
        ) : (
          <>
            <input list="run-models" placeholder="workflow default" value={model} onChange={(e) => setModel(e.target.value)} />
            <datalist id="run-models">{models.map((m) => <option key={m} value={m} />)}</datalist>
          </>
        )}
        {running ? (
          <button className="danger" onClick={() => runId && commands.cancelRun(runId)} data-testid="cancel">Cancel</button>
        ) : (
          <button className="primary" onClick={run} disabled={Boolean(blocked)} title={blocked ?? "Ctrl+Enter"} data-testid="run">Run</button>
        )}
        {blocked && !running && <span className="blocked" data-testid="run-blocked">{blocked}</span>}
        {pausedRuns.length > 0 && (
          <select value="" onChange={(e) => e.target.value && resumeStored(e.target.value)} data-testid="paused-runs" title="Runs paused earlier: choose one to continue it">
            <option value="">Paused runs ({pausedRuns.length})</option>
            {pausedRuns.map((r) => <option key={r.id} value={r.id}>{r.workflowPath.split("/").pop()} · {r.id.slice(0, 8)}</option>)}
          </select>
        )}
        <span className="grow" />
        <button onClick={() => setShowSettings(true)} disabled={!settings} data-testid="settings-button">Settings</button>
        <button onClick={() => setTheme(theme === "light" ? "dark" : "light")}>{theme === "light" ? "Dark" : "Light"}</button>
        <button onClick={() => setHelp(true)} title="F1">?</button>
      </header>
      <div className="main">
        <aside className="palette">
          <h2>Add</h2>
          {PALETTE.map((p) => (
            <button
              key={p.type}
              data-testid={`add-${p.type}`}
              onClick={() => {
                const center = flow.screenToFlowPosition({ x: window.innerWidth / 2, y: window.innerHeight / 2 });
                useDocument.getState().addNode(p.type, { x: Math.round(center.x), y: Math.round(center.y) });
              }}
            >
              {p.label}
            </button>
          ))}
          <p className="muted small">{path ?? "unsaved"}</p>
        </aside>
        <div className="canvas" data-testid="canvas">
          <Canvas onProblem={setConnectProblem} colorMode={theme} />
          {connectProblem && <div className="toast error" data-testid="connect-problem">{connectProblem}</div>}
          {message && !connectProblem && <div className="toast" onClick={() => setMessage(null)} data-testid="message">{message}</div>}
          {find !== null && (
            <form className="find" onSubmit={(e) => (e.preventDefault(), findNode(find))}>
              <input ref={findInput} value={find} placeholder="Find node by id or name" onChange={(e) => setFind(e.target.value)} onBlur={() => setFind(null)} />
            </form>
          )}
        </div>
        <Inspector models={models} />
      </div>
      <BottomPanel onDecide={setReviewing} />
      {approval && (
        <ApprovalDialog
          key={approval.node}
          approval={approval}
          onClose={() => {
            setDismissed((d) => [...d, approval.node]);
            setReviewing(null);
          }}
          onDecide={(d, note) => decide(approval.node, d, note)}
        />
      )}
      {help && <HelpPanel onClose={() => setHelp(false)} />}
      {showSettings && settings && <SettingsDialog initial={settings} onClose={() => setShowSettings(false)} onSaved={setSettings} />}
    </div>
  );
}

/** A channel for a run's events, applied to the run store once per animation frame. */
function runEventChannel(): Channel<Event_Deserialize[]> {
  // The generated channel type names the deserialize side; what arrives is what Rust serialized (`Event`).
  const channel = new Channel<Event_Deserialize[]>();
  const batch = frameBatcher((events) => useRun.getState().apply(events));
  channel.onmessage = (events) => batch(events as unknown as Event[]);
  return channel;
}

async function confirmDiscard(): Promise<boolean> {
  if (!useDocument.getState().dirty) return true;
  return ask("Discard unsaved changes?", { title: "Switchyard", kind: "warning" });
}

export function App() {
  return (
    <ReactFlowProvider>
      <Workbench />
    </ReactFlowProvider>
  );
}
