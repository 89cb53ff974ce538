//! An evaluation's report: the summary that gates CI (`pass_rate` against `--min-pass-rate`), as JSON, as JUnit XML
//! for CI systems, and as a Markdown summary for a pull request.

use serde::{Deserialize, Serialize};

use super::runner::{CaseReport, Verdict};
use crate::recorded::CallCounts;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type), serde(rename = "EvalReport"))]
pub struct Report {
    /// The evaluation's id in the run store, when it was kept there (`eval::kept`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// When it started, RFC 3339.
    pub started: String,
    /// The evaluation file, as given.
    pub file: String,
    pub workflow: String,
    pub cases: Vec<CaseReport>,
    #[cfg_attr(feature = "specta", specta(type = u32))]
    pub passed: usize,
    #[cfg_attr(feature = "specta", specta(type = u32))]
    pub failed: usize,
    #[cfg_attr(feature = "specta", specta(type = u32))]
    pub flaky: usize,
    #[cfg_attr(feature = "specta", specta(type = u32))]
    pub errors: usize,
    /// Passed cases over all cases; flaky cases do not pass.
    pub pass_rate: f64,
    #[cfg_attr(feature = "specta", specta(type = u32))]
    pub tokens: u64,
    #[cfg_attr(feature = "specta", specta(type = u32))]
    pub duration_ms: u64,
    /// US dollars, summed over every attempt and rounded once (`usage::round`); none when some model that used tokens
    /// has no price.
    pub cost: Option<f64>,
    /// The cost as every front end writes it (`usage::dollars`); none when the cost is.
    #[serde(default)]
    pub cost_text: Option<String>,
    /// Model calls made, calls answered from the recorded calls, and the tokens those saved.
    pub calls: CallCounts,
    /// How it compares with a baseline report (`--baseline`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comparison: Option<Comparison>,
}

// How a report compares with a baseline: `Comparison` and its parts, which `compare::compare` makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub enum Change {
    /// It passes now and did not before.
    Improved,
    /// It passed before and does not now.
    Regressed,
    Unchanged,
    /// The baseline has no such case.
    New,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct CaseChange {
    pub id: String,
    pub change: Change,
    pub before: Option<String>,
    pub after: Verdict,
    /// Nodes whose output differs from the baseline's (or ran in only one of them), by node id.
    pub changed_nodes: Vec<String>,
    /// Every node that ran in either, by node id, with both outputs: what a compare view colours and shows side by
    /// side.
    pub nodes: Vec<NodeChange>,
    #[cfg_attr(feature = "specta", specta(type = SideBySide))]
    pub tokens: (Option<u64>, u64),
    #[cfg_attr(feature = "specta", specta(type = SideBySide))]
    pub duration_ms: (Option<u64>, u64),
}

/// Before and after, as the bindings see them.
#[cfg(feature = "specta")]
type SideBySide = (Option<u32>, u32);

/// What became of one node between the baseline and now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "lowercase")]
pub enum NodeVerdict {
    /// An expectation about it fails now and did not before.
    Regressed,
    /// Its output differs (or it ran in only one of the two).
    Changed,
    Unchanged,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct NodeChange {
    pub node: String,
    pub change: NodeVerdict,
    /// Its output (or error) in the baseline; none when it did not run there.
    pub before: Option<String>,
    pub after: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Comparison {
    pub baseline: String,
    #[cfg_attr(feature = "specta", specta(type = u32))]
    pub improved: usize,
    #[cfg_attr(feature = "specta", specta(type = u32))]
    pub regressed: usize,
    #[cfg_attr(feature = "specta", specta(type = u32))]
    pub unchanged: usize,
    pub cases: Vec<CaseChange>,
}

/// Now, as reports and runs give times (RFC 3339, milliseconds, UTC).
pub fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

impl Report {
    /// A report kept before the engine wrote costs (`costText`): its costs written now, by the one rule
    /// (`usage::dollars`), so that a window shows them as it shows a new report's.
    pub fn with_cost_text(mut self) -> Report {
        self.cost_text = self.cost_text.or(self.cost.map(crate::usage::dollars));
        for a in self.cases.iter_mut().flat_map(|c| c.attempts.iter_mut()) {
            a.cost_text = a.cost_text.take().or(a.cost.map(crate::usage::dollars));
        }
        self
    }

    pub fn new(file: String, workflow: String, cases: Vec<CaseReport>, calls: CallCounts) -> Report {
        let count = |v: Verdict| cases.iter().filter(|c| c.verdict == v).count();
        let (passed, failed, flaky, errors) =
            (count(Verdict::Passed), count(Verdict::Failed), count(Verdict::Flaky), count(Verdict::Error));
        let attempts = || cases.iter().flat_map(|c| &c.attempts);
        let cost = attempts().map(|a| a.cost).sum::<Option<f64>>().map(crate::usage::round);
        Report {
            id: None,
            started: now(),
            pass_rate: if cases.is_empty() { 0.0 } else { passed as f64 / cases.len() as f64 },
            tokens: attempts().fold(0u64, |sum, a| sum.saturating_add(a.tokens)),
            cost,
            cost_text: cost.map(crate::usage::dollars),
            duration_ms: attempts().fold(0u64, |sum, a| sum.saturating_add(a.duration_ms)),
            file,
            workflow,
            cases,
            passed,
            failed,
            flaky,
            errors,
            calls,
            comparison: None,
        }
    }

    /// JUnit XML, one test case per case (a failure per failing expectation's case, an error when it could not run).
    pub fn junit(&self) -> String {
        let seconds = |ms: u64| format!("{:.3}", ms as f64 / 1000.0);
        let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        out.push_str(&format!(
            "<testsuites name=\"switchyard eval\" tests=\"{}\" failures=\"{}\" errors=\"{}\" time=\"{}\">\n",
            self.cases.len(),
            self.failed + self.flaky,
            self.errors,
            seconds(self.duration_ms)
        ));
        out.push_str(&format!(
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"0\" time=\"{}\">\n",
            xml(&self.file),
            self.cases.len(),
            self.failed + self.flaky,
            self.errors,
            seconds(self.duration_ms)
        ));
        for case in &self.cases {
            let a = case.shown();
            let time = seconds(case.attempts.iter().fold(0u64, |sum, a| sum.saturating_add(a.duration_ms)));
            out.push_str(&format!(
                "    <testcase classname=\"{}\" name=\"{}\" time=\"{time}\"",
                xml(&self.workflow),
                xml(&case.id)
            ));
            // An `error` verdict shows the attempt that could not run (`shown`), also when an earlier one failed.
            match (case.verdict, &a.error) {
                (Verdict::Passed, _) => out.push_str("/>\n"),
                (Verdict::Error, Some(e)) => {
                    out.push_str(&format!(
                        ">\n      <error message=\"{}\" type=\"{}\"/>\n    </testcase>\n",
                        xml(&e.message),
                        xml(&e.code)
                    ));
                }
                _ => {
                    let lines = failure_lines(case);
                    let kind = if case.verdict == Verdict::Flaky { "flaky" } else { "expectation" };
                    out.push_str(&format!(
                        ">\n      <failure message=\"{}\" type=\"{kind}\">{}</failure>\n    </testcase>\n",
                        xml(lines.first().map_or("", String::as_str)),
                        xml(&lines.join("\n"))
                    ));
                }
            }
        }
        out.push_str("  </testsuite>\n</testsuites>\n");
        out
    }

    /// A Markdown summary for a pull request: the totals, then a row per case with what did not hold.
    pub fn markdown(&self) -> String {
        let icon = |v: Verdict| match v {
            Verdict::Passed => "✅",
            Verdict::Failed => "❌",
            Verdict::Flaky => "⚠️ flaky",
            Verdict::Error => "⛔",
        };
        let mut out = format!(
            "### Evaluation of `{}`: {}/{} passed\n\n{} failed, {} flaky, {} could not run · {} · {:.1} s\n\n",
            self.workflow,
            self.passed,
            self.cases.len(),
            self.failed,
            self.flaky,
            self.errors,
            super::check::tokens(self.tokens),
            self.duration_ms as f64 / 1000.0
        );
        out.push_str("| case | verdict | what did not hold |\n|---|---|---|\n");
        for case in &self.cases {
            let what = match case.verdict {
                Verdict::Passed => String::new(),
                _ => failure_lines(case).join("<br>").replace('|', "\\|"),
            };
            out.push_str(&format!("| `{}` | {} | {} |\n", case.id, icon(case.verdict), what));
        }
        out
    }
}

/// What did not hold in a case, a line each: `node Publish (publish): expected contains "x", got "y"`, or for a node
/// that produced nothing `node Page (page): expected contains "x", but it was skipped` (`check::is_absence`).
pub fn failure_lines(case: &CaseReport) -> Vec<String> {
    let a = case.shown();
    if let Some(e) = &a.error {
        return vec![format!("[{}] {}", e.code, e.message)];
    }
    let runs = case.attempts.len();
    let mut lines: Vec<String> = a
        .failures
        .iter()
        .map(|f| {
            let on = f.name.as_ref().or(f.node.as_ref()).map_or_else(|| "the run".to_string(), |n| format!("node {n}"));
            if super::check::is_absence(&f.actual) {
                format!("{on}: expected {}, but it {}", f.expected, f.actual)
            } else {
                format!("{on}: expected {}, got {}", f.expected, f.actual)
            }
        })
        .collect();
    if case.verdict == Verdict::Flaky {
        let passed = case.attempts.iter().filter(|a| a.passed).count();
        lines.insert(0, format!("passed {passed} of {runs} runs"));
    }
    lines
}

/// Text as XML 1.0 takes it in an attribute or an element. A character XML 1.0 has no place for (the C0 controls
/// but tab, line feed and carriage return; U+FFFE and U+FFFF) becomes U+FFFD, so the file stays well-formed and
/// shows where something was.
fn xml(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            '\t' => out.push_str("&#9;"),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::eval::runner::{Attempt, CaseError};
    use crate::eval::Failure;

    fn attempt(failure: Option<&str>, error: Option<&str>) -> Attempt {
        Attempt {
            passed: failure.is_none() && error.is_none(),
            status: None,
            failures: failure
                .map(|f| Failure {
                    node: Some("publish".into()),
                    name: None,
                    expected: f.into(),
                    actual: "nothing".into(),
                })
                .into_iter()
                .collect(),
            judgements: Vec::new(),
            error: error.map(|e| CaseError { code: "ANSWERS_UNREADABLE".into(), message: e.into() }),
            tokens: u64::MAX,
            duration_ms: 5,
            cost: Some(0.0),
            cost_text: Some("$0.00".into()),
            outputs: BTreeMap::new(),
            run_id: None,
            asked: BTreeMap::new(),
        }
    }

    fn report(id: &str, attempts: Vec<Attempt>, verdict: Verdict) -> Report {
        let case = CaseReport { id: id.into(), verdict, attempts };
        Report::new("x.evals.yaml".into(), "x.yaml".into(), vec![case], CallCounts::default())
    }

    #[test]
    fn a_report_kept_before_costs_were_written_gets_them_written_by_the_one_rule() {
        let mut old = serde_json::to_value(report("priced", vec![attempt(None, None)], Verdict::Passed)).unwrap();
        old["cost"] = serde_json::json!(0.000240111);
        old["cases"][0]["attempts"][0]["cost"] = serde_json::json!(0.000240111);
        old.as_object_mut().unwrap().remove("costText");
        old["cases"][0]["attempts"][0].as_object_mut().unwrap().remove("costText");
        let read = serde_json::from_value::<Report>(old).unwrap().with_cost_text();
        assert_eq!(read.cost_text.as_deref(), Some("$0.00024"));
        assert_eq!(read.cases[0].attempts[0].cost_text.as_deref(), Some("$0.00024"));
    }

    #[test]
    fn a_case_that_failed_and_then_could_not_run_is_reported_by_the_attempt_that_could_not_run() {
        let attempts = vec![attempt(Some("contains \"x\""), None), attempt(None, Some("gone"))];
        let report = report("twice", attempts, Verdict::Error);
        assert_eq!(report.errors, 1);
        assert_eq!(report.tokens, u64::MAX, "two attempts' tokens stay at the most a count holds");
        let junit = report.junit();
        assert!(junit.contains("<error message=\"gone\" type=\"ANSWERS_UNREADABLE\"/>"), "{junit}");
        assert_eq!(failure_lines(&report.cases[0]), ["[ANSWERS_UNREADABLE] gone"]);
        assert!(report.markdown().contains("[ANSWERS_UNREADABLE] gone"));
    }

    #[test]
    fn characters_xml_has_no_place_for_become_replacement_characters_and_line_ends_stay() {
        assert_eq!(xml("a\u{FFFE}b\u{FFFF}c\u{1}d\u{0}e"), "a\u{FFFD}b\u{FFFD}c\u{FFFD}d\u{FFFD}e");
        assert_eq!(xml("1\r\n2\t3 <&>\"'"), "1&#13;&#10;2&#9;3 &lt;&amp;&gt;&quot;&apos;");
        assert_eq!(xml("é日本😀\u{7F}\u{85}\u{FFFD}"), "é日本😀\u{7F}\u{85}\u{FFFD}");
        let id = "odd\u{FFFE}\u{FFFF}\u{1B}id";
        let junit = report(id, vec![attempt(Some("equals \"\u{FFFF}\""), None)], Verdict::Failed).junit();
        let forbidden = |c: char| matches!(c as u32, 0..=0x8 | 0xB | 0xC | 0xE..=0x1F | 0xFFFE | 0xFFFF);
        assert!(!junit.chars().any(forbidden), "{junit:?}");
        assert!(junit.contains("name=\"odd\u{FFFD}\u{FFFD}\u{FFFD}id\""), "{junit}");
    }
}
