//! Switchyard's engine: the document model, file formats, validation, execution, events and models. It knows
//! nothing of windows or terminals; the desktop app and the `switchyard` command line are thin shells over it.
//! `ARCHITECTURE.md` at the repository root maps SEMANTICS.md onto these modules.

/// An error that is one sentence for a person, typed by where it comes from (`TemplateError`, `RebuildError`, …) so a
/// function says which failures it has; it converts from and to the message, so code that adds context keeps working.
macro_rules! message_error {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
        #[error("{0}")]
        pub struct $name(pub String);

        impl From<String> for $name {
            fn from(message: String) -> $name {
                $name(message)
            }
        }

        impl From<&str> for $name {
            fn from(message: &str) -> $name {
                $name(message.to_string())
            }
        }

        impl From<$name> for String {
            fn from(e: $name) -> String {
                e.0
            }
        }

        /// The message, to read as text.
        impl std::ops::Deref for $name {
            type Target = str;
            fn deref(&self) -> &str {
                &self.0
            }
        }
    };
}

pub mod answers;
pub mod code;
pub mod document;
pub mod eval;
pub mod events;
pub mod files;
pub mod format;
pub mod graph;
pub mod journal;
pub mod log;
pub mod mcp;
pub mod model;
pub mod net;
pub mod node_types;
pub mod providers;
pub mod record;
pub mod recorded;
pub mod remote;
pub mod result;
pub mod run;
pub mod schema;
pub mod session;
pub mod store;
pub mod template;
pub mod usage;
pub mod validate;
pub mod views;
#[cfg(feature = "postgres")]
pub mod worker;
pub mod workflow_tool;

pub use document::{Edge, Node, NodeType, Workflow};
pub use result::{NodeResult, NodeStatus, RunResult, RunStatus};
