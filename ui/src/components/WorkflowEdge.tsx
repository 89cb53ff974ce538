// One edge: its path, and its label as a readable chip on the edge, at the place the canvas chose for it along the
// path (model/labels.ts `placeLabels`: the middle, or nearer an end where another chip or a card is in the way). A
// click on the chip selects the edge, as a click on the path does. The chip's CSS (styles.css `.edge-chip`: 13 px
// text, 16 px lines, at most two of them) makes the size model/labels.ts `chipSize` assumes.
import { memo, type MouseEvent } from "react";
import { BaseEdge, EdgeLabelRenderer, getBezierPath, getSmoothStepPath, Position, useInternalNode, type EdgeProps, type InternalNode } from "@xyflow/react";
import { NODE_HEIGHT, NODE_WIDTH } from "../model/handles";
import { useDocument } from "../store/document";
import { edgeRoute, ROUTE_OFFSET, type Box } from "../model/labels";

/** Where the canvas placed this edge's chip (its centre), when it has a label. */
export type WorkflowEdgeData = { labelX?: number; labelY?: number; /** The label unshortened, shown on hover. */ fullLabel?: string };

/** The event a chip click sends; the canvas, which owns the selection, listens for it. */

const boxOf = (n: InternalNode | undefined, fallback: { x: number; y: number }): Box =>
  n
    ? { x: n.internals.positionAbsolute.x, y: n.internals.positionAbsolute.y, width: n.measured.width ?? NODE_WIDTH, height: n.measured.height ?? NODE_HEIGHT }
    : { x: fallback.x, y: fallback.y - NODE_HEIGHT / 2, width: NODE_WIDTH, height: NODE_HEIGHT };

function WorkflowEdgeView(props: EdgeProps) {
  const { id, source, target, sourceX, sourceY, targetX, targetY, sourcePosition, targetPosition, label, data, selected, markerStart, markerEnd, style, interactionWidth } = props;
  const sourceNode = useInternalNode(source);
  const targetNode = useInternalNode(target);
  const place = data as WorkflowEdgeData | undefined;
  // An edge running right to left (a loop back to an earlier step, or into its own node) steps round the cards
  // rather than cutting through them; everything else is a curve.
  const stepped = sourcePosition === Position.Right && targetPosition === Position.Left && (source === target || sourceX > targetX);
  let path: string;
  let midX: number;
  let midY: number;
  if (stepped) {
    const route = edgeRoute(
      { x: sourceX, y: sourceY },
      { x: targetX, y: targetY },
      boxOf(sourceNode, { x: sourceX - NODE_WIDTH, y: sourceY }),
      boxOf(targetNode, { x: targetX, y: targetY }),
      source === target,
    );
    [path] = getSmoothStepPath({ sourceX, sourceY, targetX, targetY, sourcePosition, targetPosition, borderRadius: 12, offset: ROUTE_OFFSET, centerY: route.runY });
    [midX, midY] = [(route.points[2].x + route.points[3].x) / 2, route.runY];
  } else [path, midX, midY] = getBezierPath({ sourceX, sourceY, targetX, targetY, sourcePosition, targetPosition });
  const x = place?.labelX ?? midX;
  const y = place?.labelY ?? midY;
  const select = (e: MouseEvent) => {
    e.stopPropagation();
    useDocument.getState().selectEdge(id, e.shiftKey || e.ctrlKey || e.metaKey);
  };
  return (
    <>
      <BaseEdge id={id} path={path} markerStart={markerStart} markerEnd={markerEnd} style={style} interactionWidth={interactionWidth ?? 16} />
      {label ? (
        <EdgeLabelRenderer>
          <div
            className={selected ? "edge-chip nodrag nopan selected" : "edge-chip nodrag nopan"}
            data-testid={`edge-label-${id}`}
            style={{ transform: `translate(-50%, -50%) translate(${x}px, ${y}px)` }}
            onClick={select}
            title={place?.fullLabel ?? (typeof label === "string" ? label : undefined)}
          >
            {label}
          </div>
        </EdgeLabelRenderer>
      ) : null}
    </>
  );
}

/** React Flow applies the edge's `className` (and `selected`, `animated`) to the `<g>` around this component. */
export const WorkflowEdge = memo(WorkflowEdgeView);
export const edgeTypes = { workflow: WorkflowEdge };
