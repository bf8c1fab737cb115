//! The module layers written in `src/lib.rs` hold in the code: every
//! `crate::<module>` a top-level module names is one it may depend on, and
//! no two top-level modules depend on each other, directly or through
//! others.
//!
//! The allowed dependencies are read from the table in `src/lib.rs` (lines
//! `//! | module | may use |`), so the documentation and this check cannot
//! drift apart.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// `module -> modules it may use`, from the table in `src/lib.rs`.
fn declared() -> BTreeMap<String, BTreeSet<String>> {
    let lib = std::fs::read_to_string("src/lib.rs").unwrap();
    let mut out = BTreeMap::new();
    for line in lib.lines() {
        let Some(row) = line.strip_prefix("//! | `") else {
            continue;
        };
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let module = cells[0].trim_end_matches('`').to_string();
        let uses = cells[1]
            .split(',')
            .map(|s| s.trim().trim_matches('`').to_string())
            .filter(|s| !s.is_empty() && s != "—")
            .collect();
        out.insert(module, uses);
    }
    assert!(out.len() > 10, "the table in src/lib.rs was not found");
    out
}

/// Every `.rs` file under `dir`.
fn files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The top-level module a source file belongs to (`src/model/run.rs` →
/// `model`), or `None` for `lib.rs` and `main.rs`.
fn module_of(path: &Path) -> Option<String> {
    let rel = path.strip_prefix("src").ok()?;
    let first = rel.components().next()?.as_os_str().to_str()?;
    let name = first.trim_end_matches(".rs");
    (name != "lib" && name != "main").then(|| name.to_string())
}

/// `module -> modules its code names through `crate::``.
fn actual() -> BTreeMap<String, BTreeSet<String>> {
    let mut paths = Vec::new();
    files(Path::new("src"), &mut paths);
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for path in paths {
        let Some(module) = module_of(&path) else {
            continue;
        };
        let text = std::fs::read_to_string(&path).unwrap();
        let deps = out.entry(module.clone()).or_default();
        // Code only: comments may point anywhere (a schema file saying
        // which model file gives it its effect is not a dependency).
        let code = text.lines().filter(|l| !l.trim_start().starts_with("//"));
        for line in code {
            for (i, _) in line.match_indices("crate::") {
                let name: String = line[i + 7..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() && name != module {
                    deps.insert(name);
                }
            }
        }
    }
    out
}

#[test]
fn every_dependency_is_declared() {
    let declared = declared();
    let actual = actual();
    let mut wrong = Vec::new();
    for (module, deps) in &actual {
        let Some(allowed) = declared.get(module) else {
            wrong.push(format!("{module} is not in the table in src/lib.rs"));
            continue;
        };
        for d in deps.difference(allowed) {
            wrong.push(format!("{module} uses {d}, which the table does not allow"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_declared_layers_have_no_cycle() {
    let declared = declared();
    // Depth-first search for a back edge.
    fn visit(
        m: &str,
        g: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        match state.get(m).copied() {
            Some(2) => return None,
            Some(1) => {
                let from = stack.iter().position(|s| s == m).unwrap();
                let mut cycle = stack[from..].to_vec();
                cycle.push(m.to_string());
                return Some(cycle);
            }
            _ => {}
        }
        state.insert(m.to_string(), 1);
        stack.push(m.to_string());
        for d in g.get(m).into_iter().flatten() {
            if let Some(c) = visit(d, g, state, stack) {
                return Some(c);
            }
        }
        stack.pop();
        state.insert(m.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for m in declared.keys() {
        if let Some(cycle) = visit(m, &declared, &mut state, &mut Vec::new()) {
            panic!("import cycle: {}", cycle.join(" -> "));
        }
    }
}

#[test]
fn every_top_level_module_is_in_the_table() {
    let lib = std::fs::read_to_string("src/lib.rs").unwrap();
    let declared = declared();
    for line in lib.lines() {
        if let Some(m) = line
            .strip_prefix("pub mod ")
            .or_else(|| line.strip_prefix("mod "))
        {
            let m = m.trim_end_matches(';');
            assert!(declared.contains_key(m), "{m} is missing from the table");
        }
    }
}

/// One output layer: outside `src/report/`, no code (tests aside) creates
/// a file, encodes a picture or opens a CSV writer; `csv_text` is the
/// plain CSV settings `report::csv_file` writes with.
#[test]
fn only_the_report_writes_files() {
    let mut paths = Vec::new();
    files(Path::new("src"), &mut paths);
    let writes = [
        "File::create(",
        "fs::write(",
        "OpenOptions",
        "csv_text::writer(",
        "csv::Writer",
        "BitMapBackend::new(",
        "save_buffer(",
    ];
    let mut wrong = Vec::new();
    for path in paths {
        if path.starts_with("src/report") || path == Path::new("src/csv_text.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        // Unit tests may make their own input files.
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        for (n, line) in code.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            if let Some(w) = writes.iter().find(|w| line.contains(*w)) {
                wrong.push(format!("{}:{}: {w}", path.display(), n + 1));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "files are written only by src/report/:\n{}",
        wrong.join("\n")
    );
}

/// The longest a function may be, from its `fn` line to its closing brace.
const MAX_FUNCTION_LINES: usize = 80;

/// The functions of `code` (a file's text before its tests) longer than
/// [`MAX_FUNCTION_LINES`]: name, first line (1-based) and length. A
/// function is a line whose first word (after `pub`, `pub(crate)`,
/// `const`, `async` or `unsafe`) is `fn` and which does not end in `;`;
/// it ends at the first later line that is `}` at its own indentation,
/// which is how `rustfmt` lays it out.
fn long_functions(code: &str) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = code.lines().collect();
    let mut long = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let body = line.trim_start();
        let indent = line.len() - body.len();
        let mut words = body.split_whitespace().peekable();
        while words
            .peek()
            .is_some_and(|w| w.starts_with("pub") || ["const", "async", "unsafe"].contains(w))
        {
            words.next();
        }
        let is_fn = words.next() == Some("fn") && !line.trim_end().ends_with(';');
        if !is_fn {
            i += 1;
            continue;
        }
        let name: String = words
            .next()
            .unwrap_or("")
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let close = " ".repeat(indent) + "}";
        let end = (i + 1..lines.len())
            .find(|&j| lines[j] == close)
            .unwrap_or(lines.len() - 1);
        let n = end - i + 1;
        if n > MAX_FUNCTION_LINES {
            long.push((name, i + 1, n));
        }
        i = end + 1;
    }
    long
}

#[test]
fn the_length_rule_finds_a_long_function() {
    let body = "    let x = 1;\n".repeat(MAX_FUNCTION_LINES - 1);
    let code = format!("pub(crate) fn long() {{\n{body}}}\n\nfn short() {{\n}}\n");
    assert_eq!(
        long_functions(&code),
        vec![("long".to_string(), 1, MAX_FUNCTION_LINES + 1)]
    );
    let fits = format!(
        "fn fits() {{\n{}}}\n",
        "    x();\n".repeat(MAX_FUNCTION_LINES - 2)
    );
    assert!(long_functions(&fits).is_empty());
}

/// Functions stay short enough to read whole: none (tests aside) is longer
/// than [`MAX_FUNCTION_LINES`] lines.
#[test]
fn no_function_is_longer_than_the_limit() {
    let mut paths = Vec::new();
    files(Path::new("src"), &mut paths);
    paths.sort();
    let mut wrong = Vec::new();
    for path in paths {
        let text = std::fs::read_to_string(&path).unwrap();
        let code = text.split("\n#[cfg(test)]").next().unwrap_or("");
        for (name, line, n) in long_functions(code) {
            wrong.push(format!("{}:{line}: {name} is {n} lines", path.display()));
        }
    }
    assert!(
        wrong.is_empty(),
        "functions longer than {MAX_FUNCTION_LINES} lines (split them by meaning):\n{}",
        wrong.join("\n")
    );
}
