//! The languages code steps are written in, by the names files use for them.

use std::fmt;

/// A language code steps run in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Language {
    Python,
    JavaScript,
    Bash,
    Lua,
}

/// A `language` no code step can run in, with what to do about it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{name}` code steps are not supported{hint}; Switchyard runs python, javascript, bash and lua — pin this node's output or answer it from an answers file")]
pub struct UnsupportedLanguage {
    pub name: String,
    hint: &'static str,
}

impl Language {
    pub const ALL: [Language; 4] = [Language::Python, Language::JavaScript, Language::Bash, Language::Lua];

    /// Reads a node's `language` (case-insensitive; `py`, `js`, `node`, `sh` and `shell` too). A node without one is
    /// Python, as in TEA.
    pub fn parse(name: Option<&str>) -> Result<Language, UnsupportedLanguage> {
        let name = name.unwrap_or("python").trim();
        match name.to_ascii_lowercase().as_str() {
            "python" | "python3" | "py" => Ok(Language::Python),
            "javascript" | "js" | "node" | "nodejs" | "mjs" => Ok(Language::JavaScript),
            "bash" | "sh" | "shell" => Ok(Language::Bash),
            "lua" => Ok(Language::Lua),
            other => Err(UnsupportedLanguage {
                name: name.to_string(),
                hint: match other {
                    "typescript" | "ts" => " (compile the module to JavaScript, .mjs, and point the node at that)",
                    "prolog" => " (TEA's Prolog bodies need its Prolog runtime)",
                    "tea-action" => " (this TEA action has no Switchyard equivalent yet)",
                    _ => "",
                },
            }),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Language::Python => "python",
            Language::JavaScript => "javascript",
            Language::Bash => "bash",
            Language::Lua => "lua",
        }
    }

    /// The interpreter looked up on `PATH` (Lua runs inside Switchyard).
    pub fn program(self) -> &'static str {
        match self {
            Language::Python => "python3",
            Language::JavaScript => "node",
            Language::Bash => "bash",
            Language::Lua => "",
        }
    }

    /// What to install when the interpreter is missing.
    pub fn install(self) -> &'static str {
        match self {
            Language::Python => "install Python 3 (python3 on PATH, e.g. `apt install python3`) or set SWITCHYARD_PYTHON to its path",
            Language::JavaScript => "install Node.js 18 or newer (node on PATH, e.g. `apt install nodejs`) or set SWITCHYARD_NODE to its path",
            Language::Bash => "install bash (e.g. `apt install bash`) or set SWITCHYARD_BASH to its path",
            Language::Lua => "Lua is built in",
        }
    }
}

impl fmt::Display for Language {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn languages_are_read_by_their_usual_names_and_the_rest_are_refused_with_a_hint() {
        assert_eq!(Language::parse(None), Ok(Language::Python));
        assert_eq!(Language::parse(Some("JS")), Ok(Language::JavaScript));
        assert_eq!(Language::parse(Some("sh")), Ok(Language::Bash));
        assert_eq!(Language::parse(Some("lua")), Ok(Language::Lua));
        let prolog = Language::parse(Some("prolog")).unwrap_err().to_string();
        assert!(prolog.contains("`prolog` code steps are not supported") && prolog.contains("pin"), "{prolog}");
        assert!(Language::parse(Some("typescript")).unwrap_err().to_string().contains(".mjs"));
    }
}
