//! Every stage list the docs and tests show, with what it parses to
//! (canonical form or error message), pinned in `spec_examples.tsv`: a
//! change to the parser, the validators or the formatter that changes any
//! of them fails here. `WIRELAB_BLESS=1` rewrites the file (review the
//! diff).

use super::LinkConfig;

const FILE: &str = "src/spec_examples.tsv";

fn outcome(spec: &str) -> String {
    match LinkConfig::parse(spec) {
        Ok(c) => {
            let printed = c.to_string();
            assert_eq!(
                LinkConfig::parse(&printed).as_ref(),
                Ok(&c),
                "{spec} -> {printed}"
            );
            format!("ok: {printed}")
        }
        Err(e) => format!("err: {e}"),
    }
}

#[test]
fn every_example_parses_and_prints_as_pinned() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(FILE);
    let pinned = std::fs::read_to_string(&path).unwrap();
    let mut now = String::new();
    let mut differ = Vec::new();
    for line in pinned.lines() {
        let (spec, want) = line.split_once('\t').unwrap_or((line, ""));
        let got = outcome(spec);
        if got != want {
            differ.push(format!("{spec}\n  pinned: {want}\n  now:    {got}"));
        }
        now += &format!("{spec}\t{got}\n");
    }
    if std::env::var_os("WIRELAB_BLESS").is_some() {
        std::fs::write(&path, now).unwrap();
        return;
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
    assert!(pinned.lines().count() > 300, "the examples are all there");
}
