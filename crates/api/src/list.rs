//! The list of the app's commands: the one place a command is named. Each entry is a command's documentation, its
//! name and parameters (a `;` before the channel it streams to, if it has one: what the channel carries), what it
//! returns, whether the window sees it fail (`fallible`: `Result<_, CommandError>`; `plain`: never fails there, its
//! value says what there was — a server may still refuse it), what it needs of its host (`Needs`), and what a
//! browser does about it:
//! - `kept_by(OTHER)`: the browser keeps its value itself (in its local storage): `OTHER`'s one argument, over the
//!   command's default value (the window's preferences);
//! - `follows`: the browser follows the run itself, from the run's event stream;
//! - `remote`: the desktop asks a server for it about the server's runs (the typed client has a function for it).
//!
//! A command a server answers that streams to a channel (`start_run`) answers a run's id: a browser follows that
//! run's event stream into the channel.
//!
//! From it are generated: the desktop's Tauri command wrappers and their `collect_commands!` list (and so the
//! TypeScript bindings, `ui/src/bindings.ts`), the server's dispatch of `POST /api/commands/NAME`, the typed Rust
//! client of a server (`client.rs`), and the table of commands the browser's transport reads
//! (`ui/src/generated/commands.json`). Each is a macro given as `$m`, called with every entry in order (the order
//! of the bindings).

/// Calls `$m! { … }` with every command of the app, in the bindings' order.
#[macro_export]
macro_rules! for_each_command {
    ($m:ident) => {
        $m! {
            open_file(path: String) -> $crate::views::Opened, fallible, Any;
            /// Reads pasted or dropped text; `format` forces one (`switchyard`, `agentflow`, `sweny`).
            parse_document(text: String, format: Option<String>) -> $crate::views::Opened, fallible, Any;
            /// Saves canonical YAML (or JSON for a `.json` path), replacing the file atomically so a crash never leaves half a file.
            save_file(path: String, workflow: $crate::Workflow) -> (), fallible, Files;
            to_yaml(workflow: $crate::Workflow) -> String, plain, Any;
            /// The one validator, with providers checked unless the run will be scripted; `workflow_path`: the open file,
            /// by which its `workflow` nodes' children are found and checked (a server reads no file a request names).
            validate(workflow: $crate::Workflow, scripted: bool, format: Option<String>, workflow_path: Option<String>)
                -> $crate::validate::Report, fallible, Any;
            /// The model agents that name none use when neither the workflow nor the run names one: the settings'
            /// `default_model`, else the first model a local model server lists, else none (with where it looked). Remembered
            /// for `validate`, which then flags nodes that need a model when there is none (`NO_MODEL`).
            default_model() -> $crate::providers::DefaultModel, fallible, Any;
            /// The code steps a run of this document would execute and whether this version of their code is trusted: the
            /// window shows them and asks before the run when it is not.
            code_consent(workflow: $crate::Workflow, workflow_path: Option<String>)
                -> $crate::consent::Consent, fallible, Any;
            /// Records the person's consent to this version of a workflow's code (the fingerprint `code_consent` gave).
            trust_code(fingerprint: String, workflow_path: Option<String>) -> (), fallible, Files;
            /// Starts an MCP server from the settings being edited and lists its tools: the Settings dialog's Test.
            probe_mcp(name: String, server: $crate::mcp::McpServerConfig)
                -> Vec<$crate::mcp::McpTool>, fallible, Settings;
            /// Starts a run; its events arrive on `on_events` in batches, in order.
            start_run(request: $crate::RunArgs; on_events: Vec<$crate::events::Event>) -> String, fallible, Any;
            /// Continues a paused run stored by an earlier session (or this one), streaming its events like `start_run`.
            resume_run(run_id: String; on_events: Vec<$crate::events::Event>)
                -> $crate::views::Resumed, fallible, RunsHere;
            decide(run_id: String, node: String, decision: String, note: String) -> (), fallible, Any, remote;
            cancel_run(run_id: String) -> (), fallible, Any, remote;
            /// Stored runs, newest first, that `filter` asks for (the newest 100 without one, or when it gives no
            /// limit); paused and interrupted ones can go on.
            list_runs(filter: Option<$crate::store::RunFilter>) -> Vec<$crate::views::RunSummary>, fallible, Any, remote;
            run_events(run_id: String) -> Vec<$crate::events::Event>, fallible, Any, remote;
            /// Each agent's model turns and tool calls in a run, by node id, in order (the run log's journal): the Last run tab's
            /// Conversation.
            run_turns(run_id: String) -> $crate::Turns, fallible, Any, remote;
            /// Follows a run that another process runs (a `switchyard run` in a terminal, on the same store): sends its events
            /// numbered after `after` as they are written, until it ends. The window follows one run at a time: following
            /// another stops this one.
            follow_run(run_id: String, after: u32; on_events: Vec<$crate::events::Event>) -> (), fallible, Desktop, follows;
            /// The runs of the server the settings name (`server:`), newest first, each marked with the server's `HOST:PORT`;
            /// none when no server is named. Opening, following, deciding and cancelling them then goes to that server.
            server_runs(filter: Option<$crate::store::RunFilter>) -> Vec<$crate::views::RunSummary>, fallible, Desktop;
            /// Opens a stored run: the document it started with (not the file as it is now) and what happened.
            open_run(run_id: String) -> $crate::views::OpenedRun, fallible, Any, remote;
            /// Plays a stored run again through the engine from its recorded inputs — no model or tool call — streaming its
            /// events like a live run.
            replay_run(run_id: String; on_events: Vec<$crate::events::Event>)
                -> $crate::views::Resumed, fallible, RunsHere;
            /// Adds a stored run to its workflow's evaluation file (`NAME.evals.yaml` beside the workflow) as a test case: its
            /// input, answers and decisions, and what each node did. The same as `switchyard eval add RUN_ID` (`eval::add_case`).
            save_test_case(run_id: String, workflow_path: Option<String>) -> $crate::SavedCase, fallible, Evals;
            /// The evaluation file beside a workflow file: its cases and its last evaluation.
            eval_suite(workflow_path: String) -> $crate::EvalSuiteView, fallible, Evals;
            /// Runs the evaluation file beside a workflow file (every case, or one), sending each case's report as it finishes;
            /// the report compares with the file's earlier evaluations and is kept with its cases' runs. As `switchyard eval FILE
            /// --baseline last [--offline]`: online, an agent a case has no answer for calls the settings' model (and is
            /// recorded); offline, no model is called and such a case could not run.
            run_evals(workflow_path: String, case_id: Option<String>, offline: bool; on_case: $crate::eval::CaseReport)
                -> $crate::eval::Report, fallible, Evals;
            /// The settings to edit. Never fails: when the file cannot be used, the defaults come with the problem.
            get_settings() -> $crate::SettingsState, plain, Any;
            /// Saves the settings, or refuses with the problems by field (nothing is written then).
            save_settings(settings: $crate::providers::Settings) -> (), fallible, Settings;
            /// What to open at start: `SWITCHYARD_OPEN`, else the first argument, else the workflow the person opened or saved
            /// last (the newest recent file, kept in `ui-prefs.json`, that still exists), else the bundled alert-triage example.
            startup_file() -> Option<$crate::views::Startup>, plain, Any;
            /// Every node type as the engine defines it (handles, fields, labels): the palette, canvas and inspector read this.
            node_types() -> Vec<$crate::node_types::NodeTypeSpec>, plain, Any;
            /// The window's preferences; the defaults when the file is missing or corrupt.
            load_prefs() -> $crate::Prefs, plain, Desktop, kept_by(save_prefs);
            /// Keeps the window's preferences (written atomically); refuses a theme the window does not have.
            save_prefs(prefs: $crate::Prefs) -> (), fallible, Desktop;
            /// The answers file beside a workflow (`<stem>.script.yaml`), as an absolute path, when there is one.
            script_beside(workflow_path: String) -> Option<String>, plain, Any;
        }
    };
}

/// One entry's marker in the table: `kept_by(OTHER)` with the command's default value, else `true`.
macro_rules! table_flag {
    ($entry:ident, $ret:ty, kept_by($keeper:ident)) => {
        $entry.insert("keptBy".into(), stringify!($keeper).into());
        let default: $ret = Default::default();
        $entry.insert("default".into(), serde_json::to_value(default).expect("values serialize"));
    };
    ($entry:ident, $ret:ty, $flag:ident) => {
        $entry.insert(stringify!($flag).into(), true.into());
    };
}

macro_rules! names {
    ($( $(#[$meta:meta])* $name:ident ( $($arg:ident : $ty:ty),* $(; $ch:ident : $cht:ty)? ) -> $ret:ty,
        $kind:ident, $needs:ident $(, $flag:ident $(($with:ident))?)?; )*) => {
        /// Every command's name, in the list's order.
        pub const COMMANDS: &[&str] = &[$(stringify!($name)),*];

        /// What the browser's transport reads of each command (`ui/src/generated/commands.json`): its arguments as
        /// sent, its channel, what it needs of a host, and what a browser does about it itself.
        pub fn table() -> serde_json::Value {
            let mut table = serde_json::Map::new();
            $(
                let mut entry = serde_json::Map::new();
                let args: Vec<String> = vec![$($crate::client::camel(stringify!($arg))),*];
                entry.insert("args".into(), args.into());
                let channel: Option<String> = None$(.or(Some($crate::client::camel(stringify!($ch)))))?;
                entry.insert("channel".into(), channel.into());
                entry.insert("needs".into(), stringify!($needs).into());
                $( table_flag!(entry, $ret, $flag $(($with))?); )?
                table.insert(stringify!($name).into(), entry.into());
            )*
            table.into()
        }
    };
}

for_each_command!(names);

#[cfg(test)]
mod tests {
    use super::{table, COMMANDS};

    #[test]
    fn what_a_browser_does_itself_is_something_it_can_do() {
        let table = table();
        let table = table.as_object().unwrap();
        assert_eq!(table.len(), COMMANDS.len(), "each command once");
        for (name, command) in table {
            if let Some(keeper) = command.get("keptBy").and_then(|k| k.as_str()) {
                let args = &table[keeper]["args"];
                assert_eq!(args.as_array().map(Vec::len), Some(1), "{keeper} keeps {name}'s value: its one argument");
                assert!(command["args"].as_array().unwrap().is_empty(), "{name} is asked for what was kept");
                assert!(command.get("default").is_some(), "{name} has a value before anything is kept");
            }
            if command.get("follows").is_some() {
                assert!(command["channel"].is_string(), "{name} follows a run into its channel");
                assert_eq!(command["args"][0], "runId", "{name} names the run it follows first");
            }
        }
    }

    #[test]
    fn a_refused_command_says_where_to_do_it() {
        use crate::{CommandError, Needs};
        let said = |needs| CommandError::not_on_server(needs, Some("x")).message;
        assert_eq!(said(Needs::Files), "Saving is not available in a browser (`x`): the server's workflows are files in its folder: edit them there");
        assert!(said(Needs::Evals).contains("switchyard eval"));
        assert!(said(Needs::Desktop).ends_with("the desktop app has it"));
        assert_eq!(CommandError::not_on_server(Needs::Settings, None).code, "NOT_ON_SERVER");
    }
}
