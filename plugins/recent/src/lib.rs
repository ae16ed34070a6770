//! `recent`: weighs each candidate's retrieval score by its age, with an
//! exponential half-life (`half_life_days`, default 30), so fresh items win
//! ties and stale ones fade without vanishing. Pinned items and binding
//! rules (`constraint`) do not decay. The age is taken from `event_at_ms`,
//! falling back to `created_at_ms`, against the query's `now_ms`.

use mem_plugin_sdk::types::*;
use mem_plugin_sdk::{Selector, config};

pub struct Recent;

const DAY_MS: f64 = 86_400_000.0;

/// The score weighted by recency.
pub fn weighted(c: &Candidate, now_ms: i64, half_life_days: f64) -> f64 {
    let base = f64::from(c.score.max(0.0)) + 1e-6;
    if c.pinned || c.role.as_deref() == Some("constraint") {
        return base;
    }
    let age_days = ((now_ms - c.when_ms()).max(0) as f64) / DAY_MS;
    base * 0.5f64.powf(age_days / half_life_days)
}

pub fn order(
    candidates: Vec<Candidate>,
    now_ms: i64,
    half_life_days: f64,
    limit: u32,
) -> Vec<String> {
    let mut scored: Vec<(f64, usize, Candidate)> = candidates
        .into_iter()
        .enumerate()
        .map(|(i, c)| (weighted(&c, now_ms, half_life_days), i, c))
        .collect();
    // Stable: equal weights keep the previous stage's order.
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    scored
        .into_iter()
        .take(limit as usize)
        .map(|(_, _, c)| c.id)
        .collect()
}

impl Selector for Recent {
    fn select(
        candidates: Vec<Candidate>,
        query: Query,
        limit: u32,
    ) -> Result<Vec<String>, PluginError> {
        let half_life = config::get_or("half_life_days", 30.0f64);
        if !(half_life.is_finite() && half_life > 0.0) {
            return Err(PluginError::new(
                "invalid_config",
                "half_life_days must be a positive number",
            ));
        }
        Ok(order(candidates, query.now_ms, half_life, limit))
    }
}

mem_plugin_sdk::export_plugin!(selector: Recent);

#[cfg(test)]
mod tests {
    use super::*;

    fn cand(id: &str, score: f32, age_days: i64, role: Option<&str>) -> Candidate {
        Candidate {
            id: id.into(),
            kind: "fact".into(),
            role: role.map(Into::into),
            text: String::new(),
            path: "/".into(),
            score,
            created_at_ms: 1_000 * DAY_MS as i64 - age_days * DAY_MS as i64,
            event_at_ms: None,
            pinned: false,
            confidence: 1.0,
            tags: vec![],
        }
    }

    #[test]
    fn fresh_beats_stale_at_equal_score_and_rules_do_not_decay() {
        let now = 1_000 * DAY_MS as i64;
        let c = vec![
            cand("old", 1.0, 90, None),
            cand("new", 1.0, 1, None),
            cand("rule", 0.6, 900, Some("constraint")),
        ];
        assert_eq!(order(c, now, 30.0, 10), vec!["new", "rule", "old"]);
    }

    #[test]
    fn much_better_score_survives_moderate_age() {
        let now = 1_000 * DAY_MS as i64;
        let c = vec![
            cand("weak-new", 0.2, 0, None),
            cand("strong-old", 1.0, 30, None),
        ];
        assert_eq!(order(c, now, 30.0, 1), vec!["strong-old"]);
    }
}
