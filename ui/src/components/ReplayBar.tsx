// The replay timeline, over the bottom of the canvas while a stored run is replayed: play or pause, a step back or
// forward, and a slider the person drags to any moment of the run (arrow keys on it step too); the canvas shows the
// run at that moment. Inside an agent it stops at each model turn and tool call ("review: turn 2 — asks add(2, 3)").
import { ChevronLeft, ChevronRight, Pause, Play, X } from "lucide-react";
import type { Event } from "../types";
import { nodeName } from "../store/document";
import { useReplay, type Step, type TurnStep } from "../store/replay";
import { takenOver } from "../model/takeover";

/** `text`, cut at `max` characters. */
const cut = (text: string, max = 60) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

/** A value in a few characters: text in quotes, the rest as JSON. */
const brief = (value: unknown) => cut(JSON.stringify(value) ?? "null");

/** A tool's name as the model asked for it without its server (`math__add` → `add`). */
const toolName = (name: string) => (name.includes("__") ? name.slice(name.indexOf("__") + 2) : name);

/** A tool call's arguments as a call reads: `2, 3` for `{a: 2, b: 3}`. */
function args(value: unknown): string {
  const object = value !== null && typeof value === "object" && !Array.isArray(value);
  return cut(object ? Object.values(value).map((v) => JSON.stringify(v) ?? "null").join(", ") : JSON.stringify(value) ?? "null");
}

/** What a model turn or tool call did, in a few words: "review: turn 2 — asks add(2, 3)", "review: add → 5". */
function describeTurn({ node, turn }: TurnStep): string {
  const slash = turn.at.lastIndexOf("/");
  const who = slash < 0 ? nodeName(node) : `${nodeName(node)} (${turn.at.slice(slash + 1).split(".")[0]})`;
  switch (turn.kind) {
    case "turn": {
      const asks = turn.calls.map((c) => `${toolName(c.name)}(${args(c.arguments)})`).join(", ");
      const said = turn.text.trim().split("\n")[0];
      return `${who}: turn ${turn.number}${asks ? ` — asks ${asks}` : said ? ` — says “${cut(said)}”` : ""}`;
    }
    case "tool":
      return `${who}: ${toolName(turn.tool)} → ${turn.error != null ? `error: ${turn.error}` : brief(turn.output)}`;
    case "said":
      return `${who}: the answer given for this fork`;
  }
}

/** What happened at a step of the timeline, in a few words. */
export function describe(step: Step | undefined, events: Event[]): string {
  if (!step) return "";
  return step.turn ? describeTurn(step.turn) : describeEvent(events[step.event]);
}

/** What happened at an event, in a few words. */
function describeEvent(e: Event | undefined): string {
  if (!e) return "";
  switch (e.type) {
    case "workflow:start":
      return "the run starts";
    case "node:enter":
      return `${nodeName(e.node)} starts`;
    case "node:exit":
      return `${nodeName(e.node)} ${e.result.status === "success" ? "succeeded" : e.result.status}`;
    case "node:skipped":
      return `${nodeName(e.node)} is skipped`;
    case "route":
      return e.to === "(end)" ? `${nodeName(e.from)} ends its branch` : `${nodeName(e.from)} → ${nodeName(e.to)}`;
    case "approval:requested":
      return `${nodeName(e.node)} waits for a decision`;
    case "approval:received":
      return `${nodeName(e.node)} is decided`;
    case "workflow:paused":
      return "the run pauses";
    case "workflow:taken-over":
      return takenOver(e);
    case "workflow:end":
      return `the run ${e.status}`;
    case "route:choosing":
      return `${nodeName(e.node)} chooses a route`;
    default:
      return e.type;
  }
}

/** How far into the run a step is: a turn's own time when its log kept one, else its event's. */
const since = (events: Event[], i: number, turn?: TurnStep["turn"]) => {
  const t0 = Date.parse(events[0]?.ts ?? "");
  const t = Date.parse((turn && turn.kind !== "said" ? turn.ts : null) ?? events[i]?.ts ?? "");
  return Number.isFinite(t0) && Number.isFinite(t) ? `+${((t - t0) / 1000).toFixed(1)} s` : "";
};

export function ReplayBar() {
  const { runId, events, steps, at, playing } = useReplay();
  if (!runId || !steps.length) return null;
  const r = useReplay.getState();
  const step = steps[at];
  const said = describe(step, events);
  return (
    <div className="replay-bar" data-testid="replay-bar" onKeyDown={(e) => e.stopPropagation()}>
      <span className="replay-label">Replay of run {runId.slice(0, 8)}</span>
      <button className="icon-button" onClick={() => r.seek(at - 1)} disabled={at === 0} aria-label="Step back" title="Step back" data-testid="replay-back">
        <ChevronLeft size={16} aria-hidden />
      </button>
      <button className="icon-button" onClick={() => (playing ? r.pause() : r.play())} aria-label={playing ? "Pause" : "Play"} title={playing ? "Pause" : "Play"} data-testid="replay-play">
        {playing ? <Pause size={16} aria-hidden /> : <Play size={16} aria-hidden />}
      </button>
      <button className="icon-button" onClick={() => r.seek(at + 1)} disabled={at >= steps.length - 1} aria-label="Step forward" title="Step forward" data-testid="replay-forward">
        <ChevronRight size={16} aria-hidden />
      </button>
      <input
        type="range"
        className="replay-timeline"
        min={0}
        max={steps.length - 1}
        value={at}
        onChange={(e) => (r.pause(), r.seek(Number(e.target.value)))}
        aria-label="moment of the run"
        aria-valuetext={said}
        data-testid="replay-timeline"
      />
      <span className="replay-now" data-testid="replay-now">
        {at + 1}/{steps.length} · {said} <span className="dim">{since(events, step.event, step.turn?.turn)}</span>
      </span>
      <button className="icon-button" onClick={() => r.close()} aria-label="Close the replay" title="Close the replay (the run shows as it ended)" data-testid="replay-close">
        <X size={16} aria-hidden />
      </button>
    </div>
  );
}
