//! `gate --markdown FILE`: the gate's checks as a short Markdown table for
//! a CI job summary (`$GITHUB_STEP_SUMMARY`) or a merge-request comment:
//! a heading with the count of failed checks, one row per policy ×
//! condition (measured value, limit, result), and what each condition
//! reads.

use crate::gate::Check;

/// `text` safe in a table cell: Markdown's punctuation and `|` escaped
/// with a backslash, line ends as spaces.
pub fn cell(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '|' | '#' | '&' | '~' => {
                out.push('\\');
                out.push(c);
            }
            '\n' | '\r' | '\t' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// The Markdown summary of the checks of `scenario`'s gate.
pub fn markdown(scenario: &str, checks: &[Check]) -> String {
    let failed = checks.iter().filter(|c| !c.passed).count();
    let verdict = match (failed, checks.len()) {
        (0, 1) => "the check passes".to_string(),
        (0, n) => format!("all {n} checks pass"),
        (1, 1) => "the check fails".to_string(),
        (f, n) => format!("{f} of {n} checks fail"),
    };
    let mut m = format!("### retrysim gate: {}: {verdict}\n\n", cell(scenario));
    m.push_str("| policy | condition | measured | limit | result |\n");
    m.push_str("|---|---|---|---|---|\n");
    for c in checks {
        m.push_str(&format!(
            "| {} | {} | {} | {} | {} |\n",
            cell(&c.policy),
            c.condition,
            cell(&c.measured),
            cell(&c.limit),
            if c.passed { "pass" } else { "**FAIL**" }
        ));
    }
    let mut seen: Vec<&str> = Vec::new();
    for c in checks {
        if !seen.contains(&c.condition) {
            seen.push(c.condition);
        }
    }
    if !seen.is_empty() {
        m.push('\n');
        for name in seen {
            let reads = checks.iter().find(|c| c.condition == name).map(|c| c.reads);
            m.push_str(&format!(
                "- {name} reads {}\n",
                cell(reads.unwrap_or_default())
            ));
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_cannot_break_the_table() {
        assert_eq!(cell("a|b"), "a\\|b");
        assert_eq!(cell("retry_once *x*\nnext"), "retry\\_once \\*x\\* next");
        assert_eq!(cell("<b>"), "\\<b\\>");
    }

    #[test]
    fn one_row_per_check() {
        let check = |policy: &str, passed| Check {
            policy: policy.into(),
            condition: "max-drain",
            reads: "retry window",
            measured: "3 s".into(),
            limit: "≤ 600 s".into(),
            passed,
        };
        let m = markdown("s", &[check("a", true), check("b|c", false)]);
        assert!(
            m.starts_with("### retrysim gate: s: 1 of 2 checks fail\n"),
            "{m}"
        );
        assert!(
            m.contains("| a | max-drain | 3 s | ≤ 600 s | pass |\n"),
            "{m}"
        );
        assert!(
            m.contains("| b\\|c | max-drain | 3 s | ≤ 600 s | **FAIL** |\n"),
            "{m}"
        );
        assert!(m.contains("- max-drain reads retry window\n"), "{m}");
    }
}
