use crate::path::VPath;
use crate::time::Timestamp;
use serde::{Deserialize, Serialize};

/// Where a file is in the processing pipeline. `pending` until a processor
/// plugin has run; `partial` when some processors failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum IndexStatus {
    Pending,
    Processing,
    Done,
    Partial,
    Failed,
}

impl IndexStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Processing => "processing",
            Self::Done => "done",
            Self::Partial => "partial",
            Self::Failed => "failed",
        }
    }
}

/// A file: a virtual path naming a content-addressed blob.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FileRecord {
    pub id: String,
    pub path: VPath,
    pub name: String,
    pub size: u64,
    pub sha256: String,
    /// Sniffed from the content's magic bytes; the name only refines text.
    pub mime: String,
    #[serde(default)]
    pub tags: Vec<String>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    pub index_status: IndexStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index_error: Option<String>,
    #[serde(default)]
    pub index_attempts: u32,
    /// Bumped on every change; compare-and-swap token.
    pub state_version: u64,
    /// Where and when the content comes from, as its uploader said
    /// (boxed: most files have none, and listings hold many records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<Box<super::SourceMetadata>>,
    /// When and where the content says it was made, as the processors read
    /// it (set when the file is processed; the timeline's second source).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_time: Option<Box<super::ContentTime>>,
}

/// A folder exists on its own (empty folders are kept).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FolderRecord {
    pub path: VPath,
    pub created_at: Timestamp,
}
