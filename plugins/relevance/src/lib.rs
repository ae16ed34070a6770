//! `relevance`: the last selection stage. Combines how many of the query's
//! terms a candidate contains (in its text, tags and path) with its
//! retrieval score, so the cut keeps what answers the question. Settings:
//! `term_weight` (default 0.6; the rest is the normalised retrieval score)
//! and `min_coverage` (default 0: keep candidates matching no term, ranked
//! last). Pinned items stay first.

use std::collections::BTreeSet;

use mem_plugin_sdk::text::{is_stopword, words};
use mem_plugin_sdk::types::*;
use mem_plugin_sdk::{Selector, config};

pub struct Relevance;

/// The query's terms: the planned ones, else the words of its text.
pub fn query_terms(q: &Query) -> BTreeSet<String> {
    let source: Vec<String> = if q.terms.is_empty() {
        words(&q.text).collect()
    } else {
        q.terms
            .iter()
            .flat_map(|t| words(t).collect::<Vec<_>>())
            .collect()
    };
    source.into_iter().filter(|w| !is_stopword(w)).collect()
}

/// Share of `terms` found in the candidate, in [0, 1].
pub fn coverage(c: &Candidate, terms: &BTreeSet<String>) -> f64 {
    if terms.is_empty() {
        return 0.0;
    }
    let mut have: BTreeSet<String> = words(&c.text).collect();
    have.extend(c.tags.iter().flat_map(|t| words(t).collect::<Vec<_>>()));
    have.extend(words(&c.path));
    let hits = terms
        .iter()
        .filter(|t| {
            have.contains(*t)
                || have
                    .iter()
                    .any(|h| h.starts_with(t.as_str()) && t.len() >= 4)
        })
        .count();
    hits as f64 / terms.len() as f64
}

pub fn order(
    candidates: Vec<Candidate>,
    query: &Query,
    term_weight: f64,
    min_coverage: f64,
    limit: u32,
) -> Vec<String> {
    let terms = query_terms(query);
    let max_score = candidates
        .iter()
        .map(|c| c.score)
        .fold(0.0f32, f32::max)
        .max(f32::MIN_POSITIVE);
    let mut scored: Vec<(bool, f64, usize, String)> = candidates
        .into_iter()
        .enumerate()
        .filter_map(|(i, c)| {
            let cov = coverage(&c, &terms);
            if !c.pinned && !terms.is_empty() && cov < min_coverage {
                return None;
            }
            let s =
                term_weight * cov + (1.0 - term_weight) * f64::from(c.score.max(0.0) / max_score);
            Some((c.pinned, s, i, c.id))
        })
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.total_cmp(&a.1)).then(a.2.cmp(&b.2)));
    scored
        .into_iter()
        .take(limit as usize)
        .map(|(_, _, _, id)| id)
        .collect()
}

impl Selector for Relevance {
    fn select(
        candidates: Vec<Candidate>,
        query: Query,
        limit: u32,
    ) -> Result<Vec<String>, PluginError> {
        let w = config::get_or("term_weight", 0.6f64).clamp(0.0, 1.0);
        let min = config::get_or("min_coverage", 0.0f64).clamp(0.0, 1.0);
        Ok(order(candidates, &query, w, min, limit))
    }
}

mem_plugin_sdk::export_plugin!(selector: Relevance);

#[cfg(test)]
mod tests {
    use super::*;

    fn cand(id: &str, text: &str, score: f32) -> Candidate {
        Candidate {
            id: id.into(),
            kind: "fact".into(),
            role: None,
            text: text.into(),
            path: "/notes".into(),
            score,
            created_at_ms: 0,
            event_at_ms: None,
            pinned: false,
            confidence: 1.0,
            tags: vec![],
        }
    }

    fn query(text: &str) -> Query {
        Query {
            text: text.into(),
            terms: vec![],
            now_ms: 0,
            path: None,
        }
    }

    #[test]
    fn term_coverage_outranks_a_slightly_better_score() {
        let c = vec![
            cand("off", "the weather is nice", 1.0),
            cand("on", "deploy with the staging database", 0.8),
            cand("half", "the database is postgres", 0.9),
        ];
        assert_eq!(
            order(
                c.clone(),
                &query("how do we deploy the database"),
                0.6,
                0.0,
                10
            ),
            vec!["on", "half", "off"]
        );
        assert_eq!(
            order(c, &query("deploy database"), 0.6, 0.5, 10),
            vec!["on", "half"]
        );
    }

    #[test]
    fn no_terms_keeps_score_order() {
        let c = vec![cand("a", "x", 0.1), cand("b", "y", 0.9)];
        assert_eq!(order(c, &query("the"), 0.6, 0.0, 10), vec!["b", "a"]);
    }
}
