//! Memories: immutable statements with provenance, an idempotent write
//! path ([`remember`]), the ledger's pages, and a compare-and-swap
//! lifecycle (feedback, archive, restore, forget). Every lifecycle action
//! appends a change-log event.

use crate::Service;
use crate::audit::{Actor, AuditDraft};
use crate::budget::UsageChange;
use crate::gate::authority;
use crate::records::{Stored, decode, encode, load, push_event, transact};
use crate::requests::MAX_FIELD_CHARS;
use mem_core::id;
use mem_core::model::{FeedbackAction, Lifecycle, Memory, Tombstone};
use mem_core::store::{Batch, Durability, Scan, Table};
use mem_core::time::now;
use mem_core::{ErrorCode, MemError, MemResult, VPath};
use serde::{Deserialize, Serialize};
use serde_json::json;

mod remember;

/// Largest page of `memory list`.
pub const MAX_LIST_LIMIT: usize = 1000;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RememberOutcome {
    /// True when the idempotency key matched an earlier identical request
    /// and the original record is returned.
    pub replayed: bool,
    /// The stored memory; absent when the write waits in the review queue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<Memory>,
    /// Set when the write went through the gate as a proposal (the
    /// workspace's write policy asks for review, or routes `remember`
    /// through the gate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proposal: Option<crate::gate::Proposal>,
}

/// `memory.list`: memories newest first, filtered, a page at a time.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListMemories {
    /// Only memories at or below this folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::ops::fields::opt_path")]
    pub path: Option<String>,
    /// Only this memory type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::ops::fields::opt_kind")]
    pub kind: Option<String>,
    /// `active` (default), `archived`, `superseded`, `deprecated`,
    /// `forgotten` or `all`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["active", "archived", "superseded", "deprecated", "forgotten", "all", null]))]
    pub lifecycle: Option<String>,
    /// Only memories this agent wrote (their provenance's `agent_id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 512))]
    pub agent: Option<String>,
    /// Only pinned (`true`) or only unpinned (`false`) memories.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pinned: Option<bool>,
    /// Page size, 1 to 1000 (default 50).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<usize>,
    /// A previous page's `next_cursor`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::ops::fields::opt_cursor")]
    pub cursor: Option<String>,
}

/// Memories read at most for one page of `memory list` (bounds the time a
/// page takes when its filters match few; measured by the serve bench).
pub const MAX_LIST_SCAN: usize = 4096;

/// A page of a listing; pass `next_cursor` back to continue (a page may be
/// short, or empty, while more follow).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub next_cursor: Option<String>,
}

fn field(name: &str, value: &Option<String>) -> MemResult<Option<String>> {
    match value.as_deref().map(str::trim) {
        None | Some("") => Ok(None),
        Some(v) if v.chars().count() > MAX_FIELD_CHARS => Err(MemError::bad_request(format!(
            "{name} is longer than {MAX_FIELD_CHARS} characters"
        ))
        .with_details(json!({ "field": name }))),
        Some(v) => Ok(Some(v.to_string())),
    }
}

pub(crate) fn memory_path_key(path: &VPath, id: &str) -> String {
    format!("{}\0{id}", path.as_str())
}

/// The lifecycles a `lifecycle` (memory list) or `status` (catalog) value
/// selects; `field` names it in the error.
pub(crate) fn lifecycle_filter(raw: Option<&str>, field: &str) -> MemResult<Vec<Lifecycle>> {
    Ok(match raw.unwrap_or("active") {
        "active" => vec![Lifecycle::Active],
        "archived" => vec![Lifecycle::Archived],
        "superseded" => vec![Lifecycle::Superseded],
        "deprecated" => vec![Lifecycle::Deprecated],
        "forgotten" => vec![Lifecycle::Forgotten],
        "all" => vec![
            Lifecycle::Active,
            Lifecycle::Archived,
            Lifecycle::Superseded,
            Lifecycle::Deprecated,
            Lifecycle::Forgotten,
        ],
        other => {
            return Err(MemError::bad_request(format!("unknown {field} {other:?}"))
                .with_hint(format!(
                    "{field} is active, archived, superseded, deprecated, forgotten or all"
                ))
                .with_details(json!({ "field": field })));
        }
    })
}

impl Service {
    /// Appends a memory event carrying the memory's state after the change
    /// (without content: that lives in a blob, so `forget` can purge it).
    /// Replaying these events rebuilds every memory record.
    pub(crate) fn stage_memory_event(
        &self,
        batch: &mut Batch,
        action: &str,
        m: &Memory,
        extra: serde_json::Value,
    ) -> MemResult<()> {
        let mut snapshot = m.clone();
        snapshot.content = None;
        push_event(
            batch,
            action,
            &m.id,
            Some(m.state_version),
            json!({ "memory": snapshot, "detail": extra }),
        )
    }

    fn file_at_path(&self, path: &VPath) -> MemResult<Option<Vec<u8>>> {
        Ok(self.store().get(Table::FilePaths, path.as_str())?)
    }

    fn load_memory(&self, id: &str) -> MemResult<Stored<Memory>> {
        load(self.store(), Table::Memories, id)?.ok_or_else(|| MemError::not_found("memory", id))
    }

    pub(crate) fn memory(&self, id: &str) -> MemResult<Memory> {
        Ok(self.load_memory(id)?.value)
    }

    /// A page of the ledger, newest first. A page may hold fewer than
    /// `limit` memories and still have a `next_cursor`: at most
    /// [`MAX_LIST_SCAN`] are read for one page.
    pub(crate) fn list_memories(&self, q: &ListMemories) -> MemResult<Page<Memory>> {
        let limit = q.limit.unwrap_or(50);
        if limit == 0 || limit > MAX_LIST_LIMIT {
            return Err(MemError::bad_request(format!(
                "limit must be 1..={MAX_LIST_LIMIT}"
            )));
        }
        let lifecycles = lifecycle_filter(q.lifecycle.as_deref(), "lifecycle")?;
        let path = q.path.as_deref().map(VPath::parse).transpose()?;
        let kind = q.kind.as_deref().map(|k| k.trim().to_ascii_lowercase());
        // Normalized as `remember` stores it: trimmed, empty is no filter.
        let agent = field("agent", &q.agent)?;
        if let Some(c) = &q.cursor
            && !id::has_prefix(c, id::MEMORY)
        {
            return Err(MemError::bad_request(format!("bad cursor {c:?}"))
                .with_hint("pass back the next_cursor of a previous page"));
        }
        const PAGE: usize = 512;
        let mut items = Vec::new();
        let mut after = q.cursor.clone();
        let mut scanned = 0;
        loop {
            // A filter few memories match would scan the whole ledger for
            // one page: past the budget the page ends short, with a cursor.
            if scanned >= MAX_LIST_SCAN {
                return Ok(Page {
                    items,
                    next_cursor: after,
                });
            }
            scanned += PAGE;
            let page = self.store().scan(
                Table::Memories,
                &Scan {
                    prefix: "",
                    after: after.as_deref(),
                    limit: PAGE,
                    reverse: true,
                },
            )?;
            let exhausted = page.len() < PAGE;
            for (key, raw) in page {
                after = Some(key.clone());
                let m: Memory = decode(Table::Memories, &key, &raw)?;
                let keep = lifecycles.contains(&m.lifecycle)
                    && kind.as_ref().is_none_or(|k| &m.kind == k)
                    && path.as_ref().is_none_or(|p| m.path.is_within(p))
                    && agent
                        .as_ref()
                        .is_none_or(|a| m.provenance.agent_id.as_ref() == Some(a))
                    && q.pinned.is_none_or(|p| m.pinned == p);
                if keep {
                    items.push(m);
                    if items.len() == limit {
                        let next = items.last().map(|m| m.id.clone());
                        return Ok(Page {
                            items,
                            next_cursor: next,
                        });
                    }
                }
            }
            if exhausted {
                return Ok(Page {
                    items,
                    next_cursor: None,
                });
            }
        }
    }

    /// Loads a memory, checks the caller's expected version, applies
    /// `change`, and commits under compare-and-swap with its event, its
    /// budget counters and an audit entry.
    fn change_memory(
        &self,
        id: &str,
        expected_version: u64,
        action: &str,
        actor: &Actor,
        change: impl Fn(&mut Memory) -> MemResult<serde_json::Value>,
    ) -> MemResult<Memory> {
        let store = self.store();
        let m = transact(store, Durability::Immediate, || {
            let stored = self.load_memory(id)?;
            let current = stored.value.state_version;
            if current != expected_version {
                return Err(MemError::new(
                    ErrorCode::VersionConflict,
                    format!("memory {id} is at version {current}, not {expected_version}"),
                )
                .with_hint("read the memory again and retry with its current state_version")
                .with_details(json!({ "id": id, "expected_version": expected_version, "current_version": current })));
            }
            let before = stored.value.clone();
            let mut m = before.clone();
            let mut data = change(&mut m)?;
            m.state_version += 1;
            m.updated_at = now();
            let mut batch = Batch::new();
            // Coming back while a standing memory supersedes it: it stays
            // hidden behind that one.
            if m.lifecycle == Lifecycle::Active
                && !authority::stands(&before)
                && let Some(by) = self.standing_superseder(&mut batch, &m, "")?
            {
                m.lifecycle = Lifecycle::Superseded;
                if let Some(obj) = data.as_object_mut() {
                    obj.insert("superseded_by".into(), json!(by));
                }
            }
            let mut usage = UsageChange::new();
            usage.transition(&before, &m);
            batch.expect(Table::Memories, id, Some(stored.raw));
            batch.put(Table::Memories, id, encode(&m)?);
            if m.lifecycle == Lifecycle::Forgotten {
                batch.delete(Table::MemoryPaths, memory_path_key(&m.path, id));
                batch.blob_ref(before.content_sha256.clone(), -1);
            }
            self.stage_memory_event(&mut batch, action, &m, data.clone())?;
            // What it superseded lapses (or is hidden again) in the same batch.
            let lapses = self.stage_supersede_authority(
                &mut batch,
                &mut usage,
                &before,
                &m,
                actor,
                &actor.label(),
            )?;
            self.apply_usage(&mut batch, &usage)?;
            let verb = action.trim_start_matches("memory.");
            let mut drafts = vec![AuditDraft {
                actor: actor.clone(),
                action: verb.to_string(),
                target: id.to_string(),
                before_sha256: before
                    .content
                    .as_ref()
                    .map(|_| before.content_sha256.clone()),
                after_sha256: m.content.as_ref().map(|_| m.content_sha256.clone()),
                verdict: "applied".into(),
                verdict_source: actor.label(),
                reasons: data
                    .get("reason")
                    .and_then(|r| r.as_str())
                    .map(str::to_string)
                    .into_iter()
                    .collect(),
            }];
            drafts.extend(lapses);
            self.seal_audit(&mut batch, drafts)?;
            Ok((batch, m))
        })?;
        self.after_write();
        Ok(m)
    }

    /// Records a vote (moving confidence by the workspace's deltas; enough
    /// `not_useful` votes in a row deprecate the memory) or a pin.
    pub(crate) fn feedback(
        &self,
        id: &str,
        action: FeedbackAction,
        expected_version: u64,
        actor: &Actor,
    ) -> MemResult<Memory> {
        let settings = self.config().memory.clone();
        self.change_memory(id, expected_version, "memory.feedback", actor, |m| {
            require_not_forgotten(m, "give feedback on")?;
            let before = m.confidence;
            match action {
                FeedbackAction::Useful => {
                    m.feedback.useful += 1;
                    m.feedback.consecutive_not_useful = 0;
                    m.confidence = (m.confidence + settings.useful_delta).min(1.0);
                }
                FeedbackAction::NotUseful => {
                    m.feedback.not_useful += 1;
                    m.feedback.consecutive_not_useful += 1;
                    m.confidence = (m.confidence + settings.not_useful_delta).max(0.0);
                    if m.feedback.consecutive_not_useful >= settings.deprecate_after
                        && m.lifecycle == Lifecycle::Active
                    {
                        m.lifecycle = Lifecycle::Deprecated;
                    }
                }
                FeedbackAction::Pin => m.pinned = true,
                FeedbackAction::Unpin => m.pinned = false,
            }
            // Rounded so repeated votes do not drift by float error.
            m.confidence = (m.confidence * 1e6).round() / 1e6;
            Ok(json!({
                "feedback": action.as_str(),
                "confidence_before": before,
                "confidence_after": m.confidence,
                "stale": m.confidence <= settings.stale_at,
                "lifecycle": m.lifecycle,
            }))
        })
    }

    pub(crate) fn archive(
        &self,
        id: &str,
        expected_version: u64,
        actor: &Actor,
    ) -> MemResult<Memory> {
        self.change_memory(id, expected_version, "memory.archived", actor, |m| {
            if m.lifecycle != Lifecycle::Active {
                return Err(invalid_transition(
                    m,
                    "archive",
                    "only an active memory can be archived",
                ));
            }
            m.lifecycle = Lifecycle::Archived;
            Ok(json!({}))
        })
    }

    /// Brings an archived or deprecated memory back (budgets apply again).
    pub(crate) fn restore(
        &self,
        id: &str,
        expected_version: u64,
        actor: &Actor,
    ) -> MemResult<Memory> {
        self.change_memory(id, expected_version, "memory.restored", actor, |m| {
            if !matches!(m.lifecycle, Lifecycle::Archived | Lifecycle::Deprecated) {
                return Err(invalid_transition(
                    m,
                    "restore",
                    "only an archived or deprecated memory can be restored",
                ));
            }
            m.lifecycle = Lifecycle::Active;
            m.feedback.consecutive_not_useful = 0;
            Ok(json!({}))
        })
    }

    /// Purges a memory's payload; a tombstone with the reason remains.
    pub(crate) fn forget(
        &self,
        id: &str,
        expected_version: u64,
        reason: &str,
        confirm: bool,
        actor: &Actor,
    ) -> MemResult<Memory> {
        if !confirm {
            return Err(MemError::new(
                ErrorCode::ConfirmationRequired,
                "forgetting purges the memory's content for good",
            )
            .with_hint("repeat with --confirm (REST/MCP: \"confirm\": true) to proceed"));
        }
        let reason = reason.trim();
        if reason.is_empty() {
            return Err(
                MemError::bad_request("a reason is required to forget a memory")
                    .with_hint("pass --reason, e.g. --reason \"user asked to delete\""),
            );
        }
        self.change_memory(id, expected_version, "memory.forgotten", actor, |m| {
            require_not_forgotten(m, "forget")?;
            m.lifecycle = Lifecycle::Forgotten;
            m.content = None;
            m.attributes.clear();
            m.provenance.source_ref = None;
            m.tombstone = Some(Tombstone {
                at: now(),
                reason: reason.to_string(),
            });
            Ok(json!({ "reason": reason }))
        })
    }
}

/// A forgotten memory takes no more lifecycle changes.
fn require_not_forgotten(m: &Memory, verb: &str) -> MemResult<()> {
    if m.lifecycle == Lifecycle::Forgotten {
        return Err(invalid_transition(m, verb, "the memory was forgotten"));
    }
    Ok(())
}

fn invalid_transition(m: &Memory, verb: &str, why: &str) -> MemError {
    MemError::new(
        ErrorCode::InvalidState,
        format!("cannot {verb} memory {}: {why}", m.id),
    )
    .with_hint(format!("it is {}", m.lifecycle.as_str()))
    .with_details(json!({ "id": m.id, "lifecycle": m.lifecycle }))
}
