//! Recall: hybrid search and cited, budgeted context packs.
//!
//! The service sees only the `SearchIndex` seam (no tantivy, usearch or ort
//! type). Search turns a request into index filters, asks the index for
//! fused hits, and resolves each hit against the store (the store, not the
//! index, is the source of content, so a hit can never show text that was
//! forgotten). Context packs build on search: see [`context`].

mod conflict;
pub mod context;
pub mod count;
mod own_writes;
pub(crate) mod period;
mod read_gate;
mod selection;
mod sync;

use crate::Service;
use crate::records::load;
use mem_core::hash::sha256_hex;
use mem_core::index::{
    LaneReport, LaneStatus, Period, SearchFilters, SearchIndex, SearchRequest, SourceKind,
};
use mem_core::model::{FileRecord, Memory};
use mem_core::plugin::ProcessedFile;
use mem_core::store::Table;
use mem_core::time::{Timestamp, parse_rfc3339};
use mem_core::{ErrorCode, MemError, MemResult, VPath};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

pub use conflict::PackConflict;
pub use context::{ContextItem, ContextPack, ContextRequest, OmittedItem, PackTrace};
use period::period_in;

/// Default and largest number of hits.
pub const DEFAULT_SEARCH_LIMIT: usize = 10;
pub const MAX_SEARCH_LIMIT: usize = 200;
/// Longest excerpt of a hit, in characters.
const EXCERPT_CHARS: usize = 320;

/// Opens a workspace's search index. Called once, on first use.
pub type IndexOpener = Box<dyn Fn() -> MemResult<Arc<dyn SearchIndex>> + Send + Sync>;

/// The index and its sync state, held by the [`Service`].
#[derive(Default)]
pub(crate) struct RecallState {
    /// Opens the index when it is first needed: loading it (the vectors,
    /// the catalog of every document) costs more than most commands that
    /// never search or write, such as `memory get` or `ls`.
    pub opener: Option<IndexOpener>,
    pub index: OnceLock<Arc<dyn SearchIndex>>,
    /// Held while opening, so concurrent first uses open it once.
    pub open_lock: Mutex<()>,
    /// Set by the first successful sync: the index has replayed the log.
    pub caught_up: AtomicBool,
    pub last_sync_error: Mutex<Option<MemError>>,
    pub sync_lock: Mutex<()>,
    /// Writes this process acknowledged before the index replayed them
    /// (counted after each commit): the worker replays them after the
    /// acknowledgement, and a read of the index first replays any a
    /// completed sync has not covered, so a writer reads its own writes.
    pub written: AtomicU64,
    /// The value of `written` the last finished sync had read before it
    /// replayed the log.
    pub synced: AtomicU64,
    /// Each caller's last acknowledged write, as a value of `written` (see
    /// `own_writes`): one entry per token that wrote, and the owner.
    pub writes_of: parking_lot::Mutex<std::collections::HashMap<String, u64>>,
    /// The recall log's fingerprint key, once read (it never changes).
    pub log_key: OnceLock<Vec<u8>>,
    /// One recall-log append at a time in this process: concurrent
    /// searches would otherwise take the same next sequence number and
    /// retry each other out (the store's condition still guards against
    /// another process). Held while pending records are taken, so they are
    /// written in the order they were observed.
    pub log_lock: parking_lot::Mutex<()>,
    /// Records a long-running process observed and has not written yet
    /// (see [`crate::Service::write_recall_log`]).
    pub log_pending: parking_lot::Mutex<Vec<crate::recall_log::RecallRecord>>,
}

/// A search request (CLI flags, REST/MCP body, one `--batch` line).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchQuery {
    /// What to look for, in plain words.
    #[schemars(length(max = 4096))]
    pub query: String,
    /// Any of these memory kinds (or file MIME types).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kinds: Vec<String>,
    /// Only under this folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::ops::fields::opt_path")]
    pub path: Option<String>,
    /// All of these tags.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// RFC 3339 or `YYYY-MM-DD`; bounds the event time (else the write time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::ops::fields::opt_time_or_date")]
    pub since: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::ops::fields::opt_time_or_date")]
    pub until: Option<String>,
    /// `active` (default), `archived`, `superseded`, or `all`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::ops::fields::search_lifecycles")]
    pub lifecycle: Vec<String>,
    /// `memory`, `file` or `all` (default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::ops::fields::opt_source")]
    pub source: Option<String>,
    /// Only files of this type: `image`, `doc` (text, PDF, office
    /// documents), `audio`, or `any` (every file; no memories).
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::ops::fields::opt_file_type")]
    pub file_type: Option<String>,
    /// 1 to 200 (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 200))]
    pub limit: Option<usize>,
    /// Skip the semantic lane.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub lexical_only: bool,
    /// The caller's path boundary (set by [`crate::access`], never by a
    /// request body): only items below one of these folders exist for it.
    #[serde(skip)]
    #[schemars(skip)]
    pub within: Vec<String>,
}

/// One search hit, resolved against the store.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SearchHit {
    /// The memory id, or the file id for a file chunk.
    pub id: String,
    pub source: SourceKind,
    /// Memory kind, or the file's MIME type.
    pub kind: String,
    pub path: String,
    /// `mem://memory/ID` or `mem://file/ID#L10-24`.
    pub citation: String,
    /// The memory's provenance source reference (e.g. a dialogue turn).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_ref: Option<String>,
    /// `L10-24` for a file chunk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locator: Option<String>,
    pub score: f32,
    /// 1-based rank in the lexical lane, if it found the hit.
    pub lexical_rank: Option<u32>,
    /// 1-based rank in the semantic lane, if it found the hit.
    pub semantic_rank: Option<u32>,
    /// Query words found in the hit.
    pub matched_terms: Vec<String>,
    /// Its time (event time, else write time) is in the period the query
    /// names, which ranked it higher.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub in_period: bool,
    pub excerpt: String,
    /// SHA-256 of the full text the hit stands for.
    pub content_sha256: String,
    pub lifecycle: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_at: Option<Timestamp>,
    pub created_at: Timestamp,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Full text, kept for context packs; not serialized.
    #[serde(skip)]
    #[schemars(skip)]
    pub(crate) text: String,
    #[serde(skip)]
    #[schemars(skip)]
    pub(crate) confidence: f64,
    #[serde(skip)]
    #[schemars(skip)]
    pub(crate) pinned: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SearchResult {
    pub query: String,
    /// The period the query names ("in May 2023", "last week"): hits from
    /// then rank higher; nothing is filtered out (use `since`/`until`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub period: Option<Period>,
    pub hits: Vec<SearchHit>,
    /// How each recall lane did; the semantic lane is `unavailable` when no
    /// embedding model is installed.
    pub lanes: Vec<LaneReport>,
    /// A lane failed: results may be missing some hits.
    pub partial: bool,
    pub warnings: Vec<String>,
    pub took_ms: u64,
}

fn parse_bound(s: &str, end_of_day: bool) -> MemResult<i64> {
    if let Ok(d) = chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d") {
        let t = if end_of_day {
            d.and_hms_milli_opt(23, 59, 59, 999)
        } else {
            d.and_hms_opt(0, 0, 0)
        };
        return t
            .map(|t| t.and_utc().timestamp_millis())
            .ok_or_else(|| MemError::bad_request(format!("bad date {s:?}")));
    }
    parse_rfc3339(s)
        .map(|t| t.timestamp_millis())
        .map_err(|e| e.with_hint("use RFC 3339 (2026-11-30T12:00:00Z) or a date (2026-11-30)"))
}

/// Turns a request's flags into index filters (validating them).
pub(crate) fn filters_of(q: &SearchQuery) -> MemResult<SearchFilters> {
    let mut source = match q.source.as_deref() {
        None | Some("") | Some("all") => None,
        Some("memory") | Some("memories") => Some(SourceKind::Memory),
        Some("file") | Some("files") => Some(SourceKind::File),
        Some(other) => {
            return Err(MemError::bad_request(format!("unknown source {other:?}"))
                .with_hint("use memory, file or all"));
        }
    };
    // A file type filter: files only, of that MIME family.
    let mut kind_prefixes = Vec::new();
    if let Some(t) = q.file_type.as_deref() {
        let allowed = crate::mime::FILE_TYPES.join(", ");
        let prefixes = crate::mime::type_prefixes(t).ok_or_else(|| {
            MemError::bad_request(format!("unknown file type {t:?}"))
                .with_hint(format!("use one of {allowed}"))
                .with_details(json!({ "field": "type", "allowed": crate::mime::FILE_TYPES }))
        })?;
        if source == Some(SourceKind::Memory) {
            return Err(MemError::bad_request(
                "a file type filter finds files, and source is memory",
            )
            .with_hint("leave out type, or search source file or all")
            .with_details(json!({ "field": "type" })));
        }
        source = Some(SourceKind::File);
        kind_prefixes = prefixes.iter().map(|p| p.to_string()).collect();
    }
    let mut lifecycles = Vec::new();
    for l in &q.lifecycle {
        match l.as_str() {
            "active" | "archived" | "superseded" => lifecycles.push(l.clone()),
            "all" => lifecycles.extend(["active", "archived", "superseded"].map(String::from)),
            "forgotten" => {
                return Err(MemError::bad_request("forgotten memories are not searchable")
                    .with_hint("their content was purged; `memory list --lifecycle forgotten` shows the tombstones"));
            }
            other => {
                return Err(
                    MemError::bad_request(format!("unknown lifecycle {other:?}"))
                        .with_hint("use active, archived, superseded or all"),
                );
            }
        }
    }
    let path = q
        .path
        .as_deref()
        .map(VPath::parse)
        .transpose()?
        .map(|p| p.as_str().to_string());
    let since_ms = q
        .since
        .as_deref()
        .map(|s| parse_bound(s, false))
        .transpose()?;
    let until_ms = q
        .until
        .as_deref()
        .map(|s| parse_bound(s, true))
        .transpose()?;
    Ok(SearchFilters {
        source,
        kind_prefixes,
        kinds: q
            .kinds
            .iter()
            .map(|k| k.trim().to_ascii_lowercase())
            .filter(|k| !k.is_empty())
            .collect(),
        path,
        within: q.within.clone(),
        tags: q
            .tags
            .iter()
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty())
            .collect(),
        agent_id: q
            .agent
            .as_ref()
            .map(|a| a.trim().to_string())
            .filter(|a| !a.is_empty()),
        since_ms,
        until_ms,
        lifecycles,
    })
}

/// At most `max` characters of `text`, centred on the first matched term.
fn excerpt(text: &str, terms: &[String]) -> String {
    let chars: Vec<char> = text.chars().collect();
    if chars.len() <= EXCERPT_CHARS {
        return text.to_string();
    }
    let lower = text.to_lowercase();
    let first = terms
        .iter()
        .filter_map(|t| lower.find(t.as_str()))
        .min()
        .unwrap_or(0);
    let first_char = text.get(..first).map_or(0, |s| s.chars().count());
    let start = first_char
        .saturating_sub(EXCERPT_CHARS / 3)
        .min(chars.len() - EXCERPT_CHARS);
    let body: String = chars[start..start + EXCERPT_CHARS].iter().collect();
    format!(
        "{}{}{}",
        if start > 0 { "…" } else { "" },
        body,
        if start + EXCERPT_CHARS < chars.len() {
            "…"
        } else {
            ""
        }
    )
}

impl Service {
    /// Attaches an open search index; call [`Service::open_index`] next.
    pub fn with_index(self, index: Arc<dyn SearchIndex>) -> Self {
        let _ = self.recall.index.set(index);
        self
    }

    /// Attaches a search index that `open` opens on first use, which then
    /// replays the events it missed.
    pub fn with_index_opener(mut self, open: IndexOpener) -> Self {
        self.recall.opener = Some(open);
        self
    }

    /// The search index as it is, opened on first use.
    pub(crate) fn index(&self) -> MemResult<Option<&dyn SearchIndex>> {
        if let Some(ix) = self.recall.index.get() {
            return Ok(Some(ix.as_ref()));
        }
        let Some(open) = &self.recall.opener else {
            return Ok(None);
        };
        let _guard = self
            .recall
            .open_lock
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if self.recall.index.get().is_none() {
            let _ = self.recall.index.set(open()?);
        }
        Ok(self.recall.index.get().map(|ix| ix.as_ref()))
    }

    /// The search index, having replayed what it missed while the
    /// workspace was closed (once per process; writes keep it in step).
    fn current_index(&self) -> MemResult<Option<&dyn SearchIndex>> {
        if !self.recall.caught_up.load(Ordering::SeqCst) {
            self.sync_index()?;
        }
        self.catch_up_index();
        self.index()
    }

    /// Brings the index up to date now: replays events it missed, or
    /// rebuilds it when it cannot replay. Returns the events/records
    /// applied. (A server calls this at start, so its first request does
    /// not pay for it.)
    pub fn open_index(&self) -> MemResult<u64> {
        self.sync_index()
    }

    pub fn index_stats(&self) -> MemResult<Option<mem_core::index::IndexStats>> {
        Ok(self.current_index()?.map(|i| i.stats()))
    }

    fn require_index(&self) -> MemResult<&dyn SearchIndex> {
        self.current_index()?.ok_or_else(|| {
            MemError::new(
                ErrorCode::ProviderUnavailable,
                "this workspace was opened without a search index",
            )
            .with_hint("open the workspace with the mem-host binary, which attaches its index")
        })
    }

    /// Resolves an index hit against the store; `None` when the record no
    /// longer stands for searchable content.
    fn resolve_hit(&self, h: &mem_core::index::IndexHit) -> MemResult<Option<SearchHit>> {
        match h.source {
            SourceKind::Memory => {
                let Some(m) = load::<Memory>(self.store(), Table::Memories, &h.record_id)? else {
                    return Ok(None);
                };
                let m = m.value;
                let Some(text) = m.content.clone() else {
                    return Ok(None);
                };
                Ok(Some(SearchHit {
                    id: m.id.clone(),
                    source: SourceKind::Memory,
                    kind: m.kind.clone(),
                    path: m.path.as_str().to_string(),
                    citation: format!("mem://memory/{}", m.id),
                    source_ref: m.provenance.source_ref.clone(),
                    locator: None,
                    score: h.score,
                    lexical_rank: h.lexical_rank,
                    semantic_rank: h.semantic_rank,
                    in_period: h.in_period,
                    matched_terms: h.matched_terms.clone(),
                    excerpt: excerpt(&text, &h.matched_terms),
                    content_sha256: m.content_sha256.clone(),
                    lifecycle: m.lifecycle.as_str().to_string(),
                    agent_id: m.provenance.agent_id.clone(),
                    event_at: m.provenance.event_at,
                    created_at: m.created_at,
                    tags: Vec::new(),
                    text,
                    confidence: m.confidence,
                    pinned: m.pinned,
                }))
            }
            SourceKind::File => {
                let Some(f) = load::<FileRecord>(self.store(), Table::Files, &h.record_id)? else {
                    return Ok(None);
                };
                let Some(c) =
                    load::<ProcessedFile>(self.store(), Table::FileContent, &h.record_id)?
                else {
                    return Ok(None);
                };
                let chunk_no = h
                    .doc_id
                    .rsplit_once('#')
                    .and_then(|(_, n)| n.parse::<usize>().ok());
                let Some(chunk) = chunk_no.and_then(|n| c.value.chunks.get(n)) else {
                    return Ok(None);
                };
                let f = f.value;
                let locator = chunk.locator();
                Ok(Some(SearchHit {
                    id: f.id.clone(),
                    source: SourceKind::File,
                    kind: f.mime.clone(),
                    path: f.path.as_str().to_string(),
                    citation: format!("mem://file/{}#{locator}", f.id),
                    source_ref: None,
                    locator: Some(locator),
                    score: h.score,
                    lexical_rank: h.lexical_rank,
                    semantic_rank: h.semantic_rank,
                    in_period: h.in_period,
                    matched_terms: h.matched_terms.clone(),
                    excerpt: excerpt(&chunk.text, &h.matched_terms),
                    content_sha256: sha256_hex(chunk.text.as_bytes()),
                    lifecycle: "active".into(),
                    agent_id: None,
                    event_at: None,
                    created_at: f.created_at,
                    tags: f.tags.clone(),
                    text: chunk.text.clone(),
                    confidence: 1.0,
                    pinned: false,
                }))
            }
        }
    }

    /// Hybrid search over memories and file chunks.
    pub(crate) fn search(&self, q: &SearchQuery) -> MemResult<SearchResult> {
        let started = std::time::Instant::now();
        let limit = q.limit.unwrap_or(DEFAULT_SEARCH_LIMIT);
        if limit == 0 || limit > MAX_SEARCH_LIMIT {
            return Err(MemError::bad_request(format!(
                "limit must be 1..={MAX_SEARCH_LIMIT}"
            )));
        }
        let filters = filters_of(q)?;
        let index = self.require_index()?;
        let period = period_in(&q.query, mem_core::time::now());
        let req = SearchRequest {
            query: q.query.clone(),
            filters,
            limit,
            semantic: !q.lexical_only,
            period: period.clone(),
        };
        let resp = index.search(&req)?;
        let mut hits = Vec::with_capacity(resp.hits.len());
        for h in &resp.hits {
            if let Some(hit) = self.resolve_hit(h)? {
                hits.push(hit);
            }
        }
        let mut warnings: Vec<String> = resp
            .lanes
            .iter()
            .filter(|l| l.status != LaneStatus::Ok)
            .map(|l| {
                let what = if l.status == LaneStatus::Failed {
                    "failed"
                } else {
                    "unavailable"
                };
                format!(
                    "{:?} lane {what}: {}",
                    l.lane,
                    l.message.as_deref().unwrap_or("no details")
                )
                .to_lowercase()
            })
            .collect();
        if let Some(e) = self.index_warning() {
            warnings.push(format!(
                "the index is behind the store ({}); it catches up at the next write or open",
                e.message
            ));
        }
        Ok(SearchResult {
            query: q.query.clone(),
            period,
            partial: resp.lanes.iter().any(|l| l.status == LaneStatus::Failed),
            lanes: resp.lanes,
            hits,
            warnings,
            took_ms: started.elapsed().as_millis() as u64,
        })
    }
}

#[cfg(test)]
mod lanes_tests;
#[cfg(test)]
mod tests;
