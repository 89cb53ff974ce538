//! Writing files so that a reader (or the next start, after a crash) sees the old file or the new one, never a part;
//! and which files of a folder are workflows.

use std::io::Write;
use std::path::{Path, PathBuf};

/// Replaces `path` with `bytes` through a temporary file in the same directory, renamed over it; creates the
/// directory. On failure the temporary file is removed and `path` is unchanged.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let written = (|| {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// The folder Switchyard keeps its settings and trust file in: `$SWITCHYARD_HOME`, else `$XDG_CONFIG_HOME/switchyard`,
/// else `~/.config/switchyard`.
pub fn settings_dir() -> PathBuf {
    switchyard_dir("XDG_CONFIG_HOME", ".config")
}

/// Where Switchyard keeps its data (the run store, the app's preferences): `$SWITCHYARD_HOME`, else
/// `$XDG_DATA_HOME/switchyard`, else `~/.local/share/switchyard`.
pub fn data_dir() -> PathBuf {
    switchyard_dir("XDG_DATA_HOME", ".local/share")
}

/// `$SWITCHYARD_HOME`, else `switchyard` in the XDG folder `xdg` names, else in `~/<fallback>`.
fn switchyard_dir(xdg: &str, fallback: &str) -> PathBuf {
    if let Some(home) = std::env::var_os("SWITCHYARD_HOME") {
        return PathBuf::from(home);
    }
    std::env::var_os(xdg)
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(fallback)))
        .unwrap_or_else(|| PathBuf::from("."))
        .join("switchyard")
}

/// The workflow files of a folder (not its subfolders; not answers, evaluation or recorded-calls files, nor hidden
/// ones), in name order: what a server serves and `mcp serve DIR` offers.
pub fn workflow_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            let workflow_like = [".yaml", ".yml", ".json"].iter().any(|ext| name.ends_with(ext));
            let other = [".evals.", ".answers.", ".script.", ".calls."].iter().any(|part| name.contains(part))
                || name.starts_with('.');
            workflow_like && !other
        })
        .collect();
    files.sort();
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_replaces_the_file_and_leaves_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("deep/er/file.json");
        write_atomically(&path, b"one").unwrap();
        write_atomically(&path, b"two").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "two");
        assert_eq!(std::fs::read_dir(path.parent().unwrap()).unwrap().count(), 1);
    }

    #[test]
    fn a_failed_write_leaves_the_old_file_and_no_temporary_one() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("taken");
        std::fs::create_dir(&target).unwrap();
        std::fs::write(target.join("inside"), "x").unwrap();
        assert!(write_atomically(&target, b"new").is_err(), "a non-empty directory cannot be replaced by a file");
        assert!(target.is_dir());
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, ["taken"]);
    }
}
