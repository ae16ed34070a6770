//! Annotations: what processors suggest about a file (a description,
//! tags), kept beside it as pending until a person accepts or rejects
//! each one. A decision is final; an accepted tag joins the file's tags,
//! an accepted description becomes the file's description.

use crate::time::Timestamp;
use serde::{Deserialize, Serialize};

/// Most description annotations a processing run suggests.
pub const MAX_DESCRIPTIONS: usize = 1;
/// Longest description (characters); a longer one is cut.
pub const MAX_DESCRIPTION_CHARS: usize = 2_000;
/// Most tag annotations a processing run suggests; more are dropped.
pub const MAX_TAG_ANNOTATIONS: usize = 20;
/// Longest tag annotation (characters); a longer one is dropped.
pub const MAX_TAG_ANNOTATION_CHARS: usize = 64;
/// Most annotations kept per file (pending and decided); the oldest
/// decided ones go first. Bounds a file re-processed many times.
pub const MAX_KEPT_ANNOTATIONS: usize = 200;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AnnotationKind {
    Description,
    Tag,
}

impl AnnotationKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Description => "description",
            Self::Tag => "tag",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AnnotationStatus {
    Pending,
    Accepted,
    Rejected,
}

impl AnnotationStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Accepted => "accepted",
            Self::Rejected => "rejected",
        }
    }
}

/// A decision on a pending annotation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AnnotationDecision {
    Accept,
    Reject,
}

impl AnnotationDecision {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Accept => "accept",
            Self::Reject => "reject",
        }
    }

    /// The status this decision leaves.
    pub fn status(self) -> AnnotationStatus {
        match self {
            Self::Accept => AnnotationStatus::Accepted,
            Self::Reject => AnnotationStatus::Rejected,
        }
    }
}

/// One suggestion about a file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Annotation {
    /// `ann_...`, unique within the workspace.
    pub id: String,
    pub kind: AnnotationKind,
    /// The description text, or the tag.
    pub value: String,
    /// The processor plugin that suggested it.
    pub producer: String,
    pub status: AnnotationStatus,
    pub created_at: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_at: Option<Timestamp>,
    /// Who decided (`human:owner`, `token:...`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A file's annotations as stored (`Table::Annotations`, keyed by file id).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FileAnnotations {
    /// Oldest first.
    #[serde(default)]
    pub items: Vec<Annotation>,
    /// What the host cut or dropped from the processors' suggestions at
    /// the last processing run, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl FileAnnotations {
    pub fn get(&self, id: &str) -> Option<&Annotation> {
        self.items.iter().find(|a| a.id == id)
    }

    pub fn pending(&self) -> impl Iterator<Item = &Annotation> {
        self.items
            .iter()
            .filter(|a| a.status == AnnotationStatus::Pending)
    }
}
