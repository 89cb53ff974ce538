//! OpenExpertise `cli-agent` nodes run the command-line agent their provider names, as OpenExpertise's dispatcher
//! runs it, as a code step (with consent). Commands named `claude` and `codex` stand in for the real agents here:
//! small scripts on `PATH` that record their arguments and answer, so the test checks exactly what is run.

mod support;

use std::path::{Path, PathBuf};

use serde_json::json;
use support::*;
use switchyard_engine::format::{self, Format};
use switchyard_engine::result::RunStatus;
use switchyard_engine::Workflow;

fn corpus(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/openexpertise/files").join(file)
}

/// Puts `name` on `PATH`: a bash script with this body. Each test uses its own command names (claude and codex, or
/// gemini), so tests running at the same time see each other's directory on `PATH` but never call each other's
/// commands.
fn command(bin: &Path, name: &str, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    let path = bin.join(name);
    std::fs::write(&path, format!("#!/usr/bin/env bash\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    let old = std::env::var("PATH").unwrap_or_default();
    if !old.split(':').any(|p| Path::new(p) == bin) {
        std::env::set_var("PATH", format!("{}:{old}", bin.display()));
    }
}

fn experience(text: &str) -> Workflow {
    format::load_str(text, Some(Format::OpenExpertise), None)
        .unwrap_or_else(|e| panic!("does not import: {e}"))
        .workflow
}

#[tokio::test]
async fn the_cli_orchestration_example_runs_claude_then_codex_with_their_prompts_filled_from_state() {
    let bin = tempfile::tempdir().unwrap();
    let log = bin.path().join("calls");
    // Each records its arguments, one per line, and answers from its prompt.
    let record = format!("printf '%s\\n' \"$0\" \"$@\" >> {} && echo ---- >> {}", log.display(), log.display());
    let claude = "printf 'Summary of %s' \"$(printf '%s' \"$2\" | grep '^Topic: ' | sed 's/^Topic: //')\"";
    let codex = "printf 'Too short: %s' \"$(printf '%s' \"${@: -1}\" | grep '^Summary: ')\"";
    command(bin.path(), "claude", &format!("{record}\n{claude}"));
    command(bin.path(), "codex", &format!("{record}\n{codex}"));
    let loaded = format::load_file(&corpus("examples/cli-orchestration/experience.yaml"), None).unwrap();
    assert_eq!(loaded.format, Format::OpenExpertise);
    assert!(loaded
        .notes
        .iter()
        .any(|n| n.contains("`summarize`") && n.contains("claude -p <prompt> --output-format text")));
    let wf = loaded.workflow;
    assert!(wf.env.contains(&"HOME".to_string()) && wf.env.contains(&"ANTHROPIC_API_KEY".to_string()));

    let dir = tempfile::tempdir().unwrap();
    let ran = run_code(&wf, "", Some(json!({"topic": "tide pools"})), dir.path()).await;
    assert_eq!(ran.result().status, RunStatus::Completed, "{:?}", ran.result().error);
    let state = &ran.result().state;
    assert_eq!(state["summary"], "Summary of tide pools", "text output is written to the node's one `writes` field");
    assert_eq!(state["critique"], "Too short: Summary: Summary of tide pools");
    let calls = std::fs::read_to_string(&log).unwrap();
    let calls: Vec<Vec<&str>> = calls.split("----\n").filter(|c| !c.is_empty()).map(|c| c.lines().collect()).collect();
    assert!(calls[0][0].ends_with("/claude") && calls[0][1] == "-p", "{calls:?}");
    assert_eq!(calls[0].last(), Some(&"text"), "--output-format text comes after the prompt: {calls:?}");
    assert!(calls[0].contains(&"Topic: tide pools"), "the prompt's {{{{topic}}}} is filled from state: {calls:?}");
    assert_eq!(calls[1][1..3], ["exec", "--skip-git-repo-check"], "{calls:?}");
}

#[tokio::test]
async fn json_output_is_unwrapped_and_merged_and_failures_say_what_the_command_said() {
    let bin = tempfile::tempdir().unwrap();
    // Claude Code's JSON envelope around a fenced JSON answer.
    command(bin.path(), "gemini", r#"printf '%s' '{"result": "```json\n{\"verdict\": \"ok\", \"score\": 3}\n```"}'"#);
    let wf = experience(
        "name: j
version: 0.1.0
state: {schema: {verdict: {type: string}, score: {type: number}}}
graph:
  nodes:
    - {id: judge, kind: cli-agent, provider: gemini, prompt: judge it, output_format: json, model: g-1, extra_args: [--sandbox]}
  edges: []",
    );
    let dir = tempfile::tempdir().unwrap();
    let ran = run_code(&wf, "", Some(json!({})), dir.path()).await;
    assert_eq!(ran.result().status, RunStatus::Completed, "{:?}", ran.result().error);
    assert_eq!((&ran.result().state["verdict"], &ran.result().state["score"]), (&json!("ok"), &json!(3)));

    // A command that fails: the node fails with its exit code and what it wrote on stderr.
    let failing = experience(
        "name: f
version: 0.1.0
state: {schema: {out: {type: string}}}
graph:
  nodes:
    - {id: broken, kind: cli-agent, provider: gemini, prompt: go, writes: [out], workdir: ./nowhere-else}
  edges: []",
    );
    std::fs::create_dir(dir.path().join("nowhere-else")).unwrap();
    command(
        bin.path(),
        "gemini",
        "[ \"$(basename \"$PWD\")\" = nowhere-else ] || exit 9; echo 'not logged in' >&2; exit 3",
    );
    let ran = run_code(&failing, "", Some(json!({})), dir.path()).await;
    assert_eq!(ran.result().status, RunStatus::Failed);
    let error = ran.error("broken");
    assert!(error.contains("exited with code 3") && error.contains("not logged in"), "{error}");
}

#[tokio::test]
async fn a_cli_agent_whose_command_is_not_installed_fails_saying_what_to_install() {
    let wf = experience(
        "name: m
version: 0.1.0
state: {schema: {out: {type: string}}}
graph:
  nodes:
    - {id: ask, kind: cli-agent, provider: claude-code, prompt: hi, writes: [out]}
  edges: []",
    );
    // Python, started with a PATH on which no agent is installed.
    let dir = tempfile::tempdir().unwrap();
    let python = ["/usr/bin/python3", "/usr/local/bin/python3", "/bin/python3"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .expect("python3 is installed");
    let wrapper = dir.path().join("python-without-agents");
    std::fs::write(&wrapper, format!("#!/bin/sh\nPATH={} exec {python} \"$@\"\n", dir.path().display())).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let code = switchyard_engine::code::Code {
        allowed: true,
        dir: Some(dir.path().into()),
        interpreters: [(switchyard_engine::code::Language::Python, wrapper)].into_iter().collect(),
    };
    let ran = run_code_with(&wf, "", Some(json!({})), code).await;
    assert_eq!(ran.result().status, RunStatus::Failed);
    let error = ran.error("ask");
    assert!(error.contains("`claude` is not installed") && error.contains("claude-code"), "{error}");
}
