// The window: toolbar, then the canvas with the palette, the inspector and the bottom panel around it in resizable,
// collapsible panes (their sizes are remembered), and the dialogs. Each part is a small component over the stores;
// what they do to files, runs, stored runs and settings is in the stores of each (store/files.ts, runControl.ts,
// history.ts, prefs.ts), and which dialogs are open in store/dialogs.ts.
import { lazy, Suspense, useEffect } from "react";
import { ReactFlowProvider } from "@xyflow/react";
import { Group, Panel, Separator, useDefaultLayout, usePanelRef, type PanelImperativeHandle } from "react-resizable-panels";
import { Canvas } from "./components/Canvas";
import { CloseDialog } from "./components/CloseDialog";
import { Inspector } from "./components/Inspector";
import { Approvals, BottomPanel, CodeConsentDialog, HelpPanel } from "./components/Panels";
import { Palette } from "./components/Palette";
import { ReplayBar } from "./components/ReplayBar";
import { Toasts } from "./components/Toasts";
import { Toolbar, useModels } from "./components/Toolbar";
import { handleShortcut } from "./shortcuts";
import { useDocument } from "./store/document";
import { useLayoutPrefs } from "./store/layoutPrefs";
import { useRun } from "./store/run";
import { baseName } from "./model/paths";
import { commitEditing } from "./store/ask";
import { useDialogs } from "./store/dialogs";
import * as storedRuns from "./store/history";
import { usePrefs } from "./store/prefs";
import * as runControl from "./store/runControl";
import { runBlocked, useRunControl } from "./store/runControl";
import { startUp } from "./store/startup";
import { useValidation, validateOnEdit } from "./store/validation";
import { appWindow, onServer } from "./transport";
import { useQuickAdd } from "./store/quickAdd";
import { NoSuchWorkflow, useMissingWorkflow } from "./components/NoSuchWorkflow";

/**
 * The first stops of the tab order, shown when focused: the node palette and the canvas are one or two key presses
 * from the page's start, not behind every toolbar button.
 */
function SkipLinks() {
  const go = (selector: string) => (e: React.MouseEvent) => {
    e.preventDefault();
    document.querySelector<HTMLElement>(selector)?.focus();
  };
  return (
    <nav className="skip-links" aria-label="Skip to">
      <a href="#node-palette" className="skip-link" data-testid="skip-to-palette" onClick={go(".palette button")}>Skip to the node palette</a>
      <a href="#canvas" className="skip-link" data-testid="skip-to-canvas" onClick={go(".react-flow__node.selected, .react-flow__node, .react-flow__pane")}>Skip to the canvas</a>
    </nav>
  );
}

// Opened on demand: the first window paints without them.
const SettingsDialog = lazy(() => import("./components/SettingsDialog").then((m) => ({ default: m.SettingsDialog })));
const CommandPalette = lazy(() => import("./components/CommandPalette").then((m) => ({ default: m.CommandPalette })));
const QuickAdd = lazy(() => import("./components/QuickAdd").then((m) => ({ default: m.QuickAdd })));

function CodeConsent() {
  const asked = useRunControl((s) => s.consent);
  if (!asked) return null;
  return <CodeConsentDialog consent={asked.consent} onAnswer={(allow) => void runControl.answerConsent(allow)} />;
}

/** Why Run cannot start, over the top of the canvas (it covers nothing the person works with, and shifts nothing). */
function Blocked() {
  const mode = useRunControl((s) => s.mode);
  const answersPath = useRunControl((s) => s.answersPath);
  const errors = useValidation((v) => v.report.errors);
  const status = useRun((r) => r.status);
  const blocked = runBlocked(errors, mode, answersPath);
  if (!blocked || status === "running" || status === "paused") return null;
  return (
    <div className="blocked-bar" data-testid="run-blocked" title={blocked}>
      Run is off: {blocked}
    </div>
  );
}

/** The window's title: the workflow's name, its file, and whether it has unsaved changes. */
function useWindowTitle() {
  const name = useDocument((d) => d.workflow.name);
  const path = useDocument((d) => d.path);
  const dirty = useDocument((d) => d.dirty);
  useEffect(() => {
    const title = `${dirty ? "• " : ""}${name || "Untitled"} — ${path ? baseName(path) : "not saved yet"} — Switchyard`;
    document.title = title;
    if (!appWindow()) return;
    void import("@tauri-apps/api/window").then(({ getCurrentWindow }) => getCurrentWindow().setTitle(title)).catch(() => undefined);
  }, [name, path, dirty]);
}

/** The close button asks first when there are unsaved changes (Save / Don't save / Cancel), then closes. */
function useCloseGuard() {
  useEffect(() => {
    if (!appWindow()) return;
    let unlisten: (() => void) | undefined;
    let gone = false;
    void import("@tauri-apps/api/window").then(({ getCurrentWindow }) =>
      getCurrentWindow()
        .onCloseRequested((event) => {
          // The field being typed in counts: its text is part of what would be lost.
          commitEditing();
          if (!useDocument.getState().dirty) return; // the window closes
          event.preventDefault();
          useDialogs.getState().setDialog("close", true);
        })
        .then((u) => (gone ? u() : (unlisten = u))),
    );
    return () => {
      gone = true;
      unlisten?.();
    };
  }, []);
}

/**
 * A Radix modal layer (dialog, menu) makes the rest of the page inert with `pointer-events: none` on <body> and puts it
 * back when the last one closes; when layers open and close in the same moment (a dialog closing as a menu opens)
 * the value restored can be the inert one, and every click is then lost. Once no layer is open, <body> takes
 * clicks again.
 */
function usePointerEventsRestored() {
  useEffect(() => {
    const open = () => document.querySelector('[role="dialog"], [role="alertdialog"], [role="menu"], [data-radix-popper-content-wrapper]');
    const check = () => {
      if (document.body.style.pointerEvents === "none" && !open())
        requestAnimationFrame(() => {
          if (document.body.style.pointerEvents === "none" && !open()) document.body.style.pointerEvents = "";
        });
    };
    const watch = new MutationObserver(check);
    watch.observe(document.body, { attributes: true, attributeFilter: ["style"], childList: true });
    return () => watch.disconnect();
  }, []);
}

/** The inspector opens when something is selected, and closes when nothing is, unless the person pinned it. */
function useInspectorFollowsSelection(panel: ReturnType<typeof usePanelRef>) {
  const selected = useDocument((d) => d.selection.nodes.length + d.selection.edges.length > 0);
  const pinned = useLayoutPrefs((p) => p.inspectorPinned);
  useEffect(() => {
    const p = panel.current;
    if (!p) return;
    if (selected || pinned) {
      if (p.isCollapsed()) p.expand();
      return;
    }
    if (p.isCollapsed()) return;
    // Closed after the frame that shows what emptied the selection (a Delete, Escape) was painted: the canvas then
    // widens and draws what came into view as a second step, instead of holding back the first (at 5,000 nodes the
    // deletion showed ~100 ms later). A selection made meanwhile keeps it open.
    let timer: ReturnType<typeof setTimeout> | undefined;
    const frame = requestAnimationFrame(() => {
      timer = setTimeout(() => {
        if (!p.isCollapsed()) p.collapse();
      });
    });
    return () => {
      cancelAnimationFrame(frame);
      clearTimeout(timer);
    };
  }, [selected, pinned, panel]);
}

/** The height the bottom panel opens to when it was never opened larger. */
const BOTTOM_OPEN_PX = 210;

function openPanel(p: PanelImperativeHandle | null) {
  if (!p?.isCollapsed()) return;
  p.expand();
  if (p.getSize().inPixels < BOTTOM_OPEN_PX - 1) p.resize(BOTTOM_OPEN_PX);
}

/** The bottom panel opens when a run starts or the person picks a tab. */
function useBottomFollowsRun(panel: ReturnType<typeof usePanelRef>) {
  const runId = useRun((r) => r.runId);
  const status = useRun((r) => r.status);
  const open = useLayoutPrefs((p) => p.bottomOpenRequest);
  useEffect(() => {
    if (status === "running") openPanel(panel.current);
  }, [runId, status, panel]);
  useEffect(() => {
    if (open) openPanel(panel.current);
  }, [open, panel]);
}

function Workbench() {
  const theme = usePrefs((s) => s.theme);
  const dialogs = useDialogs((s) => s.shown);
  const quick = useQuickAdd((s) => s.open);
  const missing = useMissingWorkflow((s) => s.missing);
  // A collapsed inspector keeps its fields out of the tab order (and from screen readers).
  const inspectorClosed = useLayoutPrefs((p) => p.inspectorPx === 0);
  const settings = usePrefs((s) => s.settings);
  const models = useModels();
  const inspector = usePanelRef();
  const bottom = usePanelRef();
  const palette = usePanelRef();
  const horizontal = useDefaultLayout({ id: "switchyard-main", storage: localStorage });
  const vertical = useDefaultLayout({ id: "switchyard-centre", storage: localStorage });
  useWindowTitle();
  useCloseGuard();
  usePointerEventsRestored();
  useInspectorFollowsSelection(inspector);
  useBottomFollowsRun(bottom);
  useEffect(() => useLayoutPrefs.getState().attach({ palette, inspector, bottom }), [palette, inspector, bottom]);
  // Canvas first: with no remembered layout, the bottom panel starts as its tab bar.
  useEffect(() => {
    if (!vertical.defaultLayout) bottom.current?.collapse();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);

  useEffect(() => {
    document.documentElement.dataset.theme = theme;
  }, [theme]);

  useEffect(
    () =>
      validateOnEdit(
        useDocument,
        () => useRunControl.getState().mode === "answers",
        (f) => {
          const stopRunControl = useRunControl.subscribe((s, p) => (s.mode !== p.mode || s.trustedAt !== p.trustedAt) && f());
          const stopPrefs = usePrefs.subscribe((s, p) => s.defaultModel !== p.defaultModel && f());
          return () => (stopRunControl(), stopPrefs());
        },
      ),
    [],
  );

  useEffect(() => {
    void startUp();
    // The history changes when a run ends or pauses.
    return useRun.subscribe((r, p) => {
      if (r.status !== p.status) void storedRuns.refresh();
    });
  }, []);

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => void handleShortcut(e);
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, []);

  if (missing) return <NoSuchWorkflow missing={missing} />;
  return (
    <div className="app">
      <SkipLinks />
      <Toolbar />
      <Group orientation="horizontal" className="main" id="switchyard-main" defaultLayout={horizontal.defaultLayout} onLayoutChanged={horizontal.onLayoutChanged}>
        <Panel id="palette" panelRef={palette} defaultSize={68} minSize={60} maxSize={160} collapsible collapsedSize={44} className="pane-palette">
          <Palette />
        </Panel>
        <Separator className="resize-handle vertical" />
        <Panel id="centre" minSize={320}>
          <Group orientation="vertical" id="switchyard-centre" defaultLayout={vertical.defaultLayout} onLayoutChanged={vertical.onLayoutChanged}>
            <Panel id="canvas" minSize={200}>
              <div className="canvas" data-testid="canvas">
                <Canvas />
                <Blocked />
                <ReplayBar />
                <Toasts />
              </div>
            </Panel>
            <Separator className="resize-handle horizontal" />
            <Panel id="bottom" panelRef={bottom} defaultSize={BOTTOM_OPEN_PX} minSize={120} collapsible collapsedSize={35} className="pane-bottom">
              <BottomPanel />
            </Panel>
          </Group>
        </Panel>
        <Separator className="resize-handle vertical" />
        <Panel id="inspector" panelRef={inspector} defaultSize={0} minSize={260} maxSize={560} collapsible collapsedSize={0} className="pane-inspector" inert={inspectorClosed} onResize={(size) => useLayoutPrefs.getState().setInspectorPx(size.inPixels)}>
          <Inspector models={models} />
        </Panel>
      </Group>
      <Approvals />
      <CodeConsent />
      <CloseDialog />
      <Suspense fallback={null}>
        {dialogs.find && <CommandPalette />}
        {quick && <QuickAdd />}
        {dialogs.settings && settings && !onServer() && <SettingsDialog onClose={() => useDialogs.getState().setDialog("settings", false)} />}
      </Suspense>
      {dialogs.help && <HelpPanel onClose={() => useDialogs.getState().setDialog("help", false)} />}
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
