//! Switchyard's run: what a run is made of and the executor that makes it. The run's vocabulary (`result`, `events`,
//! `record`, `journal`, `usage`), keeping and delivering its events (`log`), the model interface (`model`) with the
//! answers file and recorded calls over it (`answers`, `recorded`), code steps (`code`), MCP tools (`mcp`), and the
//! executor (`run`). It knows nothing of where runs are kept, which providers exist or who asked for the run: the
//! engine (`switchyard-engine`) puts those together and re-exports these modules under the same names.
//! `ARCHITECTURE.md` at the repository root says which layer each module is.

#[macro_use(message_error)]
extern crate switchyard_document;

// The document, under the names the run's modules know it by (`crate::document`, `crate::template`).
pub use switchyard_document::{document, format, graph, language, node_types, schema, template, validate};

pub mod answers;
pub mod code;
pub mod events;
pub mod files;
pub mod journal;
pub mod log;
pub mod mcp;
pub mod model;
pub mod net;
pub mod record;
pub mod recorded;
pub mod result;
pub mod run;
pub mod usage;

pub use document::{Edge, Node, NodeType, Workflow};
pub use result::{NodeResult, NodeStatus, RunResult, RunStatus};
