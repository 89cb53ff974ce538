// One edge: its path, and its label as a readable chip at the place the canvas chose for it (model/labels.ts), so
// that no two chips overlap. A click on the chip selects the edge, as a click on the path does.
import { memo } from "react";
import { BaseEdge, EdgeLabelRenderer, getBezierPath, getSmoothStepPath, type EdgeProps } from "@xyflow/react";

export type WorkflowEdgeData = { labelX?: number; labelY?: number };

function WorkflowEdgeView({ id, sourceX, sourceY, targetX, targetY, sourcePosition, targetPosition, label, data, selected, markerEnd, style, interactionWidth }: EdgeProps) {
  const place = data as WorkflowEdgeData | undefined;
  // An edge that runs backwards (a loop back to an earlier node) goes around, not through, the nodes between.
  const backwards = sourceX > targetX + 20;
  const [path, midX, midY] = backwards
    ? getSmoothStepPath({ sourceX, sourceY, targetX, targetY, sourcePosition, targetPosition, borderRadius: 12, offset: 28 })
    : getBezierPath({ sourceX, sourceY, targetX, targetY, sourcePosition, targetPosition });
  const x = backwards ? midX : (place?.labelX ?? midX);
  const y = backwards ? midY : (place?.labelY ?? midY);
  return (
    <>
      <BaseEdge id={id} path={path} markerEnd={markerEnd} style={style} interactionWidth={interactionWidth ?? 18} />
      {label ? (
        <EdgeLabelRenderer>
          <div
            className={`edge-chip nodrag nopan ${selected ? "selected" : ""}`}
            data-testid={`edge-label-${id}`}
            style={{ transform: `translate(-50%, -50%) translate(${x}px, ${y}px)` }}
            onClick={(e) => {
              e.stopPropagation();
              window.dispatchEvent(new CustomEvent("switchyard:select-edge", { detail: { id, additive: e.shiftKey || e.ctrlKey || e.metaKey } }));
            }}
            title={String(label)}
          >
            {label}
          </div>
        </EdgeLabelRenderer>
      ) : null}
    </>
  );
}

export const WorkflowEdge = memo(WorkflowEdgeView);
export const edgeTypes = { workflow: WorkflowEdge };
