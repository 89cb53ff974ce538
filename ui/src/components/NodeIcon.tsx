// One icon per node type, the same on the canvas, in the palette, the command palette and the run list.
import { Bot, CircleHelp, Code2, GitBranch, Hand, Play, Workflow, type LucideIcon } from "lucide-react";
import type { NodeType } from "../types";

const ICONS: Record<string, LucideIcon> = { start: Play, agent: Bot, if: GitBranch, approval: Hand, script: Code2, workflow: Workflow };

export function NodeIcon({ type, size = 16, className }: { type: NodeType | string; size?: number; className?: string }) {
  const Icon = ICONS[type] ?? CircleHelp;
  return <Icon size={size} className={className ?? `node-icon t-${type}`} aria-hidden />;
}
