// An agent's conversation in the run shown (the Last run tab): each model turn in order — its number, tokens, what the
// model said and the tool calls it asked for — and each tool call's result, or its error. Read from the run's
// journal through the turns store, when this is shown and again when the run moves on.
import { memo, useEffect, useState } from "react";
import { MessageSquare, Wrench } from "lucide-react";
import { useRun } from "../store/run";
import { useTurns, type TurnView } from "../store/turns";

const NO_TURNS: TurnView[] = [];

/** A value as one line of JSON (text as it is). */
function shown(value: unknown): string {
  return typeof value === "string" ? value : JSON.stringify(value) ?? "null";
}

/** Where a subagent's turns sit (`c1/reviewer.t0` → `reviewer`), so they read apart from the agent's own. */
function subagent(at: string): string | null {
  const slash = at.lastIndexOf("/");
  return slash < 0 ? null : at.slice(slash + 1).split(".")[0];
}

/** The model's text, a few lines until clicked. */
const Said = memo(function Said({ text }: { text: string }) {
  const [open, setOpen] = useState(false);
  if (!text) return null;
  return (
    <pre className={open ? "turn-text" : "turn-text collapsed"} onClick={() => setOpen(!open)} title={open ? "Click to fold" : "Click to show all"} data-testid="turn-text">
      {text}
    </pre>
  );
});

const Turn = memo(function Turn({ turn }: { turn: TurnView }) {
  const child = subagent(turn.at);
  const within = child ? <span className="dim"> · {child}</span> : null;
  switch (turn.kind) {
    case "turn":
      return (
        <li className="turn" data-testid="turn">
          <div className="turn-head"><MessageSquare size={12} aria-hidden /> Turn {turn.number}{turn.tokens != null ? ` · ${turn.tokens} token${turn.tokens === 1 ? "" : "s"}` : ""}{within}</div>
          <Said text={turn.text} />
          {turn.calls.map((c, i) => <div key={i} className="dim turn-asks">asks {c.name}({shown(c.arguments)})</div>)}
        </li>
      );
    case "tool":
      return (
        <li className="turn" data-testid="turn-tool">
          <pre className={turn.error != null ? "field-error" : undefined}>
            <Wrench size={12} aria-hidden /> {turn.tool}({shown(turn.arguments)}) → {turn.error != null ? `error: ${turn.error}` : shown(turn.output)}
          </pre>
          {within}
        </li>
      );
    case "said":
      return (
        <li className="turn" data-testid="turn-said">
          <div className="turn-head"><MessageSquare size={12} aria-hidden /> The answer given for this fork{within}</div>
          <Said text={turn.text} />
        </li>
      );
  }
});

/** The conversation of node `id` at `iteration` in the run shown; nothing when it had none. */
export const Conversation = memo(function Conversation({ id, iteration }: { id: string; iteration: number }) {
  const runId = useRun((s) => s.runId);
  // How far the run is, for this node: read again when it moves on (a turn more, an iteration more, the end).
  const stamp = useRun((s) => `${s.status}|${s.nodes[id]?.status ?? ""}|${s.nodes[id]?.iteration ?? ""}|${s.nodes[id]?.finishedSeq ?? ""}`);
  const turns = useTurns((s) => (s.runId === runId ? s.byNode[id] ?? NO_TURNS : NO_TURNS));
  const error = useTurns((s) => (s.runId === runId ? s.error : null));
  useEffect(() => {
    if (runId) void useTurns.getState().load(runId, stamp);
  }, [runId, stamp]);
  const these = turns.filter((t) => t.iteration === iteration);
  if (error) return <p className="muted" data-testid="conversation-error">The conversation could not be read: {error}</p>;
  if (!these.length) return null;
  return (
    <section className="conversation" data-testid="conversation">
      <h4>Conversation</h4>
      <ol>{these.map((t, i) => <Turn key={`${t.at}-${i}`} turn={t} />)}</ol>
    </section>
  );
});
