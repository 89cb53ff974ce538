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

/// The preferences in `path`; the defaults for whatever is missing, unreadable or not understood, and your name
/// the OS user's ([`os_user`]) when none is kept.
pub fn load(path: &Path) -> Prefs {
    let mut prefs: Prefs =
        std::fs::read(path).ok().and_then(|bytes| serde_json::from_slice(&bytes).ok()).unwrap_or_default();
    if !THEMES.contains(&prefs.theme.as_str()) {
        prefs.theme = Prefs::default().theme;
    }
    prefs.your_name = your_name(&prefs);
    prefs
}

/// Who a decision or a cancellation made in this app names: your name as kept, else the OS user's; none when neither
/// is known (or the kept one is not a name [`save`] would take).
pub fn your_name(prefs: &Prefs) -> Option<String> {
    let kept = prefs.your_name.as_deref().map(str::trim).filter(|n| !n.is_empty() && name_problem(n).is_none());
    kept.map(str::to_string).or_else(os_user)
}

/// The OS user's name (`USER`, else `USERNAME` on Windows, else `LOGNAME`).
pub fn os_user() -> Option<String> {
    ["USER", "USERNAME", "LOGNAME"]
        .iter()
        .filter_map(|v| std::env::var(v).ok())
        .map(|n| n.trim().to_string())
        .find(|n| !n.is_empty() && name_problem(n).is_none())
}

/// Why `name` cannot be your name: too long, or holding a control character (it is shown in History and logs).
fn name_problem(name: &str) -> Option<&'static str> {
    if name.chars().count() > 64 {
        Some("at most 64 characters")
    } else if name.chars().any(char::is_control) {
        Some("no control characters (tabs, line breaks)")
    } else {
        None
    }
}

/// Writes the preferences atomically; refuses a theme the window does not have, and a name that is not one.
pub fn save(path: &Path, prefs: &Prefs) -> Result<(), CommandError> {
    if !THEMES.contains(&prefs.theme.as_str()) {
        return Err(CommandError::new(
            "INVALID_THEME",
            format!("theme `{}` is not one of {}", prefs.theme, THEMES.join(", ")),
        ));
    }
    if let Some(why) = prefs.your_name.as_deref().map(str::trim).and_then(name_problem) {
        return Err(CommandError::new("INVALID_YOUR_NAME", format!("your name: {why}")));
    }
    let mut prefs = prefs.clone();
    prefs.your_name = prefs.your_name.map(|n| n.trim().to_string()).filter(|n| !n.is_empty());
    let prefs = &prefs;
    let text = serde_json::to_string_pretty(prefs).expect("preferences serialize");
    files::write_atomically(path, text.as_bytes())
        .map_err(|e| CommandError::new("PREFS_UNWRITABLE", format!("cannot write {}: {e}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::Scratch;

    fn prefs(theme: &str, recent: &[&str]) -> Prefs {
        // As they load back: with the OS user's name when none is kept.
        Prefs {
            recent_files: recent.iter().map(|s| s.to_string()).collect(),
            theme: theme.into(),
            your_name: os_user(),
        }
    }

    #[test]
    fn your_name_is_kept_trimmed_and_is_the_os_users_when_none_is_kept() {
        let dir = Scratch::new();
        let path = dir.path().join("ui-prefs.json");
        assert_eq!(load(&path).your_name, os_user(), "nothing kept: the OS user's name");
        let named = Prefs { your_name: Some("  Alice Martin ".into()), ..Prefs::default() };
        save(&path, &named).unwrap();
        assert_eq!(load(&path).your_name.as_deref(), Some("Alice Martin"));
        let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(json["yourName"], "Alice Martin");
        save(&path, &Prefs { your_name: Some("   ".into()), ..Prefs::default() }).unwrap();
        assert_eq!(load(&path).your_name, os_user(), "a blank name is none: the OS user's again");
    }

    #[test]
    fn a_name_too_long_or_holding_a_line_break_is_refused_and_nothing_is_written() {
        let dir = Scratch::new();
        let path = dir.path().join("ui-prefs.json");
        for bad in ["a\nb", &"x".repeat(65)] {
            let err = save(&path, &Prefs { your_name: Some(bad.into()), ..Prefs::default() }).unwrap_err();
            assert_eq!(err.code, "INVALID_YOUR_NAME", "{bad:?}");
            assert!(!path.exists());
        }
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
        let defaults = Prefs { your_name: os_user(), ..Prefs::default() };
        assert_eq!(load(&path), defaults);
        for corrupt in ["{not json", "[]", "{\"recentFiles\": 3}", ""] {
            std::fs::write(&path, corrupt).unwrap();
            assert_eq!(load(&path), defaults, "{corrupt:?}");
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
