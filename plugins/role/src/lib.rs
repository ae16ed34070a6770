//! `role`: the first selection stage. Binding rules come first, so no
//! later stage can cut them: pinned items, then by runtime role
//! (`constraint` > `guidance` > `assertion` > `occurrence` > `question` >
//! `symbol` > none), each group by retrieval score. Roles listed in the `drop_roles`
//! setting (comma separated) are removed.

use mem_plugin_sdk::types::*;
use mem_plugin_sdk::{Selector, config, take_ids};

pub struct Role;

/// Rank of a role: lower is kept first.
pub fn role_rank(role: Option<&str>) -> u8 {
    match role {
        Some("constraint") => 0,
        Some("guidance") => 1,
        Some("assertion") => 2,
        Some("occurrence") => 3,
        Some("question") => 4,
        Some("symbol") => 5,
        _ => 6,
    }
}

pub fn order(mut candidates: Vec<Candidate>, drop_roles: &[String], limit: u32) -> Vec<String> {
    candidates.retain(|c| c.pinned || !c.role.as_ref().is_some_and(|r| drop_roles.contains(r)));
    candidates.sort_by(|a, b| {
        b.pinned
            .cmp(&a.pinned)
            .then(role_rank(a.role.as_deref()).cmp(&role_rank(b.role.as_deref())))
            .then(b.score.total_cmp(&a.score))
    });
    take_ids(&candidates, limit)
}

impl Selector for Role {
    fn select(
        candidates: Vec<Candidate>,
        _query: Query,
        limit: u32,
    ) -> Result<Vec<String>, PluginError> {
        let drop: Vec<String> = config::get_or("drop_roles", String::new())
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect();
        Ok(order(candidates, &drop, limit))
    }
}

mem_plugin_sdk::export_plugin!(selector: Role);

#[cfg(test)]
mod tests {
    use super::*;

    pub fn cand(id: &str, role: Option<&str>, score: f32, pinned: bool) -> Candidate {
        Candidate {
            id: id.into(),
            kind: "fact".into(),
            role: role.map(Into::into),
            text: String::new(),
            path: "/".into(),
            score,
            created_at_ms: 0,
            event_at_ms: None,
            pinned,
            confidence: 1.0,
            tags: vec![],
        }
    }

    #[test]
    fn constraints_first_then_score_pinned_always() {
        let c = vec![
            cand("a", None, 0.9, false),
            cand("b", Some("constraint"), 0.1, false),
            cand("c", Some("guidance"), 0.5, false),
            cand("d", Some("question"), 0.8, true),
            cand("e", Some("guidance"), 0.7, false),
        ];
        assert_eq!(order(c.clone(), &[], 10), vec!["d", "b", "e", "c", "a"]);
        assert_eq!(order(c.clone(), &[], 2), vec!["d", "b"]);
        assert_eq!(
            order(c, &["question".into(), "guidance".into()], 10),
            vec!["d", "b", "a"]
        );
    }
}
