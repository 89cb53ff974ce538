// The bottom panel (problems, run events, importer notes), approval dialogs, and the help overlay.
import { useEffect, useState } from "react";
import { useDocument } from "../store/document";
import { useRun, type PendingApproval } from "../store/run";
import { useValidation } from "../store/validation";

export function BottomPanel({ onDecide }: { onDecide: (node: string) => void }) {
  const [tab, setTab] = useState<"problems" | "events" | "notes">("problems");
  const report = useValidation((s) => s.report);
  const failure = useValidation((s) => s.failure);
  const events = useRun((s) => s.events);
  const notes = useDocument((s) => s.notes);
  const select = useDocument((s) => s.select);
  const pending = useRun((s) => s.pending);
  const run = { status: useRun((s) => s.status), error: useRun((s) => s.error) };
  useEffect(() => {
    if (events.length) setTab("events");
  }, [events.length > 0]); // eslint-disable-line react-hooks/exhaustive-deps
  const problems = [...report.errors.map((f) => ({ ...f, level: "error" })), ...report.warnings.map((f) => ({ ...f, level: "warning" }))];
  return (
    <section className="bottom">
      <nav>
        <button className={tab === "problems" ? "on" : ""} onClick={() => setTab("problems")} data-testid="tab-problems">
          Problems {report.errors.length ? <b className="error">{report.errors.length}</b> : null} {report.warnings.length ? <b className="warning">{report.warnings.length}</b> : null}
        </button>
        <button className={tab === "events" ? "on" : ""} onClick={() => setTab("events")}>Run {run.status !== "idle" ? `· ${run.status}` : ""}</button>
        {notes.length > 0 && <button className={tab === "notes" ? "on" : ""} onClick={() => setTab("notes")}>Import notes ({notes.length})</button>}
        {pending.map((p) => (
          <button key={p.node} className="pending" onClick={() => onDecide(p.node)}>‖ {p.node} waits</button>
        ))}
      </nav>
      <div className="bottom-body">
        {tab === "problems" && (
          <ul className="problems" data-testid="problems">
            {failure && <li className="error">validation could not run: {failure}</li>}
            {!problems.length && !failure && <li className="ok">No problems.</li>}
            {problems.map((f, i) => (
              <li key={i} className={f.level} onClick={() => f.node && select({ nodes: [f.node], edges: [] })} data-code={f.code}>
                <code>{f.code}</code> {f.node ? <b>{f.node}</b> : f.edge ? <b>{f.edge}</b> : null} {f.message}
              </li>
            ))}
          </ul>
        )}
        {tab === "events" && (
          <ol className="events" data-testid="events">
            {run.error && <li className="error">{run.error}</li>}
            {events.slice(-300).map((e) => (
              <li key={e.seq}>
                <span className="seq">{e.seq}</span> <b>{e.type}</b> {"node" in e && e.node ? e.node : ""} {e.type === "route" ? `${e.from} → ${e.to} [${e.reason}]` : ""}
                {e.type === "log" ? ` ${e.logType}: ${typeof e.content === "string" ? e.content : JSON.stringify(e.content)}` : ""}
              </li>
            ))}
          </ol>
        )}
        {tab === "notes" && (
          <ul className="problems">{notes.map((n, i) => <li key={i} className="warning">{n}</li>)}</ul>
        )}
      </div>
    </section>
  );
}

export function ApprovalDialog({ approval, onClose, onDecide }: { approval: PendingApproval; onClose: () => void; onDecide: (decision: "approve" | "reject", note: string) => Promise<void> }) {
  const [note, setNote] = useState("");
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
    <div className="modal-backdrop" role="dialog" aria-modal="true" data-testid="approval-dialog">
      <div className="modal">
        <h2>Approval: {approval.node}</h2>
        <p className="message">{approval.message}</p>
        <h4>What reached this step</h4>
        <pre className="previous" data-testid="approval-previous">{approval.previousOutput || "(nothing)"}</pre>
        <label className="field">
          <span>note (optional)</span>
          <textarea rows={3} value={note} onChange={(e) => setNote(e.target.value)} data-testid="approval-note" />
        </label>
        {error && <div className="field-error">{error}</div>}
        <div className="actions">
          <button onClick={onClose} disabled={busy}>Later</button>
          <button className="danger" onClick={() => decide("reject")} disabled={busy} data-testid="approval-reject">Reject</button>
          <button className="primary" onClick={() => decide("approve")} disabled={busy} data-testid="approval-approve">Approve</button>
        </div>
      </div>
    </div>
  );
}

export const SHORTCUTS: [string, string][] = [
  ["Ctrl+O", "open a workflow (any supported format)"],
  ["Ctrl+S", "save"],
  ["Ctrl+Shift+E", "export canonical YAML"],
  ["Ctrl+Z / Ctrl+Shift+Z", "undo / redo"],
  ["Ctrl+C / Ctrl+V / Ctrl+D", "copy / paste / duplicate"],
  ["Delete", "delete the selection"],
  ["Ctrl+F", "find a node"],
  ["Ctrl+L", "auto-layout"],
  ["Ctrl+Enter", "run"],
  ["Shift+drag", "box-select"],
  ["F1 or ?", "this help"],
];

export function HelpPanel({ onClose }: { onClose: () => void }) {
  return (
    <div className="modal-backdrop" onClick={onClose}>
      <div className="modal" onClick={(e) => e.stopPropagation()} data-testid="help">
        <h2>Keyboard shortcuts</h2>
        <table>
          <tbody>{SHORTCUTS.map(([k, v]) => <tr key={k}><td><kbd>{k}</kbd></td><td>{v}</td></tr>)}</tbody>
        </table>
        <div className="actions"><button onClick={onClose}>Close</button></div>
      </div>
    </div>
  );
}
