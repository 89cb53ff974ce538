// Find (Ctrl+K, Ctrl+F): a command palette with live matches — the workflow's nodes by name, id, type and prompt
// text, and the app's commands (the shortcut table, so every command listed is one that works). cmdk does the
// filtering, keyboard navigation and focus; Radix Dialog (through cmdk) traps focus and closes on Escape.
import { useMemo, useState } from "react";
import { Command } from "cmdk";
import { useReactFlow } from "@xyflow/react";
import type { Node } from "../types";
import { nodeTypeSpec } from "../model/nodeTypes";
import { SHORTCUTS } from "../shortcuts";
import { useDocument } from "../store/document";
import { useLayoutPrefs } from "../store/layoutPrefs";
import { useDialogs } from "../store/dialogs";
import { NodeIcon } from "./NodeIcon";
import { onServer } from "../transport";

/**
 * Whether `text` matches what was typed: every word typed appears in it (case does not matter). Plain substrings,
 * not fuzzy matching: "gath" lists the nodes that say "gath", not every node with a g, an a, a t and an h.
 */
export function matches(text: string, query: string): boolean {
  const hay = text.toLowerCase();
  return query.toLowerCase().split(/\s+/).filter(Boolean).every((w) => hay.includes(w));
}

/** Most telling first: a name or id starting with the query, then one containing it, then the rest. */
function rank(n: Node, query: string): number {
  const q = query.toLowerCase().trim();
  const names = [n.name ?? "", n.id].map((x) => x.toLowerCase());
  return names.some((x) => x.startsWith(q)) ? 0 : names.some((x) => x.includes(q)) ? 1 : 2;
}

/** What a node is searched by: its name, id, type and the text of its prompts, message and conditions. */
export function nodeSearchText(n: Node): string {
  return [n.name, n.id, n.type, nodeTypeSpec(n.type)?.label, n.description, n.system_prompt, n.user_prompt, n.message, n.code, ...(n.conditions ?? []).map((c) => c.value)]
    .filter(Boolean)
    .join(" ");
}

const EXTRA_COMMANDS: { does: string; run: () => void; keys?: string; desktop?: true }[] = [
  { does: "show or hide the inspector", run: () => useLayoutPrefs.getState().toggle("inspector") },
  { does: "show or hide the node palette", run: () => useLayoutPrefs.getState().toggle("palette") },
  { does: "show or hide the bottom panel", run: () => useLayoutPrefs.getState().toggle("bottom") },
  { does: "open Settings", run: () => useDialogs.getState().setDialog("settings", true), desktop: true },
  { does: "run history", run: () => (useLayoutPrefs.getState().setPanel("history"), useLayoutPrefs.getState().openBottom()) },
];

export function CommandPalette() {
  const flow = useReactFlow();
  const nodes = useDocument((d) => d.workflow.nodes);
  const [query, setQuery] = useState("");
  const found = useMemo(() => {
    const hits = query.trim() ? nodes.filter((n) => matches(nodeSearchText(n), query)) : nodes;
    return [...hits].sort((a, b) => rank(a, query) - rank(b, query)).slice(0, 200);
  }, [nodes, query]);
  const close = () => useDialogs.getState().setDialog("find", false);
  // In a browser, what only the desktop app can do (its files, its Settings) is not offered.
  const commands = useMemo(
    () => [...SHORTCUTS.filter((s) => !["Escape", "Ctrl+F", "Ctrl+K", "Delete / Backspace", "Tab"].includes(s.keys)).map((s) => ({ does: s.does, run: s.run, keys: s.keys, desktop: s.desktop })), ...EXTRA_COMMANDS].filter((c) => !(c.desktop && onServer())),
    [],
  );
  const shownCommands = commands.filter((c) => matches(c.does, query));
  const reveal = (n: Node) => {
    close();
    useDocument.getState().select({ nodes: [n.id], edges: [] });
    flow.setCenter((n.position?.x ?? 0) + 110, (n.position?.y ?? 0) + 45, { zoom: Math.max(flow.getZoom(), 0.9), duration: 250 });
  };
  return (
    <Command.Dialog open onOpenChange={(o) => !o && close()} label="Find a node or a command" className="palette-dialog" overlayClassName="dialog-overlay" data-testid="command-palette" loop shouldFilter={false}>
      <Command.Input value={query} onValueChange={setQuery} placeholder="Find a node by name, id, type or prompt text — or a command" data-testid="find" autoFocus />
      <Command.List className="palette-list" data-testid="find-results">
        <Command.Empty className="palette-empty">Nothing matches.</Command.Empty>
        {found.length > 0 && (
        <Command.Group heading="Nodes">
          {found.map((n) => (
            <Command.Item key={n.id} value={`node ${n.id}`} onSelect={() => reveal(n)} className="palette-item" data-testid={`find-node-${n.id}`}>
              <NodeIcon type={n.type} size={15} />
              <span className="palette-name">{n.name || n.id}</span>
              <span className="dim">{n.name ? n.id : nodeTypeSpec(n.type)?.label}</span>
            </Command.Item>
          ))}
        </Command.Group>
        )}
        {shownCommands.length > 0 && (
        <Command.Group heading="Commands">
          {shownCommands.map((c) => (
            <Command.Item key={c.does} value={`command ${c.does}`} onSelect={() => (close(), c.run())} className="palette-item">
              <span className="palette-name">{c.does[0].toUpperCase() + c.does.slice(1)}</span>
              {c.keys && <kbd>{c.keys}</kbd>}
            </Command.Item>
          ))}
        </Command.Group>
        )}
      </Command.List>
    </Command.Dialog>
  );
}
