//! The error every command that can explain itself returns: a stable code, a message, and for settings the problems
//! by field, so the window can mark each one where it is edited.

use serde::Serialize;
use specta::Type;
use switchyard_engine::providers::{SettingsError, SettingsProblem};

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
