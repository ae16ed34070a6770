//! Related items: the relations relation-detector plugins found between
//! memories and files (same topic, same event, same person, sequel,
//! duplicate, conflict), stored so `related` is one prefix scan and never
//! a recomputation.
//!
//! The key decision: relations are derived state kept in step with the
//! event log (like the search index). `refresh` recomputes the items the
//! log names after a watermark, a bounded number per step, so ingest
//! computes them for new items and a refresh of everything (`all`) is
//! resumable: the watermark is saved after each step.

mod detect;
mod items;
#[cfg(test)]
mod tests;

use crate::Service;
use crate::records::{decode, scan_all};
use mem_core::model::Difference;
use mem_core::store::Table;
use mem_core::time::Timestamp;
use mem_core::{MemError, MemResult};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use detect::{DEFAULT_REFRESH_ITEMS, RefreshReport, RelationsProgress};

/// Relations `related` returns unless asked for fewer or more.
pub const DEFAULT_RELATED_LIMIT: usize = 10;
/// The most relations one `related` call returns.
pub const MAX_RELATED_LIMIT: usize = 100;

/// The kinds of relation `related` knows.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum RelationType {
    SameTopic,
    SameEvent,
    SamePerson,
    Sequel,
    DuplicateOf,
    ConflictsWith,
}

impl RelationType {
    pub const ALL: [RelationType; 6] = [
        Self::SameTopic,
        Self::SameEvent,
        Self::SamePerson,
        Self::Sequel,
        Self::DuplicateOf,
        Self::ConflictsWith,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::SameTopic => "same_topic",
            Self::SameEvent => "same_event",
            Self::SamePerson => "same_person",
            Self::Sequel => "sequel",
            Self::DuplicateOf => "duplicate_of",
            Self::ConflictsWith => "conflicts_with",
        }
    }

    /// The type a detector's `kind` names; `None` for kinds `related`
    /// does not keep.
    pub fn parse(kind: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == kind)
    }
}

/// What a related item is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ItemType {
    Memory,
    File,
}

/// One stored relation (the value; the key names both ends and the type).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct StoredRelation {
    pub score: f32,
    pub reason: String,
    /// The plugin that found it.
    pub detector: String,
    /// The item whose detection run found it: a recomputation of that
    /// item replaces it, one of the other end keeps it.
    pub found_from: String,
    pub found_at: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub difference: Option<Difference>,
}

/// `"{item}\0{type}\0{other}"`.
pub(crate) fn relation_key(item: &str, kind: RelationType, other: &str) -> String {
    format!("{item}\0{}\0{other}", kind.as_str())
}

/// `(type, other)` of a key under `item`'s prefix.
fn split_key(key: &str) -> Option<(RelationType, &str)> {
    let mut parts = key.split('\0');
    let _item = parts.next()?;
    let kind = RelationType::parse(parts.next()?)?;
    Some((kind, parts.next()?))
}

/// One relation as `related` answers it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RelatedEntry {
    #[serde(rename = "type")]
    pub kind: RelationType,
    /// The related item's id.
    pub id: String,
    pub item: ItemType,
    pub path: String,
    /// A file's name, or the start of a memory's text.
    pub label: String,
    /// Confidence in [0, 1].
    pub score: f32,
    /// Why, for people.
    pub reason: String,
    /// The relation-detector plugin that found it.
    pub detector: String,
    pub found_at: Timestamp,
    /// For `conflicts_with`: what this item says (`this`) against the other (`other`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub difference: Option<Difference>,
}

/// The answer of `related`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RelatedResult {
    /// The item asked about.
    pub id: String,
    pub item: ItemType,
    /// Best first (score, then type and id).
    pub relations: Vec<RelatedEntry>,
    /// Relations of the asked type the caller may see, before `limit`.
    pub total: usize,
    pub truncated: bool,
    /// True when items written recently still wait for their relations
    /// (a background step computes them; `related --refresh` now).
    pub pending: bool,
}

impl Service {
    /// The stored relations of `id`, of type `kind` when given, whose
    /// other end exists and `visible` admits (by path), best first.
    pub(crate) fn related(
        &self,
        id: &str,
        kind: Option<RelationType>,
        limit: usize,
        visible: &dyn Fn(&mem_core::VPath) -> bool,
    ) -> MemResult<RelatedResult> {
        if limit == 0 || limit > MAX_RELATED_LIMIT {
            return Err(
                MemError::bad_request(format!("limit must be 1..={MAX_RELATED_LIMIT}"))
                    .with_hint("ask for at most 100 related items")
                    .with_details(serde_json::json!({ "limit": limit })),
            );
        }
        let subject = self.relatable(id)?.ok_or_else(|| {
            MemError::not_found(
                if id.starts_with("file_") {
                    "file"
                } else {
                    "memory"
                },
                id,
            )
        })?;
        // Outside the caller's paths reads as missing.
        if !visible(&subject.path) {
            return Err(MemError::not_found(
                if subject.item == ItemType::File {
                    "file"
                } else {
                    "memory"
                },
                id,
            ));
        }
        let pending = self.related_pending()?;
        let prefix = format!("{}\0", subject.id);
        let mut out = Vec::new();
        for (key, raw) in scan_all(self.store(), Table::Relations, &prefix)? {
            let Some((t, other)) = split_key(&key) else {
                continue;
            };
            if kind.is_some_and(|k| k != t) {
                continue;
            }
            let Some(o) = self.relatable(other)? else {
                continue;
            };
            if !visible(&o.path) {
                continue;
            }
            let r: StoredRelation = decode(Table::Relations, &key, &raw)?;
            out.push(RelatedEntry {
                kind: t,
                id: o.id,
                item: o.item,
                path: o.path.as_str().to_string(),
                label: o.label,
                score: r.score,
                reason: r.reason,
                detector: r.detector,
                found_at: r.found_at,
                difference: r.difference,
            });
        }
        out.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| a.kind.cmp(&b.kind))
                .then_with(|| a.id.cmp(&b.id))
        });
        let total = out.len();
        out.truncate(limit);
        Ok(RelatedResult {
            id: subject.id,
            item: subject.item,
            relations: out,
            total,
            truncated: total > limit,
            pending,
        })
    }
}
