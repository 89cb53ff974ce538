// The right-click menu of the canvas (node, edge, empty pane) and the node picker that opens where a connection is
// dropped on empty canvas. Each item is what applies to what was clicked. Radix does the menus: ContextMenu for a
// right-click (it opens where the pointer is, on the press, as the system's menus do), DropdownMenu anchored at the
// point for the picker; keyboard navigation, focus and dismissal are theirs.
import type { ReactNode } from "react";
import * as ContextMenu from "@radix-ui/react-context-menu";
import * as Menu from "@radix-ui/react-dropdown-menu";
import { useReactFlow } from "@xyflow/react";
import type { NodeType } from "../types";
import { NODE_HEIGHT } from "../model/handles";
import { useNodeTypes } from "../model/nodeTypes";
import { freeSpot } from "../model/placement";
import { nodeName, useDocument } from "../store/document";
import { useMessages } from "../store/messages";
import { useQuickAdd } from "../store/quickAdd";
import * as runControl from "../store/runControl";
import { useView } from "../store/view";
import { NodeIcon } from "./NodeIcon";
import { revealWhenLaidOut } from "./reveal";

export type MenuRequest =
  | { kind: "node" | "edge"; clientX: number; clientY: number; id: string }
  | { kind: "pane"; clientX: number; clientY: number; from?: { node: string; handle: string } };

/** The items that apply to `request`, each with what it does. */
function useItems(request: MenuRequest, onClose: () => void) {
  const flow = useReactFlow();
  const types = useNodeTypes((s) => s.list);
  const clipboard = useDocument((s) => s.clipboard);
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
    const id = doc.addNode(type, freeSpot(useDocument.getState().workflow.nodes, desired), from);
    revealWhenLaidOut(flow, id);
  };

  // `keys`: the item's shortcut; `note`: a word on what it does.
  const items: { label: string; keys?: string; note?: string; run: () => void; testId: string; type?: NodeType }[] = [];
  if (request.kind === "node") {
    // The keyboard's ways (Tab, C) from the menu, so a person finds them: they start from this node alone.
    const fromThis = (mode: "add" | "connect") => () => {
      doc.select({ nodes: [request.id], edges: [] });
      // Once the menu has closed and handed the focus back, the list takes it.
      requestAnimationFrame(() => useQuickAdd.getState().show(mode));
    };
    items.push({ label: "Add a node after…", keys: "Tab", run: fromThis("add"), testId: "menu-add-after" });
    items.push({ label: "Connect to…", keys: "C", run: fromThis("connect"), testId: "menu-connect-to" });
    items.push({ label: "Duplicate", keys: "Ctrl+D", run: () => doc.duplicateSelection(), testId: "menu-duplicate" });
    items.push({ label: "Copy", keys: "Ctrl+C", run: () => doc.copySelection(), testId: "menu-copy" });
    items.push({ label: "Delete", keys: "Del", run: deleteSelection, testId: "menu-delete" });
    items.push({ label: "Run from here", note: "last run upstream", run: () => void runControl.runFrom(request.id), testId: "menu-run-from" });
  } else if (request.kind === "edge") {
    items.push({ label: "Delete edge", keys: "Del", run: deleteSelection, testId: "menu-delete" });
  } else {
    const pickerOnly = Boolean(request.kind === "pane" && request.from);
    for (const t of types.filter((t) => !pickerOnly || t.hasInput))
      items.push({ label: pickerOnly ? t.label : `Add ${t.label.toLowerCase()} here`, run: () => addHere(t.type), testId: `menu-add-${t.type}`, type: t.type });
    if (!pickerOnly) {
      if (clipboard?.nodes.length) items.push({ label: "Paste", keys: "Ctrl+V", run: () => doc.paste(), testId: "menu-paste" });
      items.push({ label: "Layout", keys: "Ctrl+L", run: () => void useView.getState().layout(), testId: "menu-layout" });
      items.push({ label: "Fit view", keys: "Shift+1", run: () => useView.getState().requestView("fit"), testId: "menu-fit" });
    }
  }

  return { items, act, title: request.kind === "pane" && request.from ? `Add a node after ${nodeName(request.from.node)}` : null };
}

type Item = ReturnType<typeof useItems>["items"][number];

function Label({ item }: { item: Item }) {
  return (
    <>
      <span className="menu-item-label">
        {item.type && <NodeIcon type={item.type} size={15} />}
        {item.label}
      </span>
      {item.keys && <kbd>{item.keys}</kbd>}
      {item.note && <span className="dim">{item.note}</span>}
    </>
  );
}

/** The node picker where a connection was dropped on empty canvas: a menu anchored at the point of release. */
export function CanvasMenu({ request, onClose }: { request: MenuRequest; onClose: () => void }) {
  const { items, act, title } = useItems(request, onClose);
  return (
    <Menu.Root open onOpenChange={(open) => !open && onClose()} modal={false}>
      <Menu.Trigger asChild>
        <span className="menu-anchor" style={{ left: request.clientX, top: request.clientY }} aria-hidden />
      </Menu.Trigger>
      <Menu.Portal>
        <Menu.Content className="menu-content" data-testid="canvas-menu" align="start" sideOffset={2} collisionPadding={8}>
          {title && <Menu.Label className="menu-label">{title}</Menu.Label>}
          {items.map((i) => (
            <Menu.Item key={i.testId} className="menu-item" data-testid={i.testId} onSelect={act(i.run)}>
              <Label item={i} />
            </Menu.Item>
          ))}
        </Menu.Content>
      </Menu.Portal>
    </Menu.Root>
  );
}

function ContextItems({ request, onClose }: { request: MenuRequest; onClose: () => void }) {
  const { items, act } = useItems(request, onClose);
  return (
    <ContextMenu.Portal>
      <ContextMenu.Content className="menu-content" data-testid="canvas-menu" collisionPadding={8}>
        {items.map((i) => (
          <ContextMenu.Item key={i.testId} className="menu-item" data-testid={i.testId} onSelect={act(i.run)}>
            <Label item={i} />
          </ContextMenu.Item>
        ))}
      </ContextMenu.Content>
    </ContextMenu.Portal>
  );
}

/**
 * The canvas with its right-click menu for nodes and edges: what was right-clicked is set as `request` by the canvas's
 * own handlers as the event passes, and Radix opens the menu at the pointer. (The pane's menu is `CanvasMenu`.)
 */
export function CanvasContextMenu({ request, onClose, children }: { request: MenuRequest | null; onClose: () => void; children: ReactNode }) {
  return (
    <ContextMenu.Root onOpenChange={(open) => !open && onClose()} modal={false}>
      <ContextMenu.Trigger asChild>{children}</ContextMenu.Trigger>
      {request && <ContextItems request={request} onClose={onClose} />}
    </ContextMenu.Root>
  );
}
