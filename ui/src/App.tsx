// The window: toolbar, palette, canvas, inspector, bottom panel and dialogs, each a small component over the
// stores. What they do to files, runs and settings is in the session store (store/session.ts).
import { useEffect, useMemo, useRef, useState } from "react";
import { ReactFlowProvider, useReactFlow } from "@xyflow/react";
import { ask } from "@tauri-apps/plugin-dialog";
import { Canvas } from "./components/Canvas";
import { Inspector } from "./components/Inspector";
import { ApprovalDialog, BottomPanel, CodeConsentDialog, HelpPanel } from "./components/Panels";
import { Palette } from "./components/Palette";
import { SettingsDialog } from "./components/SettingsDialog";
import { Toasts } from "./components/Toasts";
import { handleShortcut } from "./shortcuts";
import { useDocument } from "./store/document";
import { useMessages } from "./store/messages";
import { useRun } from "./store/run";
import { runBlocked, useSession } from "./store/session";
import { useValidation, validateOnEdit } from "./store/validation";

function Toolbar() {
  const s = useSession();
  const dirty = useDocument((d) => d.dirty);
  const errors = useValidation((v) => v.report.errors);
  const runStatus = useRun((r) => r.status);
  const running = runStatus === "running" || runStatus === "paused";
  const blocked = runBlocked(errors, s.mode, s.scriptPath);
  const models = useModels();
  return (
    <header className="toolbar">
      <strong className="brand">Switchyard</strong>
      <button onClick={() => s.newWorkflow()} title="Ctrl+N" data-testid="new">New</button>
      <button onClick={() => s.openPicked()} data-testid="open" title="Ctrl+O">Open…</button>
      <select className="recent" value="" onChange={(e) => e.target.value && s.open(e.target.value)} title="Recent files" data-testid="recent">
        <option value="">Recent</option>
        {s.recentFiles.map((p) => <option key={p} value={p}>{p.split("/").pop()}</option>)}
      </select>
      <button onClick={() => s.save()} title="Ctrl+S">Save{dirty ? " •" : ""}</button>
      <button onClick={() => s.exportYaml()} data-testid="export" title="Export canonical YAML (Ctrl+Shift+E); the open file stays as it is">Export…</button>
      <span className="sep" />
      <button onClick={() => useDocument.getState().undo()} title="Ctrl+Z">Undo</button>
      <button onClick={() => useDocument.getState().redo()} title="Ctrl+Shift+Z">Redo</button>
      <button onClick={() => s.layout()} title="Ctrl+L" data-testid="layout">Layout</button>
      <button onClick={() => s.requestView("fit")} title="Shift+1">Fit</button>
      <button onClick={() => s.setDialog("find", true)} title="Ctrl+F">Find</button>
      <span className="sep" />
      <select value={s.mode} onChange={(e) => s.setMode(e.target.value as "script" | "model")} data-testid="run-mode" aria-label="run with">
        <option value="script">Script file</option>
        <option value="model">Model</option>
      </select>
      {s.mode === "script" ? (
        <span className="script-pick">
          <button onClick={() => s.chooseScript()} title={s.scriptPath ?? "Answers for an offline run"} data-testid="script-path">{s.scriptPath ? s.scriptPath.split("/").pop() : "Choose script…"}</button>
          {s.scriptPath && <button className="icon" onClick={() => s.clearScript()} title="Run without this script file" data-testid="script-clear">×</button>}
        </span>
      ) : (
        <>
          <input list="run-models" placeholder="workflow default" value={s.model} onChange={(e) => s.setModel(e.target.value)} aria-label="model" />
          <datalist id="run-models">{models.map((m) => <option key={m} value={m} />)}</datalist>
        </>
      )}
      {running ? (
        <button className="danger" onClick={() => s.cancel()} data-testid="cancel">Cancel</button>
      ) : (
        <button className="primary" onClick={() => s.run()} disabled={Boolean(blocked)} title={blocked ?? "Ctrl+Enter"} data-testid="run">Run</button>
      )}
      {blocked && !running && <span className="blocked" data-testid="run-blocked" title={blocked}>{blocked}</span>}
      <ContinueRuns />
      <span className="grow" />
      <button onClick={() => s.setDialog("settings", true)} data-testid="settings-button" className={s.settingsProblem ? "warn" : ""} title={s.settingsProblem ? `Settings problem: ${s.settingsProblem.message}` : "Model providers and limits"}>
        {s.settingsProblem ? "⚠ Settings" : "Settings"}
      </button>
      <button onClick={() => s.setTheme(s.theme === "light" ? "dark" : "light")} data-testid="theme">{s.theme === "light" ? "Dark" : "Light"}</button>
      <button onClick={() => s.setDialog("help", true)} title="F1">?</button>
    </header>
  );
}

/** Paused and interrupted runs, to continue one. */
function ContinueRuns() {
  const history = useSession((s) => s.history);
  const waiting = history.filter((r) => (r.status === "paused" || r.status === "interrupted") && !r.live);
  if (!waiting.length) return null;
  return (
    <select value="" onChange={(e) => e.target.value && useSession.getState().resumeStored(e.target.value)} data-testid="paused-runs" title="Runs that wait for a decision or were interrupted: choose one to continue it">
      <option value="">Continue… ({waiting.length})</option>
      {waiting.map((r) => <option key={r.id} value={r.id}>{r.status} · {(r.workflowRef ?? r.workflow).split("/").pop()} · {r.id.slice(0, 8)}</option>)}
    </select>
  );
}

/** Models a person may pick: configured defaults and those the workflow names. */
function useModels(): string[] {
  const settings = useSession((s) => s.settings);
  const workflow = useDocument((s) => s.workflow);
  return useMemo(() => {
    const refs = new Set<string>();
    for (const p of settings?.providers ?? []) if (p.default_model) refs.add(`${p.id}/${p.default_model}`);
    if (settings?.default_model) refs.add(settings.default_model);
    for (const n of workflow.nodes) if (n.model) refs.add(n.model);
    if (workflow.defaults?.model) refs.add(workflow.defaults.model);
    return [...refs];
  }, [settings, workflow]);
}

function FindBox() {
  const flow = useReactFlow();
  const close = () => useSession.getState().setDialog("find", false);
  const [query, setQuery] = useState("");
  const input = useRef<HTMLInputElement>(null);
  useEffect(() => input.current?.focus(), []);
  const find = () => {
    const q = query.toLowerCase();
    const hit = useDocument.getState().workflow.nodes.find((n) => n.id.toLowerCase().includes(q) || (n.name ?? "").toLowerCase().includes(q));
    if (!hit) return useMessages.getState().error(`No node matches "${query}"`);
    useDocument.getState().select({ nodes: [hit.id], edges: [] });
    flow.setCenter((hit.position?.x ?? 0) + 110, (hit.position?.y ?? 0) + 45, { zoom: Math.max(flow.getZoom(), 1), duration: 300 });
    close();
  };
  return (
    <form className="find" onSubmit={(e) => (e.preventDefault(), find())}>
      <input ref={input} value={query} placeholder="Find node by id or name" onChange={(e) => setQuery(e.target.value)} onBlur={close} onKeyDown={(e) => e.key === "Escape" && close()} data-testid="find" />
    </form>
  );
}

function CodeConsent() {
  const asked = useSession((s) => s.consent);
  if (!asked) return null;
  return <CodeConsentDialog consent={asked.consent} onAnswer={(allow) => void useSession.getState().answerConsent(allow)} />;
}

function Approvals() {
  const pending = useRun((s) => s.pending);
  const reviewing = useSession((s) => s.reviewing);
  const dismissed = useSession((s) => s.dismissed);
  const approval = pending.find((p) => p.node === reviewing) ?? pending.find((p) => !dismissed.includes(p.node));
  if (!approval) return null;
  const s = useSession.getState();
  return <ApprovalDialog key={approval.node} approval={approval} onClose={() => s.dismissApproval(approval.node)} onDecide={(d, note) => s.decide(approval.node, d, note)} />;
}

function Workbench() {
  const theme = useSession((s) => s.theme);
  const dialogs = useSession((s) => s.dialogs);
  const settings = useSession((s) => s.settings);
  const models = useModels();

  useEffect(() => {
    document.documentElement.dataset.theme = theme;
  }, [theme]);

  useEffect(
    () =>
      validateOnEdit(
        useDocument,
        () => useSession.getState().mode === "script",
        (f) => useSession.subscribe((s, p) => s.mode !== p.mode && f()),
      ),
    [],
  );

  useEffect(() => {
    void useSession.getState().init();
    // The history changes when a run ends or pauses.
    return useRun.subscribe((r, p) => {
      if (r.status !== p.status && r.status !== "running") void useSession.getState().refreshHistory();
    });
  }, []);

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => void handleShortcut(e);
    const onReview = (e: globalThis.Event) => useSession.getState().review((e as CustomEvent<string>).detail);
    window.addEventListener("keydown", onKey);
    window.addEventListener("switchyard:review", onReview);
    return () => {
      window.removeEventListener("keydown", onKey);
      window.removeEventListener("switchyard:review", onReview);
    };
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

  return (
    <div className="app">
      <Toolbar />
      <div className="main">
        <Palette />
        <div className="canvas" data-testid="canvas">
          <Canvas />
          <Toasts />
          {dialogs.find && <FindBox />}
        </div>
        <Inspector models={models} />
      </div>
      <BottomPanel />
      <Approvals />
      <CodeConsent />
      {dialogs.help && <HelpPanel onClose={() => useSession.getState().setDialog("help", false)} />}
      {dialogs.settings && settings && <SettingsDialog onClose={() => useSession.getState().setDialog("settings", false)} />}
    </div>
  );
}

export function App() {
  return (
    <ReactFlowProvider>
      <Workbench />
    </ReactFlowProvider>
  );
}
