//! Interpreter processes: a warm Python or Node.js worker that runs steps one at a time, and a bash process per
//! step. Each process leads its own process group, so killing the group also stops whatever the code started.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::mpsc;

use super::{CodeError, Language, Printer, Stream};

const PYTHON_WORKER: &str = include_str!("worker.py");
const JAVASCRIPT_WORKER: &str = include_str!("worker.mjs");
/// Starts every reply line, before the worker's nonce.
const RECORD_SEPARATOR: u8 = 0x1e;

/// A warm interpreter process.
pub(super) struct Worker {
    language: Language,
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    stderr: mpsc::UnboundedReceiver<String>,
    /// Marks reply lines: `\x1e<nonce>{json}` on stdout, and the end of a step's output on stderr: `\x1e<nonce>`.
    marker: Vec<u8>,
    /// Cleared while a step is in flight; a worker that did not finish a step cleanly is never used again.
    idle: bool,
}

impl Worker {
    pub fn start(
        language: Language,
        program: &Path,
        dir: &Path,
        env: &[(String, String)],
    ) -> Result<Worker, CodeError> {
        let nonce = uuid::Uuid::new_v4().simple().to_string();
        let mut command = Command::new(program);
        match language {
            Language::Python => command.args(["-u", "-B", "-c", PYTHON_WORKER]),
            Language::JavaScript => command.args(["--input-type=module", "-e", JAVASCRIPT_WORKER]),
            Language::Bash | Language::Lua => unreachable!("bash and lua steps have no worker"),
        };
        let mut env = env.to_vec();
        env.push(("SWITCHYARD_WORKER".into(), nonce.clone()));
        let mut child = spawn(command, language, program, dir, &env)?;
        let stdin = child.stdin.take().expect("stdin is piped");
        let stdout = BufReader::new(child.stdout.take().expect("stdout is piped"));
        let stderr = lines_of(child.stderr.take().expect("stderr is piped"));
        let mut marker = vec![RECORD_SEPARATOR];
        marker.extend_from_slice(nonce.as_bytes());
        Ok(Worker { language, child, stdin, stdout, stderr, marker, idle: true })
    }

    pub fn language(&self) -> Language {
        self.language
    }

    /// Whether the worker can take another step: it answered the last one and is still running.
    pub fn reusable(&mut self) -> bool {
        self.idle && matches!(self.child.try_wait(), Ok(None))
    }

    /// Sends one request and waits for its reply, printing what the code prints on the way.
    pub async fn call(&mut self, request: &Value, timeout: Duration, print: Printer<'_>) -> Result<Value, CodeError> {
        self.idle = false;
        let mut line = serde_json::to_vec(request).expect("a request is JSON");
        line.push(b'\n');
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        if self.stdin.write_all(&line).await.is_err() || self.stdin.flush().await.is_err() {
            return Err(self.ended(print).await);
        }
        let mut buffer = Vec::new();
        let mut stderr_done = false;
        loop {
            tokio::select! {
                _ = &mut deadline => return Err(CodeError::TimedOut(timeout.as_secs())),
                Some(text) = self.stderr.recv(), if !stderr_done => stderr_done = self.printed_on_stderr(&text, print),
                read = self.stdout.read_until(b'\n', &mut buffer) => {
                    if matches!(read, Ok(0) | Err(_)) {
                        return Err(self.ended(print).await);
                    }
                    let reply = find(&buffer, &self.marker).map(|at| {
                        let printed = &buffer[..at];
                        if !printed.is_empty() {
                            print(Stream::Stdout, &String::from_utf8_lossy(printed));
                        }
                        serde_json::from_slice::<Map<String, Value>>(&buffer[at + self.marker.len()..])
                    });
                    match reply {
                        None => print(Stream::Stdout, String::from_utf8_lossy(&buffer).trim_end_matches(['\n', '\r'])),
                        Some(reply) => {
                            // The worker writes the same marker on stderr before replying: everything the step
                            // printed there comes before it, so the log is complete when the step ends.
                            while !stderr_done {
                                tokio::select! {
                                    _ = &mut deadline => return Err(CodeError::TimedOut(timeout.as_secs())),
                                    text = self.stderr.recv() => match text {
                                        None => break,
                                        Some(text) => stderr_done = self.printed_on_stderr(&text, print),
                                    },
                                }
                            }
                            let mut reply = reply.map_err(|e| CodeError::Failed(format!("the {} worker's reply is unreadable: {e}", self.language)))?;
                            self.idle = true;
                            return match (reply.remove("ok"), reply.remove("error")) {
                                (Some(value), _) => Ok(value),
                                (None, Some(Value::String(message))) => Err(CodeError::Failed(message)),
                                _ => Err(CodeError::Failed(format!("the {} worker replied neither a value nor an error", self.language))),
                            };
                        }
                    }
                    buffer.clear();
                }
            }
        }
    }

    /// Prints a line the worker wrote on stderr; true when it ends with the marker, the end of the step's output.
    fn printed_on_stderr(&self, text: &str, print: Printer<'_>) -> bool {
        let marker = String::from_utf8_lossy(&self.marker);
        match text.strip_suffix(marker.as_ref()) {
            Some(before) => {
                if !before.is_empty() {
                    print(Stream::Stderr, before);
                }
                true
            }
            None => {
                print(Stream::Stderr, text);
                false
            }
        }
    }

    /// The process ended before replying: its exit status and the last thing it said.
    async fn ended(&mut self, print: Printer<'_>) -> CodeError {
        let status = self.child.wait().await.map(|s| s.to_string()).unwrap_or_else(|e| e.to_string());
        let mut last = String::new();
        while let Some(text) = self.stderr.recv().await {
            print(Stream::Stderr, &text);
            last = text;
        }
        CodeError::Failed(format!(
            "the {} process ended ({status}) before the step finished{}",
            self.language,
            if last.is_empty() { String::new() } else { format!(": {last}") }
        ))
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        drop(GroupGuard::of(&self.child));
    }
}

/// Starts a process in `dir`, in a process group of its own, with only `env`.
fn spawn(
    mut command: Command,
    language: Language,
    program: &Path,
    dir: &Path,
    env: &[(String, String)],
) -> Result<Child, CodeError> {
    if !dir.is_dir() {
        return Err(CodeError::Failed(format!(
            "code runs in the workflow's folder, {}, which does not exist",
            dir.display()
        )));
    }
    // Cleared first: variables set on `command` before this call would be lost.
    command
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    if language == Language::Python {
        command.env("PYTHONIOENCODING", "utf-8");
    }
    command.spawn().map_err(|e| CodeError::MissingInterpreter {
        language,
        program: program.display().to_string(),
        reason: e.to_string(),
        install: language.install(),
    })
}

/// Lines a process writes to a pipe, as they come.
fn lines_of(pipe: impl AsyncRead + Unpin + Send + 'static) -> mpsc::UnboundedReceiver<String> {
    let (sender, receiver) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut reader = BufReader::new(pipe);
        let mut line = Vec::new();
        while matches!(reader.read_until(b'\n', &mut line).await, Ok(n) if n > 0) {
            let text = String::from_utf8_lossy(&line).trim_end_matches(['\n', '\r']).to_string();
            if sender.send(text).is_err() {
                break;
            }
            line.clear();
        }
    });
    receiver
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Runs a bash step: the names as one JSON object on stdin, the output as one JSON object on stdout.
pub(super) async fn run_bash(
    program: &Path,
    code: &str,
    names: &Map<String, Value>,
    dir: &Path,
    env: &[(String, String)],
    timeout: Duration,
    print: Printer<'_>,
) -> Result<Value, CodeError> {
    let mut command = Command::new(program);
    command.arg("-c").arg(code);
    let mut child = spawn(command, Language::Bash, program, dir, env)?;
    let _group = GroupGuard::of(&child);
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let mut stdout = child.stdout.take().expect("stdout is piped");
    let mut stderr = lines_of(child.stderr.take().expect("stderr is piped"));
    let input = serde_json::to_vec(names).expect("names are JSON");
    // A step that does not read its input closes the pipe early; that is not an error.
    let feed = async move {
        let _ = stdin.write_all(&input).await;
        drop(stdin);
    };
    let mut last_error = String::new();
    let work = async {
        let mut output = Vec::new();
        let (_, read) = tokio::join!(feed, stdout.read_to_end(&mut output));
        read.map_err(|e| CodeError::Failed(format!("bash's output cannot be read: {e}")))?;
        let status = child.wait().await.map_err(|e| CodeError::Failed(format!("bash did not finish: {e}")))?;
        Ok::<_, CodeError>((status, output))
    };
    tokio::pin!(work);
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    let (status, output) = loop {
        tokio::select! {
            _ = &mut deadline => return Err(CodeError::TimedOut(timeout.as_secs())),
            Some(text) = stderr.recv() => { print(Stream::Stderr, &text); last_error = text; }
            status = &mut work => break status?,
        }
    };
    while let Some(text) = stderr.recv().await {
        print(Stream::Stderr, &text);
        last_error = text;
    }
    if !status.success() {
        return Err(CodeError::Failed(format!(
            "bash exited with {status}{}",
            if last_error.is_empty() { String::new() } else { format!(": {last_error}") }
        )));
    }
    let text = String::from_utf8_lossy(&output);
    if text.trim().is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    serde_json::from_str(text.trim()).map_err(|e| {
        let shown: String = text.trim().chars().take(120).collect();
        CodeError::BadOutput(format!(
            "is not JSON ({e}; it began {shown:?}): print one JSON object on stdout and send other text to stderr (>&2)"
        ))
    })
}

/// Kills a process group when dropped: when a step ends, times out, or its future is dropped (a cancelled run), so
/// nothing the step started outlives it.
struct GroupGuard(Option<rustix::process::Pid>);

impl GroupGuard {
    fn of(child: &Child) -> GroupGuard {
        GroupGuard(child.id().and_then(|id| rustix::process::Pid::from_raw(id as i32)))
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if let Some(pid) = self.0 {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
    }
}
