// The Evals tab: the open workflow's test cases (the evaluation file beside it), run all or one, each row updating as
// its case finishes; what failed, and after a second evaluation the compare view — each node coloured by what became
// of it on the canvas, and the selected node's two outputs side by side with the differences marked. A case whose run
// asked a model again (the recorded calls no longer answered it: its prompt changed, or what reached it) says which
// nodes and why, and while it is selected the canvas marks them.
import { Fragment, memo, useEffect, useMemo } from "react";
import { ArrowDown, ArrowUp, Check, CircleAlert, Equal, ExternalLink, LoaderCircle, Play, Plus, RefreshCw, TriangleAlert, X } from "lucide-react";
import { useDocument } from "../store/document";
import { displayName, namedValue } from "../model/names";
import { costShown, costTitle } from "../model/cost";
import { askedAgain, nodeToCompare, shownAttempt, useEvals, verdictWord, type CaseChange, type CaseReport, type NodeChange } from "../store/evals";
import { baseName } from "../model/paths";
import { CHANGE_WORDS, inAppWords, NODE_CHANGE_WORDS } from "../model/words";
import { outputDiff } from "../model/outputDiff";
import { formatDuration } from "../model/duration";


function VerdictMark({ report, running }: { report: CaseReport | undefined; running: boolean }) {
  if (running) return <span className="verdict running"><LoaderCircle size={13} className="spin" aria-hidden /> running…</span>;
  if (!report) return <span className="verdict none">not run yet</span>;
  const Icon = report.verdict === "passed" ? Check : report.verdict === "failed" ? X : report.verdict === "flaky" ? TriangleAlert : CircleAlert;
  return (
    <span className={`verdict ${report.verdict}`}>
      <Icon size={13} aria-hidden /> {verdictWord(report)}
    </span>
  );
}

const CHANGE_ICONS = { regressed: ArrowDown, improved: ArrowUp, unchanged: Equal, new: Plus } as const;

function ChangeChip({ change }: { change: CaseChange | undefined }) {
  const workflow = useDocument((s) => s.workflow);
  if (!change) return null;
  const Icon = CHANGE_ICONS[change.change];
  const nodes = change.changedNodes.length ? `; outputs changed: ${change.changedNodes.map((id) => displayName(workflow, id)).join(", ")}` : "";
  return (
    <span className={`change-chip ${change.change}`} title={`${change.before ?? "(new)"} → ${change.after}${nodes}`} data-testid={`eval-change-${change.id}`}>
      <Icon size={12} aria-hidden /> {CHANGE_WORDS[change.change]}
    </span>
  );
}

/** What did not hold in a case's shown attempt, or why it could not run. */
function Failures({ report }: { report: CaseReport }) {
  // Nodes and branches by the names the canvas shows (the id only where two nodes share a name).
  const workflow = useDocument((s) => s.workflow);
  const attempt = shownAttempt(report);
  if (!attempt) return null;
  const passedOf = report.verdict === "flaky" ? `passed ${report.attempts.filter((a) => a.passed).length} of ${report.attempts.length} runs` : null;
  return (
    <ul className="eval-failures" data-testid={`eval-failures-${report.id}`}>
      {passedOf && <li>{passedOf}</li>}
      {attempt.error && (
        <li className="error">
          {inAppWords(attempt.error.message, attempt.error.code)} <code className="code-chip">{attempt.error.code}</code>
        </li>
      )}
      {attempt.failures.map((f, i) => (
        <li key={i} data-testid="eval-failure">
          <b title={f.node ?? undefined}>{f.node ? displayName(workflow, f.node) : "the run"}</b>: expected <code>{namedValue(f.expected, workflow, f.node)}</code>
          {ABSENCES.includes(f.actual) ? ", but it " : ", got "}
          <code className="actual">{namedValue(f.actual, workflow, f.node)}</code>
        </li>
      ))}
    </ul>
  );
}

/** The nodes a case asked the model again, and why, in words (the canvas marks them while the case is shown). */
const AskedAgain = memo(function AskedAgain({ report }: { report: CaseReport | undefined }) {
  const workflow = useDocument((s) => s.workflow);
  const asked = useMemo(() => askedAgain(report), [report]);
  if (!asked.length) return null;
  return (
    <div className="muted eval-asked" data-testid={`eval-asked-${report!.id}`}>
      <RefreshCw size={11} aria-hidden /> Asked the model again: {asked.map(([node, why]) => `${displayName(workflow, node)} (${why})`).join(", ")}
    </div>
  );
});

/** What the engine says came from a node that produced nothing (eval/check.rs `is_absence`): read "but it …", not "got …". */
const ABSENCES = ["did not run", "was skipped", "waited for a decision"];

function CaseRow({ id, description, expectations }: { id: string; description: string | null; expectations: number }) {
  const report = useEvals((s) => s.reports[id]);
  const change = useEvals((s) => s.changes[id]);
  const running = useEvals((s) => s.running.includes(id));
  const busy = useEvals((s) => s.running.length > 0);
  const selected = useEvals((s) => s.selected === id);
  const evals = useEvals.getState();
  const attempt = shownAttempt(report);
  const failed = report && report.verdict !== "passed";
  return (
    <Fragment>
      <tr className={`${selected ? "selected" : ""} ${failed ? "has-failures" : ""}`} onClick={() => evals.select(selected ? null : id)} data-testid={`eval-case-${id}`} data-verdict={running ? "running" : report?.verdict ?? ""} data-change={change?.change ?? ""}>
        <td className="verdict-cell"><VerdictMark report={report} running={running} /></td>
        <td className="case" title={description ?? id}>
          {/* The row takes a click anywhere; the id is the row's button for the keyboard. */}
          <button className="case-id" aria-expanded={selected} onClick={(e) => (e.stopPropagation(), evals.select(selected ? null : id))}>{id}</button>
          {description && <span className="muted case-description"> · {description}</span>}
          <AskedAgain report={report} />
        </td>
        <td><ChangeChip change={change} /></td>
        <td className="num" title={`${expectations} expectation${expectations === 1 ? "" : "s"}`}>{expectations}</td>
        <td className="num">{attempt ? attempt.tokens : ""}</td>
        <td className="num">{attempt ? formatDuration(attempt.durationMs) : ""}</td>
        <td className="num" title={attempt ? costTitle(attempt) : undefined}>{attempt ? costShown(attempt) : ""}</td>
        <td className="actions" onClick={(e) => e.stopPropagation()}>
          <button onClick={() => void evals.run(id)} disabled={busy} title="Run this test case alone" data-testid={`eval-run-${id}`}>
            <Play size={12} aria-hidden /> Run
          </button>
          <button onClick={() => void evals.openRun(id)} disabled={!attempt?.runId} title="Show this test case's run on the canvas: statuses, outputs, trace" data-testid={`eval-open-${id}`}>
            <ExternalLink size={12} aria-hidden /> Open run
          </button>
        </td>
      </tr>
      {report && failed && (
        <tr className="failures-row">
          <td />
          <td colSpan={7}><Failures report={report} /></td>
        </tr>
      )}
      {selected && (change || report) && (
        <tr className="compare-row">
          <td colSpan={8}>{change ? <Compare change={change} /> : <p className="muted compare-none">No comparison for {id} yet: after a change, run it again to compare with this evaluation.</p>}</td>
        </tr>
      )}
    </Fragment>
  );
}

/** One side of a node's output, with the stretches only on this side marked. */
function Side({ label, text, other, side }: { label: string; text: string | null | undefined; other: string | null | undefined; side: "before" | "after" }) {
  const pieces = useMemo(() => (text != null && other != null ? outputDiff(side === "before" ? text : other, side === "before" ? other : text)[side] : null), [text, other, side]);
  return (
    <div className={`compare-side ${side}`}>
      <h4>{label}</h4>
      {text == null ? (
        <p className="muted" data-testid={`compare-${side}`}>(did not run)</p>
      ) : (
        <pre data-testid={`compare-${side}`}>
          {pieces ? pieces.map((p, i) => (p.changed ? <mark key={i} className={side === "before" ? "removed" : "added"}>{p.text}</mark> : <span key={i}>{p.text}</span>)) : text}
        </pre>
      )}
    </div>
  );
}

/** The compare view of one case: every node that ran with what became of it, and one node's outputs side by side. */
function Compare({ change }: { change: CaseChange }) {
  const picked = useEvals((s) => s.compareNode);
  const selection = useDocument((s) => (s.selection.nodes.length === 1 ? s.selection.nodes[0] : null));
  const shown: NodeChange | undefined = nodeToCompare(change, selection ?? picked);
  const workflow = useDocument((s) => s.workflow);
  const nodeName = (id: string) => displayName(workflow, id);
  const pick = (node: string) => {
    useEvals.getState().showNode(node);
    // Selected on the canvas too (the canvas brings it into view), so the canvas and this view show the same node.
    if (useDocument.getState().workflow.nodes.some((n) => n.id === node)) useDocument.getState().select({ nodes: [node], edges: [] });
  };
  return (
    <section className="compare" data-testid="compare">
      <header>
        <b>{change.id}</b> <span className="muted">{change.before ?? "(new)"} → {change.after}</span> <ChangeChip change={change} />
      </header>
      <div className="compare-nodes" role="list" aria-label="nodes, coloured on the canvas by what became of them">
        {change.nodes.map((n) => (
          <button key={n.node} role="listitem" className={`cmp-chip cmp-${n.change} ${shown?.node === n.node ? "shown" : ""}`} onClick={() => pick(n.node)} title={NODE_CHANGE_WORDS[n.change]} data-testid={`compare-node-${n.node}`} data-change={n.change}>
            {nodeName(n.node)} <span className="cmp-word">{NODE_CHANGE_WORDS[n.change]}</span>
          </button>
        ))}
      </div>
      {shown && (
        <div className="compare-outputs" data-testid="compare-outputs" data-node={shown.node}>
          <Side label={`${nodeName(shown.node)} · the evaluation before`} text={shown.before} other={shown.after} side="before" />
          <Side label={`${nodeName(shown.node)} · this evaluation`} text={shown.after} other={shown.before} side="after" />
        </div>
      )}
    </section>
  );
}

/** The summary of the latest evaluation's comparison. */
function CompareSummary() {
  const summary = useEvals((s) => s.summary);
  if (!summary) return null;
  return (
    <span className="eval-summary" data-testid="eval-summary">
      vs the evaluation before: <b className={summary.regressed ? "bad" : ""}>{summary.regressed} regressed</b>, <b className={summary.improved ? "good" : ""}>{summary.improved} improved</b>, {summary.unchanged} unchanged
      {summary.added ? `, ${summary.added} new` : ""}
    </span>
  );
}

export function EvalsTab() {
  const path = useDocument((s) => s.path);
  const dirty = useDocument((s) => s.dirty);
  const file = useEvals((s) => s.file);
  const exists = useEvals((s) => s.exists);
  const problem = useEvals((s) => s.problem);
  const cases = useEvals((s) => s.cases);
  const running = useEvals((s) => s.running);
  const reports = useEvals((s) => s.reports);
  // Read each time the tab is shown, and when another file opens: the evaluation file may have changed on disk.
  useEffect(() => void useEvals.getState().load(path), [path]);
  const shownFor = useEvals((s) => s.path);
  if (!path) return <p className="muted" data-testid="evals-empty">This workflow has no file yet. Save it (Ctrl+S); its test cases go in the evaluation file beside it.</p>;
  if (shownFor !== path) return <p className="muted">Reading the test cases…</p>;
  if (problem)
    return (
      <div className="banner error" data-testid="evals-problem">
        {baseName(file ?? path)} cannot be used: {inAppWords(problem.message, problem.code)} {problem.code && <code className="code-chip">{problem.code}</code>}
      </div>
    );
  if (file && !exists)
    return (
      <p className="muted" data-testid="evals-empty">
        No test cases yet: {baseName(file)} does not exist. Run the workflow, then in History press <b>Save as test case</b> on a run that did what it should; it goes into {baseName(file)}, and is listed here.
      </p>
    );
  const ran = cases.filter((c) => reports[c.id]);
  const passed = ran.filter((c) => reports[c.id].verdict === "passed").length;
  return (
    <div className="evals" data-testid="evals">
      <div className="evals-bar">
        <button className="primary" onClick={() => void useEvals.getState().run(null)} disabled={running.length > 0 || !cases.length} title="Run every test case in the evaluation file; answers in the cases stand in for models and people" data-testid="eval-run-all">
          {running.length ? <LoaderCircle size={13} className="spin" aria-hidden /> : <Play size={13} aria-hidden />} Run all
        </button>
        <OfflineToggle />
        <span className="muted" title={file ?? ""}>{file ? baseName(file) : ""} · {cases.length} test case{cases.length === 1 ? "" : "s"}{ran.length ? ` · ${passed} of ${ran.length} passed` : ""}</span>
        <CompareSummary />
        {dirty && <span className="field-warning" data-testid="evals-unsaved">Unsaved changes are not tested: the cases run the saved file. Save (Ctrl+S) first.</span>}
      </div>
      <table className="run-list evals-table">
          <thead>
            <tr><th>result</th><th>case</th><th>change</th><th className="num">expectations</th><th className="num">tokens</th><th className="num">time</th><th className="num">cost</th><th /></tr>
          </thead>
          <tbody>
            {cases.map((c) => <CaseRow key={c.id} id={c.id} description={c.description ?? null} expectations={c.expectations} />)}
          </tbody>
      </table>
    </div>
  );
}

/** Offline: the cases run on their answers and the calls recorded earlier; no model is called (as `--offline`). */
function OfflineToggle() {
  const offline = useEvals((s) => s.offline);
  return (
    <label className="evals-offline" title="Call no model: the cases' answers and the answers recorded in earlier runs answer every call; a case that needs a new answer could not run" data-testid="eval-offline">
      <input type="checkbox" checked={offline} onChange={(e) => useEvals.getState().setOffline(e.target.checked)} /> Offline
    </label>
  );
}
