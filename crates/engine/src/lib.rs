//! Switchyard's engine: the document model, file formats, validation, execution, events and models. It knows
//! nothing of windows or terminals; the desktop app and the `switchyard` command line are thin shells over it.
//! `ARCHITECTURE.md` at the repository root maps SEMANTICS.md onto these modules.

pub mod code;
pub mod document;
pub mod events;
pub mod files;
pub mod format;
pub mod graph;
pub mod log;
pub mod mcp;
pub mod model;
pub mod net;
pub mod node_types;
pub mod providers;
pub mod record;
pub mod result;
pub mod run;
pub mod schema;
pub mod script;
pub mod session;
pub mod store;
pub mod template;
pub mod validate;

pub use document::{Edge, Node, NodeType, Workflow};
pub use result::{NodeResult, NodeStatus, RunResult, RunStatus};
