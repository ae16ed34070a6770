//! Consolidation due: per scope, how many memories arrived since the last
//! consolidation there, so a person (or an agent reading `status` or the
//! catalog) knows when merging is worth a look. Counted from the tallies
//! ([`crate::tally`]): the memories a folder holds, or those after the
//! scope's last consolidation, never a pass over every memory.
//!
//! A scope is a top-level folder (`/` for memories at the root); a
//! consolidation is an applied `consolidate` proposal, and it covers the
//! scope of the memory it wrote. Memory ids are ULIDs, ordered by the time
//! they were minted, so "arrived after the consolidation" is "id greater
//! than the memory it wrote".

use std::collections::{BTreeMap, BTreeSet};

use mem_core::model::Lifecycle;
use mem_core::store::Table;
use mem_core::time::Timestamp;
use mem_core::{MemResult, VPath};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::records::scan_each;
use crate::tally::{self, Last};

/// Forgotten memories leave the path index, and these counts.
const FORGOTTEN: &str = Lifecycle::Forgotten.as_str();

/// One scope's consolidation state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ConsolidationScope {
    /// The top-level folder (`/` for memories at the root).
    pub scope: String,
    /// Memories written in the scope after its last consolidation (all of
    /// them when it never had one), counting only those the caller sees.
    pub since_last: u64,
    /// When the scope's last consolidation was applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_consolidated_at: Option<Timestamp>,
    /// `[memory] consolidate_after` in mem.toml.
    pub due_after: u64,
    /// `since_last` reached `due_after`.
    pub due: bool,
}

impl ConsolidationScope {
    /// One line for people: `/repo: 212 memories since the last
    /// consolidation (2026-12-01), due at 200`.
    pub fn summary(&self) -> String {
        let when = match &self.last_consolidated_at {
            Some(t) => format!("since the last consolidation ({})", t.format("%Y-%m-%d")),
            None => "never consolidated".to_string(),
        };
        let state = if self.due {
            format!("consolidation due (threshold {})", self.due_after)
        } else {
            format!("due at {}", self.due_after)
        };
        format!(
            "{}: {} memories {when}, {state}",
            self.scope, self.since_last
        )
    }
}

/// The top-level folder holding `path`.
pub(crate) fn scope_of(path: &str) -> &str {
    match path[1..].find('/') {
        Some(i) => &path[..i + 1],
        None if path == "/" => "/",
        None => path,
    }
}

impl crate::Service {
    /// Every scope holding memories `admits` lets through, in path order.
    /// From the tallies: per folder, its count, or when its scope was
    /// consolidated, the memories of the folder after that one.
    /// `tallied`: the tallies are there to read (the caller asked
    /// [`crate::Service::tallies_for_read`] once for its whole answer);
    /// else one pass over the proposals and the path index.
    pub(crate) fn consolidation(
        &self,
        admits: &dyn Fn(&VPath) -> bool,
        tallied: bool,
    ) -> MemResult<Vec<ConsolidationScope>> {
        if !tallied {
            return self.consolidation_by_pass(admits);
        }
        let store = self.store();
        let last = tally::consolidations(store)?;
        let mut since: BTreeMap<String, u64> = BTreeMap::new();
        let mut counted: BTreeSet<String> = BTreeSet::new();
        for t in tally::memories(store, &VPath::root())? {
            if t.lifecycle == FORGOTTEN || t.count.n <= 0 || !admits(&t.folder) {
                continue;
            }
            let scope = scope_of(t.folder.as_str()).to_string();
            let n = match last.get(&scope) {
                None => t.count.n as u64,
                Some(l) if counted.insert(t.folder.as_str().to_string()) => {
                    tally::count_after(store, &t.folder, &l.memory_id, FORGOTTEN)?
                }
                Some(_) => 0,
            };
            *since.entry(scope).or_default() += n;
        }
        Ok(self.scopes(since, &last))
    }

    fn scopes(
        &self,
        since: BTreeMap<String, u64>,
        last: &BTreeMap<String, Last>,
    ) -> Vec<ConsolidationScope> {
        let due_after = self.config().memory.consolidate_after;
        since
            .into_iter()
            .map(|(scope, since_last)| ConsolidationScope {
                last_consolidated_at: last.get(&scope).map(|l| l.at),
                scope,
                since_last,
                due_after,
                due: since_last >= due_after,
            })
            .collect()
    }

    /// [`Self::consolidation`] as one pass over the proposals and the path
    /// index: until the tallies are counted. Memory ids are ULIDs, ordered
    /// by the time they were minted, so "arrived after the consolidation"
    /// is "id greater than the memory it wrote".
    fn consolidation_by_pass(
        &self,
        admits: &dyn Fn(&VPath) -> bool,
    ) -> MemResult<Vec<ConsolidationScope>> {
        let last = tally::consolidations_by_pass(self.store())?;
        let mut since: BTreeMap<String, u64> = BTreeMap::new();
        // Keys are `{path}\0{id}`.
        scan_each(self.store(), Table::MemoryPaths, "", |key, _| {
            let Some((path, id)) = key.split_once('\0') else {
                return Ok(());
            };
            let Ok(vpath) = VPath::parse(path) else {
                return Ok(());
            };
            if !admits(&vpath) {
                return Ok(());
            }
            let scope = scope_of(path);
            let count = since.entry(scope.to_string()).or_default();
            if last.get(scope).is_none_or(|l| id > l.memory_id.as_str()) {
                *count += 1;
            }
            Ok(())
        })?;
        Ok(self.scopes(since, &last))
    }
}

#[cfg(test)]
mod tests {
    use super::scope_of;
    use crate::gate::ProposalOp;
    use crate::{Actor, ProposalRequest, RememberRequest, Service, WorkspaceConfig};
    use mem_core::VPath;
    use std::sync::Arc;

    fn req(content: &str, path: &str, key: &str) -> RememberRequest {
        RememberRequest {
            content: content.into(),
            kind: "fact".into(),
            path: path.into(),
            idempotency_key: key.into(),
            ..Default::default()
        }
    }

    #[test]
    fn a_scope_is_the_top_level_folder() {
        assert_eq!(scope_of("/"), "/");
        assert_eq!(scope_of("/repo"), "/repo");
        assert_eq!(scope_of("/repo/a/b"), "/repo");
    }

    #[test]
    fn status_counts_memories_since_the_last_consolidation_per_scope() {
        let mut cfg = WorkspaceConfig::default();
        cfg.memory.consolidate_after = 3;
        let dir = tempfile::tempdir().unwrap();
        let store = mem_store::SledStore::open(&dir.path().join("store")).unwrap();
        let svc = Service::new(Arc::new(store), cfg);
        let mut ids = Vec::new();
        for (i, path) in ["/api", "/api/v2", "/api", "/ops"].iter().enumerate() {
            let m = svc
                .remember(&req(&format!("fact number {i}"), path, &format!("k{i}")))
                .unwrap()
                .memory
                .unwrap();
            ids.push(m.id);
        }
        let scopes = |svc: &Service| {
            svc.status(&[])
                .unwrap()
                .consolidation
                .into_iter()
                .map(|c| {
                    (
                        c.scope,
                        c.since_last,
                        c.due,
                        c.last_consolidated_at.is_some(),
                    )
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(
            scopes(&svc),
            vec![
                ("/api".into(), 3, true, false),
                ("/ops".into(), 1, false, false)
            ]
        );
        let merge = ProposalRequest {
            op: ProposalOp::Consolidate,
            targets: vec![ids[0].clone(), ids[2].clone()],
            memory: Some(req("facts 0 and 2", "/api", "-").draft()),
            evidence: vec![],
            reason: None,
            idempotency_key: "m1".into(),
        };
        svc.propose(&merge, &Actor::agent(Some("claude".into()), None))
            .unwrap();
        // The merge resets its scope only; what arrives after it counts again.
        assert_eq!(
            scopes(&svc),
            vec![
                ("/api".into(), 0, false, true),
                ("/ops".into(), 1, false, false)
            ]
        );
        svc.remember(&req("a later fact", "/api/v3", "k9")).unwrap();
        assert_eq!(scopes(&svc)[0], ("/api".into(), 1, false, true));
        // A caller confined to /ops sees its scope only.
        let confined = svc.status(&[VPath::parse("/ops").unwrap()]).unwrap();
        assert_eq!(confined.consolidation.len(), 1);
        assert_eq!(confined.consolidation[0].scope, "/ops");
    }
}
