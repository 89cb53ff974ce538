// The bottom panel (the run list, problems, raw events, importer notes), approval dialogs, and the help overlay.
import type { Consent_Serialize as Consent } from "../bindings";
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from "react";
import { useReactFlow } from "@xyflow/react";
import type { Event, Report } from "../types";
import { nodeName, useDocument } from "../store/document";
import { STATUS_WORDS, useNodeRun, useRun, type Execution, type PendingApproval } from "../store/run";
import { useDialogs } from "../store/dialogs";
import * as storedRuns from "../store/history";
import { useHistory } from "../store/history";
import { TOKENS_UNREPORTED, tokensUnreported } from "../model/usage";
import { takenOver } from "../model/takeover";
import * as runControl from "../store/runControl";
import { useRunControl } from "../store/runControl";
import { useValidation } from "../store/validation";
import { GESTURES, SHORTCUTS } from "../shortcuts";
import * as Dialog from "@radix-ui/react-dialog";
import * as Tabs from "@radix-ui/react-tabs";
import { ChevronDown, ChevronRight, CornerDownRight, FlaskConical, GitFork, Hand, PanelBottom, Server } from "lucide-react";
import { useLayoutPrefs, type PanelTab } from "../store/layoutPrefs";
import { NodeIcon } from "./NodeIcon";
import { EvalsTab } from "./Evals";
import { useEvals } from "../store/evals";
import { costShown, costTitle } from "../model/cost";
import { inAppWords } from "../model/words";
import { displayName, edgeTitle, namedMessage } from "../model/names";
import { onServer } from "../transport";
import { usePrefs } from "../store/prefs";
import { formatDuration } from "../model/duration";
import { decidedElsewhere, originSaid } from "../model/who";
import { resumableHere, rootCount, runTree } from "../model/runTree";


/** Selects a node and brings it into view. */
function useReveal() {
  const flow = useReactFlow();
  return (id: string) => {
    useDocument.getState().select({ nodes: [id], edges: [] });
    const n = useDocument.getState().workflow.nodes.find((x) => x.id === id);
    if (n?.position) flow.setCenter((n.position.x ?? 0) + 110, (n.position.y ?? 0) + 45, { zoom: Math.max(flow.getZoom(), 1), duration: 250 });
  };
}

export function BottomPanel() {
  const tab = useLayoutPrefs((s) => s.panel);
  const setTab = useLayoutPrefs((s) => s.setPanel);
  const history = useHistory((s) => s.runs);
  const report = useValidation((s) => s.report);
  const notes = useDocument((s) => s.notes);
  const pending = useRun((s) => s.pending);
  const status = useRun((s) => s.status);
  const runId = useRun((s) => s.runId);
  const review = useDialogs((s) => s.review);
  const started = useRun((s) => s.events.length > 0);
  // A run started on a server waits `ready` for a worker until its first event: said so, never "running".
  const listed = history.find((r) => r.id === runId);
  const waiting = status === "running" && onServer() && (listed ? listed.status === "ready" : !started) ? (listed?.waiting ?? "waiting for a worker") : null;
  // While it waits, its place in the queue is read again (History's list has its row).
  useEffect(() => {
    if (!waiting) return;
    const timer = setInterval(() => void storedRuns.refresh(), 2000);
    return () => clearInterval(timer);
  }, [waiting !== null]); // eslint-disable-line react-hooks/exhaustive-deps
  // A run that starts brings its list forward.
  useEffect(() => {
    if (status === "running") setTab("run");
  }, [runId, status === "running"]); // eslint-disable-line react-hooks/exhaustive-deps
  // The notes tab exists only with notes: when it goes, the panel shows Problems rather than nothing.
  const shown = tab === "notes" && !notes.length ? "problems" : tab;
  const interrupted = history.filter((r) => r.status === "interrupted").length;
  const evalRegressed = useEvals((s) => s.summary?.regressed ?? 0);
  const pick = (t: string) => {
    setTab(t as PanelTab);
    useLayoutPrefs.getState().openBottom();
  };
  return (
    // A tab is picked by its click (Enter and Space click it too): picking the tab already shown still opens the panel.
    <Tabs.Root className="bottom-panel" value={shown} activationMode="manual">
      <div className="bottom-bar">
        <Tabs.List className="bottom-tabs" aria-label="run, problems, events, history, evals">
          <Tabs.Trigger value="run" className="tab" data-testid="tab-run" onClick={() => pick("run")}>
            Run {waiting ? <span className="run-status ready" data-testid="run-waiting">· {waiting}</span> : status !== "idle" ? <span className={`run-status ${status}`}>· {STATUS_WORDS[status] ?? status}</span> : null}
          </Tabs.Trigger>
          <Tabs.Trigger value="problems" className="tab" data-testid="tab-problems" onClick={() => pick("problems")}>
            Problems {report.errors.length ? <b className="count error">{report.errors.length}</b> : null} {report.warnings.length ? <b className="count warning">{report.warnings.length}</b> : null}
          </Tabs.Trigger>
          <Tabs.Trigger value="events" className="tab" data-testid="tab-events" onClick={() => pick("events")}>Events</Tabs.Trigger>
          <Tabs.Trigger value="history" className="tab" data-testid="tab-history" onClick={() => pick("history")}>
            History {interrupted ? <b className="count error">{interrupted}</b> : null}
          </Tabs.Trigger>
          {!onServer() && (
            <Tabs.Trigger value="evals" className="tab" data-testid="tab-evals" onClick={() => pick("evals")} title="The workflow's test cases: run them, and compare with the evaluation before">
            Evals {evalRegressed ? <b className="count error" title={`${evalRegressed} regressed`}>{evalRegressed}</b> : null}
          </Tabs.Trigger>
          )}
          {notes.length > 0 && <Tabs.Trigger value="notes" className="tab" onClick={() => pick("notes")}>Import notes ({notes.length})</Tabs.Trigger>}
        </Tabs.List>
        {pending.map((p) => (
          <button key={p.node} className="pending" onClick={() => review(p.node)} data-testid={`pending-${p.node}`}>
            <Hand size={13} aria-hidden /> {nodeName(p.node)}{p.child ? ` › ${p.child.node}` : ""} waits for you
          </button>
        ))}
        <span className="grow" />
        <button className="icon-button" onClick={() => useLayoutPrefs.getState().toggle("bottom")} aria-label="Show or hide this panel" title="Show or hide this panel" data-testid="bottom-toggle">
          <PanelBottom size={15} aria-hidden />
        </button>
      </div>
      <div className="bottom-body">
        <Tabs.Content value="run"><RunList /></Tabs.Content>
        <Tabs.Content value="problems"><Problems /></Tabs.Content>
        <Tabs.Content value="events"><Events /></Tabs.Content>
        <Tabs.Content value="history"><History /></Tabs.Content>
        <Tabs.Content value="evals"><EvalsTab /></Tabs.Content>
        <Tabs.Content value="notes"><ul className="notes">{notes.map((n, i) => <li key={i}>{n}</li>)}</ul></Tabs.Content>
      </div>
    </Tabs.Root>
  );
}

/**
 * The Problems list shows this many at first, errors before warnings; the rest come with one click. A large workflow
 * can have thousands (a node deleted from the middle of a 5,000-node chain leaves 2,500 unreachable), and drawing
 * them all froze the window for a second on every edit in WebKitGTK (`npm run bench:app`).
 */
export const PROBLEMS_SHOWN = 200;

function Problems() {
  const report = useValidation((s) => s.report);
  const failure = useValidation((s) => s.failure);
  const select = useDocument((s) => s.select);
  const reveal = useReveal();
  // Ids in the engine's words (nodes, branches, edges) are named as the canvas names them.
  const workflow = useDocument((s) => s.workflow);
  // Shown in full once asked for, until the next report.
  const [whole, setWhole] = useState<Report | null>(null);
  const problems = [...report.errors.map((f) => ({ ...f, level: "error" })), ...report.warnings.map((f) => ({ ...f, level: "warning" }))];
  const hidden = whole === report ? 0 : Math.max(0, problems.length - PROBLEMS_SHOWN);
  return (
    <ul className="problems" data-testid="problems">
      {failure && <li className="error">validation could not run: {failure}</li>}
      {!problems.length && !failure && <li className="ok">No problems.</li>}
      {(hidden ? problems.slice(0, PROBLEMS_SHOWN) : problems).map((f, i) => (
        <li key={i} className={f.level} onClick={() => (f.node ? reveal(f.node) : f.edge ? select({ nodes: [], edges: [f.edge] }) : undefined)} data-code={f.code}>
          {f.node ? <b title={f.node}>{displayName(workflow, f.node)}</b> : f.edge ? <b title={f.edge}>{edgeTitle(workflow, f.edge)}</b> : null} {inAppWords(namedMessage(f.message, workflow, f.node), f.code)} <code className="code-chip">{f.code}</code>
        </li>
      ))}
      {hidden > 0 && (
        <li className="more">
          <button onClick={() => setWhole(report)} data-testid="problems-more">
            Show {hidden.toLocaleString("en")} more
          </button>
        </li>
      )}
    </ul>
  );
}

/** The run list shows this many of the latest executions; a long run's earlier ones stay in the Events tab. */
const MAX_ROWS = 400;
/** History's choices of how long ago runs started: an age as `list_runs` reads it (empty: any time). */
const STARTED_WITHIN: [string, string][] = [
  ["", "any time"],
  ["1h", "in the last hour"],
  ["24h", "in the last 24 hours"],
  ["7d", "in the last 7 days"],
  ["30d", "in the last 30 days"],
];


/** One execution; while it runs, its streamed text grows in place. */
function RunRow({ row, selected, onClick }: { row: Execution; selected: boolean; onClick: () => void }) {
  const run = useNodeRun(row.node);
  const doc = useDocument((s) => s.workflow.nodes.find((n) => n.id === row.node));
  // A model step without a count: the server did not report one (an answers file calls no model, so says nothing).
  const onModel = useRunControl((s) => s.mode === "model");
  const unreported = tokensUnreported({ tokens: row.tokens, succeeded: row.status === "succeeded", type: doc?.type, onModel });
  const live = row.status === "running" && run?.status === "running" && run.iteration === row.iteration;
  const preview = live ? run.streamed.slice(-160).replace(/\s+/g, " ") : row.preview;
  return (
    <tr className={`${row.status} ${selected ? "selected" : ""}`} onClick={onClick} data-testid={`run-row-${row.node}-${row.iteration}`} data-status={row.status}>
      <td className="node" title={row.node}>
        {doc && <NodeIcon type={doc.type} size={13} />} {doc?.name || row.node}
      </td>
      <td className="num">{row.iteration || ""}</td>
      <td className={`status ${row.routing ? "routing" : row.status}`}>{row.routing ? "choosing a route…" : STATUS_WORDS[row.status] ?? row.status}</td>
      <td className="num">{formatDuration(row.durationMs)}</td>
      <td className="num" title={unreported ? `${TOKENS_UNREPORTED}: it sent no usage with its answer, and none is estimated` : undefined} data-testid={`run-tokens-${row.node}-${row.iteration}`}>
        {row.tokens ?? (unreported ? <span className="tokens-unreported">not reported</span> : "")}
      </td>
      <td className="preview" title={row.decided ? `${row.decided}: ${preview}` : preview}>
        {row.decided && <span className="decided" data-testid={`run-decided-${row.node}-${row.iteration}`}>{row.decided}</span>} {preview}
      </td>
    </tr>
  );
}

/** The run's node executions in the order they began; follows the run unless the person scrolled up. */
function RunList() {
  const executions = useRun((s) => s.executions);
  const status = useRun((s) => s.status);
  const error = useRun((s) => s.error);
  const selected = useDocument((s) => s.selection.nodes);
  const reveal = useReveal();
  const box = useRef<HTMLDivElement>(null);
  const follow = useRef(true);
  useLayoutEffect(() => {
    const el = box.current?.closest(".bottom-body");
    if (el && follow.current) el.scrollTop = el.scrollHeight;
  });
  useEffect(() => {
    const el = box.current?.closest(".bottom-body");
    if (!el) return;
    const onScroll = () => (follow.current = el.scrollHeight - el.scrollTop - el.clientHeight < 24);
    el.addEventListener("scroll", onScroll);
    return () => el.removeEventListener("scroll", onScroll);
  }, []);
  if (!executions.length && status === "idle") return <p className="muted" data-testid="run-list-empty">No run yet. Press Run (Ctrl+Enter) to watch each node execute here.</p>;
  return (
    <div ref={box}>
      {executions.length > MAX_ROWS && <p className="muted small">Showing the latest {MAX_ROWS} of {executions.length} executions; the Events tab has them all.</p>}
      <table className="run-list" data-testid="run-list">
        <thead>
          <tr><th>node</th><th>#</th><th>status</th><th>time</th><th>tokens</th><th>output</th></tr>
        </thead>
        <tbody>
          {executions.slice(-MAX_ROWS).map((r) => <RunRow key={`${r.node}:${r.iteration}:${r.seq}`} row={r} selected={selected.includes(r.node)} onClick={() => (reveal(r.node), useLayoutPrefs.getState().inspect("run", r.iteration))} />)}
        </tbody>
      </table>
      {error && <div className="field-error" data-testid="run-error">{error}</div>}
    </div>
  );
}

/** Stored runs: this workflow's (or all), with what can be done with each. */
function History() {
  const history = useHistory((s) => s.runs);
  const filter = useHistory((s) => s.filter);
  const shown = useHistory((s) => s.shown);
  const path = useDocument((s) => s.path);
  const docName = useDocument((s) => s.workflow.name);
  const [all, setAll] = useState(false);
  // The runs whose child runs are shown under them (closed at first: a `for_each` over fifty items runs fifty).
  const [opened, setOpened] = useState<ReadonlySet<string>>(() => new Set());
  const toggleOpen = (id: string) =>
    setOpened((o) => {
      const next = new Set(o);
      if (!next.delete(id)) next.add(id);
      return next;
    });
  const serverProblem = useHistory((s) => s.serverProblem);
  const server = usePrefs((p) => p.settings?.server?.url);
  // This workflow's runs, and every run that waits for someone (paused, or interrupted when its process died): the
  // stores find them (`list_runs`), whatever History listed so far.
  const mine = all || !path ? null : { path, name: docName };
  const mineKey = mine ? `${mine.path}\n${mine.name}` : "";
  const setFilter = (f: storedRuns.RunFilter) => void storedRuns.setFilter(f, mine);
  // Runs are started elsewhere too (`switchyard run` in a terminal; on a server, webhooks, schedules, teammates): the
  // list is read when it is shown and every 3 s while it is.
  useEffect(() => {
    void storedRuns.setFilter(useHistory.getState().filter, mine).then(() => storedRuns.refresh());
    const timer = setInterval(() => void storedRuns.refresh(), 3000);
    return () => clearInterval(timer);
    // eslint-disable-next-line react-hooks/exhaustive-deps -- `mine` is what `mineKey` says
  }, [server, mineKey]);
  // A run made before the workflow's first save names no file: it is this workflow's when it has its name.
  const unsaved = (r: (typeof history)[number]) => !r.workflowRef && !r.server && r.workflow === docName;
  const runs = history;
  const filtered = !!(filter.status || filter.search.trim() || filter.since);
  // Its test case goes beside the file the workflow was saved to since; before that there is no file to go beside.
  const caseFile = (r: (typeof history)[number]) => (r.workflowRef ? null : unsaved(r) ? path : null);
  return (
    <div data-testid="history">
      <label className="muted small">
        <input type="checkbox" checked={all || !path} disabled={!path} onChange={(e) => setAll(e.target.checked)} /> Show every workflow&apos;s runs
        {path && !all && <span className="muted"> (runs that wait for someone are always shown)</span>}
      </label>
      <div className="history-filter">
        <select value={filter.status} onChange={(e) => setFilter({ ...filter, status: e.target.value })} aria-label="status" data-testid="history-status">
          <option value="">any status</option>
          {["ready", "running", "paused", "interrupted", "completed", "failed", "cancelled"].map((s) => (
            <option key={s} value={s}>{STATUS_WORDS[s] ?? s}</option>
          ))}
        </select>
        <input type="search" placeholder="run id or workflow" value={filter.search} onChange={(e) => setFilter({ ...filter, search: e.target.value })} aria-label="search runs" data-testid="history-search" />
        <select value={filter.since} onChange={(e) => setFilter({ ...filter, since: e.target.value })} aria-label="started" title="How long ago the runs started" data-testid="history-since">
          {STARTED_WITHIN.map(([since, words]) => (
            <option key={since} value={since}>{words}</option>
          ))}
        </select>
      </div>
      {serverProblem && (
        <p className="banner error" data-testid="server-problem">
          The runs of {server} are not shown: {serverProblem}
        </p>
      )}
      {!runs.length ? (
        <p className="muted">{filtered ? "No run matches." : `No stored run${path && !all ? " of this workflow" : ""} yet.`}</p>
      ) : (
        <table className="run-list history">
          <thead>
            <tr><th className="col-status">status</th><th className="col-run">run</th><th className="col-workflow">workflow</th><th className="col-started">started</th><th className="num col-time">time</th><th className="num col-tokens">tokens</th><th className="num col-cost">cost</th><th className="col-waiting">waiting at</th><th className="col-actions" /></tr>
          </thead>
          <tbody>
            {runTree(runs, opened, shown).map(({ run: r, depth, children }) => (
              <tr key={r.id} data-testid={`history-${r.id}`} data-status={r.status} data-depth={depth}>
                <td className={`status ${r.status}`} title={`${STATUS_WORDS[r.status] ?? r.status}${r.live ? " (in this window)" : ""}${r.server ? ` · run by the workers of ${r.server}` : ""}`}>
                  {(r.status === "ready" && r.waiting) || (STATUS_WORDS[r.status] ?? r.status)}
                  {r.live ? " (in this window)" : ""}
                  {r.server && (
                    <span className="server-tag" title={`Run by the workers of ${r.server}`} data-testid={`history-server-${r.id}`}>
                      <Server size={11} aria-hidden /> {r.server}
                    </span>
                  )}
                </td>
                <td className="run-id" title={`Run ${r.id}: the id switchyard runs and the API show`}>{r.id.slice(0, 8)}</td>
                <td title={r.workflowRef ? `${r.workflow} — ${r.workflowRef}` : r.workflow} style={depth ? { paddingLeft: `${depth * 16 + 6}px` } : undefined}>
                  {r.parent && (
                    <span className="child-tag" title={`A child run of run ${r.parent.run.slice(0, 8)}, run by its node ${r.parent.node}`} data-testid={`history-parent-${r.id}`}>
                      <CornerDownRight size={11} aria-hidden /> {r.parent.node}{r.parent.item != null ? `[${r.parent.item}]` : ""}
                    </span>
                  )}
                  {children > 0 && (
                    <button
                      className="tree-toggle"
                      aria-expanded={opened.has(r.id)}
                      onClick={() => toggleOpen(r.id)}
                      title={opened.has(r.id) ? "Hide its child runs" : "Show the child runs its workflow nodes and workflow tools ran"}
                      data-testid={`history-children-${r.id}`}
                    >
                      {opened.has(r.id) ? <ChevronDown size={12} aria-hidden /> : <ChevronRight size={12} aria-hidden />}
                    </button>
                  )}
                  {r.workflow}
                  {children > 0 && <span className="muted small"> · {children} child run{children === 1 ? "" : "s"}</span>}
                  {r.version != null && (
                    <span className="version-tag" title={`Ran version ${r.version} of ${r.workflow}, as the server served it then (GET /api/workflows/${r.workflow}/versions lists every version)`} data-testid={`history-version-${r.id}`}>
                      v{r.version}
                    </span>
                  )}
                  {!r.workflowRef && !r.server && (
                    <span className="test-case-tag" title="Run before the workflow was saved to a file" data-testid={`history-unsaved-${r.id}`}>
                      unsaved
                    </span>
                  )}
                  {r.eval && (
                    <span className="test-case-tag" title="Run by the Evals tab as a test case" data-testid={`history-eval-${r.id}`}>
                      <FlaskConical size={11} aria-hidden /> test case
                    </span>
                  )}
                  {r.forkedFrom && (
                    <button className="test-case-tag fork-tag" onClick={() => storedRuns.openRun(r.forkedFrom!)} title={`A fork of run ${r.forkedFrom}: press to show that run on the canvas`} data-testid={`history-fork-${r.id}`}>
                      <GitFork size={11} aria-hidden /> fork of {r.forkedFrom.slice(0, 8)}
                    </button>
                  )}
                  {originSaid(r.origin) && (
                    <span className="test-case-tag origin-tag" title={`How this run was started, and by whom${r.cancelledBy ? `; cancelled by ${r.cancelledBy}` : ""}`} data-testid={`history-origin-${r.id}`}>
                      started {originSaid(r.origin)}
                      {r.cancelledBy && `, cancelled by ${r.cancelledBy}`}
                    </span>
                  )}
                </td>
                <td title={new Date(r.started).toLocaleString()}>{new Date(r.started).toLocaleString(undefined, { dateStyle: "short", timeStyle: "short" })}</td>
                <td className="num">{formatDuration(r.durationMs)}</td>
                <td className="num">{r.tokens || ""}</td>
                <td className="num" title={costTitle(r)} data-testid={`history-cost-${r.id}`}>{costShown(r)}</td>
                <td title={r.pending.join(", ")}>{r.pending.join(", ")}</td>
                <td className="actions">
                  <button onClick={() => storedRuns.openRun(r.id)} title="Show this run on the canvas: statuses, outputs, trace" data-testid={`history-open-${r.id}`}>Open</button>
                  {!onServer() && !r.server && (
                    <>
                      <button onClick={() => storedRuns.replayRun(r.id)} disabled={r.status === "running"} title="Play it again from its recorded answers and decisions: no model or tool call" data-testid={`history-replay-${r.id}`}>Replay</button>
                      <button
                        onClick={() => storedRuns.saveTestCase(r.id, caseFile(r))}
                        disabled={r.status === "running" || r.status === "interrupted" || (!r.workflowRef && !caseFile(r))}
                        title={!r.workflowRef && !caseFile(r) ? "Save the workflow first: its test cases go in a file beside it" : "Add this run to the workflow's evaluation file as a test case: its input, answers and decisions, and what each node did"}
                        data-testid={`history-save-case-${r.id}`}
                      >
                        Save as test case
                      </button>
                    </>
                  )}
                  {!onServer() && resumableHere(r) && (
                    <button className="primary" onClick={() => runControl.resumeRun(r.id)} title="Go on from where it stopped; nodes that completed do not run again" data-testid={`history-resume-${r.id}`}>Resume</button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {rootCount(runs) > shown && (
        <button className="history-more" onClick={() => void storedRuns.showMore()} data-testid="history-more">
          Show more ({Math.min(rootCount(runs) - shown, storedRuns.PAGE_ROWS)} more)
        </button>
      )}
    </div>
  );
}

/** A line for one event; streamed text of one node is folded into one line. */
function describe(e: Event): string {
  const rest: Record<string, unknown> = { ...(e as Record<string, unknown>) };
  for (const k of ["seq", "run", "ts", "type"]) delete rest[k];
  return JSON.stringify(rest);
}

function Events() {
  const events = useRun((s) => s.events);
  const [filter, setFilter] = useState("");
  const lines = useMemo(() => {
    const out: { seq: number; type: string; text: string }[] = [];
    for (const e of events) {
      const last = out[out.length - 1];
      if (e.type === "node:progress" && last?.type === "node:progress" && last.text.startsWith(`${e.node}: `)) {
        last.text += e.message;
        continue;
      }
      out.push({ seq: e.seq, type: e.type, text: e.type === "node:progress" ? `${e.node}: ${e.message}` : e.type === "workflow:taken-over" ? takenOver(e) : describe(e) });
    }
    const q = filter.trim().toLowerCase();
    return q ? out.filter((l) => l.type.includes(q) || l.text.toLowerCase().includes(q)) : out;
  }, [events, filter]);
  return (
    <>
      <input className="events-filter" placeholder="Filter events (type, node, text)" value={filter} onChange={(e) => setFilter(e.target.value)} data-testid="events-filter" />
      <ol className="events" data-testid="events">
        {lines.map((l) => (
          <li key={l.seq}>
            <span className="seq">{l.seq}</span> <b>{l.type}</b> {l.text}
          </li>
        ))}
      </ol>
    </>
  );
}

/** Someone else's decision on an approval whose dialog is open, from the `approval:received` event that settled it. */
export type DecidedElsewhere = { decision: "approve" | "reject" | "timeout"; by: string | null; ts: string };

/** The approval dialog the run asks for: the one the person reviews, else the first not put off. When someone else
 * decides it while it is open (a colleague, on a server), it stays open saying who and when, with the note typed in
 * it kept, visible and copyable, until closed. */
export function Approvals() {
  const pending = useRun((s) => s.pending);
  const events = useRun((s) => s.events);
  const reviewing = useDialogs((s) => s.reviewing);
  const dismissed = useDialogs((s) => s.dismissed);
  const approval = pending.find((p) => p.node === reviewing) ?? pending.find((p) => !dismissed.includes(p.node));
  // The approval whose dialog is open, remembered past its decision; and the decision this dialog sent, with the last
  // event seen when it was sent. On a server a decision is kept first and applied by a worker later, so the event
  // that says it was received can come long after `decide` answered: it is this dialog's own, never a colleague's.
  const [shown, setShown] = useState<{ approval: PendingApproval; seq: number } | null>(null);
  const [sent, setSent] = useState<{ node: string; seq: number } | null>(null);
  const lastSeq = events.length ? events[events.length - 1].seq : 0;
  const receivedAfter = (node: string, seq: number) => events.find((e) => e.type === "approval:received" && e.node === node && e.seq > seq);
  if (approval && shown?.approval !== approval) {
    setShown({ approval, seq: lastSeq });
    // A new round of an approval this dialog decided before: the decision sent then has landed, this one is new.
    if (sent && sent.node === approval.node && receivedAfter(sent.node, sent.seq)) setSent(null);
  }
  if (approval) {
    const decide = async (d: "approve" | "reject", note: string) => {
      setSent({ node: approval.node, seq: lastSeq });
      try {
        await runControl.decide(approval.node, d, note);
      } catch (e) {
        setSent(null);
        throw e;
      }
    };
    return <ApprovalDialog key={approval.node} approval={approval} onClose={() => useDialogs.getState().dismissApproval(approval.node)} onDecide={decide} />;
  }
  if (!shown) return null;
  const node = shown.approval.node;
  const received = receivedAfter(node, shown.seq);
  if (!received || received.type !== "approval:received") return null;
  if (sent?.node === node) {
    // This dialog's own decision, now applied: it closes as it does when the decision is applied at once.
    setShown(null);
    setSent(null);
    return null;
  }
  const decided = { decision: received.decision, by: received.by ?? null, ts: received.ts };
  const close = () => {
    setShown(null);
    useDialogs.getState().approvalDecided(node);
  };
  return <ApprovalDialog key={node} approval={shown.approval} decided={decided} onClose={close} onDecide={async () => {}} />;
}

export function ApprovalDialog({ approval, onClose, onDecide, decided }: { approval: PendingApproval; onClose: () => void; onDecide: (decision: "approve" | "reject", note: string) => Promise<void>; decided?: DecidedElsewhere }) {
  const note = useDialogs((s) => s.approvalNotes[approval.node] ?? "");
  const setNote = useDialogs((s) => s.setApprovalNote);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const decide = async (d: "approve" | "reject") => {
    setBusy(true);
    try {
      await onDecide(d, note);
    } catch (e) {
      setError(String(e));
      setBusy(false);
    }
  };
  return (
    <Dialog.Root open onOpenChange={(open) => !open && !busy && onClose()}>
      <Dialog.Portal>
      <Dialog.Overlay className="dialog-overlay" />
      <Dialog.Content className="dialog" data-testid="approval-dialog" aria-describedby={undefined}>
        {approval.child ? (
          <>
            <Dialog.Title className="dialog-title" data-testid="approval-path">Approval: {nodeName(approval.node)} › {approval.child.node}</Dialog.Title>
            <p className="message">{approval.message}</p>
            <p className="approval-child" data-testid="approval-child">
              Inside the child run of <strong>{nodeName(approval.node)}</strong> (run <code>{approval.child.run.slice(0, 8)}</code>): deciding here decides it there, and the child goes on.
            </p>
            <h4>What reached this step</h4>
            <pre className="previous" data-testid="approval-previous">{approval.previousOutput || "(nothing)"}</pre>
          </>
        ) : approval.tool ? (
          <>
            <Dialog.Title className="dialog-title">Tool call: {nodeName(approval.node)}</Dialog.Title>
            <p className="message">
              The agent asks to call <code data-testid="approval-tool">{approval.tool.tool}</code>. Rejecting tells the model the call was rejected; the agent goes on.
            </p>
            <h4>Arguments</h4>
            <pre className="previous" data-testid="approval-previous">{JSON.stringify(approval.tool.input, null, 2)}</pre>
          </>
        ) : (
          <>
            <Dialog.Title className="dialog-title">Approval: {nodeName(approval.node)}</Dialog.Title>
            <p className="message">{approval.message}</p>
            <h4>What reached this step</h4>
            <pre className="previous" data-testid="approval-previous">{approval.previousOutput || "(nothing)"}</pre>
          </>
        )}
        {decided && (
          <p className="decided-elsewhere" role="status" data-testid="approval-decided-elsewhere">
            {decidedElsewhere(decided.decision, decided.by, decided.ts)}. {note ? "Your note was not sent; it is kept here to copy." : "Nothing was sent from here."}
          </p>
        )}
        <label className="field">
          <span>{decided ? "your note (not sent)" : "note (optional)"}</span>
          <textarea rows={3} value={note} readOnly={!!decided} onChange={(e) => setNote(approval.node, e.target.value)} data-testid="approval-note" />
        </label>
        {error && <div className="field-error">{error}</div>}
        {decided ? (
          <div className="actions">
            <button className="primary" onClick={onClose} data-testid="approval-close">Close</button>
          </div>
        ) : (
          <div className="actions">
            <button onClick={onClose} disabled={busy} data-testid="approval-later">Later</button>
            <button className="danger" onClick={() => decide("reject")} disabled={busy} data-testid="approval-reject">Reject</button>
            <button className="primary" onClick={() => decide("approve")} disabled={busy} data-testid="approval-approve">Approve</button>
          </div>
        )}
      </Dialog.Content>
      </Dialog.Portal>
    </Dialog.Root>
  );
}

/** Asks, before a run, whether this version of the workflow's code may run: every code step with its code. */
export function CodeConsentDialog({ consent, onAnswer }: { consent: Consent; onAnswer: (allow: boolean) => void }) {
  return (
    <Dialog.Root open onOpenChange={(open) => !open && onAnswer(false)}>
      <Dialog.Portal>
      <Dialog.Overlay className="dialog-overlay" />
      <Dialog.Content className="dialog consent" data-testid="consent-dialog" aria-describedby={undefined}>
        <Dialog.Title className="dialog-title">Run this workflow&apos;s code?</Dialog.Title>
        <p className="message">
          {consent.steps.length} code step{consent.steps.length > 1 ? "s" : ""} will run on this computer, in the workflow's folder, with your user's rights. Allow only code you trust. You are asked again when the code changes.
        </p>
        <ol className="code-steps" data-testid="consent-steps">
          {consent.steps.map((step) => (
            <li key={step.node}>
              <h4>
                {step.node} <span className="dim">{step.language}{step.module ? ` · ${step.module}` : ""}</span>
              </h4>
              <pre>{step.source}</pre>
            </li>
          ))}
        </ol>
        <div className="actions">
          <button onClick={() => onAnswer(false)} data-testid="consent-cancel" autoFocus>Don't run</button>
          <button className="primary" onClick={() => onAnswer(true)} data-testid="consent-allow">Allow and run</button>
        </div>
      </Dialog.Content>
      </Dialog.Portal>
    </Dialog.Root>
  );
}

export function HelpPanel({ onClose }: { onClose: () => void }) {
  return (
    <Dialog.Root open onOpenChange={(open) => !open && onClose()}>
      <Dialog.Portal>
      <Dialog.Overlay className="dialog-overlay" />
      <Dialog.Content className="dialog" data-testid="help" aria-describedby={undefined}>
        <Dialog.Title className="dialog-title">Keyboard shortcuts</Dialog.Title>
        <table className="shortcuts">
          <tbody>
            {SHORTCUTS.filter((s) => !(s.desktop && onServer())).map((s) => <tr key={s.keys}><td><kbd>{s.keys}</kbd></td><td>{s.does}</td></tr>)}
            {GESTURES.map(([k, v]) => <tr key={k}><td><kbd>{k}</kbd></td><td>{v}</td></tr>)}
          </tbody>
        </table>
        <div className="actions"><button onClick={onClose}>Close</button></div>
      </Dialog.Content>
      </Dialog.Portal>
    </Dialog.Root>
  );
}
