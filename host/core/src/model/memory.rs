use crate::path::VPath;
use crate::time::Timestamp;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The built-in memory kinds.
pub const BUILTIN_KINDS: &[&str] = &[
    "observation",
    "decision",
    "preference",
    "task_state",
    "fact",
    "note",
    "artifact",
    "rule",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Lifecycle {
    Active,
    Archived,
    Superseded,
    /// Voted not useful too many times in a row; kept, but out of recall.
    Deprecated,
    /// Payload purged; only the tombstone remains.
    Forgotten,
}

impl Lifecycle {
    /// Every state, so a set of them has a complement.
    pub const ALL: [Lifecycle; 5] = [
        Self::Active,
        Self::Archived,
        Self::Superseded,
        Self::Deprecated,
        Self::Forgotten,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Archived => "archived",
            Self::Superseded => "superseded",
            Self::Deprecated => "deprecated",
            Self::Forgotten => "forgotten",
        }
    }
}

/// Where a memory came from and who produced it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Provenance {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_ref: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_file_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// When the remembered thing happened (not when it was written).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_at: Option<Timestamp>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Feedback {
    pub useful: u32,
    pub not_useful: u32,
    /// `not_useful` votes since the last `useful` one.
    #[serde(default)]
    pub consecutive_not_useful: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FeedbackAction {
    Useful,
    NotUseful,
    Pin,
    Unpin,
}

impl FeedbackAction {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "useful" => Some(Self::Useful),
            "not_useful" | "not-useful" => Some(Self::NotUseful),
            "pin" => Some(Self::Pin),
            "unpin" => Some(Self::Unpin),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Useful => "useful",
            Self::NotUseful => "not_useful",
            Self::Pin => "pin",
            Self::Unpin => "unpin",
        }
    }
}

/// A typed link to another record (`supersedes`, `conflicts_with`, ...).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Relation {
    #[serde(rename = "type")]
    pub kind: String,
    pub target: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
    /// For `conflicts_with`: the part of the two claims that differs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub difference: Option<Difference>,
}

/// The part two contradicting claims differ in: this memory says `this`
/// (`17`, `broken`) where the other says `other` (`16`, `works`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Difference {
    pub this: String,
    pub other: String,
}

impl Difference {
    /// The same difference seen from the other memory.
    pub fn swapped(&self) -> Self {
        Self {
            this: self.other.clone(),
            other: self.this.clone(),
        }
    }
}

/// How a memory passed the write gate: who proposed it and who (which
/// policy or which person) approved it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Governance {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proposal_id: Option<String>,
    pub proposed_by: String,
    pub approved_by: String,
    /// Approved without supporting evidence (Mnemosyne's tentative
    /// promote): served as provisional until feedback raises it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tentative: bool,
}

/// What remains of a forgotten memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Tombstone {
    pub at: Timestamp,
    pub reason: String,
}

/// A memory: an immutable statement plus mutable lifecycle state.
///
/// `content` never changes after creation (a change is a new memory that
/// supersedes this one); `lifecycle`, `confidence`, `feedback` and `pinned`
/// change under compare-and-swap on `state_version`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Memory {
    pub id: String,
    pub kind: String,
    /// `None` once forgotten.
    pub content: Option<String>,
    pub path: VPath,
    pub content_sha256: String,
    pub lifecycle: Lifecycle,
    pub state_version: u64,
    pub confidence: f64,
    #[serde(default)]
    pub feedback: Feedback,
    #[serde(default)]
    pub pinned: bool,
    #[serde(default)]
    pub provenance: Provenance,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub attributes: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub relations: Vec<Relation>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tombstone: Option<Tombstone>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub governance: Option<Governance>,
}
