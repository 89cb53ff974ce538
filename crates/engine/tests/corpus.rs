//! Every workflow file in the examples and test folders of the four source systems' public repositories
//! (`tests/corpus/<system>/files`, where each came from and how in its `SOURCE.md`), opened as Switchyard opens it
//! and compared with what the system's own loader does with it (`expected.json`, produced by `scripts/corpus/*`
//! running that loader, or read from its tests).
//!
//! An entry of `expected.json` is the loader's verdict — `"loader": "accepted"`, or `"refused"` with its `"reason"` —
//! plus ours: for a refused file, `"code"`, the code our refusal must carry. A disagreement kept on purpose has
//! `"disagree": "<why>"`, must still disagree (else the entry is stale), and must be listed with its path in
//! docs/formats.md. There may be at most five.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use switchyard_engine::format::{self, Format};
use switchyard_engine::validate::{validate, Options, Purpose};

const MOST_DISAGREEMENTS: usize = 5;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Expected {
    loader: Verdict,
    reason: Option<String>,
    #[allow(dead_code)] // what the expectation script noticed; for the reader
    note: Option<String>,
    code: Option<String>,
    disagree: Option<String>,
}

#[derive(Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum Verdict {
    Accepted,
    Refused,
}

/// What Switchyard does with a file: accepts it (imports, and validation finds no error), or refuses it with codes.
#[derive(Debug)]
enum Ours {
    Accepted,
    Refused(Vec<String>),
}

impl Ours {
    fn verdict(&self) -> Verdict {
        match self {
            Ours::Accepted => Verdict::Accepted,
            Ours::Refused(_) => Verdict::Refused,
        }
    }
}

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus")
}

fn open(path: &Path, format: Format) -> Ours {
    let loaded = match format::load_file(path, Some(format)) {
        Ok(loaded) => loaded,
        Err(e) => return Ours::Refused(vec![e.code.to_string()]),
    };
    // As `switchyard validate` checks a file on a machine with only the built-in local provider: a provider the
    // machine lacks is a warning, never a refusal of the file.
    let options = Options {
        purpose: Purpose::Check,
        providers: Some(vec!["local".into()]),
        format: Some(loaded.format),
        ..Options::default()
    };
    let report = validate(&loaded.workflow, &options);
    if report.errors.is_empty() {
        Ours::Accepted
    } else {
        Ours::Refused(report.errors.iter().map(|f| f.code.to_string()).collect())
    }
}

struct Tally {
    files: usize,
    agree: usize,
    disagree: usize,
}

#[test]
fn every_corpus_file_opens_as_its_own_system_opens_it() {
    let docs = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/formats.md")).unwrap();
    let systems = [
        ("agentflow", Format::AgentFlow),
        ("sweny", Format::Sweny),
        ("tea", Format::Tea),
        ("openexpertise", Format::OpenExpertise),
    ];
    let mut problems = Vec::new();
    let mut tallies = Vec::new();
    // `CORPUS=tea` checks one system while working on its importer.
    let only = std::env::var("CORPUS").ok();
    for (system, format) in systems {
        if only.as_deref().is_some_and(|o| o != system) {
            continue;
        }
        let dir = corpus().join(system);
        let text = std::fs::read_to_string(dir.join("expected.json"))
            .unwrap_or_else(|e| panic!("{}: {e}", dir.join("expected.json").display()));
        let expected: BTreeMap<String, Expected> =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{system}/expected.json: {e}"));
        assert!(!expected.is_empty(), "{system}: no files");
        let mut tally = Tally { files: 0, agree: 0, disagree: 0 };
        for (file, want) in &expected {
            tally.files += 1;
            let path = dir.join("files").join(file);
            assert!(path.is_file(), "{system}/{file} is listed but not in the corpus");
            let ours = open(&path, format);
            let at = format!("{system}/{file}");
            if let Some(why) = &want.disagree {
                tally.disagree += 1;
                if ours.verdict() == want.loader {
                    problems
                        .push(format!("{at}: listed as a disagreement ({why}) but we now agree; remove `disagree`"));
                }
                if !docs.contains(file.as_str()) {
                    problems.push(format!("{at}: a disagreement not listed in docs/formats.md"));
                }
                continue;
            }
            match (&ours, want.loader) {
                (Ours::Accepted, Verdict::Accepted) => tally.agree += 1,
                (Ours::Refused(codes), Verdict::Refused) => match &want.code {
                    Some(code) if codes.contains(code) => tally.agree += 1,
                    Some(code) => problems.push(format!(
                        "{at}: refused as the loader refuses it ({}), but with {codes:?}, not {code}",
                        want.reason.as_deref().unwrap_or("?")
                    )),
                    None => problems.push(format!(
                        "{at}: refused with {codes:?}; say which code answers the loader's reason ({}) in `code`",
                        want.reason.as_deref().unwrap_or("?")
                    )),
                },
                (Ours::Refused(codes), Verdict::Accepted) => {
                    problems.push(format!("{at}: the loader accepts it, we refuse it with {codes:?}"))
                }
                (Ours::Accepted, Verdict::Refused) => problems.push(format!(
                    "{at}: the loader refuses it ({}), we accept it",
                    want.reason.as_deref().unwrap_or("?")
                )),
            }
        }
        tallies.push((system, tally));
    }
    let disagreements: usize = tallies.iter().map(|(_, t)| t.disagree).sum();
    let table: Vec<String> = tallies
        .iter()
        .map(|(s, t)| format!("{s}: {} files, {} agree, {} documented disagreements", t.files, t.agree, t.disagree))
        .collect();
    println!("{}", table.join("\n"));
    assert!(
        problems.is_empty(),
        "{} of the corpus disagree:\n{}\n\n{}",
        problems.len(),
        problems.join("\n"),
        table.join("\n")
    );
    assert!(
        disagreements <= MOST_DISAGREEMENTS,
        "{disagreements} documented disagreements; at most {MOST_DISAGREEMENTS}\n{}",
        table.join("\n")
    );
}
