// The editor's core loop from the keyboard. Tab (as in n8n) or A opens a list of node types (cmdk): the one chosen is
// added after the selected node — to its right, connected from its default output — selected, and the focus goes to
// its first inspector field (Escape gives the canvas its keys back, and Tab adds the next). With nothing selected it is
// added in the visible canvas. C lists the nodes the selected one may lead to: the one chosen is connected from its
// default output. cmdk does the filtering and the arrow keys; Radix Dialog (through cmdk) traps focus and closes on Escape.
import { useMemo, useState } from "react";
import { Command } from "cmdk";
import { useReactFlow } from "@xyflow/react";
import type { Edge, Node, NodeType } from "../types";
import { connectionProblem, hasInput, NODE_HEIGHT, NODE_WIDTH, sourceHandles } from "../model/handles";
import { useNodeTypes } from "../model/nodeTypes";
import { freeSpot } from "../model/placement";
import { nodeName, useDocument } from "../store/document";
import { useMessages } from "../store/messages";
import { useQuickAdd } from "../store/quickAdd";
import { NodeIcon } from "./NodeIcon";
import { matches } from "./CommandPalette";
import { revealWhenLaidOut } from "./reveal";

/** The handle the next node leaves `node` by: its first source handle that is neither "on failure" nor a subagent link. */
export function defaultOutput(node: Node): string | null {
  return sourceHandles(node).find((h) => h.kind !== "error" && h.kind !== "subagent")?.id ?? null;
}

/** Space left between a node and the one added after it. */
const AFTER_GAP = 80;

/** Where a node added after `node` goes: to its right, level with it, covering no other node. */
export function spotAfter(nodes: Node[], node: Node): { x: number; y: number } {
  return freeSpot(nodes, { x: (node.position?.x ?? 0) + NODE_WIDTH + AFTER_GAP, y: node.position?.y ?? 0 });
}

/**
 * Once the inspector shows node `id` (it opens for the selection), the focus goes to its first field; when it has
 * none to offer (the Last run tab), to the node's card on the canvas.
 */
function focusWhenInspected(id: string) {
  let frames = 0;
  const tryFocus = () => {
    const inspector = document.querySelector<HTMLElement>('[data-testid="inspector"]');
    const shows = inspector?.querySelector(".inspector-title")?.textContent?.includes(id);
    const field = shows && !inspector!.closest("[inert]") ? inspector!.querySelector<HTMLElement>('[role="tabpanel"] :is(input, textarea, select):not([disabled])') : null;
    if (field) return field.focus();
    if (++frames < 60) return requestAnimationFrame(tryFocus);
    document.querySelector<HTMLElement>(`.react-flow__node[data-id="${CSS.escape(id)}"]`)?.focus();
  };
  // After the list has closed and given the focus back to where it was.
  requestAnimationFrame(tryFocus);
}

export function QuickAdd() {
  const open = useQuickAdd((s) => s.open);
  if (!open) return null;
  return open.mode === "add" ? <AddList from={open.from} /> : <ConnectList from={open.from!} />;
}

function AddList({ from }: { from: string | null }) {
  const flow = useReactFlow();
  const types = useNodeTypes((s) => s.list);
  const [query, setQuery] = useState("");
  const source = useDocument((d) => (from ? d.workflow.nodes.find((n) => n.id === from) : undefined));
  const handle = source ? defaultOutput(source) : null;
  // After a node, only types something can lead into.
  const shown = types.filter((t) => (!handle || t.hasInput) && matches(`${t.label} ${t.type} ${t.description}`, query));
  const close = () => useQuickAdd.getState().close();
  const add = (type: NodeType) => {
    close();
    const doc = useDocument.getState();
    const nodes = doc.workflow.nodes;
    const box = document.querySelector(".react-flow")?.getBoundingClientRect();
    const topLeft = box ? flow.screenToFlowPosition({ x: box.left, y: box.top }) : { x: 0, y: 0 };
    const bottomRight = box ? flow.screenToFlowPosition({ x: box.right, y: box.bottom }) : { x: 0, y: 0 };
    const at = source ? spotAfter(nodes, source) : freeSpot(nodes, { x: (topLeft.x + bottomRight.x - NODE_WIDTH) / 2, y: (topLeft.y + bottomRight.y - NODE_HEIGHT) / 2 });
    const id = doc.addNode(type, at, source && handle ? { node: source.id, handle } : undefined);
    // Off screen, the canvas does not draw the new node: the view goes to it first, then keeps it clear of the panes.
    const inView = at.x >= topLeft.x && at.y >= topLeft.y && at.x + NODE_WIDTH <= bottomRight.x && at.y + NODE_HEIGHT <= bottomRight.y;
    if (!inView) void flow.setCenter(at.x + NODE_WIDTH / 2, at.y + NODE_HEIGHT / 2, { zoom: flow.getZoom(), duration: 200 });
    else revealWhenLaidOut(flow, id);
    focusWhenInspected(id);
  };
  const title = source ? (handle ? `Add a node after ${nodeName(source.id)}` : `Add a node (${nodeName(source.id)} leads nowhere: it is not connected)`) : "Add a node";
  return (
    <Command.Dialog open onOpenChange={(o) => !o && close()} label={title} className="palette-dialog" overlayClassName="dialog-overlay" data-testid="quick-add" loop shouldFilter={false}>
      <Command.Input value={query} onValueChange={setQuery} placeholder={`${title}: type its kind (agent, tool, if…), Enter to add`} data-testid="quick-add-input" autoFocus />
      <Command.List className="palette-list">
        <Command.Empty className="palette-empty">No node type matches.</Command.Empty>
        <Command.Group heading={title}>
          {shown.map((t) => (
            <Command.Item key={t.type} value={t.type} onSelect={() => add(t.type)} className="palette-item" data-testid={`quick-add-${t.type}`} title={t.description}>
              <NodeIcon type={t.type} size={15} />
              <span className="palette-name">{t.label}</span>
              <span className="dim">{t.type}</span>
            </Command.Item>
          ))}
        </Command.Group>
      </Command.List>
    </Command.Dialog>
  );
}

function ConnectList({ from }: { from: string }) {
  const workflow = useDocument((d) => d.workflow);
  const [query, setQuery] = useState("");
  const source = workflow.nodes.find((n) => n.id === from);
  const handle = source ? defaultOutput(source) : null;
  const close = () => useQuickAdd.getState().close();
  // Every other node that can take an input, each with why it cannot be connected when it cannot.
  const targets = useMemo(
    () =>
      workflow.nodes
        .filter((n) => n.id !== from && hasInput(n.type))
        .map((n) => ({ node: n, problem: handle ? connectionProblem(workflow.nodes, workflow.edges, from, handle, n.id) : `${nodeName(from)} has no output to connect` })),
    [workflow, from, handle],
  );
  const shown = targets.filter((t) => matches(`${t.node.name ?? ""} ${t.node.id} ${t.node.type}`, query));
  const connect = (target: string) => {
    close();
    if (!handle) return;
    useDocument.getState().connect({ from, to: target, ...(handle !== "output" ? { handle } : {}) } as Edge);
    useMessages.getState().info(`Connected ${nodeName(from)} → ${nodeName(target)}`);
  };
  const title = `Connect ${nodeName(from)} to`;
  return (
    <Command.Dialog open onOpenChange={(o) => !o && close()} label={title} className="palette-dialog" overlayClassName="dialog-overlay" data-testid="quick-connect" loop shouldFilter={false}>
      <Command.Input value={query} onValueChange={setQuery} placeholder={`${title}… (type a name, Enter to connect)`} data-testid="quick-connect-input" autoFocus />
      <Command.List className="palette-list">
        <Command.Empty className="palette-empty">No node matches.</Command.Empty>
        <Command.Group heading={title}>
          {shown.map(({ node, problem }) => (
            <Command.Item key={node.id} value={node.id} disabled={Boolean(problem)} onSelect={() => connect(node.id)} className="palette-item" data-testid={`quick-connect-${node.id}`} title={problem ?? undefined}>
              <NodeIcon type={node.type} size={15} />
              <span className="palette-name">{node.name || node.id}</span>
              <span className="dim">{problem ?? (node.name ? node.id : node.type)}</span>
            </Command.Item>
          ))}
        </Command.Group>
      </Command.List>
    </Command.Dialog>
  );
}
