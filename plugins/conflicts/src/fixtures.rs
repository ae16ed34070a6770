//! The detector's fixture set, both sides: true conflicts (claims about
//! one thing that disagree) and non-conflicts (separate events, series,
//! duplicates, different subjects). The test prints precision and recall;
//! the roles are those the host's role table gives the built-in kinds
//! (`fact` → assertion, `preference`/`decision` → guidance, `observation`/
//! `note` → occurrence).

use super::*;

/// Whether a pair should be `conflicts_with`, and if so the difference.
enum Expect {
    Conflict(&'static str, &'static str),
    /// Not a conflict; optionally the relation it should be instead.
    No(Option<&'static str>),
}
use Expect::*;

const A: &str = "assertion";
const G: &str = "guidance";
const O: &str = "occurrence";

/// (role, subject text, role, candidate text, expectation).
const FIXTURES: &[(&str, &str, &str, &str, Expect)] = &[
    // True conflicts.
    (
        A,
        "Staging uses Postgres 17",
        A,
        "Staging uses Postgres 16",
        Conflict("17", "16"),
    ),
    (
        A,
        "The staging deploy is broken",
        A,
        "The staging deploy works",
        Conflict("broken", "works"),
    ),
    (
        G,
        "Tom dislikes spicy food",
        G,
        "Tom likes spicy food",
        Conflict("dislikes", "likes"),
    ),
    (
        A,
        "Ana cannot drive the van",
        A,
        "Ana can drive the van",
        Conflict("cannot", "can"),
    ),
    (
        A,
        "The API rate limit is 200 requests per minute",
        A,
        "The API rate limit is 100 requests per minute",
        Conflict("200", "100"),
    ),
    (
        G,
        "Always disable telemetry in production builds",
        G,
        "Always enable telemetry in production builds",
        Conflict("disable", "enable"),
    ),
    (
        A,
        "The nightly backup job does not run on weekends",
        A,
        "The nightly backup job runs on weekends",
        Conflict("not run", "runs"),
    ),
    (
        A,
        "The cache is disabled in production",
        A,
        "The cache is enabled in production",
        Conflict("disabled", "enabled"),
    ),
    (
        A,
        "The login page works in Safari",
        A,
        "The login page is broken in Safari",
        Conflict("works", "broken"),
    ),
    (
        A,
        "Ana lives in Berlin",
        A,
        "Ana lives in Paris",
        Conflict("Berlin", "Paris"),
    ),
    // Non-conflicts: separate occurrences, series, dated logs, counters.
    (
        O,
        "I ran 8 km this morning",
        O,
        "I ran 5 km this morning",
        No(Some("same_topic")),
    ),
    (
        A,
        "I ran 8 km this morning",
        A,
        "I ran 5 km this morning",
        No(Some("same_topic")),
    ),
    (
        O,
        "garden note 2 about tomatoes",
        O,
        "garden note 1 about tomatoes",
        No(Some("same_topic")),
    ),
    (
        A,
        "garden note 3 about tomatoes",
        A,
        "garden note 1 about tomatoes",
        No(Some("same_topic")),
    ),
    (
        O,
        "Meeting with Ana at 15:00",
        O,
        "Meeting with Ana at 10:00",
        No(Some("same_topic")),
    ),
    (
        A,
        "Meeting with Ana at 15:00",
        A,
        "Meeting with Ana at 10:00",
        No(Some("same_topic")),
    ),
    (
        A,
        "Release 2026-03-02 shipped the new parser",
        A,
        "Release 2026-02-01 shipped the new parser",
        No(Some("same_topic")),
    ),
    (
        A,
        "I have visited Lisbon 4 times",
        A,
        "I have visited Lisbon 3 times",
        No(Some("same_topic")),
    ),
    (
        O,
        "The staging deploy is broken",
        O,
        "The staging deploy works",
        No(Some("same_topic")),
    ),
    // Non-conflicts: the same claim twice, or claims about other things.
    (
        G,
        "I prefer tabs over spaces",
        G,
        "I prefer tabs over spaces",
        No(Some("duplicate_of")),
    ),
    (
        G,
        "Tom likes spicy food",
        G,
        "Tom likes spicy food",
        No(Some("duplicate_of")),
    ),
    (
        A,
        "Bob cannot drive the van",
        A,
        "Ana can drive the van",
        No(Some("same_topic")),
    ),
    (
        A,
        "Staging uses Postgres 16 and Redis 7",
        A,
        "Staging uses Postgres 16",
        No(Some("same_topic")),
    ),
    (
        A,
        "Production runs 3 web servers",
        A,
        "Staging runs 2 web servers",
        No(Some("same_topic")),
    ),
    (
        A,
        "Lunch is at noon",
        A,
        "Staging uses Postgres 16",
        No(None),
    ),
];

#[test]
fn fixture_precision_and_recall() {
    let (mut tp, mut fp, mut fneg, mut tn) = (0u32, 0u32, 0u32, 0u32);
    let mut wrong = Vec::new();
    for (i, (sr, st, cr, ct, expect)) in FIXTURES.iter().enumerate() {
        let s = tests::item("s", sr, st);
        let c = tests::item("c", cr, ct);
        let rels = relate(&s, &[c], Thresholds::default());
        let conflict = rels.iter().find(|r| r.kind == "conflicts_with");
        match (expect, conflict) {
            (Conflict(a, b), Some(r)) => {
                tp += 1;
                let d = r
                    .difference
                    .as_ref()
                    .map(|d| (d.subject.as_str(), d.target.as_str()));
                if d != Some((a, b)) {
                    wrong.push(format!(
                        "#{i} {st:?}: difference {d:?}, want ({a:?}, {b:?})"
                    ));
                }
            }
            (Conflict(..), None) => fneg += 1,
            (No(_), Some(r)) => {
                fp += 1;
                wrong.push(format!(
                    "#{i} {st:?} vs {ct:?}: false conflict ({})",
                    r.reason
                ));
            }
            (No(want), None) => {
                tn += 1;
                let got = rels.first().map(|r| r.kind.as_str());
                if got != *want {
                    wrong.push(format!("#{i} {st:?} vs {ct:?}: {got:?}, want {want:?}"));
                }
            }
        }
    }
    let precision = f64::from(tp) / f64::from((tp + fp).max(1));
    let recall = f64::from(tp) / f64::from((tp + fneg).max(1));
    println!(
        "conflicts fixtures: {} pairs, tp {tp} fp {fp} fn {fneg} tn {tn}: precision {precision:.2}, recall {recall:.2}",
        FIXTURES.len()
    );
    assert!(wrong.is_empty(), "{wrong:#?}");
    // The one known miss: places are not known to exclude each other
    // (Berlin / Paris) without a model of the world.
    assert_eq!(fneg, 1, "recall changed: update the known misses");
    assert_eq!(fp, 0);
}
