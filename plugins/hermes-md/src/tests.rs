use super::*;
use proptest::prelude::*;

const MEMORY: &str = include_str!("../../../tests/fixtures/adapters/hermes/MEMORY.md");

#[test]
fn delimited_entries_keep_their_lines_and_become_facts() {
    let e = parse("MEMORY.md", MEMORY);
    assert_eq!(e.len(), 5);
    assert!(e.iter().all(|e| e.kind == "fact"));
    assert_eq!(e[2].lines, Some(LineRange::new(5, 6)));
    assert!(e[2].content.starts_with("CI runs on GitHub Actions"));
    assert!(e[2].content.ends_with("rerun once before investigating."));
    assert_eq!(e[4].lines, Some(LineRange::new(10, 10)));
}

#[test]
fn the_user_profile_holds_preferences() {
    let e = parse("memories/USER.md", "Prefers tabs\n§\nLives in Oslo\n");
    assert_eq!(e.len(), 2);
    assert!(e.iter().all(|e| e.kind == "preference"));
}

#[test]
fn the_rendered_snapshot_header_is_skipped() {
    let doc = "══════════════\nMEMORY (your personal notes) [67% — 1,474/2,200 chars]\n══════════════\nUses pnpm, not npm\n§\nDocker is installed\n";
    let e = parse("MEMORY.md", doc);
    let got: Vec<_> = e.iter().map(|e| (e.content.as_str(), e.lines)).collect();
    assert_eq!(
        got,
        [
            ("Uses pnpm, not npm", Some(LineRange::new(4, 4))),
            ("Docker is installed", Some(LineRange::new(6, 6)))
        ]
    );
}

#[test]
fn a_section_sign_inside_text_does_not_split() {
    let e = parse("MEMORY.md", "Cites Act 1987 § 13\n§\nSecond\n");
    assert_eq!(e.len(), 2);
    assert_eq!(e[0].content, "Cites Act 1987 § 13");
}

#[test]
fn markdown_sections_of_bullets_are_read_too() {
    let doc = "# Environment\n\n- Ubuntu 22.04\n- Docker installed,\n  Podman too\n\n## Conventions\n\nTabs in Makefiles only.\n";
    let e = parse("memory.md", doc);
    let got: Vec<_> = e
        .iter()
        .map(|e| (e.content.as_str(), e.section.join(">"), e.lines))
        .collect();
    assert_eq!(
        got,
        [
            (
                "Ubuntu 22.04",
                "Environment".into(),
                Some(LineRange::new(3, 3))
            ),
            (
                "Docker installed,\nPodman too",
                "Environment".into(),
                Some(LineRange::new(4, 5))
            ),
            (
                "Tabs in Makefiles only.",
                "Environment>Conventions".into(),
                Some(LineRange::new(9, 9))
            ),
        ]
    );
}

#[test]
fn export_then_import_keeps_every_entry() {
    let first = parse("MEMORY.md", MEMORY);
    let rendered = render("MEMORY.md", &first);
    let second = parse("MEMORY.md", &rendered);
    let view = |v: &[Entry]| {
        v.iter()
            .map(|e| (e.content.clone(), e.kind.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(view(&first), view(&second), "{rendered}");
    assert_eq!(rendered, MEMORY);
}

#[test]
fn kinds_the_file_name_does_not_imply_come_back_by_marker() {
    let e = vec![
        Entry::new("fact", "Uses pnpm"),
        Entry::new("task_state", "Migration half done"),
        Entry::new("preference", "Prefers tabs"),
    ];
    let rendered = render("MEMORY.md", &e);
    assert_eq!(rendered.matches("<!-- mem:kind=").count(), 2, "{rendered}");
    let back = parse("MEMORY.md", &rendered);
    let got: Vec<_> = back
        .iter()
        .map(|e| (e.content.as_str(), e.kind.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("Uses pnpm", "fact"),
            ("Migration half done", "task_state"),
            ("Prefers tabs", "preference")
        ]
    );
    let user = parse("USER.md", &render("USER.md", &e));
    assert_eq!(user[0].kind, "fact");
    assert_eq!(user[2].kind, "preference");
}

#[test]
fn an_entry_holding_a_delimiter_line_survives_export() {
    let e = vec![
        Entry::new("fact", "one\n§\ntwo"),
        Entry::new("fact", "three"),
    ];
    let back = parse("MEMORY.md", &render("MEMORY.md", &e));
    assert_eq!(back.len(), 2);
    assert_eq!(back[0].content, "one\n §\ntwo");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Whatever the text, every entry is non-empty and cites lines of the document.
    #[test]
    fn arbitrary_text_yields_bounded_entries(s in "(§|═+|#{1,3} |- |[a-z ]{0,12}|\n){0,60}") {
        let total = u32::try_from(s.lines().count()).unwrap_or(u32::MAX);
        for e in parse("MEMORY.md", &s) {
            prop_assert!(!e.content.trim().is_empty());
            let l = e.lines.unwrap();
            prop_assert!(1 <= l.start && l.start <= l.end && l.end <= total);
        }
    }

    /// Rendering then parsing keeps the entries' text.
    #[test]
    fn render_round_trips(items in proptest::collection::vec("[a-z§]{1,8}( [a-z]{1,8}){0,3}", 1..6)) {
        let entries: Vec<Entry> = items.iter().map(|t| Entry::new("fact", t.as_str())).collect();
        let back = parse("MEMORY.md", &render("MEMORY.md", &entries));
        let got: Vec<&str> = back.iter().map(|e| e.content.as_str()).collect();
        let want: Vec<&str> = items.iter().map(|s| s.trim()).collect();
        prop_assert_eq!(got, want);
    }
}
