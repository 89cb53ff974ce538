//! Switchyard's workflow document: the model (`document`), the files it is read from and written to (`format`: our
//! canonical YAML and the importers of AgentFlow, SWEny, TEA and OpenExpertise), the node-type catalogue
//! (`node_types`), the graph over it (`graph`), templates, and validation. It knows nothing of running a workflow:
//! the engine (`switchyard-engine`) runs what this crate reads, and re-exports its modules under the same names.
//! `ARCHITECTURE.md` at the repository root says which layer each module is.

/// An error that is one sentence for a person, typed by where it comes from (`TemplateError`, `RebuildError`, …) so a
/// function says which failures it has; it converts from and to the message, so code that adds context keeps working.
#[macro_export]
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

pub mod document;
pub mod format;
pub mod graph;
pub mod language;
pub mod node_types;
pub mod schema;
pub mod template;
pub mod validate;

pub use document::{Edge, Node, NodeType, Workflow};
