//! The selection chain (`[plugins.selection]`): recall's orchestration of
//! selector plugins, one stage after another, each run by the plugin host.

use mem_core::MemResult;
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
) -> MemResult<SelectionOutcome> {
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
    Ok(SelectionOutcome {
        ids: current.into_iter().map(|c| c.id).collect(),
        stages,
    })
}
