// The document and event types as the engine sends them (the `_Serialize` side of the generated bindings). The
// UI keeps documents in this shape and sends them back unchanged.
export type {
  AgentTools_Serialize as AgentTools,
  Condition_Serialize as Condition,
  Edge_Serialize as Edge,
  Event_Serialize as Event,
  Finding_Serialize as Finding,
  NodeResult_Serialize as NodeResult,
  Node_Serialize as Node,
  NodeType,
  Report_Serialize as Report,
  Settings_Serialize as Settings,
  ToolRequest,
  Workflow_Serialize as Workflow,
} from "./bindings";
