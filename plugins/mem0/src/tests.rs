use super::*;
use proptest::prelude::*;

const EXPORT: &str = include_str!("../../../tests/fixtures/adapters/mem0-export.json");

#[test]
fn a_results_export_becomes_entries_citing_their_objects() {
    let e = parse(EXPORT).unwrap();
    assert_eq!(e.len(), 6);
    assert_eq!(
        e[0].content,
        "Prefers dark roast coffee, brewed with an AeroPress"
    );
    assert_eq!(e[0].kind, "fact");
    assert_eq!(e[0].lines, Some(LineRange::new(3, 12)));
    assert_eq!(e[0].tags, vec!["food".to_string(), "preferences".into()]);
    assert_eq!(
        e[0].attribute("mem0_id"),
        Some("3f1c9a2e-7b41-4d2a-9c1e-5a8f0d6b2e11")
    );
    assert_eq!(e[0].attribute("updated_at"), None);
    assert_eq!(e[1].attribute("meta.confidence"), Some("0.9"));
    assert_eq!(e[3].kind, "decision");
    assert_eq!(e[3].attribute("agent_id"), Some("planner"));
    assert_eq!(e[5].attribute("meta.tags"), Some(r#"["infra","k8s"]"#));
    assert_eq!(e[5].lines.map(|l| l.end), Some(65));
}

#[test]
fn a_plain_list_is_an_export_too() {
    let e = parse(
        r#"[{"id":"a","memory":"Likes tea"},
 {"id":"b","memory":"Lives in Porto","metadata":{"kind":"note"}}]"#,
    )
    .unwrap();
    assert_eq!(e.len(), 2);
    assert_eq!(e[0].lines, Some(LineRange::new(1, 1)));
    assert_eq!(e[1].lines, Some(LineRange::new(2, 2)));
    assert_eq!(e[1].kind, "note");
}

#[test]
fn other_root_keys_do_not_shift_the_locators() {
    let doc = "{\"relations\": [{\"source\": \"x\"}],\n \"results\": [\n {\"memory\": \"m\"}\n]}";
    let e = parse(doc).unwrap();
    assert_eq!(e[0].lines, Some(LineRange::new(3, 3)));
}

#[test]
fn export_then_import_keeps_content_kinds_and_tags() {
    let first = parse(EXPORT).unwrap();
    let second = parse(&render(&first)).unwrap();
    let view = |v: &[Entry]| {
        v.iter()
            .map(|e| {
                (
                    e.content.clone(),
                    e.kind.clone(),
                    e.tags.clone(),
                    e.attributes.clone(),
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(view(&first), view(&second));
}

#[test]
fn malformed_exports_are_structured_errors() {
    for bad in [
        "",
        "{",
        "{\"results\": 3}",
        "{\"memories\": []}",
        "[1]",
        "[{\"id\": \"x\"}]",
        "[{\"memory\": \"   \"}]",
        "[{\"memory\": {\"nested\": true}}]",
        "[{\"memory\": \"m\", \"categories\": \"food\"}]",
        "[{\"memory\": \"m\", \"metadata\": [1]}]",
    ] {
        let err = parse(bad).unwrap_err();
        assert_eq!(err.code, "invalid_input", "{bad}: {}", err.message);
    }
}

#[test]
fn deep_nesting_and_huge_fields_are_refused() {
    let deep = format!("[{}{}]", "[".repeat(5000), "]".repeat(5000));
    assert_eq!(parse(&deep).unwrap_err().code, "invalid_input");
    let huge = format!("[{{\"memory\": \"{}\"}}]", "x".repeat(MAX_FIELD_CHARS + 1));
    assert!(parse(&huge).unwrap_err().message.contains("longer than"));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Whatever the bytes, an import answers (entries or invalid_input), never panics.
    #[test]
    fn arbitrary_text_never_panics(s in "[\\[\\]{}\",:a-z0-9 \\\\\n]{0,200}") {
        match parse(&s) {
            Ok(entries) => prop_assert!(entries.iter().all(|e| !e.content.trim().is_empty())),
            Err(e) => prop_assert_eq!(e.code, "invalid_input"),
        }
    }

    /// Locators always name lines of the document, in order.
    #[test]
    fn locators_stay_inside_the_document(n in 1usize..8, pad in 0usize..4) {
        let items: Vec<String> = (0..n).map(|i| format!("{{\"memory\": \"m{i}\"}}")).collect();
        let doc = format!("[{}{}]", "\n".repeat(pad), items.join(",\n"));
        let e = parse(&doc).unwrap();
        let total = u32::try_from(doc.lines().count()).unwrap_or(u32::MAX);
        prop_assert_eq!(e.len(), n);
        for w in e.windows(2) {
            prop_assert!(w[0].lines.unwrap().end < w[1].lines.unwrap().start);
        }
        prop_assert!(e.iter().all(|x| x.lines.unwrap().end <= total));
    }
}
