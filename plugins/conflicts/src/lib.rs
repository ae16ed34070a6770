//! `conflicts`: relates a new memory to existing ones of its scope.
//!
//! Only claims contradict. The host passes each memory's role: two
//! memories whose roles are state-like (`assertion`, `guidance`,
//! `constraint`) are claims about a state and may be `conflicts_with`;
//! anything else (an `occurrence` such as a run log or a numbered note, a
//! `symbol`, a file chunk) records a separate event, so alike wording makes
//! it at most `same_topic`.
//!
//! Two claims conflict when the rest of the claim is the same subject and
//! predicate and they differ by polarity (one side negated, or opposite
//! words such as works/broken) or by a number. A number in a series
//! (`note 2`, `3rd`, `5 times`) or in a dated log (`10:00`, `this
//! morning`, `2026-03-01`) is not a claim about a state. Each conflict
//! carries the differing part (`16` vs `17`). Near-identical claims are
//! `duplicate_of`; moderate overlap is `same_topic`. Scores are the
//! word-set Jaccard similarity.
//!
//! Settings: `duplicate_threshold` (0.85), `conflict_threshold` (0.45),
//! `topic_threshold` (0.3).

#[cfg(test)]
mod fixtures;
mod profile;
mod sketch;
mod words;

use mem_plugin_sdk::types::*;
use mem_plugin_sdk::{RelationDetector, config};

pub use profile::{Profile, profile};
use sketch::Sketch;

pub struct Conflicts;

/// Roles whose memories are claims about a state (the host's role table
/// decides a memory's role; this list only says which roles are claims).
pub const CLAIM_ROLES: &[&str] = &["assertion", "guidance", "constraint"];

fn is_claim(i: &Item) -> bool {
    i.role.as_deref().is_some_and(|r| CLAIM_ROLES.contains(&r))
}

#[derive(Debug, Clone, Copy)]
pub struct Thresholds {
    pub duplicate: f32,
    pub conflict: f32,
    pub topic: f32,
}

impl Default for Thresholds {
    fn default() -> Self {
        Self {
            duplicate: 0.85,
            conflict: 0.45,
            topic: 0.3,
        }
    }
}

/// How two texts compare.
enum Verdict {
    /// A contradiction: why, and what the subject / the candidate say.
    Conflict(String, String, String),
    /// Not a contradiction; the reason when the wording alone would suggest one.
    Other(Option<String>),
}

fn compare(s: &Profile, p: &Profile, sim: f32, t: Thresholds, claims: bool) -> Verdict {
    let opposite = s.opposite_to(p);
    let polarity_differs = s.negated != p.negated;
    if opposite.is_some() || polarity_differs {
        if !claims {
            return Verdict::Other(Some(
                "separate occurrences, not claims about one state".into(),
            ));
        }
        // The rest must be one subject and predicate: extra words on one
        // side (a qualifier) are fine, words only each side has are not.
        let (only_s, only_p) = s.residual(p, opposite);
        if sim >= t.conflict && (only_s.is_empty() || only_p.is_empty()) {
            return Verdict::Conflict(
                match opposite {
                    Some(_) => "same subject, opposite claims".into(),
                    None => "same subject, one side negates the other".into(),
                },
                s.polarity_part(p, opposite),
                p.polarity_part(s, opposite.map(|(a, b)| (b, a))),
            );
        }
        return Verdict::Other(None);
    }
    if s.numbers.is_empty() || p.numbers.is_empty() || s.same_numbers(p) {
        return Verdict::Other(None);
    }
    let (a, b) = s.number_difference(p);
    if !claims {
        return Verdict::Other(Some(format!(
            "separate occurrences ({a} vs {b}), not claims about one state"
        )));
    }
    if s.series || p.series {
        return Verdict::Other(Some(format!(
            "a series or dated log ({a} vs {b}), not one claim"
        )));
    }
    if s.stems() == p.stems() {
        return Verdict::Conflict("same subject and predicate, different numbers".into(), a, b);
    }
    Verdict::Other(Some(format!(
        "different numbers ({a} vs {b}) in different claims"
    )))
}

/// Relations from `subject` to the candidates.
pub fn relate(subject: &Item, candidates: &[Item], t: Thresholds) -> Vec<Relation> {
    let s = profile(&subject.text);
    // Every relation needs this much overlap, except a conflict between two
    // texts of numbers alone (no content words to overlap).
    let floor = t.topic.min(t.conflict).min(t.duplicate);
    let mut out = Vec::new();
    for c in candidates.iter().filter(|c| c.id != subject.id) {
        let sketch = Sketch::of(&c.text);
        let sim = s.sketch.similarity(&sketch);
        if sim < floor && !(s.sketch.is_empty() && sketch.is_empty()) {
            continue;
        }
        let p = profile(&c.text);
        let claims = is_claim(subject) && is_claim(c);
        let shared = || format!("{:.0}% of the words are shared", sim * 100.0);
        match compare(&s, &p, sim, t, claims) {
            Verdict::Conflict(why, this, other) => {
                let reason = format!("{why}: {this:?} vs {other:?}");
                out.push(
                    Relation::new("conflicts_with", c.id.clone(), sim, reason)
                        .with_difference(this, other),
                );
            }
            // A near-identical claim is a duplicate; a near-identical
            // occurrence is another event of the same kind.
            Verdict::Other(None) if claims && sim >= t.duplicate => {
                out.push(Relation::new("duplicate_of", c.id.clone(), sim, shared()));
            }
            Verdict::Other(note) if sim >= t.topic => {
                let reason = match note {
                    Some(n) => format!("{}; {n}", shared()),
                    None => shared(),
                };
                out.push(Relation::new("same_topic", c.id.clone(), sim, reason));
            }
            Verdict::Other(_) => {}
        }
    }
    out.sort_by(|a, b| b.score.total_cmp(&a.score));
    out
}

impl RelationDetector for Conflicts {
    fn detect(subject: Item, candidates: Vec<Item>) -> Result<Vec<Relation>, PluginError> {
        let d = Thresholds::default();
        let t = Thresholds {
            duplicate: config::get_or("duplicate_threshold", d.duplicate),
            conflict: config::get_or("conflict_threshold", d.conflict),
            topic: config::get_or("topic_threshold", d.topic),
        };
        Ok(relate(&subject, &candidates, t))
    }
}

mem_plugin_sdk::export_plugin!(relation_detector: Conflicts);

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn item(id: &str, role: &str, text: &str) -> Item {
        Item {
            id: id.into(),
            kind: "fact".into(),
            role: Some(role.into()),
            text: text.into(),
            path: "/".into(),
            tags: vec![],
        }
    }

    fn kinds(rels: &[Relation]) -> Vec<(&str, &str)> {
        rels.iter()
            .map(|r| (r.kind.as_str(), r.target.as_str()))
            .collect()
    }

    fn difference(r: &Relation) -> (&str, &str) {
        let d = r
            .difference
            .as_ref()
            .expect("a conflict carries its difference");
        (d.subject.as_str(), d.target.as_str())
    }

    #[test]
    fn claims_of_numbers_alone_still_compare_by_their_numbers() {
        // No content words to overlap: the overlap's shortcut must not
        // pass them over.
        let rels = relate(
            &item("s", "assertion", "16"),
            &[item("c", "assertion", "17"), item("d", "assertion", "16")],
            Thresholds::default(),
        );
        assert_eq!(kinds(&rels), [("conflicts_with", "c")]);
        assert_eq!(difference(&rels[0]), ("16", "17"));
    }

    #[test]
    fn finds_duplicates_conflicts_and_topics() {
        let s = item(
            "s",
            "assertion",
            "The staging database runs Postgres 16 on port 5432",
        );
        let c = vec![
            item(
                "dup",
                "assertion",
                "the staging database runs postgres 16 on port 5432",
            ),
            item(
                "num",
                "assertion",
                "The staging database runs Postgres 15 on port 5432",
            ),
            item(
                "neg",
                "assertion",
                "The staging database does not run Postgres 16 on port 5432",
            ),
            item(
                "topic",
                "assertion",
                "Postgres staging database backups run nightly",
            ),
            item("far", "assertion", "Lunch is at noon"),
            item("s", "assertion", "self is skipped"),
        ];
        let rels = relate(&s, &c, Thresholds::default());
        let got = kinds(&rels);
        assert!(got.contains(&("duplicate_of", "dup")), "{got:?}");
        assert!(got.contains(&("conflicts_with", "num")), "{got:?}");
        assert!(got.contains(&("conflicts_with", "neg")), "{got:?}");
        assert!(got.contains(&("same_topic", "topic")), "{got:?}");
        assert!(
            !got.iter().any(|(_, t)| *t == "far" || *t == "s"),
            "{got:?}"
        );
        assert!(rels.iter().all(|r| (0.0..=1.0).contains(&r.score)));
        let num = rels.iter().find(|r| r.target == "num").unwrap();
        assert_eq!(difference(num), ("16", "15"));
        let neg = rels.iter().find(|r| r.target == "neg").unwrap();
        assert_eq!(difference(neg), ("runs", "not run"));
    }

    #[test]
    fn opposite_words_conflict_with_their_difference() {
        let s = item(
            "s",
            "guidance",
            "Always enable telemetry in production builds",
        );
        let c = vec![item(
            "o",
            "guidance",
            "Always disable telemetry in production builds",
        )];
        let rels = relate(&s, &c, Thresholds::default());
        assert_eq!(kinds(&rels), vec![("conflicts_with", "o")]);
        assert_eq!(difference(&rels[0]), ("enable", "disable"));
        assert!(
            rels[0].reason.contains("\"enable\" vs \"disable\""),
            "{}",
            rels[0].reason
        );
    }

    #[test]
    fn occurrences_never_conflict_nor_duplicate() {
        let s = item("s", "occurrence", "I ran 5 km this morning");
        let c = vec![
            item("a", "occurrence", "I ran 8 km this morning"),
            item("b", "occurrence", "I ran 5 km this morning"),
            item("c", "occurrence", "I did not run this morning"),
        ];
        let rels = relate(&s, &c, Thresholds::default());
        assert!(rels.iter().all(|r| r.kind == "same_topic"), "{rels:?}");
        assert!(rels.iter().all(|r| r.difference.is_none()));
    }

    #[test]
    fn a_claim_and_an_occurrence_do_not_conflict() {
        let s = item("s", "assertion", "The staging deploy works");
        let c = vec![Item {
            role: Some("occurrence".into()),
            ..item("o", "", "The staging deploy is broken")
        }];
        let rels = relate(&s, &c, Thresholds::default());
        assert!(
            !kinds(&rels).iter().any(|(k, _)| *k == "conflicts_with"),
            "{rels:?}"
        );
    }

    #[test]
    fn an_item_without_a_role_is_no_claim() {
        let s = item("s", "assertion", "The staging deploy works");
        let c = vec![Item {
            role: None,
            ..item("o", "", "The staging deploy is broken")
        }];
        let rels = relate(&s, &c, Thresholds::default());
        assert!(
            !kinds(&rels).iter().any(|(k, _)| *k == "conflicts_with"),
            "{rels:?}"
        );
    }

    #[test]
    fn negating_another_subject_is_no_conflict() {
        let s = item("s", "assertion", "Ana can drive the van");
        let c = vec![item("o", "assertion", "Bob cannot drive the van")];
        let rels = relate(&s, &c, Thresholds::default());
        assert!(
            !kinds(&rels).iter().any(|(k, _)| *k == "conflicts_with"),
            "{rels:?}"
        );
    }

    #[test]
    fn hostile_texts_relate_without_panicking() {
        let long = "9 ".repeat(5000);
        let s = item("s", "assertion", &long);
        let c = vec![
            item("e", "assertion", ""),
            item("n", "assertion", "not not not never no"),
            item("u", "assertion", "Ünïcödé 16 ✓ can't 17:00 #3"),
            item("l", "assertion", &long),
        ];
        for subject in [&s, &c[0], &c[1], &c[2]] {
            let rels = relate(subject, &c, Thresholds::default());
            assert!(rels.iter().all(|r| (0.0..=1.0).contains(&r.score)));
        }
    }
}
