//! docs/ARCHITECTURE.md's crate graph is the workspace's: the block after
//! the `crate graph` marker lists each crate's direct wirelab dependencies
//! exactly as the crates' Cargo.tomls do.

use std::path::Path;

const MARKER: &str =
    "<!-- crate graph: checked by crates/wirelab/tests/integration/architecture.rs -->\n```text\n";

/// The package name and the `wirelab*` keys of `[dependencies]` of one
/// Cargo.toml (the workspace's manifests use `name = "…"` and one
/// dependency per line).
fn package_and_wirelab_deps(text: &str) -> (String, Vec<String>) {
    let mut section = "";
    let mut name = None;
    let mut deps = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line;
            continue;
        }
        let key = line.split(['=', '.', ' ']).next().unwrap_or("");
        match section {
            "[package]" if key == "name" => {
                name = line.split('"').nth(1).map(str::to_string);
            }
            "[dependencies]" if key.starts_with("wirelab") => deps.push(key.to_string()),
            _ => {}
        }
    }
    (name.expect("a [package] name"), deps)
}

/// `name -> dep, dep` per crate, sorted by crate directory, from the Cargo.tomls.
fn graph_from_manifests(crates: &Path) -> String {
    let mut dirs: Vec<_> = std::fs::read_dir(crates)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("Cargo.toml").is_file())
        .collect();
    dirs.sort();
    let rows: Vec<(String, Vec<String>)> = dirs
        .iter()
        .map(|d| {
            let text = std::fs::read_to_string(d.join("Cargo.toml")).unwrap();
            let (name, mut deps) = package_and_wirelab_deps(&text);
            deps.sort();
            (name, deps)
        })
        .collect();
    let width = rows.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
    rows.iter()
        .map(|(n, d)| {
            let deps = if d.is_empty() {
                "(none)".to_string()
            } else {
                d.join(", ")
            };
            format!("{n:<width$} -> {deps}\n")
        })
        .collect()
}

#[test]
fn architecture_graph_equals_the_cargo_manifests() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let doc = std::fs::read_to_string(root.join("docs/ARCHITECTURE.md")).unwrap();
    let start = doc
        .find(MARKER)
        .expect("docs/ARCHITECTURE.md has the crate graph marker")
        + MARKER.len();
    let end = start + doc[start..].find("```").expect("the graph block is closed");
    let want = graph_from_manifests(&root.join("crates"));
    assert_eq!(
        &doc[start..end],
        want,
        "docs/ARCHITECTURE.md's crate graph differs from the Cargo.tomls; the block should read:\n{want}"
    );
}
