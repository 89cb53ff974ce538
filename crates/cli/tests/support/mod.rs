//! What the CLI's test binaries share: reading a command's `--json` output, and writing a file for it.

use std::path::Path;
use std::process::Output;

use serde_json::Value;

/// The exit code and the JSON object a command printed on stdout (the test fails, showing both streams, when it is
/// not JSON).
pub fn json_output(args: &[&str], out: Output) -> (i32, Value) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let value = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!("{args:?}: stdout is not JSON ({e}): {stdout}\nstderr: {}", String::from_utf8_lossy(&out.stderr))
    });
    (out.status.code().unwrap(), value)
}

/// Writes `text` to `name` in `dir` and returns the file's path.
pub fn write_file(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_string_lossy().into_owned()
}
