//! `gate --junit FILE`: the gate's checks as JUnit XML, the format GitLab
//! (`artifacts:reports:junit`), Jenkins (`junit` step) and the common
//! GitHub test reporters read.
//!
//! One `<testsuite>` named after the scenario, with one `<testcase>` per
//! policy × condition: `classname` is the scenario (GitLab shows it as
//! the suite), `name` is `POLICY: CONDITION`, and a failed check holds a
//! `<failure>` whose `message` says the measured value and the limit and
//! whose text (what GitLab shows) adds what the condition reads. It
//! follows Maven Surefire's report schema (`surefire-test-report.xsd` in
//! apache/maven-surefire, `maven-surefire-plugin/src/site/resources/xsd/`),
//! which Jenkins reads natively: the root is `testsuite` with `name`,
//! `tests`, `failures`, `errors` and `skipped`; each `testcase` has `name`
//! and `time`; each `failure` has `type`. `time` is 0, so identical checks
//! give identical bytes.

use crate::gate::Check;

/// `text` escaped for XML 1.0 content and attribute values: the five
/// markup characters become entities, line ends and tabs in attributes
/// become character references (a parser would fold them into spaces),
/// and characters XML 1.0 forbids become U+FFFD.
pub fn escape(text: &str) -> String {
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
            c if allowed(c) => out.push(c),
            _ => out.push('\u{FFFD}'),
        }
    }
    out
}

/// Whether XML 1.0 allows `c` in a document (tab, line ends aside).
fn allowed(c: char) -> bool {
    matches!(c, '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..='\u{10FFFF}')
}

/// The JUnit XML of the checks of `scenario`'s gate.
pub fn junit(scenario: &str, checks: &[Check]) -> String {
    let failures = checks.iter().filter(|c| !c.passed).count();
    let counts = format!(
        "tests=\"{}\" failures=\"{failures}\" errors=\"0\"",
        checks.len()
    );
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    x.push_str(&format!(
        "<testsuite name=\"{}\" {counts} skipped=\"0\" time=\"0\">\n",
        escape(&format!("retrysim gate: {scenario}"))
    ));
    for c in checks {
        let head = format!(
            "  <testcase classname=\"{}\" name=\"{}\" time=\"0\"",
            escape(scenario),
            escape(&format!("{}: {}", c.policy, c.condition))
        );
        if c.passed {
            x.push_str(&head);
            x.push_str("/>\n");
        } else {
            x.push_str(&head);
            x.push_str(">\n");
            x.push_str(&format!(
                "    <failure message=\"{}\" type=\"{}\">{}</failure>\n",
                escape(&format!("measured {}; limit {}", c.measured, c.limit)),
                escape(c.condition),
                escape(&c.message())
            ));
            x.push_str("  </testcase>\n");
        }
    }
    x.push_str("</testsuite>\n");
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_and_forbidden_characters_are_escaped() {
        assert_eq!(
            escape("a<b>&\"c\" 'd'"),
            "a&lt;b&gt;&amp;&quot;c&quot; &apos;d&apos;"
        );
        assert_eq!(escape("x\ny\tz"), "x&#10;y&#9;z");
        assert_eq!(escape("bell\u{7}end\u{FFFE}"), "bell\u{FFFD}end\u{FFFD}");
        assert_eq!(escape("≥ 1.5× ☃"), "≥ 1.5× ☃");
    }

    #[test]
    fn a_failed_check_carries_its_measure_and_limit() {
        let check = |passed| Check {
            policy: "p<1>".into(),
            condition: "min-margin",
            reads: "r",
            measured: "1.2×".into(),
            limit: "≥ 1.5×".into(),
            passed,
        };
        let x = junit("s&t", &[check(true), check(false)]);
        assert!(x.contains("tests=\"2\" failures=\"1\" errors=\"0\""), "{x}");
        assert!(x.contains("classname=\"s&amp;t\" name=\"p&lt;1&gt;: min-margin\""));
        assert!(x.contains("message=\"measured 1.2×; limit ≥ 1.5×\" type=\"min-margin\""));
        assert_eq!(x.matches("<testcase ").count(), 2);
        assert_eq!(x.matches("<failure ").count(), 1);
    }
}
