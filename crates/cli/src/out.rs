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

pub(crate) use {errln, out, outln};
