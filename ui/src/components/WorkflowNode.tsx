// One node on the canvas: its type, name, a one-line summary and validation badges; after a run, its status,
// duration, tokens and an output preview. Memoized; it reads its own run state and findings by id, so a run event
// re-renders only the node it concerns.
import { createContext, memo, useContext } from "react";
import { Check, Circle, CircleX, Hand, LoaderCircle, RefreshCw, Route, SkipForward } from "lucide-react";
import { Handle, Position, type NodeProps } from "@xyflow/react";
import type { Node as WorkflowNodeData } from "../types";
import { HANDLE_STEP, HANDLE_TOP, hasInput, sourceHandles } from "../model/handles";
import { asksModel, fieldPlaceholder, nodeTypeSpec } from "../model/nodeTypes";
import { outputPreview, STATUS_WORDS, useNodeRun, useRun } from "../store/run";
import { useValidation } from "../store/validation";
import { useDocument } from "../store/document";
import { useDialogs } from "../store/dialogs";
import { usePrefs } from "../store/prefs";
import { useRunControl } from "../store/runControl";
import { useAskedMark, useCompareMark } from "../store/evals";
import { NODE_CHANGE_WORDS } from "../model/words";
import { NodeIcon } from "./NodeIcon";
import { inAppWords } from "../model/words";
import { namedMessage } from "../model/names";
import { formatDuration } from "../model/duration";

export type CanvasNodeData = { node: WorkflowNodeData };

/** The title's font size in CSS pixels (styles.css `.wf-title`); the opening zoom keeps it ≥ 12 px on screen. */
export const TITLE_PX = 15;

const clip = (text: string, max = 48) => {
  const line = text.replace(/\s+/g, " ").trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
};

/** One line saying what the node does: its model, condition, message or language. */
export function nodeSummary(node: WorkflowNodeData, defaultModel?: string | null): string {
  switch (node.type) {
    case "agent": {
      const tools = [node.tools?.subagents && "subagents", node.tools?.web_search && "web search", node.output_schema && "schema"].filter(Boolean);
      return clip(`${node.model ?? (defaultModel === "answers file" ? "from the answers file" : defaultModel ? `default · ${defaultModel}` : "default model")}${tools.length ? ` · ${tools.join(", ")}` : ""}`);
    }
    case "if": {
      const conditions = node.conditions ?? [];
      if (!conditions.length) return "no conditions: always else";
      return clip(conditions.map((c) => (c.operator === "expression" ? c.value : `${c.operator} "${c.value}"`)).join(" · "));
    }
    case "approval":
      return clip(node.message ?? fieldPlaceholder(node.type, "message") ?? "");
    case "script":
      return clip(node.language ? `${node.language}${node.code ? ` · ${node.code.split("\n")[0]}` : ""}` : "no language");
    case "workflow":
      return clip(node.workflow ? `runs ${node.workflow}` : "no child workflow");
    case "start":
      return node.initial_input == null ? "run input" : clip(`input: ${typeof node.initial_input === "string" ? node.initial_input : JSON.stringify(node.initial_input)}`);
  }
}


/** Below this zoom the canvas draws nodes as simple shapes (level of detail): nobody reads a card that small. */
export const LOD_ZOOM = 0.45;
/** Whether the canvas is zoomed out below `LOD_ZOOM`; the canvas provides it (one subscription, not one per node). */
export const LodContext = createContext(false);

function StatusIcon({ status, choosing }: { status: string; choosing?: boolean }) {
  if (choosing) return <Route size={13} className="spin-slow" aria-hidden />;
  switch (status) {
    case "running":
      return <LoaderCircle size={13} className="spin" aria-hidden />;
    case "succeeded":
      return <Check size={13} aria-hidden />;
    case "failed":
      return <CircleX size={13} aria-hidden />;
    case "skipped":
      return <SkipForward size={13} aria-hidden />;
    case "waiting":
      return <Hand size={13} aria-hidden />;
    default:
      return <Circle size={13} aria-hidden />;
  }
}

/**
 * The handles a node leaves by, down its right edge below the title line, each named beside it — except the one it
 * leaves by when it fails: a small hollow ring, named when hovered and on the edges leaving by it, so a card never
 * reads as failed before it ran.
 */
function OutHandles({ node }: { node: WorkflowNodeData }) {
  const handles = sourceHandles(node).filter((h) => h.kind !== "subagent");
  const subagent = sourceHandles(node).some((h) => h.kind === "subagent");
  return (
    <>
      {handles.map((h, i) => (
        <div key={h.id}>
          {h.label && h.kind !== "error" ? <span className={`wf-out-label h-${h.kind}`} style={{ top: HANDLE_TOP + i * HANDLE_STEP - 8 }} title={h.label}>{h.label}</span> : null}
          <Handle type="source" position={Position.Right} id={h.id} className={`h-${h.kind}`} style={{ top: HANDLE_TOP + i * HANDLE_STEP }} title={h.kind === "error" ? `${h.label}: where the run goes when this node fails` : h.label || "output"} />
        </div>
      ))}
      {subagent && <Handle type="source" position={Position.Bottom} id="subagent" className="h-subagent" title="subagent: link an agent offered as a tool" />}
    </>
  );
}

function WorkflowNodeView({ data, selected }: NodeProps & { data: CanvasNodeData }) {
  const node = data.node;
  const lod = useContext(LodContext);
  // What an agent naming no model runs on: the same default the run source shows.
  const namesNone = asksModel(node.type) && !node.model;
  const found = usePrefs((s) => (namesNone ? s.defaultModel?.model : null));
  const defaultModel = useRunControl((s) => (namesNone ? (s.mode === "answers" ? "answers file" : s.model || found) : null));
  const run = useNodeRun(node.id);
  const findings = useValidation((s) => s.byNode[node.id]);
  const openApproval = useRun((s) => s.pending.some((p) => p.node === node.id));
  // The compare view of a test case colours each node by what became of it since the evaluation before.
  const mark = useCompareMark(node.id);
  // The case shown asked this node's model again (the recorded calls no longer answered it): why, in the report's words.
  const asked = useAskedMark(node.id);
  const errors = findings?.filter((f) => f.level === "error").length ?? 0;
  const warnings = (findings?.length ?? 0) - errors;
  const status = run?.status;
  const handles = sourceHandles(node).filter((h) => h.kind !== "subagent");
  const spec = nodeTypeSpec(node.type);
  const last = run?.iterations[run.iterations.length - 1];
  const level = errors ? "error" : warnings ? "warning" : null;
  const className = `wf-node wf-${node.type} ${status ? `run-${status}` : ""} ${selected ? "selected" : ""} ${level ? `has-${level}` : ""} ${run?.choosing ? "choosing" : ""} ${mark ? `cmp-${mark}` : ""} ${asked ? "asked-again" : ""}`;
  const common = {
    "data-testid": `node-${node.id}`,
    "data-status": status ?? "",
    "data-finished": run?.finishedSeq ?? "",
    "data-compare": mark ?? "",
    style: { minHeight: HANDLE_TOP + (handles.length - 1) * HANDLE_STEP + 16 },
  };
  if (lod)
    // Zoomed far out: a simple shape with the name in big type, its handles (edges attach to them) and its status colour.
    return (
      <div className={`${className} lod`} {...common} title={node.name || node.id}>
        {hasInput(node.type) && <Handle type="target" position={Position.Left} id="input" />}
        <NodeIcon type={node.type} size={30} />
        <div className="wf-lod-title">{node.name || node.id}</div>
        <OutHandles node={node} />
      </div>
    );
  return (
    <div className={className} {...common} title={findings?.map((f) => `${inAppWords(namedMessage(f.message, useDocument.getState().workflow, f.node), f.code)} (${f.code})`).join("\n")}>
      {hasInput(node.type) && <Handle type="target" position={Position.Left} id="input" />}
      {mark && <span className={`wf-compare cmp-${mark}`} data-testid={`node-compare-${node.id}`}>{NODE_CHANGE_WORDS[mark]}</span>}
      {asked && (
        <span className="wf-asked" title={`asked the model again: ${asked}`} aria-label={`asked the model again: ${asked}`} data-testid={`node-asked-${node.id}`}>
          <RefreshCw size={10} aria-hidden /> asked again
        </span>
      )}
      <div className="wf-head">
        <span className="wf-icon" title={spec?.label ?? node.type}><NodeIcon type={node.type} size={16} /></span>
        <div className="wf-title" style={{ fontSize: TITLE_PX }} title={node.name ? `${node.name} (${node.id})` : node.id}>{node.name || node.id}</div>
      </div>
      {(errors > 0 || warnings > 0) && (
        <div className="wf-badges">
          {errors > 0 && <span className="wf-badge error" title={`${errors} error${errors > 1 ? "s" : ""}`}>{errors}</span>}
          {warnings > 0 && <span className="wf-badge warning" title={`${warnings} warning${warnings > 1 ? "s" : ""}`}>{warnings}</span>}
        </div>
      )}
      <div className="wf-summary" title={nodeSummary(node, defaultModel)}>{nodeSummary(node, defaultModel)}</div>
      {status && status !== "pending" && (
        <div className={`wf-run ${status}`} data-testid={`node-run-${node.id}`}>
          <StatusIcon status={status} choosing={run?.choosing} />
          <span>{run?.choosing ? "choosing a route…" : STATUS_WORDS[status]}</span>
          {run && run.iteration > 1 && <span>×{run.iteration}</span>}
          {last?.durationMs != null && <span>{formatDuration(last.durationMs)}</span>}
          {last?.tokens != null && <span>{last.tokens} tok</span>}
        </div>
      )}
      {status === "running" && run?.streamed ? <div className="wf-stream">{run.streamed.slice(-120)}</div> : null}
      {status !== "running" && last?.result ? <div className="wf-preview">{outputPreview(last.result, 60) || "(empty)"}</div> : null}
      {openApproval ? (
        <button className="wf-review nodrag" data-testid={`review-${node.id}`} onClick={() => useDialogs.getState().review(node.id)}>
          Review…
        </button>
      ) : null}
      <OutHandles node={node} />
    </div>
  );
}

export const WorkflowNode = memo(WorkflowNodeView);
