//! The registry is well formed, and docs/run.md's control-file section shows
//! exactly its tables, in its order. `WIRELAB_BLESS=1` rewrites the docs'
//! tables from the registry, keeping the prose around them: the text before
//! the first table, and after each table the text up to the next one.

use super::*;

const DOCS: &str = include_str!("../../../../../docs/run.md");
/// The docs' path from the crate.
const DOCS_PATH: &str = "../../docs/run.md";
/// The heading of the section the tables are in; it ends at the next heading.
const HEADING: &str = "## The control file";

/// `s` as the docs show it.
fn render(s: &Section) -> String {
    let mut t = format!(
        "| `{}` | required | default | meaning |\n|---|---|---|---|\n",
        s.header
    );
    for k in s.keys() {
        let required = if k.required { "yes" } else { "" };
        t.push_str(&format!(
            "| `{}` | {required} | {} | {} |\n",
            k.name, k.default, k.meaning
        ));
    }
    t
}

/// A run of lines of the docs' section: a table or the prose between tables.
#[derive(Debug)]
enum Chunk {
    Table(String),
    Prose(String),
}

/// `docs` as the text up to the section's heading line (included), the
/// section's chunks, and the rest.
fn split(docs: &str) -> (String, Vec<Chunk>, String) {
    let lines: Vec<&str> = docs.split_inclusive('\n').collect();
    let h = lines
        .iter()
        .position(|l| l.trim_end() == HEADING)
        .unwrap_or_else(|| panic!("docs/run.md has no {HEADING:?}"));
    let mut fenced = false;
    let mut end = lines.len();
    let mut chunks: Vec<Chunk> = Vec::new();
    for (i, l) in lines.iter().enumerate().skip(h + 1) {
        if l.starts_with("```") {
            fenced = !fenced;
        }
        if !fenced && l.starts_with('#') {
            end = i;
            break;
        }
        let table = !fenced && l.starts_with('|');
        match (chunks.last_mut(), table) {
            (Some(Chunk::Table(t)), true) | (Some(Chunk::Prose(t)), false) => t.push_str(l),
            (_, true) => chunks.push(Chunk::Table(l.to_string())),
            (_, false) => chunks.push(Chunk::Prose(l.to_string())),
        }
    }
    (lines[..=h].concat(), chunks, lines[end..].concat())
}

/// The first cell of a table's first line: the section it is for.
fn section_of(table: &str) -> &str {
    table.split('|').nth(1).unwrap_or("").trim()
}

/// Each table's rows prefixed by its section, for a readable difference.
fn rows<'a>(tables: impl Iterator<Item = &'a str>) -> Vec<String> {
    tables
        .flat_map(|t| {
            let section = section_of(t);
            t.lines().skip(2).map(move |r| format!("{section} {r}"))
        })
        .collect()
}

/// `docs` with its tables replaced by the registry's, each followed by the
/// prose that followed the docs' table of the same section (the same first
/// cell).
fn blessed(docs: &str) -> String {
    let (head, chunks, tail) = split(docs);
    let mut out = head;
    let mut after: Vec<(String, String)> = Vec::new();
    let mut it = chunks.iter().peekable();
    while let Some(Chunk::Prose(p)) = it.peek() {
        out.push_str(p);
        it.next();
    }
    let mut current: Option<String> = None;
    for c in it {
        match c {
            Chunk::Table(t) => current = Some(section_of(t).to_string()),
            Chunk::Prose(p) => {
                if let Some(h) = &current {
                    after.push((h.clone(), p.clone()));
                }
            }
        }
    }
    for s in SECTIONS {
        let table = render(s);
        out.push_str(&table);
        match after.iter().find(|(h, _)| h == section_of(&table)) {
            Some((_, p)) => out.push_str(p),
            None => out.push('\n'),
        }
    }
    out + &tail
}

#[test]
fn the_docs_show_the_registry() {
    if std::env::var_os("WIRELAB_BLESS").is_some() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(DOCS_PATH);
        let now = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, blessed(&now)).unwrap();
        return;
    }
    let (_, chunks, _) = split(DOCS);
    let docs: Vec<&str> = chunks
        .iter()
        .filter_map(|c| match c {
            Chunk::Table(t) => Some(t.as_str()),
            Chunk::Prose(_) => None,
        })
        .collect();
    let registry: Vec<String> = SECTIONS.iter().map(|s| render(s)).collect();
    if docs != registry {
        let (d, r) = (
            rows(docs.iter().copied()),
            rows(registry.iter().map(String::as_str)),
        );
        let gone = d
            .iter()
            .filter(|l| !r.contains(l))
            .map(|l| format!("- {l}"));
        let came = r
            .iter()
            .filter(|l| !d.contains(l))
            .map(|l| format!("+ {l}"));
        let diff: Vec<String> = gone.chain(came).collect();
        panic!(
            "docs/run.md's control-file tables differ from the key registry \
             (- docs, + registry{}); WIRELAB_BLESS=1 rewrites them:\n{}",
            if diff.is_empty() {
                "; the order differs"
            } else {
                ""
            },
            diff.join("\n")
        );
    }
}

#[test]
fn blessing_keeps_the_prose_and_places_each_table() {
    let docs = format!(
        "intro\n{HEADING}\n\nbefore\n\n| `[campaign]` | old |\n|---|\n\nafter campaign\n\n\
         | `[gone]` | x |\ngone's prose\n### Next\n```\n# not a heading\n```\n"
    );
    let out = blessed(&docs);
    assert!(
        out.starts_with(&format!("intro\n{HEADING}\n\nbefore\n\n")),
        "{out}"
    );
    assert!(
        out.contains(&format!("{}\nafter campaign\n\n", render(&CAMPAIGN))),
        "{out}"
    );
    assert!(!out.contains("gone"), "{out}");
    assert!(
        out.ends_with("### Next\n```\n# not a heading\n```\n"),
        "{out}"
    );
    let (_, chunks, _) = split(&out);
    let tables = chunks
        .iter()
        .filter(|c| matches!(c, Chunk::Table(_)))
        .count();
    assert_eq!(tables, SECTIONS.len());
    let mut at = 0;
    for s in SECTIONS {
        let t = render(s);
        let i = out[at..]
            .find(&t)
            .unwrap_or_else(|| panic!("{} not in order: {out}", s.path()));
        at += i + t.len();
    }
    assert_eq!(blessed(&out), out, "blessing twice changes nothing");
}

#[test]
fn every_string_is_one_table_cell() {
    for s in SECTIONS {
        for k in s.keys() {
            for x in [k.name, k.default, k.meaning] {
                assert!(!x.contains(['|', '\n']), "{}.{}: {x:?}", s.path(), k.name);
            }
            assert!(
                !k.meaning.is_empty(),
                "{}.{} has no meaning",
                s.path(),
                k.name
            );
        }
    }
}

#[test]
fn names_are_unique_and_sub_tables_are_keys_of_their_parent() {
    for (i, s) in SECTIONS.iter().enumerate() {
        assert!(
            SECTIONS[..i].iter().all(|o| o.path() != s.path()),
            "{} twice",
            s.path()
        );
        let p = s.path();
        assert!(
            [format!("[{p}]"), format!("[[{p}]]")].contains(&s.header.to_string()),
            "{}: a header is [PATH] or [[PATH]]",
            s.header
        );
        let names: Vec<&str> = s.keys().map(|k| k.name).collect();
        for (j, n) in names.iter().enumerate() {
            assert!(!names[..j].contains(n), "{}.{n} twice", s.path());
        }
        if let Some((parent, last)) = s.path().rsplit_once('.') {
            if is_placeholder(last) {
                continue;
            }
            let p = SECTIONS
                .iter()
                .find(|o| o.path() == parent)
                .unwrap_or_else(|| panic!("{}: no section {parent}", s.path()));
            assert!(p.names().contains(&last), "{parent} has no key {last}");
        }
    }
}

#[test]
fn placeholders_are_not_keys_a_file_writes() {
    assert_eq!(SWEEP.names(), ["exclude", "search"]);
    assert!(is_placeholder("KEY") && !is_placeholder("key") && !is_placeholder("a2b"));
}
