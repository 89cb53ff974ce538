// An agent's conversation in the run shown (the Last run tab): each model turn in order — its number, tokens, how long
// it took, what the model said and the tool calls it asked for — and each tool call's result, or its error, and how
// long it took. Read from the run's
// journal through the turns store, when this is shown and again when the run moves on. Each of the agent's own model
// turns can be forked from (Fork.tsx): a new run where the model said something else there. While a replay stands at
// one of this agent's turns, that turn is marked and scrolled into view.
import { memo, useEffect, useRef, useState } from "react";
import { MessageSquare, Wrench } from "lucide-react";
import { useReplay } from "../store/replay";
import { useRun } from "../store/run";
import { useTurns, type TurnView } from "../store/turns";
import { ForkButton, forkableTurn } from "./Fork";

const NO_TURNS: TurnView[] = [];

/** A value as one line of JSON (text as it is). */
function shown(value: unknown): string {
  return typeof value === "string" ? value : JSON.stringify(value) ?? "null";
}

/** How long a turn or a tool call took, in a few characters: 820 ms, 1.4 s, 2m 05s. */
export function took(ms: number): string {
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60_000)}m ${String(Math.floor(ms / 1000) % 60).padStart(2, "0")}s`;
}

/** " · 1.4 s" after a turn's head, with when it ended as its tooltip; nothing when the log kept no time. */
function Took({ turn }: { turn: { ms: number | null; ts: string | null } }) {
  if (turn.ms == null) return null;
  const ended = turn.ts ? new Date(turn.ts) : null;
  const title = ended && Number.isFinite(ended.getTime()) ? `ended at ${ended.toLocaleTimeString()}` : undefined;
  return <span className="turn-took dim" title={title} data-testid="turn-took"> · {took(turn.ms)}</span>;
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

const Turn = memo(function Turn({ turn, runId, node, current }: { turn: TurnView; runId: string; node: string; current: boolean }) {
  const child = subagent(turn.at);
  const within = child ? <span className="dim"> · {child}</span> : null;
  const ref = useRef<HTMLLIElement>(null);
  useEffect(() => {
    if (current) ref.current?.scrollIntoView?.({ block: "nearest" });
  }, [current]);
  const className = current ? "turn current" : "turn";
  switch (turn.kind) {
    case "turn":
      return (
        <li className={className} ref={ref} data-testid="turn">
          <div className="turn-head">
            <MessageSquare size={12} aria-hidden />
            <span className="turn-title">
              Turn {turn.number}{turn.tokens != null ? ` · ${turn.tokens} token${turn.tokens === 1 ? "" : "s"}` : ""}<Took turn={turn} />{within}
            </span>
            {forkableTurn(turn) && <ForkButton runId={runId} node={node} turn={turn.number} said={turn.text} />}
          </div>
          <Said text={turn.text} />
          {turn.calls.map((c, i) => <div key={i} className="dim turn-asks">asks {c.name}({shown(c.arguments)})</div>)}
        </li>
      );
    case "tool":
      return (
        <li className={className} ref={ref} data-testid="turn-tool">
          <pre className={turn.error != null ? "field-error" : undefined}>
            <Wrench size={12} aria-hidden /> {turn.tool}({shown(turn.arguments)}) → {turn.error != null ? `error: ${turn.error}` : shown(turn.output)}
            <Took turn={turn} />
          </pre>
          {within}
        </li>
      );
    case "said":
      return (
        <li className={className} ref={ref} data-testid="turn-said">
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
  // A replay of this run has read its turns once, whole: nothing more to ask at each step. It may stand at one of them.
  const replaying = useReplay((s) => s.runId !== null && s.runId === runId);
  const current = useReplay((s) => (s.runId === runId && s.steps[s.at]?.turn?.node === id ? s.steps[s.at].turn!.index : null));
  useEffect(() => {
    if (runId && !replaying) void useTurns.getState().load(runId, stamp);
  }, [runId, stamp, replaying]);
  const these = turns.map((turn, index) => ({ turn, index })).filter(({ turn }) => turn.iteration === iteration);
  if (error) return <p className="muted" data-testid="conversation-error">The conversation could not be read: {error}</p>;
  if (!these.length) return null;
  return (
    <section className="conversation" data-testid="conversation">
      <h4>Conversation</h4>
      <ol>{these.map(({ turn, index }) => <Turn key={`${turn.at}-${index}`} turn={turn} runId={runId!} node={id} current={index === current} />)}</ol>
    </section>
  );
});
