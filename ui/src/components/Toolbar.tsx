// The toolbar: file commands, editing, the view, where a run's answers come from (one visible state), Run, and the
// app's settings. Icon buttons carry a tooltip with their name and shortcut.
import { useMemo, type ReactNode } from "react";
import * as Menu from "@radix-ui/react-dropdown-menu";
import * as Tooltip from "@radix-ui/react-tooltip";
import { Bot, ChevronDown, Clock, FileText, FilePlus2, FolderOpen, HelpCircle, LayoutDashboard, LogOut, Moon, Play, Redo2, Save, Scan, Search, Server, Settings, Share, Square, Sun, Undo2, X } from "lucide-react";
import { useDocument } from "../store/document";
import type { Workflow } from "../types";
import { useReplay } from "../store/replay";
import { useRun } from "../store/run";
import { baseName } from "../model/paths";
import { useDialogs } from "../store/dialogs";
import * as files from "../store/files";
import { useHistory } from "../store/history";
import { usePrefs } from "../store/prefs";
import * as runControl from "../store/runControl";
import { runBlocked, useRunControl } from "../store/runControl";
import { useTrail } from "../store/trail";
import { useView } from "../store/view";
import { useValidation } from "../store/validation";
import { onServer, signOut } from "../transport";
import { resumableHere } from "../model/runTree";

/** A button with a tooltip: its name, and its shortcut when it has one. */
export function Tip({ label, keys, children }: { label: string; keys?: string; children: ReactNode }) {
  return (
    <Tooltip.Root>
      <Tooltip.Trigger asChild>{children}</Tooltip.Trigger>
      <Tooltip.Portal>
        <Tooltip.Content className="tooltip" sideOffset={6}>
          {label}
          {keys && <kbd>{keys}</kbd>}
        </Tooltip.Content>
      </Tooltip.Portal>
    </Tooltip.Root>
  );
}

function IconButton({ label, keys, onClick, children, testId, disabled }: { label: string; keys?: string; onClick: () => void; children: ReactNode; testId?: string; disabled?: boolean }) {
  return (
    <Tip label={label} keys={keys}>
      <button className="icon-button" onClick={onClick} aria-label={label} data-testid={testId} disabled={disabled}>
        {children}
      </button>
    </Tip>
  );
}

/** The models a workflow names (its nodes', then its default), one per line: a value that changes only when they do. */
export function modelsNamed(workflow: Workflow): string {
  const named = new Set<string>();
  for (const n of workflow.nodes) if (n.model) named.add(n.model);
  if (workflow.defaults?.model) named.add(workflow.defaults.model);
  return [...named].join("\n");
}

/**
 * Models a person may pick: configured defaults and those the workflow names. It follows the names, not the
 * workflow: a drag or an edit that names no other model re-renders nothing (the app's shell uses it).
 */
export function useModels(): string[] {
  const settings = usePrefs((s) => s.settings);
  const named = useDocument((s) => modelsNamed(s.workflow));
  const found = usePrefs((s) => s.defaultModel?.model);
  return useMemo(() => {
    const refs = new Set<string>();
    if (found) refs.add(found);
    for (const p of settings?.providers ?? []) if (p.default_model) refs.add(`${p.id}/${p.default_model}`);
    if (settings?.default_model) refs.add(settings.default_model);
    for (const m of named.split("\n")) if (m) refs.add(m);
    return [...refs];
  }, [settings, named, found]);
}

/** Where the default model comes from, in the person's words. */
export function defaultModelSource(source: string | undefined): string {
  return source === "settings" ? "from Settings" : source === "local" ? "found on this computer" : "";
}

/** Where a run's answers come from: a model (the default, or one picked) or an answers file. One state, shown. */
function RunSource() {
  const s = useRunControl();
  const workflowDefault = useDocument((d) => d.workflow.defaults?.model);
  const models = useModels();
  const found = usePrefs((p) => p.defaultModel);
  const used = s.model || workflowDefault || found?.model || null;
  const usedNote = s.model ? "picked for this run" : workflowDefault ? "the workflow's default" : found?.model ? defaultModelSource(found.source) : "";
  return (
    <Menu.Root>
      <Menu.Trigger asChild>
          <button className={`run-source ${s.mode === "model" && !used ? "warn" : ""}`} data-testid="run-source" title={s.mode === "answers" ? `Runs offline with the answers in ${s.answersPath ?? "a file you choose"}` : used ? `Agents without a model of their own run on ${used} (${usedNote})` : "No model found: open Settings to add a provider, start a local model server, or choose an answers file"}>
            {s.mode === "answers" ? <FileText size={15} aria-hidden /> : <Bot size={15} aria-hidden />}
            {s.mode === "answers" ? (
              <>
                <span className="run-source-kind">Answers</span>
                <span className="run-source-text" data-testid="answers-path">{s.answersPath ? baseName(s.answersPath) : "Choose answers file…"}</span>
              </>
            ) : (
              <span className="run-source-text" data-testid="run-model">{used ?? "no model found"}</span>
            )}
            <ChevronDown size={14} aria-hidden />
          </button>
        </Menu.Trigger>
      <Menu.Portal>
        <Menu.Content className="menu-content" align="end" sideOffset={4}>
          <Menu.Label className="menu-label">Run with a model</Menu.Label>
          <Menu.RadioGroup value={s.mode === "model" ? s.model : "\u0000answers"} onValueChange={(v) => (runControl.setModel(v), runControl.setMode("model"))}>
            <Menu.RadioItem className="menu-item" value="" data-testid="source-default-model">
              <span>{workflowDefault ?? found?.model ?? "no model found"}</span>
              <span className="dim">{workflowDefault ? "workflow default" : found?.model ? defaultModelSource(found.source) : "open Settings"}</span>
            </Menu.RadioItem>
            {models.filter((m) => m !== (workflowDefault ?? found?.model)).map((m) => (
              <Menu.RadioItem className="menu-item" key={m} value={m}>
                <span>{m}</span>
              </Menu.RadioItem>
            ))}
          </Menu.RadioGroup>
          <Menu.Separator className="menu-separator" />
          <Menu.Label className="menu-label">Run offline with an answers file</Menu.Label>
          {s.answersPath && (
            <Menu.Item className="menu-item" onSelect={() => runControl.setMode("answers")} data-testid="source-answers">
              <span>{baseName(s.answersPath)}</span>
              {s.mode === "answers" && <span className="dim">in use</span>}
            </Menu.Item>
          )}
          <Menu.Item className="menu-item" onSelect={() => void runControl.chooseAnswers()} data-testid="choose-answers">
            Choose answers file…
          </Menu.Item>
          {s.answersPath && (
            <Menu.Item className="menu-item" onSelect={() => runControl.setAnswers(null)} data-testid="script-clear">
              <span>Stop using {baseName(s.answersPath)}</span>
              <X size={14} aria-hidden />
            </Menu.Item>
          )}
          <Menu.Separator className="menu-separator" />
          <Menu.Item className="menu-item" onSelect={() => useDialogs.getState().setDialog("settings", true)}>
            Model providers…
          </Menu.Item>
        </Menu.Content>
      </Menu.Portal>
    </Menu.Root>
  );
}

function RecentFiles() {
  const recent = usePrefs((s) => s.recentFiles);
  return (
    <Menu.Root>
      <Tip label="Recent files">
        <Menu.Trigger asChild>
          <button className="icon-button" aria-label="Recent files" data-testid="recent" disabled={!recent.length}>
            <Clock size={16} aria-hidden />
          </button>
        </Menu.Trigger>
      </Tip>
      <Menu.Portal>
        <Menu.Content className="menu-content" align="start" sideOffset={4}>
          {recent.map((p) => (
            <Menu.Item className="menu-item" key={p} onSelect={() => void files.openRecent(p)} title={p}>
              <span>{baseName(p)}</span>
              <span className="dim path">{p.replace(/\/[^/]*$/, "")}</span>
            </Menu.Item>
          ))}
        </Menu.Content>
      </Menu.Portal>
    </Menu.Root>
  );
}

/** Paused and interrupted runs, to resume one. */
function ContinueRuns() {
  const history = useHistory((s) => s.runs);
  // A server's runs go on by its workers: they are opened from History, not resumed here.
  const waiting = history.filter(resumableHere);
  if (!waiting.length) return null;
  return (
    <select className="resume" value="" onChange={(e) => e.target.value && runControl.resumeRun(e.target.value)} data-testid="paused-runs" title="Runs that wait for a decision or were interrupted: choose one to continue it">
      <option value="">Resume… ({waiting.length})</option>
      {waiting.map((r) => <option key={r.id} value={r.id}>{r.status} · {baseName(r.workflowRef ?? r.workflow)} · {r.id.slice(0, 8)}</option>)}
    </select>
  );
}

export function Toolbar() {
  const mode = useRunControl((r) => r.mode);
  const answersPath = useRunControl((r) => r.answersPath);
  const settingsProblem = usePrefs((p) => p.settingsProblem);
  const theme = usePrefs((p) => p.theme);
  // Actions never change: read once, not subscribed to.
  const view = useView.getState();
  const dialogs = useDialogs.getState();
  const dirty = useDocument((d) => d.dirty);
  const name = useDocument((d) => d.workflow.name);
  const path = useDocument((d) => d.path);
  const parents = useTrail((t) => t.parents);
  const errors = useValidation((v) => v.report.errors);
  const runStatus = useRun((r) => r.status);
  const replaying = useReplay((r) => r.runId !== null);
  // A replay shows a run's states on the canvas; there is nothing to cancel, and Run starts a new run.
  const running = (runStatus === "running" || runStatus === "paused") && !replaying;
  const blocked = runBlocked(errors, mode, answersPath);
  const server = onServer();
  return (
    <Tooltip.Provider delayDuration={400}>
      <header className="toolbar">
        {/* A server's workflows are the files in its folder: a browser opens them, it does not write files. */}
        {!server && (
          <>
            <IconButton label="New workflow" keys="Ctrl+N" onClick={() => void files.newWorkflow()} testId="new"><FilePlus2 size={16} aria-hidden /></IconButton>
            <IconButton label="Open…" keys="Ctrl+O" onClick={() => void files.openPicked()} testId="open"><FolderOpen size={16} aria-hidden /></IconButton>
            <RecentFiles />
            <IconButton label={dirty ? "Save (unsaved changes)" : "Save"} keys="Ctrl+S" onClick={() => void files.save()} testId="save">
              <Save size={16} aria-hidden />
              <span className={`dirty-dot ${dirty ? "on" : ""}`} aria-hidden />
            </IconButton>
            <IconButton label="Export canonical YAML (the open file stays as it is)" keys="Ctrl+Shift+E" onClick={() => void files.exportYaml()} testId="export"><Share size={16} aria-hidden /></IconButton>
            <span className="sep" />
          </>
        )}
        <IconButton label="Undo" keys="Ctrl+Z" onClick={() => useDocument.getState().undo()} testId="undo"><Undo2 size={16} aria-hidden /></IconButton>
        <IconButton label="Redo" keys="Ctrl+Shift+Z" onClick={() => useDocument.getState().redo()} testId="redo"><Redo2 size={16} aria-hidden /></IconButton>
        <span className="sep" />
        <IconButton label="Lay out" keys="Ctrl+L" onClick={() => void view.layout()} testId="layout"><LayoutDashboard size={16} aria-hidden /></IconButton>
        <IconButton label="Fit the workflow in view" keys="Shift+1" onClick={() => view.requestView("fit")} testId="fit"><Scan size={16} aria-hidden /></IconButton>
        <IconButton label="Find a node or a command" keys="Ctrl+K" onClick={() => dialogs.setDialog("find", true)} testId="find-button"><Search size={16} aria-hidden /></IconButton>
        {parents.length > 0 && (
          // The workflows this one was opened from (Open child workflow): each goes back up to it.
          <nav className="trail" aria-label="Parent workflows" data-testid="trail">
            {parents.map((p, i) => (
              <span key={`${i}:${p}`}>
                <button className="trail-step" onClick={() => void files.backTo(i)} title={`Back to ${p}`} data-testid={`trail-${i}`}>{baseName(p)}</button>
                <span className="trail-sep" aria-hidden>›</span>
              </span>
            ))}
          </nav>
        )}
        <div className="doc-title" title={path ?? "not saved yet"} data-testid="doc-title">
          <span className="doc-name">{name}</span>
          <span className="doc-file">{path ? baseName(path) : "not saved yet"}</span>
          <span className={`dirty-mark ${dirty && path ? "on" : ""}`} aria-label={dirty ? "unsaved changes" : undefined}>{dirty && path ? "• unsaved" : ""}</span>
        </div>
        {server ? (
          <span className="run-source" data-testid="run-on-server" title="The server's workers run it, with their own models and settings; History lists the server's runs">
            <Server size={15} aria-hidden /> <span className="run-source-text">Runs on {location.host}</span>
          </span>
        ) : (
          <>
            <ContinueRuns />
            <RunSource />
          </>
        )}
        {running ? (
          <button className="danger run-button" onClick={() => runControl.cancel()} data-testid="cancel">
            <Square size={14} aria-hidden /> Cancel
          </button>
        ) : (
          <Tip label={blocked ?? "Run"} keys={blocked ? undefined : "Ctrl+Enter"}>
            {/* A disabled button gets no pointer events: the wrapper keeps the tooltip saying why. */}
            <span className="run-wrap">
              <button className="primary run-button" onClick={() => void runControl.run()} disabled={Boolean(blocked)} data-testid="run">
                <Play size={14} aria-hidden /> Run
              </button>
            </span>
          </Tip>
        )}
        <span className="sep" />
        {!server && (
          <IconButton label={settingsProblem ? `Settings: ${settingsProblem.message}` : "Settings: model providers, MCP servers, limits"} onClick={() => dialogs.setDialog("settings", true)} testId="settings-button">
            <Settings size={16} aria-hidden className={settingsProblem ? "warn" : ""} />
          </IconButton>
        )}
        <IconButton label={theme === "light" ? "Dark theme" : "Light theme"} onClick={() => usePrefs.getState().setTheme(theme === "light" ? "dark" : "light")} testId="theme">
          {theme === "light" ? <Moon size={16} aria-hidden /> : <Sun size={16} aria-hidden />}
        </IconButton>
        <IconButton label="Keyboard shortcuts" keys="F1" onClick={() => dialogs.setDialog("help", true)} testId="help-button"><HelpCircle size={16} aria-hidden /></IconButton>
        {server && (
          <IconButton label="Sign out: this browser forgets its token" onClick={signOut} testId="sign-out">
            <LogOut size={16} aria-hidden />
          </IconButton>
        )}
      </header>
    </Tooltip.Provider>
  );
}
