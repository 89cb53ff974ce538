//! The window's own preferences (recent files, theme), kept as JSON beside the run store in Switchyard's data
//! directory (`$SWITCHYARD_HOME/ui-prefs.json`, else `$XDG_DATA_HOME/switchyard/…`, else `~/.local/share/…`). They
//! are a convenience: a missing or corrupt file is the defaults, never an error that stops the window.

use std::path::{Path, PathBuf};

use switchyard_api::CommandError;
pub use switchyard_api::{Prefs, THEMES};
use switchyard_engine::{files, store};

/// `ui-prefs.json` in the data directory.
pub fn path() -> PathBuf {
    store::data_dir().join("ui-prefs.json")
}

/// The preferences in `path`; the defaults for whatever is missing, unreadable or not understood.
pub fn load(path: &Path) -> Prefs {
    let mut prefs: Prefs =
        std::fs::read(path).ok().and_then(|bytes| serde_json::from_slice(&bytes).ok()).unwrap_or_default();
    if !THEMES.contains(&prefs.theme.as_str()) {
        prefs.theme = Prefs::default().theme;
    }
    prefs
}

/// Writes the preferences atomically; refuses a theme the window does not have.
pub fn save(path: &Path, prefs: &Prefs) -> Result<(), CommandError> {
    if !THEMES.contains(&prefs.theme.as_str()) {
        return Err(CommandError::new(
            "INVALID_THEME",
            format!("theme `{}` is not one of {}", prefs.theme, THEMES.join(", ")),
        ));
    }
    let text = serde_json::to_string_pretty(prefs).expect("preferences serialize");
    files::write_atomically(path, text.as_bytes())
        .map_err(|e| CommandError::new("PREFS_UNWRITABLE", format!("cannot write {}: {e}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::Scratch;

    fn prefs(theme: &str, recent: &[&str]) -> Prefs {
        Prefs { recent_files: recent.iter().map(|s| s.to_string()).collect(), theme: theme.into() }
    }

    #[test]
    fn saved_preferences_load_back_as_camel_case_json() {
        let dir = Scratch::new();
        let path = dir.path().join("data/ui-prefs.json");
        let saved = prefs("dark", &["/w/a.yaml", "/w/ü b.yaml"]);
        save(&path, &saved).unwrap();
        assert_eq!(load(&path), saved);
        let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(json["recentFiles"][0], "/w/a.yaml");
        assert_eq!(std::fs::read_dir(path.parent().unwrap()).unwrap().count(), 1, "no temporary file left");
    }

    #[test]
    fn a_missing_or_corrupt_file_is_the_defaults() {
        let dir = Scratch::new();
        let path = dir.path().join("ui-prefs.json");
        assert_eq!(load(&path), Prefs::default());
        for corrupt in ["{not json", "[]", "{\"recentFiles\": 3}", ""] {
            std::fs::write(&path, corrupt).unwrap();
            assert_eq!(load(&path), Prefs::default(), "{corrupt:?}");
        }
        std::fs::write(&path, "{\"theme\": \"neon\", \"recentFiles\": [\"/a\"]}").unwrap();
        assert_eq!(load(&path), prefs("light", &["/a"]), "an unknown theme falls back, the rest is kept");
        std::fs::write(&path, "{\"theme\": \"dark\"}").unwrap();
        assert_eq!(load(&path), prefs("dark", &[]), "missing fields are the defaults");
    }

    #[test]
    fn saving_refuses_an_unknown_theme_and_reports_an_unwritable_place() {
        let dir = Scratch::new();
        let path = dir.path().join("ui-prefs.json");
        let err = save(&path, &prefs("neon", &[])).unwrap_err();
        assert_eq!(err.code, "INVALID_THEME");
        assert!(!path.exists());
        std::fs::write(dir.path().join("file"), "").unwrap();
        let err = save(&dir.path().join("file/ui-prefs.json"), &Prefs::default()).unwrap_err();
        assert_eq!(err.code, "PREFS_UNWRITABLE");
        assert!(err.message.contains("ui-prefs.json"), "{}", err.message);
    }

    #[test]
    fn preferences_live_beside_the_run_store() {
        assert_eq!(path().parent(), store::default_path().parent());
    }
}
