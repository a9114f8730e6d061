//! Every wirelab error either prints its cause in its message or returns it
//! from `source()`, never both: a printer that walks the chain (the
//! binary's, anyhow's `{:#}`) would otherwise say the cause twice.
//!
//! thiserror makes a field the source when it is named `source` or marked
//! `#[source]`/`#[from]`; this reads each `#[error("…")]` attribute in the
//! workspace's library sources and fails when its text prints such a field.

use std::fs;
use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("read source dir") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The text of the variant (or struct) that follows an `#[error]` line, up
/// to the end of its fields.
fn variant_text(lines: &[&str]) -> String {
    let mut text = String::new();
    let mut depth = 0i32;
    for line in lines {
        let t = line.trim();
        if t.starts_with("#[error") || t.starts_with("#[derive") {
            break;
        }
        text.push_str(t);
        text.push(' ');
        if t.starts_with("#[") || t.starts_with("//") {
            continue;
        }
        depth += t.matches(['{', '(']).count() as i32 - t.matches(['}', ')']).count() as i32;
        if depth <= 0 {
            break;
        }
    }
    text
}

/// The fields thiserror treats as the source: one named `source`, one
/// marked `#[source]` or `#[from]` (`0` for a tuple variant's).
fn source_fields(lines: &[&str]) -> Vec<String> {
    let text = variant_text(lines);
    let mut fields = Vec::new();
    let words: Vec<&str> = text
        .split(|c: char| c.is_whitespace() || c == ',' || c == '{')
        .filter(|w| !w.is_empty())
        .collect();
    for (i, w) in words.iter().enumerate() {
        if *w == "source:" {
            fields.push("source".to_string());
        } else if w.ends_with("(#[from]") || w.ends_with("(#[source]") {
            fields.push("0".to_string());
        } else if *w == "#[from]" || *w == "#[source]" {
            let next = words[i + 1..].iter().find(|n| **n != "pub");
            if let Some(name) = next.and_then(|n| n.strip_suffix(':')) {
                fields.push(name.to_string());
            }
        }
    }
    fields
}

fn prints(format: &str, field: &str) -> bool {
    format.contains(&format!("{{{field}}}")) || format.contains(&format!("{{{field}:"))
}

#[test]
fn no_error_prints_the_cause_it_also_returns() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for entry in fs::read_dir(&crates).expect("read crates/") {
        let src = entry.expect("dir entry").path().join("src");
        if src.is_dir() {
            rust_files(&src, &mut files);
        }
    }
    assert!(files.len() > 100, "found only {} source files", files.len());
    let mut seen = 0;
    let mut both = Vec::new();
    for file in &files {
        let text = fs::read_to_string(file).expect("read source");
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            let t = line.trim();
            if !t.starts_with("#[error(") || t.contains("transparent") {
                continue;
            }
            seen += 1;
            // An attribute may run over several lines: its text is up to `)]`.
            let mut end = i;
            while !lines[end].trim_end().ends_with(")]") && end + 1 < lines.len() {
                end += 1;
            }
            let format = lines[i..=end].join(" ");
            for field in source_fields(&lines[end + 1..]) {
                if prints(&format, &field) {
                    both.push(format!("{}:{}: {field}", file.display(), i + 1));
                }
            }
        }
    }
    assert!(seen > 100, "found only {seen} #[error] attributes");
    assert!(
        both.is_empty(),
        "these errors print their source and also return it from source(); \
         rename the field (not `source`, no #[source]/#[from]) or leave it out \
         of the message:\n{}",
        both.join("\n")
    );
}

#[test]
fn the_scan_sees_each_way_of_making_a_source() {
    let named = [
        "Open {",
        "    path: PathBuf,",
        "    source: io::Error,",
        "},",
    ];
    assert_eq!(source_fields(&named), ["source"]);
    let marked = [
        "Write {",
        "    record: u64,",
        "    #[source]",
        "    cause: E,",
        "},",
    ];
    assert_eq!(source_fields(&marked), ["cause"]);
    let tuple = [
        "Io(#[from] io::Error),",
        "#[error(\"next\")]",
        "Other { source: E },",
    ];
    assert_eq!(source_fields(&tuple), ["0"]);
    let one_line = [
        "Open { path: PathBuf, source: io::Error },",
        "#[error(\"x\")]",
    ];
    assert_eq!(source_fields(&one_line), ["source"]);
    let plain = ["Open { path: PathBuf, cause: io::Error },"];
    assert!(source_fields(&plain).is_empty());
    assert!(prints("#[error(\"x: {source}\")]", "source"));
    assert!(prints("#[error(\"x: {0:?}\")]", "0"));
    assert!(!prints("#[error(\"x: {cause}\")]", "source"));
}
