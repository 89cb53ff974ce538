// One node on the canvas. Memoized; it reads its own run state and findings by id, so a run event re-renders only
// the node it concerns.
import { memo } from "react";
import { Handle, Position, type NodeProps } from "@xyflow/react";
import type { Node as WorkflowNodeData } from "../types";
import { HANDLE_STEP, HANDLE_TOP, hasInput, sourceHandles } from "../model/handles";
import { useNodeRun, useRun } from "../store/run";
import { useValidation } from "../store/validation";

export type CanvasNodeData = { node: WorkflowNodeData };

const ICON: Record<string, string> = { start: "▶", agent: "✦", if: "◇", approval: "‖", script: "{}" };

function WorkflowNodeView({ data, selected }: NodeProps & { data: CanvasNodeData }) {
  const node = data.node;
  const run = useNodeRun(node.id);
  const findings = useValidation((s) => s.byNode[node.id]);
  const openApproval = useRun((s) => s.pending.some((p) => p.node === node.id));
  const errors = findings?.filter((f) => f.level === "error") ?? [];
  const status = run?.status;
  const handles = sourceHandles(node);
  const level = findings?.length ? (errors.length ? "error" : "warning") : null;
  return (
    <div
      className={`wf-node wf-${node.type} ${status ? `run-${status}` : ""} ${selected ? "selected" : ""} ${level ? `has-${level}` : ""}`}
      data-testid={`node-${node.id}`}
      data-status={status ?? ""}
      data-finished={run?.finishedSeq ?? ""}
      title={findings?.map((f) => `${f.code}: ${f.message}`).join("\n")}
    >
      {hasInput(node.type) && <Handle type="target" position={Position.Left} id="input" />}
      <div className="wf-head">
        <span className="wf-icon">{ICON[node.type]}</span>
        <span className="wf-title">{node.name || node.id}</span>
        {level && <span className={`wf-badge ${level}`}>{findings!.length}</span>}
      </div>
      <div className="wf-sub">
        {node.type}
        {node.name ? ` · ${node.id}` : ""}
        {run && run.iteration > 1 ? ` · ×${run.iteration}` : ""}
      </div>
      {status === "running" && run?.streamed ? <div className="wf-stream">{run.streamed.slice(-160)}</div> : null}
      {openApproval ? (
        <button className="wf-review" data-testid={`review-${node.id}`} onClick={() => window.dispatchEvent(new CustomEvent("switchyard:review", { detail: node.id }))}>
          Review…
        </button>
      ) : null}
      {handles
        .filter((h) => h.kind !== "subagent")
        .map((h, i) => (
          <div key={h.id}>
            {h.label ? <span className="wf-out-label" style={{ top: HANDLE_TOP + i * HANDLE_STEP - 7 }}>{h.label}</span> : null}
            <Handle type="source" position={Position.Right} id={h.id} className={`h-${h.kind}`} style={{ top: HANDLE_TOP + i * HANDLE_STEP }} />
          </div>
        ))}
      {node.type === "agent" && <Handle type="source" position={Position.Bottom} id="subagent" className="h-subagent" title="subagent: link an agent offered as a tool" />}
    </div>
  );
}

export const WorkflowNode = memo(WorkflowNodeView);
