//! The error every command that can explain itself returns: a stable code, a message, and for settings the problems
//! by field, so the window can mark each one where it is edited. The server answers it as `{code, message}` (with the
//! problems), with an HTTP status it chooses by the code.

use serde::Serialize;
use specta::Type;
use switchyard_engine::providers::{SettingsError, SettingsProblem};
use switchyard_engine::remote::RemoteError;

use crate::host::Needs;

/// An error as the window receives it.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
pub struct CommandError {
    /// Stable SCREAMING_SNAKE code, e.g. `SETTINGS_INVALID`.
    pub code: String,
    /// What went wrong, naming the file (and line) when there is one.
    pub message: String,
    /// What is wrong with settings, by field; empty when not relevant.
    pub problems: Vec<SettingsProblem>,
}

impl CommandError {
    pub fn new(code: &str, message: impl Into<String>) -> CommandError {
        CommandError { code: code.into(), message: message.into(), problems: Vec::new() }
    }

    /// `NOT_ON_SERVER`: what a host does not have (`command`, when it is known, is named), and where to do it.
    pub fn not_on_server(needs: Needs, command: Option<&str>) -> CommandError {
        let (what, where_) = match needs {
            Needs::Files => ("Saving", "the server's workflows are files in its folder: edit them there"),
            Needs::Settings => ("Settings", "the server's workers read their own settings file"),
            Needs::RunsHere => (
                "Resuming and replaying",
                "the server's workers carry runs on by themselves: open the run to follow it",
            ),
            Needs::Evals => ("Evaluations", "run them with `switchyard eval` or in the desktop app"),
            Needs::Any | Needs::Desktop => ("This", "the desktop app has it"),
        };
        let named = command.map(|c| format!(" (`{c}`)")).unwrap_or_default();
        CommandError::new("NOT_ON_SERVER", format!("{what} is not available in a browser{named}: {where_}"))
    }
}

impl From<RemoteError> for CommandError {
    fn from(e: RemoteError) -> CommandError {
        CommandError::new(e.code(), e.to_string())
    }
}

impl From<SettingsError> for CommandError {
    fn from(e: SettingsError) -> CommandError {
        CommandError { code: e.code().into(), message: e.to_string(), problems: e.problems().to_vec() }
    }
}

impl From<switchyard_engine::format::LoadError> for CommandError {
    fn from(e: switchyard_engine::format::LoadError) -> CommandError {
        CommandError::new(e.code, e.to_string())
    }
}

impl From<switchyard_engine::store::StoreError> for CommandError {
    fn from(e: switchyard_engine::store::StoreError) -> CommandError {
        CommandError::new(e.code(), e.to_string())
    }
}

impl From<switchyard_engine::session::SessionError> for CommandError {
    fn from(e: switchyard_engine::session::SessionError) -> CommandError {
        CommandError::new(e.code(), e.to_string())
    }
}

impl From<switchyard_engine::eval::AddError> for CommandError {
    fn from(e: switchyard_engine::eval::AddError) -> CommandError {
        CommandError::new(e.code, e.message)
    }
}
