//! The registry is well formed.

use super::*;

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
