//! Fusing the lexical and semantic lanes into one ranking.

use crate::lexical::LexHit;

/// One fused candidate before it is turned into an `IndexHit`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Fused {
    pub doc_id: String,
    pub score: f32,
    pub lexical_rank: Option<u32>,
    pub semantic_rank: Option<u32>,
    /// Raised by [`prefer_period`].
    pub in_period: bool,
}

/// How the lanes are combined.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Fusion {
    /// Reciprocal rank fusion: `sum 1/(k + rank)`. Kept to compare
    /// against (it measured worse, see `FUSION` in the crate root).
    #[allow(dead_code)]
    Rrf { k: f32 },
    /// Convex combination of per-query normalized scores: BM25 divided by
    /// the best BM25 of the query, cosine similarity min-max normalized
    /// over the lane's candidates.
    Linear { lexical_weight: f32 },
}

pub(crate) fn fuse(method: Fusion, lexical: &[LexHit], semantic: &[(String, f32)]) -> Vec<Fused> {
    let mut out: Vec<Fused> = Vec::with_capacity(lexical.len() + semantic.len());
    let find = |out: &mut Vec<Fused>, doc_id: &str| -> usize {
        match out.iter().position(|f| f.doc_id == doc_id) {
            Some(i) => i,
            None => {
                out.push(Fused {
                    doc_id: doc_id.to_string(),
                    score: 0.0,
                    lexical_rank: None,
                    semantic_rank: None,
                    in_period: false,
                });
                out.len() - 1
            }
        }
    };
    let lex_max = lexical.iter().map(|h| h.score).fold(0f32, f32::max);
    let sem_max = semantic.iter().map(|h| h.1).fold(f32::MIN, f32::max);
    let sem_min = semantic.iter().map(|h| h.1).fold(f32::MAX, f32::min);
    for (i, h) in lexical.iter().enumerate() {
        let j = find(&mut out, &h.doc_id);
        let rank = i as u32 + 1;
        out[j].lexical_rank = Some(rank);
        out[j].score += match method {
            Fusion::Rrf { k } => 1.0 / (k + rank as f32),
            Fusion::Linear { lexical_weight } => {
                lexical_weight
                    * if lex_max > 0.0 {
                        h.score / lex_max
                    } else {
                        0.0
                    }
            }
        };
    }
    for (i, (doc_id, sim)) in semantic.iter().enumerate() {
        let j = find(&mut out, doc_id);
        let rank = i as u32 + 1;
        out[j].semantic_rank = Some(rank);
        out[j].score += match method {
            Fusion::Rrf { k } => 1.0 / (k + rank as f32),
            Fusion::Linear { lexical_weight } => {
                let span = sem_max - sem_min;
                (1.0 - lexical_weight)
                    * if span > 0.0 {
                        (sim - sem_min) / span
                    } else {
                        1.0
                    }
            }
        };
    }
    out.sort_by(ranked);
    out
}

/// Best first: score, then the better lexical rank, then the better
/// semantic rank (deterministic for equal scores).
fn ranked(a: &Fused, b: &Fused) -> std::cmp::Ordering {
    b.score
        .total_cmp(&a.score)
        .then_with(|| {
            a.lexical_rank
                .unwrap_or(u32::MAX)
                .cmp(&b.lexical_rank.unwrap_or(u32::MAX))
        })
        .then_with(|| {
            a.semantic_rank
                .unwrap_or(u32::MAX)
                .cmp(&b.semantic_rank.unwrap_or(u32::MAX))
        })
}

/// Adds `boost` to the candidates `in_period` accepts and ranks again.
/// Only fused candidates are raised: a period makes relevant evidence from
/// then win over equally relevant evidence from other times, it does not
/// bring in what neither lane found.
pub(crate) fn prefer_period(fused: &mut [Fused], boost: f32, in_period: impl Fn(&str) -> bool) {
    for f in fused.iter_mut() {
        if in_period(&f.doc_id) {
            f.score += boost;
            f.in_period = true;
        }
    }
    fused.sort_by(ranked);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lex(ids: &[&str]) -> Vec<LexHit> {
        ids.iter()
            .enumerate()
            .map(|(i, d)| LexHit {
                key: 0,
                doc_id: d.to_string(),
                score: 10.0 - i as f32,
                matched: Vec::new(),
                addr: tantivy::DocAddress::new(0, i as u32),
            })
            .collect()
    }

    fn sem(ids: &[&str]) -> Vec<(String, f32)> {
        ids.iter()
            .enumerate()
            .map(|(i, d)| (d.to_string(), 0.9 - 0.1 * i as f32))
            .collect()
    }

    #[test]
    fn rrf_rewards_agreement_and_keeps_lane_ranks() {
        let f = fuse(
            Fusion::Rrf { k: 60.0 },
            &lex(&["a", "b", "c"]),
            &sem(&["c", "d"]),
        );
        assert_eq!(f[0].doc_id, "c", "in both lanes beats first in one: {f:?}");
        assert_eq!((f[0].lexical_rank, f[0].semantic_rank), (Some(3), Some(1)));
        assert_eq!(f.len(), 4);
        let d = f.iter().find(|x| x.doc_id == "d").unwrap();
        assert_eq!((d.lexical_rank, d.semantic_rank), (None, Some(2)));
    }

    #[test]
    fn linear_fusion_uses_normalized_scores() {
        let f = fuse(
            Fusion::Linear {
                lexical_weight: 1.0,
            },
            &lex(&["a", "b"]),
            &sem(&["b"]),
        );
        assert_eq!(f[0].doc_id, "a");
        let f = fuse(
            Fusion::Linear {
                lexical_weight: 0.0,
            },
            &lex(&["a", "b"]),
            &sem(&["b"]),
        );
        assert_eq!(f[0].doc_id, "b");
    }

    #[test]
    fn a_period_raises_its_candidates_by_the_boost_only() {
        let mut f = fuse(
            Fusion::Linear {
                lexical_weight: 1.0,
            },
            &lex(&["a", "b", "c"]),
            &[],
        );
        // Scores 1.0, 0.9, 0.8: a boost of 0.15 lifts c over b, not over a.
        prefer_period(&mut f, 0.15, |d| d == "c");
        let order: Vec<_> = f.iter().map(|h| (h.doc_id.as_str(), h.in_period)).collect();
        assert_eq!(order, [("a", false), ("c", true), ("b", false)]);
    }

    #[test]
    fn a_lane_alone_keeps_its_order() {
        let f = fuse(Fusion::Rrf { k: 60.0 }, &lex(&["x", "y"]), &[]);
        assert_eq!(
            f.iter().map(|h| h.doc_id.as_str()).collect::<Vec<_>>(),
            ["x", "y"]
        );
    }
}
