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
