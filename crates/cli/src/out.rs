//! Printing that ends the process quietly when the reader has gone.
//!
//! Rust ignores SIGPIPE, so a write to a pipe whose reader closed (`switchyard export FILE | head -5`) fails with
//! EPIPE, and `println!` turns that into a panic with a backtrace. We do not restore SIGPIPE's default action instead:
//! this process also writes to the pipes of its children (MCP servers, code workers), where a reader that died is an
//! error to report, not a reason for the whole process to die. So everything the CLI prints goes through here, and a
//! broken pipe ends the process at once, printing nothing, with exit status 141 (128 + SIGPIPE): what a shell reports
//! for any Unix tool killed by SIGPIPE, so `set -o pipefail` scripts see that the output was cut short rather than a
//! success. A run cut short this way is left interrupted in the run store, as if it had been killed, and resumes.

use std::fmt;
use std::io::{self, Write};

/// The exit status when stdout's (or stderr's) reader has gone.
pub const CLOSED_PIPE: i32 = 141;

/// Writes to stdout; a closed pipe ends the process quietly.
pub fn stdout(args: fmt::Arguments, newline: bool) {
    let mut out = io::stdout().lock();
    let written = out.write_fmt(args).and_then(|_| if newline { out.write_all(b"\n") } else { Ok(()) });
    if let Err(e) = written.and_then(|_| out.flush()) {
        drop(out);
        failed(e, "stdout");
    }
}

/// Writes a line to stderr; a closed pipe ends the process quietly.
pub fn stderr(args: fmt::Arguments) {
    let mut err = io::stderr().lock();
    if let Err(e) = err.write_fmt(args).and_then(|_| err.write_all(b"\n")) {
        drop(err);
        failed(e, "stderr");
    }
}

fn failed(e: io::Error, stream: &str) -> ! {
    if e.kind() != io::ErrorKind::BrokenPipe {
        // Not a closed pipe (a full disk, say): say so where it can still be read, if anywhere.
        let _ = writeln!(io::stderr(), "error: cannot write to {stream}: {e}");
        std::process::exit(1);
    }
    std::process::exit(CLOSED_PIPE)
}

/// `println!` that exits quietly on a closed pipe.
macro_rules! outln {
    () => { $crate::out::stdout(format_args!(""), true) };
    ($($arg:tt)*) => { $crate::out::stdout(format_args!($($arg)*), true) };
}

/// `print!` that exits quietly on a closed pipe.
macro_rules! out {
    ($($arg:tt)*) => { $crate::out::stdout(format_args!($($arg)*), false) };
}

/// `eprintln!` that exits quietly on a closed pipe.
macro_rules! errln {
    ($($arg:tt)*) => { $crate::out::stderr(format_args!($($arg)*)) };
}

/// `errln!` for a long-running process's log (`serve`, `worker`): the line starts with when it was written (RFC 3339,
/// milliseconds, UTC).
macro_rules! logln {
    ($($arg:tt)*) => {
        $crate::out::stderr(format_args!("{} {}", switchyard_engine::eval::report::now(), format_args!($($arg)*)))
    };
}

#[allow(unused_imports)]
pub(crate) use {errln, logln, out, outln};

/// Text from outside (a model's answer, a file's names) as it may be printed to a terminal: a control character
/// (an escape sequence's ESC, a carriage return, a line feed, …) or a character that reorders text (bidirectional
/// overrides) is written as its Rust escape, `\u{1b}`, `\r`, `\n`, so it shows and never drives the terminal.
pub fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    escaped(text, |_| true)
}

/// As `printable`, keeping line feeds and tabs: text laid out in lines (a code step's output).
pub fn printable_lines(text: &str) -> std::borrow::Cow<'_, str> {
    escaped(text, |c| !matches!(c, '\n' | '\t'))
}

fn escaped(text: &str, escape: impl Fn(char) -> bool) -> std::borrow::Cow<'_, str> {
    let drives = |c: char| {
        (c.is_control() || matches!(c, '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'))
            && escape(c)
    };
    if !text.chars().any(drives) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if drives(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_sequences_carriage_returns_and_direction_overrides_are_shown_not_obeyed() {
        assert_eq!(printable("\u{1b}[31mred\r\nx\u{202E}y\u{7f}"), "\\u{1b}[31mred\\r\\nx\\u{202e}y\\u{7f}");
        assert_eq!(printable_lines("a\tb\nc\u{1b}]0;t\u{7}"), "a\tb\nc\\u{1b}]0;t\\u{7}");
        assert!(matches!(printable("plain · ünïcode"), std::borrow::Cow::Borrowed(_)));
    }
}

/// A count and its noun, singular for one: `counted(1, "edge")` is "1 edge", `counted(2, "edge")` "2 edges"; a
/// noun whose plural is not `+s` is given as "singular/plural": `counted(n, "run was/runs were")`.
pub fn counted(n: impl Into<u64>, noun: &str) -> String {
    let n = n.into();
    match noun.split_once('/') {
        Some((one, _)) if n == 1 => format!("{n} {one}"),
        Some((_, many)) => format!("{n} {many}"),
        None if n == 1 => format!("{n} {noun}"),
        None => format!("{n} {noun}s"),
    }
}

#[cfg(test)]
mod counted_tests {
    use super::counted;

    #[test]
    fn one_of_a_thing_is_singular_and_any_other_number_plural() {
        assert_eq!(counted(1u32, "edge"), "1 edge");
        assert_eq!(counted(0u32, "edge"), "0 edges");
        assert_eq!(counted(2u64, "code step"), "2 code steps");
        assert_eq!(counted(1u32, "run is/runs are"), "1 run is");
        assert_eq!(counted(3u32, "run is/runs are"), "3 runs are");
    }
}
