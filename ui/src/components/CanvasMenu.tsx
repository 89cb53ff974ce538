// The right-click menu of the canvas (node, edge, empty pane) and the node picker that opens where a connection is
// dropped on empty canvas. Each item is what applies to what was clicked.
import { useEffect, useRef } from "react";
import { useReactFlow } from "@xyflow/react";
import type { NodeType } from "../types";
import { NODE_HEIGHT } from "../model/handles";
import { useNodeTypes } from "../model/nodeTypes";
import { freeSpot } from "../model/placement";
import { useDocument } from "../store/document";
import { useMessages } from "../store/messages";
import { useSession } from "../store/session";

export type MenuRequest =
  | { kind: "node" | "edge"; clientX: number; clientY: number; id: string }
  | { kind: "pane"; clientX: number; clientY: number; from?: { node: string; handle: string } };

export function CanvasMenu({ request, onClose }: { request: MenuRequest; onClose: () => void }) {
  const flow = useReactFlow();
  const types = useNodeTypes((s) => s.list);
  const clipboard = useDocument((s) => s.clipboard);
  const ref = useRef<HTMLDivElement>(null);

  useEffect(() => {
    const away = (e: PointerEvent) => !ref.current?.contains(e.target as globalThis.Node) && onClose();
    const esc = (e: KeyboardEvent) => e.key === "Escape" && onClose();
    window.addEventListener("pointerdown", away, true);
    window.addEventListener("keydown", esc, true);
    ref.current?.querySelector<HTMLButtonElement>("button")?.focus();
    return () => {
      window.removeEventListener("pointerdown", away, true);
      window.removeEventListener("keydown", esc, true);
    };
  }, [onClose]);

  const doc = useDocument.getState();
  const act = (f: () => void) => () => {
    f();
    onClose();
  };
  const deleteSelection = () => {
    const refused = useDocument.getState().deleteSelection();
    if (refused) useMessages.getState().error(`Not deleted: ${refused}`);
  };
  const addHere = (type: NodeType) => {
    const at = flow.screenToFlowPosition({ x: request.clientX, y: request.clientY });
    const from = request.kind === "pane" ? request.from : undefined;
    // A connected node puts its input under the pointer; a plain one is centred on it. Neither covers another.
    const desired = from ? { x: at.x + 8, y: at.y - NODE_HEIGHT / 2 } : { x: at.x - 110, y: at.y - NODE_HEIGHT / 2 };
    doc.addNode(type, freeSpot(useDocument.getState().workflow.nodes, desired), from);
  };

  const items: { label: string; hint?: string; run: () => void; testId: string }[] = [];
  if (request.kind === "node") {
    items.push({ label: "Duplicate", hint: "Ctrl+D", run: () => doc.duplicateSelection(), testId: "menu-duplicate" });
    items.push({ label: "Copy", hint: "Ctrl+C", run: () => doc.copySelection(), testId: "menu-copy" });
    items.push({ label: "Delete", hint: "Del", run: deleteSelection, testId: "menu-delete" });
    items.push({ label: "Run from here", hint: "last run upstream", run: () => void useSession.getState().runFrom(request.id), testId: "menu-run-from" });
  } else if (request.kind === "edge") {
    items.push({ label: "Delete edge", hint: "Del", run: deleteSelection, testId: "menu-delete" });
  } else {
    const pickerOnly = Boolean(request.kind === "pane" && request.from);
    for (const t of types.filter((t) => !pickerOnly || t.hasInput))
      items.push({ label: `${t.icon}  ${pickerOnly ? t.label : `Add ${t.label.toLowerCase()} here`}`, run: () => addHere(t.type), testId: `menu-add-${t.type}` });
    if (!pickerOnly) {
      if (clipboard?.nodes.length) items.push({ label: "Paste", hint: "Ctrl+V", run: () => doc.paste(), testId: "menu-paste" });
      items.push({ label: "Layout", hint: "Ctrl+L", run: () => void useSession.getState().layout(), testId: "menu-layout" });
      items.push({ label: "Fit view", hint: "Shift+1", run: () => useSession.getState().requestView("fit"), testId: "menu-fit" });
    }
  }

  const box = document.querySelector(".canvas-inner")?.getBoundingClientRect();
  const left = Math.min(request.clientX - (box?.left ?? 0), (box?.width ?? 9999) - 220);
  const top = Math.min(request.clientY - (box?.top ?? 0), (box?.height ?? 9999) - (items.length * 30 + 40));
  return (
    <div className="menu" ref={ref} style={{ left, top }} role="menu" data-testid="canvas-menu">
      {request.kind === "pane" && request.from && <div className="menu-title">Add a node after {request.from.node}</div>}
      {items.map((i) => (
        <button key={i.testId} role="menuitem" data-testid={i.testId} onClick={act(i.run)}>
          <span>{i.label}</span>
          {i.hint && <kbd>{i.hint}</kbd>}
        </button>
      ))}
    </div>
  );
}
