//! Supersede authority: a `supersedes` relation hides its target only
//! while the superseder stands, and only when it resolves exactly.
//!
//! A replace or consolidation moves each target to `superseded` and
//! records `supersedes` (new → old) and `superseded_by` (old → new).
//! When the superseder later stops being active (archive, forget,
//! deprecation by feedback, a `remove` proposal), every target it hid, and
//! that no other standing superseder still hides, returns to `active`
//! (`memory.supersede_lapsed`). When the superseder is restored, those
//! targets become `superseded` again (`memory.supersede_reinstated`).
//! Both happen in the same atomic batch as the superseder's own change,
//! each with its own event, version bump and audit entry.
//!
//! A superseder that is itself superseded keeps standing: in a chain
//! A ← B ← C, A stays hidden while C is active, and forgetting B (already
//! superseded) does not bring A back. A relation to a memory that does not
//! exist or was forgotten hides nothing and never fails the change. Queued
//! proposals write no relations, so they hide nothing.

use crate::Service;
use crate::audit::{Actor, AuditDraft};
use crate::budget::UsageChange;
use crate::records::{encode, load};
use mem_core::MemResult;
use mem_core::model::{Lifecycle, Memory, Relation};
use mem_core::store::{Batch, Table};
use mem_core::time::now;
use serde_json::json;
use std::collections::BTreeSet;

pub(crate) const SUPERSEDES: &str = "supersedes";
pub(crate) const SUPERSEDED_BY: &str = "superseded_by";

/// Whether `m` hides what it supersedes: it is active, or it was itself
/// superseded (the newer memory stands for the whole chain).
pub(crate) fn stands(m: &Memory) -> bool {
    matches!(m.lifecycle, Lifecycle::Active | Lifecycle::Superseded)
}

/// The distinct memories `m` claims to supersede (never itself).
fn superseded_ids(m: &Memory) -> BTreeSet<&str> {
    m.relations
        .iter()
        .filter(|r| r.kind == SUPERSEDES && r.target != m.id)
        .map(|r| r.target.as_str())
        .collect()
}

impl Service {
    /// A memory other than `except` that supersedes `m` and still stands,
    /// found through `m`'s `superseded_by` relations and confirmed by the
    /// superseder's own `supersedes` relation. Each superseder consulted is
    /// made a condition of `batch`, so a concurrent change to it retries
    /// the transaction instead of deciding on stale state.
    pub(crate) fn standing_superseder(
        &self,
        batch: &mut Batch,
        m: &Memory,
        except: &str,
    ) -> MemResult<Option<String>> {
        let candidates: BTreeSet<&str> = m
            .relations
            .iter()
            .filter(|r| r.kind == SUPERSEDED_BY && r.target != except && r.target != m.id)
            .map(|r| r.target.as_str())
            .collect();
        for id in candidates {
            let Some(s) = load::<Memory>(self.store(), Table::Memories, id)? else {
                continue;
            };
            batch.expect(Table::Memories, id, Some(s.raw));
            if stands(&s.value) && superseded_ids(&s.value).contains(m.id.as_str()) {
                return Ok(Some(id.to_string()));
            }
        }
        Ok(None)
    }

    /// Stages what `before → after` (one memory's lifecycle change, staged
    /// by the caller) does to the memories `after` supersedes: a lapse when
    /// it stops standing, a reinstatement when it becomes active again.
    /// Budget changes go to `usage`; returns the audit drafts to seal with
    /// the caller's own. A lapse makes content active again, so it counts
    /// against budgets like any other write: when it would overflow one,
    /// the whole change fails with `BUDGET_EXCEEDED` and nothing moves.
    pub(crate) fn stage_supersede_authority(
        &self,
        batch: &mut Batch,
        usage: &mut UsageChange,
        before: &Memory,
        after: &Memory,
        actor: &Actor,
        verdict_source: &str,
    ) -> MemResult<Vec<AuditDraft>> {
        let lapsing = before.lifecycle == Lifecycle::Active && !stands(after);
        let reinstating = !stands(before) && after.lifecycle == Lifecycle::Active;
        if !lapsing && !reinstating {
            return Ok(Vec::new());
        }
        let mut drafts = Vec::new();
        for id in superseded_ids(after) {
            // A target that does not exist hides nothing and fails nothing.
            let Some(stored) = load::<Memory>(self.store(), Table::Memories, id)? else {
                continue;
            };
            let old = stored.value;
            let mut new = old.clone();
            let (event, verb) = if lapsing {
                if old.lifecycle != Lifecycle::Superseded
                    || self.standing_superseder(batch, &old, &after.id)?.is_some()
                {
                    continue;
                }
                new.lifecycle = Lifecycle::Active;
                ("memory.supersede_lapsed", "supersede_lapsed")
            } else {
                // Archived, deprecated or forgotten targets stay as they are
                // (a forgotten one resolves to nothing; the others are out of
                // recall already, and their own restore checks authority).
                if old.lifecycle != Lifecycle::Active {
                    continue;
                }
                new.lifecycle = Lifecycle::Superseded;
                if !new
                    .relations
                    .iter()
                    .any(|r| r.kind == SUPERSEDED_BY && r.target == after.id)
                {
                    new.relations.push(Relation {
                        kind: SUPERSEDED_BY.into(),
                        target: after.id.clone(),
                        score: None,
                        difference: None,
                    });
                }
                ("memory.supersede_reinstated", "supersede_reinstated")
            };
            new.state_version += 1;
            new.updated_at = now();
            usage.transition(&old, &new);
            batch.expect(Table::Memories, id, Some(stored.raw));
            batch.put(Table::Memories, id, encode(&new)?);
            self.stage_memory_event(
                batch,
                event,
                &new,
                json!({ "superseder": after.id, "superseder_lifecycle": after.lifecycle }),
            )?;
            let sha = new.content.as_ref().map(|_| new.content_sha256.clone());
            drafts.push(AuditDraft {
                actor: actor.clone(),
                action: verb.into(),
                target: id.to_string(),
                before_sha256: sha.clone(),
                after_sha256: sha,
                verdict: "applied".into(),
                verdict_source: verdict_source.into(),
                reasons: vec![format!(
                    "superseder {} is now {}",
                    after.id,
                    after.lifecycle.as_str()
                )],
            });
        }
        Ok(drafts)
    }
}
