// The replay timeline, over the bottom of the canvas while a stored run is replayed: play or pause, a step back or
// forward, and a slider the person drags to any moment of the run; the canvas shows the run at that moment.
import { ChevronLeft, ChevronRight, Pause, Play, X } from "lucide-react";
import type { Event } from "../types";
import { nodeName } from "../store/document";
import { useReplay } from "../store/replay";

/** What happened at an event, in a few words. */
function describe(e: Event | undefined): string {
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
    case "workflow:end":
      return `the run ${e.status}`;
    case "route:choosing":
      return `${nodeName(e.node)} chooses a route`;
    default:
      return e.type;
  }
}

const since = (events: Event[], i: number) => {
  const t0 = Date.parse(events[0]?.ts ?? "");
  const t = Date.parse(events[i]?.ts ?? "");
  return Number.isFinite(t0) && Number.isFinite(t) ? `+${((t - t0) / 1000).toFixed(1)} s` : "";
};

export function ReplayBar() {
  const { runId, events, steps, at, playing } = useReplay();
  if (!runId || !steps.length) return null;
  const r = useReplay.getState();
  const event = events[steps[at]];
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
        aria-valuetext={describe(event)}
        data-testid="replay-timeline"
      />
      <span className="replay-now" data-testid="replay-now">
        {at + 1}/{steps.length} · {describe(event)} <span className="dim">{since(events, steps[at])}</span>
      </span>
      <button className="icon-button" onClick={() => r.close()} aria-label="Close the replay" title="Close the replay (the run shows as it ended)" data-testid="replay-close">
        <X size={16} aria-hidden />
      </button>
    </div>
  );
}
