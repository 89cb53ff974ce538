// Find (Ctrl+K, Ctrl+F): a command palette with live matches — the workflow's nodes by name, id, type and prompt
// text, and the app's commands (the shortcut table, so every command listed is one that works). cmdk does the
// filtering, keyboard navigation and focus; Radix Dialog (through cmdk) traps focus and closes on Escape.
import { useMemo } from "react";
import { Command } from "cmdk";
import { useReactFlow } from "@xyflow/react";
import type { Node } from "../types";
import { nodeTypeSpec } from "../model/nodeTypes";
import { SHORTCUTS } from "../shortcuts";
import { useDocument } from "../store/document";
import { useLayoutPrefs } from "../store/layoutPrefs";
import { useSession } from "../store/session";
import { NodeIcon } from "./NodeIcon";

/** What a node is searched by: its name, id, type and the text of its prompts, message and conditions. */
export function nodeSearchText(n: Node): string {
  return [n.name, n.id, n.type, nodeTypeSpec(n.type)?.label, n.description, n.system_prompt, n.user_prompt, n.message, n.code, ...(n.conditions ?? []).map((c) => c.value)]
    .filter(Boolean)
    .join(" ");
}

const EXTRA_COMMANDS: { does: string; run: () => void; keys?: string }[] = [
  { does: "show or hide the inspector", run: () => useLayoutPrefs.getState().toggle("inspector") },
  { does: "show or hide the node palette", run: () => useLayoutPrefs.getState().toggle("palette") },
  { does: "show or hide the bottom panel", run: () => useLayoutPrefs.getState().toggle("bottom") },
  { does: "open Settings", run: () => useSession.getState().setDialog("settings", true) },
  { does: "run history", run: () => (useSession.getState().setPanel("history"), useLayoutPrefs.getState().openBottom()) },
];

export function CommandPalette() {
  const flow = useReactFlow();
  const nodes = useDocument((d) => d.workflow.nodes);
  const close = () => useSession.getState().setDialog("find", false);
  const commands = useMemo(() => [...SHORTCUTS.filter((s) => !["Escape", "Ctrl+F", "Ctrl+K", "Delete / Backspace"].includes(s.keys)).map((s) => ({ does: s.does, run: s.run, keys: s.keys })), ...EXTRA_COMMANDS], []);
  const reveal = (n: Node) => {
    close();
    useDocument.getState().select({ nodes: [n.id], edges: [] });
    flow.setCenter((n.position?.x ?? 0) + 110, (n.position?.y ?? 0) + 45, { zoom: Math.max(flow.getZoom(), 0.9), duration: 250 });
  };
  return (
    <Command.Dialog open onOpenChange={(o) => !o && close()} label="Find a node or a command" className="palette-dialog" overlayClassName="dialog-overlay" data-testid="command-palette" loop>
      <Command.Input placeholder="Find a node by name, id, type or prompt text — or a command" data-testid="find" autoFocus />
      <Command.List className="palette-list" data-testid="find-results">
        <Command.Empty className="palette-empty">Nothing matches.</Command.Empty>
        <Command.Group heading="Nodes">
          {nodes.slice(0, 2000).map((n) => (
            <Command.Item key={n.id} value={`node ${n.id}`} keywords={[nodeSearchText(n)]} onSelect={() => reveal(n)} className="palette-item" data-testid={`find-node-${n.id}`}>
              <NodeIcon type={n.type} size={15} />
              <span className="palette-name">{n.name || n.id}</span>
              <span className="dim">{n.name ? n.id : nodeTypeSpec(n.type)?.label}</span>
            </Command.Item>
          ))}
        </Command.Group>
        <Command.Group heading="Commands">
          {commands.map((c) => (
            <Command.Item key={c.does} value={`command ${c.does}`} onSelect={() => (close(), c.run())} className="palette-item">
              <span className="palette-name">{c.does[0].toUpperCase() + c.does.slice(1)}</span>
              {c.keys && <kbd>{c.keys}</kbd>}
            </Command.Item>
          ))}
        </Command.Group>
      </Command.List>
    </Command.Dialog>
  );
}
