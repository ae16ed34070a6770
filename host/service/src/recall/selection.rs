//! The selection chain (`[plugins.selection]`): recall's orchestration of
//! selector plugins, one stage after another, each run by the plugin host.

use mem_core::plugin::{PluginHost, SelectCandidate, SelectQuery, SelectionOutcome, StageReport};
use std::collections::BTreeMap;

/// Runs the configured selection chain (`[plugins.selection]`): each
/// stage sees the previous stage's survivors in its order and keeps at
/// most its own limit, and the result is cut to `limit`. A failing
/// stage is bypassed (its input passes through, cut to its limit) and
/// reported, so recall degrades to `partial` instead of failing.
pub(crate) fn run_chain(
    host: &dyn PluginHost,
    candidates: &[SelectCandidate],
    query: &SelectQuery,
    limit: u32,
) -> SelectionOutcome {
    let chain = host.config().selection;
    let mut current: Vec<SelectCandidate> = candidates
        .iter()
        .take(chain.max_candidates as usize)
        .cloned()
        .collect();
    let mut stages = Vec::with_capacity(chain.stages.len());
    for stage in &chain.stages {
        let stage_limit = stage.limit.unwrap_or(u32::MAX);
        let input = current.len();
        match host.select(&stage.plugin, &current, query, stage_limit) {
            Ok(ids) => {
                let mut by_id: BTreeMap<&str, &SelectCandidate> =
                    current.iter().map(|c| (c.id.as_str(), c)).collect();
                let next: Vec<SelectCandidate> = ids
                    .iter()
                    .filter_map(|id| by_id.remove(id.as_str()).cloned())
                    .collect();
                stages.push(StageReport {
                    plugin: stage.plugin.clone(),
                    limit: stage_limit,
                    input,
                    output: next.len(),
                    error: None,
                });
                current = next;
            }
            Err(err) => {
                current.truncate(stage_limit as usize);
                stages.push(StageReport {
                    plugin: stage.plugin.clone(),
                    limit: stage_limit,
                    input,
                    output: current.len(),
                    error: Some(err),
                });
            }
        }
    }
    current.truncate(limit as usize);
    SelectionOutcome {
        ids: current.into_iter().map(|c| c.id).collect(),
        stages,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake_host::FakeHost;
    use mem_core::MemError;
    use mem_core::plugin::{PluginsConfig, SelectionChain, SelectionStage};

    fn candidate(id: &str) -> SelectCandidate {
        SelectCandidate {
            id: id.into(),
            kind: "fact".into(),
            role: None,
            text: id.into(),
            path: "/".into(),
            score: 1.0,
            created_at_ms: 0,
            event_at_ms: None,
            pinned: false,
            confidence: 1.0,
            tags: vec![],
        }
    }

    fn query() -> SelectQuery {
        SelectQuery {
            text: "q".into(),
            terms: vec![],
            now_ms: 0,
            path: None,
        }
    }

    /// Stages `(plugin, limit)`; `reverse` returns its input backwards,
    /// `evens` keeps every other one (plus an id it was not given), and
    /// `broken` fails.
    fn host(stages: &[(&str, Option<u32>)], max_candidates: u32) -> FakeHost {
        FakeHost {
            config: PluginsConfig {
                selection: SelectionChain {
                    stages: stages
                        .iter()
                        .map(|(p, l)| SelectionStage {
                            plugin: (*p).into(),
                            limit: *l,
                        })
                        .collect(),
                    max_candidates,
                },
                ..Default::default()
            },
            select: Box::new(|plugin, cands, limit| {
                let ids = cands.iter().map(|c| c.id.clone());
                let kept: Vec<String> = match plugin {
                    "reverse" => ids.rev().collect(),
                    "evens" => ids.step_by(2).chain(["ghost".to_string()]).collect(),
                    _ => return Err(MemError::internal("the stage trapped")),
                };
                Ok(kept.into_iter().take(limit as usize).collect())
            }),
            ..Default::default()
        }
    }

    fn ids(n: usize) -> Vec<SelectCandidate> {
        (0..n).map(|i| candidate(&format!("m{i}"))).collect()
    }

    #[test]
    fn stages_run_in_order_on_the_survivors_and_the_result_is_cut() {
        let h = host(&[("evens", None), ("reverse", Some(2))], 500);
        let out = run_chain(&h, &ids(6), &query(), 10);
        // evens keeps m0 m2 m4 (the id it invented is dropped); reverse
        // keeps two of them, in its own order.
        assert_eq!(out.ids, ["m4", "m2"]);
        assert_eq!(
            out.stages
                .iter()
                .map(|s| (s.input, s.output))
                .collect::<Vec<_>>(),
            [(6, 3), (3, 2)]
        );
        assert!(!out.partial());
        let out = run_chain(&h, &ids(6), &query(), 1);
        assert_eq!(out.ids, ["m4"]);
    }

    #[test]
    fn a_failing_stage_is_bypassed_cut_to_its_limit_and_reported() {
        let h = host(&[("broken", Some(3)), ("reverse", None)], 500);
        let out = run_chain(&h, &ids(5), &query(), 10);
        assert_eq!(out.ids, ["m2", "m1", "m0"]);
        assert!(out.partial());
        assert!(out.stages[0].error.is_some());
        assert_eq!((out.stages[0].input, out.stages[0].output), (5, 3));
    }

    #[test]
    fn the_first_stage_sees_at_most_max_candidates() {
        let h = host(&[("reverse", None)], 2);
        let out = run_chain(&h, &ids(5), &query(), 10);
        assert_eq!(out.ids, ["m1", "m0"]);
        assert_eq!(out.stages[0].input, 2);
    }
}
