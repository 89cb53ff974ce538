// The node types as the engine defines them (handles, fields, labels), fetched once through the `nodeTypes`
// command. The engine is the one definition; nothing here decides what a node type has.
import { create } from "zustand";
import type { NodeType } from "../types";
import type { FieldKind, FieldSpec_Serialize as FieldSpec, HandleKind, HandleSpec, NodeTypeSpec_Serialize as NodeTypeSpec } from "../bindings";
import generated from "../generated/node-types.json";

export type { FieldKind, FieldSpec, HandleKind, HandleSpec, NodeTypeSpec };

type NodeTypesState = { specs: Record<string, NodeTypeSpec>; list: NodeTypeSpec[]; set: (specs: NodeTypeSpec[]) => void };

const byType = (specs: NodeTypeSpec[]) => Object.fromEntries(specs.map((s) => [s.type, s]));

/**
 * Starts with the copy the engine generated at build time (`ui/src/generated/node-types.json`, checked current by
 * `npm test`), and takes the running engine's answer at start-up.
 */
export const useNodeTypes = create<NodeTypesState>((set) => ({
  specs: byType(generated as NodeTypeSpec[]),
  list: generated as NodeTypeSpec[],
  set: (specs) => set({ specs: byType(specs), list: specs }),
}));

export const nodeTypeSpec = (type: NodeType): NodeTypeSpec | undefined => useNodeTypes.getState().specs[type];

/** The operators a node type's conditions may use, in the catalogue's order (a new condition takes the first). */
export const conditionOperators = (type: NodeType): string[] => nodeTypeSpec(type)?.fields.find((f) => f.kind === "conditions")?.options ?? [];

/** Whether a run begins at nodes of this type (`start`): the editor keeps a workflow's last one. */
export const isEntry = (type: NodeType | undefined): boolean => (type ? (nodeTypeSpec(type)?.entry ?? false) : false);

/** The type a run begins at (`start`, the catalogue's one `entry` type): a new workflow holds one node of it. */
export const entryType = (): NodeType => useNodeTypes.getState().list.find((s) => s.entry)!.type;

/** Whether nodes of this type ask a model (`agent`): their conversation is listed, and a run can be forked there. */
export const asksModel = (type: NodeType | undefined): boolean => (type ? (nodeTypeSpec(type)?.asksModel ?? false) : false);

/** Whether a node of this type can be a subagent (`agent`): another agent's subagent handle may link to it. */
export const canBeSubagent = (type: NodeType | undefined): boolean => (type ? (nodeTypeSpec(type)?.subagent ?? false) : false);

/** Whether nodes of this type route by their conditions (`if`: a handle per condition); their output names the branch taken. */
export const routesByConditions = (type: NodeType | undefined): boolean => (type ? (nodeTypeSpec(type)?.handles.some((h) => h.perCondition) ?? false) : false);

/** What an empty field of a node type shows, and so what the node does when the field is not set (an approval's question). */
export const fieldPlaceholder = (type: NodeType, key: string): string | null => nodeTypeSpec(type)?.fields.find((f) => f.key === key)?.placeholder ?? null;

/** The id a node of this type added in the editor is given (numbered when taken), and the fields it starts with. */
export function newNodeOf(type: NodeType): { id: string; fields: Record<string, unknown> } {
  const spec = nodeTypeSpec(type);
  return { id: spec?.newId ?? type, fields: structuredClone((spec?.newFields as Record<string, unknown> | undefined) ?? {}) };
}
