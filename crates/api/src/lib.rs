//! The app's commands, each written once: a plain async function over a [`Host`] (what differs between the desktop
//! app and the server) and typed parameters, returning the shapes of `engine/src/views.rs` or a [`CommandError`].
//! One list (`for_each_command!`, `list.rs`) names them all; the desktop's Tauri commands (and so the TypeScript
//! bindings), the server's `POST /api/commands/NAME` dispatch and the typed client of a server ([`client`]) are
//! generated from it.
//!
//! Invariants:
//! - This crate knows nothing of Tauri or HTTP: a channel is an [`Events`] sink, a host's refusal a `CommandError`.
//! - A command's name appears once, in the list; every shell reaches a command through what the list generates.
//! - A host that lacks what a command needs ([`Needs`]) refuses it with `NOT_ON_SERVER`, saying where to do it.

pub mod client;
mod commands;
mod error;
mod host;
mod list;
mod types;

pub use commands::*;
pub use error::CommandError;
pub use host::{Events, Host, Needs, Turns};
pub use list::{table, COMMANDS};
pub use types::{EvalCaseView, EvalSuiteView, ForkArgs, Prefs, RunArgs, SavedCase, SettingsState, THEMES};

// What the list's types are named through (`$crate::views::Opened`, …), wherever it is expanded.
pub use switchyard_engine::code::consent;
pub use switchyard_engine::{eval, events, mcp, node_types, providers, store, validate, views, Workflow};
