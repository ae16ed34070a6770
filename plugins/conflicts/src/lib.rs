//! `conflicts`: relates a new memory to existing ones by word overlap.
//! Near-identical wording is `duplicate_of`; similar wording with opposite
//! polarity (one side negated, or opposite words such as enable/disable)
//! or with different numbers is `conflicts_with`; moderate overlap is
//! `same_topic`. Scores are the word-set Jaccard similarity.
//!
//! Settings: `duplicate_threshold` (0.85), `conflict_threshold` (0.45),
//! `topic_threshold` (0.3).

use std::collections::BTreeSet;

use mem_plugin_sdk::text::{is_stopword, words};
use mem_plugin_sdk::types::*;
use mem_plugin_sdk::{RelationDetector, config};

pub struct Conflicts;

const NEGATIONS: &[&str] = &[
    "not",
    "no",
    "never",
    "don't",
    "doesn't",
    "isn't",
    "aren't",
    "cannot",
    "can't",
    "won't",
    "shouldn't",
    "mustn't",
    "without",
    "nor",
    "didn't",
    "wasn't",
];
const OPPOSITES: &[(&str, &str)] = &[
    ("enable", "disable"),
    ("enabled", "disabled"),
    ("true", "false"),
    ("allow", "deny"),
    ("allowed", "denied"),
    ("always", "never"),
    ("on", "off"),
    ("yes", "no"),
    ("use", "avoid"),
    ("prefer", "avoid"),
    ("include", "exclude"),
    ("increase", "decrease"),
    ("before", "after"),
    ("works", "broken"),
    ("working", "broken"),
    ("like", "dislike"),
    ("likes", "dislikes"),
];

/// The comparable view of a text.
pub struct Profile {
    /// Content words (no stopwords, negations or numbers).
    pub terms: BTreeSet<String>,
    pub numbers: BTreeSet<String>,
    pub negated: bool,
    pub all: BTreeSet<String>,
}

pub fn profile(text: &str) -> Profile {
    let all: BTreeSet<String> = words(text).collect();
    let negated = all
        .iter()
        .filter(|w| NEGATIONS.contains(&w.as_str()))
        .count()
        % 2
        == 1;
    let numbers = all
        .iter()
        .filter(|w| w.chars().any(|c| c.is_ascii_digit()))
        .cloned()
        .collect();
    let terms = all
        .iter()
        .filter(|w| {
            !is_stopword(w)
                && !NEGATIONS.contains(&w.as_str())
                && !w.chars().any(|c| c.is_ascii_digit())
        })
        .cloned()
        .collect();
    Profile {
        terms,
        numbers,
        negated,
        all,
    }
}

fn jaccard(a: &BTreeSet<String>, b: &BTreeSet<String>) -> f32 {
    let union = a.union(b).count();
    if union == 0 {
        return 0.0;
    }
    a.intersection(b).count() as f32 / union as f32
}

fn opposite_words(a: &Profile, b: &Profile) -> Option<(&'static str, &'static str)> {
    OPPOSITES.iter().copied().find(|(x, y)| {
        (a.all.contains(*x) && b.all.contains(*y) && !a.all.contains(*y) && !b.all.contains(*x))
            || (a.all.contains(*y)
                && b.all.contains(*x)
                && !a.all.contains(*x)
                && !b.all.contains(*y))
    })
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

/// Relations from `subject` to the candidates.
pub fn relate(subject: &Item, candidates: &[Item], t: Thresholds) -> Vec<Relation> {
    let s = profile(&subject.text);
    let mut out = Vec::new();
    for c in candidates.iter().filter(|c| c.id != subject.id) {
        let p = profile(&c.text);
        // Opposite words differ by design; compare the rest.
        let opposite = opposite_words(&s, &p);
        let (st, pt) = match opposite {
            Some((x, y)) => {
                let strip = |set: &BTreeSet<String>| {
                    set.iter()
                        .filter(|w| *w != x && *w != y)
                        .cloned()
                        .collect::<BTreeSet<_>>()
                };
                (strip(&s.terms), strip(&p.terms))
            }
            None => (s.terms.clone(), p.terms.clone()),
        };
        let sim = jaccard(&st, &pt);
        let numbers_differ =
            !s.numbers.is_empty() && !p.numbers.is_empty() && s.numbers != p.numbers;
        let polarity_differs = s.negated != p.negated;
        if sim >= t.conflict && (polarity_differs || numbers_differ || opposite.is_some()) {
            let why = if let Some((x, y)) = opposite {
                format!("same subject, opposite claims ({x} / {y})")
            } else if polarity_differs {
                "same subject, one side negates the other".to_string()
            } else {
                let a: Vec<&str> = s.numbers.iter().map(String::as_str).collect();
                let b: Vec<&str> = p.numbers.iter().map(String::as_str).collect();
                format!(
                    "same subject, different numbers ({} vs {})",
                    a.join(", "),
                    b.join(", ")
                )
            };
            out.push(Relation::new("conflicts_with", c.id.clone(), sim, why));
        } else if sim >= t.duplicate {
            out.push(Relation::new(
                "duplicate_of",
                c.id.clone(),
                sim,
                format!("{:.0}% of the words are shared", sim * 100.0),
            ));
        } else if sim >= t.topic {
            out.push(Relation::new(
                "same_topic",
                c.id.clone(),
                sim,
                format!("{:.0}% of the words are shared", sim * 100.0),
            ));
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

    fn item(id: &str, text: &str) -> Item {
        Item {
            id: id.into(),
            kind: "fact".into(),
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

    #[test]
    fn finds_duplicates_conflicts_and_topics() {
        let s = item("s", "The staging database runs Postgres 16 on port 5432");
        let c = vec![
            item("dup", "the staging database runs postgres 16 on port 5432"),
            item("num", "The staging database runs Postgres 15 on port 5432"),
            item(
                "neg",
                "The staging database does not run Postgres 16 on port 5432",
            ),
            item("topic", "Postgres staging database backups run nightly"),
            item("far", "Lunch is at noon"),
            item("s", "self is skipped"),
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
    }

    #[test]
    fn opposite_words_conflict() {
        let s = item("s", "Always enable telemetry in production builds");
        let c = vec![item("o", "Always disable telemetry in production builds")];
        assert_eq!(
            kinds(&relate(&s, &c, Thresholds::default())),
            vec![("conflicts_with", "o")]
        );
    }

    #[test]
    fn works_and_broken_conflict() {
        let s = item("s", "The staging deploy is broken");
        let c = vec![item("o", "The staging deploy works")];
        assert_eq!(
            kinds(&relate(&s, &c, Thresholds::default())),
            vec![("conflicts_with", "o")]
        );
    }
}
