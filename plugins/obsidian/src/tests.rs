use super::*;
use proptest::prelude::*;

const DEPLOY: &str = include_str!("../../../tests/fixtures/adapters/vault/Deploy checklist.md");
const STAGING: &str = include_str!("../../../tests/fixtures/adapters/vault/Staging cluster.md");
const MEETING: &str = include_str!("../../../tests/fixtures/adapters/vault/Meeting 2025-03-04.md");

fn note(name: &str, text: &str) -> Entry {
    parse(name, text, "note").unwrap().unwrap()
}

#[test]
fn front_matter_becomes_kind_tags_and_attributes() {
    let e = note("Deploy checklist.md", DEPLOY);
    assert_eq!(e.kind, "decision");
    assert_eq!(e.tags, vec!["ops".to_string(), "deploy".into()]);
    assert_eq!(e.attribute("owner"), Some("Sam Okafor"));
    assert_eq!(e.attribute("created"), Some("2025-02-11"));
    assert_eq!(e.attribute(NOTE_ATTR), Some("Deploy checklist"));
    assert_eq!(e.lines, Some(LineRange::new(9, 12)));
    assert!(e.content.starts_with("# Deploy checklist"));
    assert_eq!(
        e.attribute(LINKS_ATTR),
        Some("Staging cluster\nRunbook - rollback")
    );
}

#[test]
fn block_lists_and_heading_links_are_read() {
    let e = note("vault/Staging cluster.md", STAGING);
    assert_eq!(e.kind, "note");
    assert_eq!(e.tags, vec!["infra".to_string(), "k8s".into()]);
    assert_eq!(e.attribute("aliases"), Some("staging,stg"));
    assert_eq!(e.attribute(LINKS_ATTR), Some("Deploy checklist"));
    assert_eq!(e.lines, Some(LineRange::new(8, 11)));
}

#[test]
fn a_note_without_front_matter_is_one_entry() {
    let e = note("Meeting 2025-03-04.md", MEETING);
    assert_eq!(e.lines, Some(LineRange::new(1, 2)));
    assert!(e.tags.is_empty());
    assert_eq!(e.attribute(LINKS_ATTR), Some("Deploy checklist"));
}

#[test]
fn an_empty_note_has_no_entry() {
    assert_eq!(
        parse("x.md", "---\ntags: [a]\n---\n\n", "note").unwrap(),
        None
    );
}

#[test]
fn export_then_import_keeps_content_kind_tags_and_attributes() {
    for (name, text) in [
        ("Deploy checklist.md", DEPLOY),
        ("Staging cluster.md", STAGING),
    ] {
        let first = note(name, text);
        let rendered = render_note(&first);
        let second = note(name, &rendered);
        assert_eq!(
            (&first.content, &first.kind, &first.tags),
            (&second.content, &second.kind, &second.tags),
            "{rendered}"
        );
        let mut a = first.attributes.clone();
        let mut b = second.attributes.clone();
        a.sort();
        b.sort();
        assert_eq!(a, b, "{rendered}");
    }
}

#[test]
fn malformed_front_matter_is_a_structured_error() {
    for bad in [
        "---\ntags: [a, b\n---\nbody",
        "---\ntitle: x\nbody without a close",
        "---\nnested:\n  key: value\n---\nbody",
        "---\njust words\n---\nbody",
        "---\ndesc: |\n  block\n---\nbody",
        "---\nm: {a: 1}\n---\nbody",
        "---\nx: [[a]]\n---\nbody",
        "---\n- orphan\n---\nbody",
        "---\na: 1\na: 2\n---\nbody",
    ] {
        let err = parse("n.md", bad, "note").unwrap_err();
        assert_eq!(err.code, "invalid_input", "{bad}: {}", err.message);
    }
    let huge = format!("---\nk: {}\n---\nbody", "v".repeat(MAX_VALUE_CHARS + 1));
    assert!(
        parse("n.md", &huge, "note")
            .unwrap_err()
            .message
            .contains("longer")
    );
    let many: String = (0..=MAX_KEYS).map(|i| format!("k{i}: v\n")).collect();
    assert!(parse("n.md", &format!("---\n{many}---\nbody"), "note").is_err());
}

#[test]
fn wiki_links_take_the_note_part() {
    assert_eq!(
        wiki_links("[[a]] [[b#h|alias]] [[a]] [[folder/c.md]] [[ ]] [[open"),
        vec!["a".to_string(), "b".into(), "c".into()]
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Whatever the note, an import answers (an entry, none, or invalid_input).
    #[test]
    fn arbitrary_notes_never_panic(s in "(---\n)?([a-z]{0,4}(: )?(\\[|\\]|- |  |\\[\\[|\\]\\]|\\|)?[a-z ]{0,6}\n){0,20}(---\n)?[a-z\\[\\] ]{0,20}") {
        match parse("n.md", &s, "note") {
            Ok(Some(e)) => prop_assert!(!e.content.trim().is_empty()),
            Ok(None) => {}
            Err(e) => prop_assert_eq!(e.code, "invalid_input"),
        }
    }

    /// Rendered front matter reads back the same values.
    #[test]
    fn scalar_values_round_trip(v in "[ -~]{1,30}") {
        prop_assume!(!v.trim().is_empty() && v.trim() == v);
        let mut e = Entry::new("note", "body");
        e.attributes.push(("k".into(), v.clone()));
        let back = parse("n.md", &render_note(&e), "note").unwrap().unwrap();
        prop_assert_eq!(back.attribute("k"), Some(v.as_str()));
    }
}
