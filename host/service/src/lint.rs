//! `lint`: consistency of the workspace's memory graph and types —
//! duplicate memories, dangling relations, supersede cycles and forks,
//! memories that no longer match their type — and rebuilding memory
//! records from the event log.

use crate::Service;
use crate::gate::authority::{self, SUPERSEDES};
use crate::records::{decode, encode, scan_all};
use mem_core::model::{Event, Lifecycle, Memory};
use mem_core::store::{Batch, Durability, Log, Table};
use mem_core::{MemError, MemResult};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Warning,
    Error,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LintIssue {
    pub severity: Severity,
    /// `duplicate_memory`, `dangling_relation`, `supersede_cycle`,
    /// `supersede_fork`, `superseded_without_authority`,
    /// `schema_violation`, `unknown_type`.
    pub code: String,
    pub message: String,
    pub ids: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LintReport {
    /// `ok`, `warnings` or `errors`.
    pub status: String,
    pub memories: usize,
    pub types: usize,
    pub issues: Vec<LintIssue>,
}

/// What `rebuild` did or would do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RebuildReport {
    pub events: u64,
    pub memories: usize,
    /// Ids whose stored record differed from the log (or was missing).
    pub repaired: Vec<String>,
    pub applied: bool,
}

impl Service {
    pub(crate) fn lint(&self) -> MemResult<LintReport> {
        let all: Vec<Memory> = scan_all(self.store(), Table::Memories, "")?
            .into_iter()
            .map(|(k, raw)| decode(Table::Memories, &k, &raw))
            .collect::<MemResult<_>>()?;
        let by_id: BTreeMap<&str, &Memory> = all.iter().map(|m| (m.id.as_str(), m)).collect();
        let mut issues = Vec::new();
        let issue = |severity, code: &str, message: String, ids: Vec<String>| LintIssue {
            severity,
            code: code.into(),
            message,
            ids,
        };

        let mut seen: BTreeMap<(&str, &str), &str> = BTreeMap::new();
        for m in all.iter().filter(|m| m.lifecycle == Lifecycle::Active) {
            if let Some(first) = seen.insert((m.path.as_str(), m.content_sha256.as_str()), &m.id) {
                issues.push(issue(
                    Severity::Warning,
                    "duplicate_memory",
                    format!("{} repeats {first} word for word in {}", m.id, m.path),
                    vec![first.to_string(), m.id.clone()],
                ));
            }
        }
        let registry = &self.config().types.registry;
        for m in all.iter().filter(|m| m.lifecycle != Lifecycle::Forgotten) {
            for r in &m.relations {
                if !by_id.contains_key(r.target.as_str()) {
                    issues.push(issue(
                        Severity::Error,
                        "dangling_relation",
                        format!(
                            "{} has a {} relation to {}, which does not exist",
                            m.id, r.kind, r.target
                        ),
                        vec![m.id.clone(), r.target.clone()],
                    ));
                }
            }
            match registry.resolve(&m.kind) {
                Err(_) => issues.push(issue(
                    Severity::Error,
                    "unknown_type",
                    format!(
                        "{} has type {}, which no loaded schema defines",
                        m.id, m.kind
                    ),
                    vec![m.id.clone()],
                )),
                Ok(def) if m.lifecycle == Lifecycle::Active => {
                    for v in registry.violations(def, &m.attributes) {
                        issues.push(issue(
                            Severity::Error,
                            "schema_violation",
                            format!("{}: {v}", m.id),
                            vec![m.id.clone()],
                        ));
                    }
                }
                Ok(_) => {}
            }
        }
        // Supersede graph: target -> every memory claiming to supersede it.
        // Only a superseder that is active hides its target, and only when
        // the target resolves (exists, not forgotten): see `gate::authority`.
        let mut superseders: BTreeMap<&str, Vec<&Memory>> = BTreeMap::new();
        for m in &all {
            for r in m.relations.iter().filter(|r| r.kind == SUPERSEDES) {
                let resolves = by_id
                    .get(r.target.as_str())
                    .is_some_and(|t| t.lifecycle != Lifecycle::Forgotten && t.id != m.id);
                if resolves {
                    superseders.entry(r.target.as_str()).or_default().push(m);
                }
            }
        }
        for (target, by) in &superseders {
            let active: Vec<&str> = by
                .iter()
                .filter(|s| s.lifecycle == Lifecycle::Active)
                .map(|s| s.id.as_str())
                .collect();
            if active.len() > 1 {
                issues.push(issue(
                    Severity::Error,
                    "supersede_fork",
                    format!(
                        "{target} is superseded by {} active memories: {}",
                        active.len(),
                        active.join(", ")
                    ),
                    std::iter::once(target.to_string())
                        .chain(active.iter().map(|s| s.to_string()))
                        .collect(),
                ));
            }
        }
        // Hidden with no standing superseder: the authority lapsed without
        // the target coming back (records from before lapses were applied,
        // or edited by hand).
        for m in all.iter().filter(|m| m.lifecycle == Lifecycle::Superseded) {
            let held = superseders
                .get(m.id.as_str())
                .is_some_and(|by| by.iter().any(|s| authority::stands(s)));
            if !held {
                issues.push(issue(
                    Severity::Warning,
                    "superseded_without_authority",
                    format!(
                        "{} is superseded, but no active (or itself superseded) memory supersedes it",
                        m.id
                    ),
                    vec![m.id.clone()],
                ));
            }
        }
        let mut reported: BTreeSet<String> = BTreeSet::new();
        for m in &all {
            let mut path = vec![m.id.as_str()];
            let mut current = m;
            while let Some(next) = current
                .relations
                .iter()
                .find(|r| r.kind == SUPERSEDES)
                .and_then(|r| by_id.get(r.target.as_str()))
            {
                if let Some(pos) = path.iter().position(|id| *id == next.id) {
                    let cycle: Vec<String> = path[pos..].iter().map(|s| s.to_string()).collect();
                    let key = cycle.iter().min().cloned().unwrap_or_default();
                    if reported.insert(key) {
                        issues.push(issue(
                            Severity::Error,
                            "supersede_cycle",
                            format!("supersedes relations form a cycle: {}", cycle.join(" -> ")),
                            cycle,
                        ));
                    }
                    break;
                }
                path.push(&next.id);
                current = next;
            }
        }
        let status = match issues.iter().map(|i| i.severity).max() {
            None => "ok",
            Some(Severity::Warning) => "warnings",
            Some(Severity::Error) => "errors",
        };
        Ok(LintReport {
            status: status.into(),
            memories: all.len(),
            types: registry.all().count(),
            issues,
        })
    }

    /// Recomputes every memory record from the event log (each event
    /// carries the memory's state; content comes from its blob unless the
    /// memory was forgotten). With `apply`, writes back what differs.
    pub(crate) fn rebuild_memories(&self, apply: bool) -> MemResult<RebuildReport> {
        const PAGE: usize = 1024;
        let mut latest: BTreeMap<String, Memory> = BTreeMap::new();
        let mut after = 0;
        let mut events = 0;
        loop {
            let page = self.store().read_log(Log::Events, after, PAGE)?;
            let done = page.len() < PAGE;
            for (seq, raw) in page {
                after = seq;
                events += 1;
                let e: Event = decode(Table::Meta, &format!("event/{seq}"), &raw)?;
                if let Some(snapshot) = e.data.get("memory") {
                    let m: Memory = serde_json::from_value(snapshot.clone()).map_err(|err| {
                        MemError::internal(format!("event {seq} has a malformed memory: {err}"))
                    })?;
                    latest.insert(m.id.clone(), m);
                }
            }
            if done {
                break;
            }
        }
        let mut repaired = Vec::new();
        let mut batch = Batch::new();
        for m in latest.values_mut() {
            if m.lifecycle != Lifecycle::Forgotten {
                let blob = self.store().get_blob(&m.content_sha256)?;
                m.content = blob.map(|b| String::from_utf8_lossy(&b).into_owned());
            }
            let current = self.store().get(Table::Memories, &m.id)?;
            let current: Option<Memory> = current
                .map(|raw| decode(Table::Memories, &m.id, &raw))
                .transpose()?;
            if current.as_ref() != Some(m) {
                repaired.push(m.id.clone());
                batch.put(Table::Memories, m.id.clone(), encode(m)?);
                if m.lifecycle != Lifecycle::Forgotten {
                    batch.put(
                        Table::MemoryPaths,
                        crate::memories::memory_path_key(&m.path, &m.id),
                        Vec::new(),
                    );
                }
            }
        }
        if apply && !batch.is_empty() {
            // Through `transact`, so the tallies follow the repair.
            crate::records::transact(self.store(), Durability::Immediate, || {
                Ok((batch.clone(), ()))
            })?;
            self.after_write();
        }
        Ok(RebuildReport {
            events,
            memories: latest.len(),
            repaired,
            applied: apply,
        })
    }
}
