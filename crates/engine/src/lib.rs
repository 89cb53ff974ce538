//! Switchyard's engine: the session every front end runs workflows through, over the run stores (SQLite and
//! PostgreSQL), the model providers, evaluations and workers, with the document (`switchyard-document`) and the run
//! (`switchyard-run`) below it, re-exported here under their modules' names. It knows nothing of windows or
//! terminals; the desktop app and the `switchyard` command line are thin shells over it.
//! `ARCHITECTURE.md` at the repository root maps SEMANTICS.md onto these modules.

// `message_error!`: an error that is one sentence for a person, typed by where it comes from (defined with the
// document, the lowest layer, so every crate types its errors alike).
#[macro_use(message_error)]
extern crate switchyard_document;

// The layers below, under the names they always had here (`switchyard_engine::format`, `crate::run`, …). Each is a
// crate of its own so that Cargo, not only the architecture test, keeps it from knowing what is above it: the
// document knows nothing of running, the run nothing of where runs are kept, which providers exist or who asked.
pub use switchyard_document::{document, format, graph, node_types, schema, template, validate};
pub use switchyard_run::{
    answers, code, events, files, journal, log, mcp, model, net, record, recorded, result, run, usage,
};

pub mod eval;
pub mod providers;
pub mod remote;
pub mod session;
pub mod store;
pub mod views;
#[cfg(feature = "postgres")]
pub mod worker;
pub mod workflow_tool;

pub use document::{Edge, Node, NodeType, Workflow};
pub use result::{NodeResult, NodeStatus, RunResult, RunStatus};
