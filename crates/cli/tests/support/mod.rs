//! What the CLI's test binaries share: reading a command's `--json` output, writing a file for it, and a workflow
//! whose approval waits while another branch works.

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

/// Two branches: `slow`, and `quick` into the approval `check` and then `polish`; `merge` joins them. The approval
/// waits while `slow` works.
#[allow(dead_code)]
pub const BRANCHES: &str = "switchyard: 1
name: branches
nodes:
  - {id: start, type: start}
  - {id: slow, type: agent, user_prompt: Research}
  - {id: quick, type: agent, user_prompt: Draft}
  - {id: check, type: approval, message: Go on?}
  - {id: polish, type: agent, user_prompt: 'Polish {{ quick.text }}'}
  - {id: merge, type: agent, user_prompt: '{{ slow.text }} / {{ polish.text }}'}
edges:
  - {from: start, to: slow}
  - {from: start, to: quick}
  - {from: quick, to: check}
  - {from: check, to: polish, handle: approve}
  - {from: slow, to: merge}
  - {from: polish, to: merge}
";
