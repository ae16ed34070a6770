//! The search seam: what the service layer needs from lexical and vector
//! indexes and from the embedder. Implemented by `mem-index`.
//!
//! Indexes are derived state: the store's event log is the truth and an
//! index records the last event sequence it applied (its watermark), so the
//! service can replay what an index missed after a crash, or rebuild it.

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::error::{ErrorCode, MemError};

/// What a search document was cut from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SourceKind {
    Memory,
    File,
}

impl SourceKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Memory => "memory",
            Self::File => "file",
        }
    }
}

/// One searchable unit: a memory, or one chunk of a processed file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IndexDoc {
    /// Unique per document: the memory id, or `"{file_id}#{chunk}"`.
    pub doc_id: String,
    /// The record the document belongs to (memory id or file id); removing
    /// a record removes all of its documents.
    pub record_id: String,
    pub source: SourceKind,
    pub text: String,
    /// Virtual path (memory scope, or the file's path).
    pub path: String,
    /// Memory kind/type, or the file's MIME type.
    pub kind: String,
    pub tags: Vec<String>,
    pub agent_id: Option<String>,
    /// `active`, `archived`, ... (files are always `active`).
    pub lifecycle: String,
    /// Unix milliseconds.
    pub created_at_ms: i64,
    /// When the remembered thing happened, unix milliseconds.
    pub event_at_ms: Option<i64>,
    /// e.g. `L10-24` for a file chunk.
    pub locator: Option<String>,
    /// Neighbouring text that helps find this document (e.g. the memory
    /// written just before it in the same scope). Matched with a lower
    /// weight than `text`; never shown as the document's content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
}

/// Filters every lane applies before ranking.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SearchFilters {
    pub source: Option<SourceKind>,
    /// Any of these kinds (empty: all).
    pub kinds: Vec<String>,
    /// And a kind starting with one of these (empty: any): a family of
    /// MIME types, e.g. `image/` (see the service's `type` filter).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kind_prefixes: Vec<String>,
    /// The document's path equals or lies below this folder.
    pub path: Option<String>,
    /// And below at least one of these folders (empty: anywhere). A caller's
    /// path boundary (token `--paths`), applied inside the index so limits
    /// count only what the caller may see.
    pub within: Vec<String>,
    /// All of these tags.
    pub tags: Vec<String>,
    pub agent_id: Option<String>,
    /// Inclusive bounds on `event_at_ms` (falling back to `created_at_ms`).
    pub since_ms: Option<i64>,
    pub until_ms: Option<i64>,
    /// Any of these lifecycles (empty: `active` only).
    pub lifecycles: Vec<String>,
}

/// A period the query names ("in May 2023", "on 1 May, 2023", "last
/// week"): documents from then rank higher. A soft preference, unlike the
/// `since`/`until` filters, because a question worded around a date often
/// means something told a little before or after it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Period {
    /// The words of the query that name the period.
    pub text: String,
    /// Start (inclusive) and end (exclusive) of a dated period.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<crate::time::Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<crate::time::Timestamp>,
    /// A month named without a year ("in June", 1-12): that month of any year.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub month: Option<u32>,
}

impl Period {
    /// Whether a document's time (unix ms) falls in the period.
    pub fn contains(&self, t_ms: i64) -> bool {
        use chrono::Datelike;
        if let Some(m) = self.month {
            return chrono::DateTime::from_timestamp_millis(t_ms).is_some_and(|t| t.month() == m);
        }
        self.from.is_none_or(|f| t_ms >= f.timestamp_millis())
            && self.until.is_none_or(|u| t_ms < u.timestamp_millis())
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchRequest {
    pub query: String,
    pub filters: SearchFilters,
    pub limit: usize,
    /// Run the semantic lane when a model is active.
    pub semantic: bool,
    /// A period the query names, if any (see [`Period`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub period: Option<Period>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Lane {
    Lexical,
    Semantic,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LaneStatus {
    Ok,
    /// Not configured (e.g. no embedding model installed): not an error.
    Unavailable,
    /// Configured but failed this time: the response is partial.
    Failed,
}

/// How one recall lane did, for traces and the `partial` flag.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LaneReport {
    pub lane: Lane,
    pub status: LaneStatus,
    /// Candidates the lane produced after filters.
    pub candidates: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// A fused hit. Ranks are 1-based positions within each lane.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IndexHit {
    pub doc_id: String,
    pub record_id: String,
    pub source: SourceKind,
    pub score: f32,
    pub lexical_rank: Option<u32>,
    pub semantic_rank: Option<u32>,
    /// Query terms found in the document (lexical lane).
    pub matched_terms: Vec<String>,
    pub locator: Option<String>,
    /// The document's time is in the request's period (it ranked higher).
    #[serde(default)]
    pub in_period: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchResponse {
    pub hits: Vec<IndexHit>,
    pub lanes: Vec<LaneReport>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct IndexStats {
    pub documents: u64,
    pub vectors: u64,
    pub lexical_bytes: u64,
    pub vector_bytes: u64,
    /// Active embedding model, if any.
    pub model: Option<String>,
    pub watermark: u64,
}

#[derive(Debug, Clone, Error)]
pub enum IndexError {
    #[error("search index is damaged: {0}")]
    Corrupt(String),
    #[error("embedding model unavailable: {0}")]
    ModelUnavailable(String),
    #[error("embedding failed: {0}")]
    Embedding(String),
    #[error("bad query: {0}")]
    BadQuery(String),
    #[error("index I/O failed: {0}")]
    Io(String),
}

impl From<IndexError> for MemError {
    fn from(e: IndexError) -> Self {
        let msg = e.to_string();
        match e {
            IndexError::Corrupt(_) => MemError::new(ErrorCode::StoreCorrupt, msg).with_hint(
                "rebuild the search index with `mem-host reindex --all`; the store is intact",
            ),
            IndexError::ModelUnavailable(_) | IndexError::Embedding(_) => {
                MemError::new(ErrorCode::ProviderUnavailable, msg).with_hint(
                    "check `mem-host model status`; reinstall with `mem-host model install`",
                )
            }
            IndexError::BadQuery(_) => {
                MemError::bad_request(msg).with_hint("simplify the query text")
            }
            IndexError::Io(_) => MemError::new(ErrorCode::Io, msg)
                .with_hint("check free disk space and permissions of the workspace folder"),
        }
    }
}

/// A text embedder (the host's native ONNX model). Vectors are
/// L2-normalized, `dimensions()` long, one per input, in input order.
pub trait Embedder: Send + Sync {
    fn model_id(&self) -> &str;
    fn dimensions(&self) -> usize;
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, IndexError>;
}

/// Hybrid search over memories and file chunks.
///
/// Invariants: after `remove_record` returns, no search returns documents of
/// that record (forgotten content leaves at once). `commit` makes changes
/// durable together with the watermark; after a crash, the index reopens at
/// its last committed watermark and the caller replays later events.
pub trait SearchIndex: Send + Sync {
    /// Adds or replaces documents by `doc_id` (embedding them in batches when
    /// a model is active). Visible to `search` after `commit`.
    fn upsert(&self, docs: Vec<IndexDoc>) -> Result<(), IndexError>;
    /// Removes every document whose `record_id` matches.
    fn remove_record(&self, record_id: &str) -> Result<(), IndexError>;
    /// Publishes pending changes and persists them, recording `watermark`.
    /// A lane may defer the costly part of persisting (see `flush`); after
    /// a crash it reopens at an earlier watermark and the caller replays.
    fn commit(&self, watermark: u64) -> Result<(), IndexError>;
    /// Persists whatever `commit` deferred (on shutdown, after bulk work).
    fn flush(&self) -> Result<(), IndexError> {
        Ok(())
    }
    /// The event sequence number of the last commit (0 when empty).
    fn watermark(&self) -> u64;
    /// Drops every document (before a full rebuild).
    fn clear(&self) -> Result<(), IndexError>;
    /// True when the index cannot be brought up to date by replaying events
    /// after its watermark (it was missing or damaged and was recreated
    /// empty, or its vectors were made by another model): the caller clears
    /// it and re-indexes every record.
    fn needs_rebuild(&self) -> bool {
        false
    }
    fn search(&self, request: &SearchRequest) -> Result<SearchResponse, IndexError>;
    fn stats(&self) -> IndexStats;
}
