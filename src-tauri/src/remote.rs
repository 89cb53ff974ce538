//! A server's runs beside this computer's: the server the settings name (`server:`, docs/server.md), and which runs
//! the window listed from it, so that opening, following, deciding or cancelling one of those goes to that server
//! (through the engine's `remote` client) and every other run stays on this computer's store.

use std::collections::HashMap;
use std::sync::Mutex;

use switchyard_api::CommandError;
use switchyard_engine::providers::Settings;
use switchyard_engine::remote::Remote;

/// The runs listed from a server, by id.
#[derive(Default)]
pub struct Remotes {
    runs: Mutex<HashMap<String, Remote>>,
}

impl Remotes {
    /// The server run `id` was listed from, if it was.
    pub fn of(&self, id: &str) -> Option<Remote> {
        self.runs.lock().unwrap().get(id).cloned()
    }

    /// Remembers that these runs are `remote`'s.
    pub fn listed<'a>(&self, remote: &Remote, ids: impl IntoIterator<Item = &'a str>) {
        let mut runs = self.runs.lock().unwrap();
        for id in ids {
            runs.insert(id.to_string(), remote.clone());
        }
    }
}

/// The server the settings name, or none.
pub fn configured() -> Result<Option<Remote>, CommandError> {
    let settings = Settings::load(&Settings::default_path())?;
    settings.server.as_ref().map(|s| Remote::new(s).map_err(CommandError::from)).transpose()
}
