//! Observability without content (memgarden): every search and context
//! build leaves a record of how it went — a query fingerprint, counts per
//! lane, the ids returned, the read gate's reject reasons, the selection
//! chain, timings — and never the query, a path or any content.
//!
//! The fingerprint is HMAC-SHA256 of the normalised query under a random
//! per-workspace key, so the same question asked again has the same
//! fingerprint while a dictionary of likely questions is useless without
//! the key. The key lives in the log's own table, which bundles never
//! carry. Records are keyed by a dense sequence (`r{seq:020}`); each write
//! deletes the record [`KEEP`] places behind it, so the table holds the
//! newest [`KEEP`] without ever counting.

use crate::recall::{ContextPack, SearchResult};
use crate::records::{decode, encode};
use mem_core::store::{Batch, Durability, Scan, StoreError, Table};
use mem_core::time::{Timestamp, now};
use mem_core::{ErrorCode, MemError, MemResult};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::BTreeMap;

/// Records kept.
pub const KEEP: u64 = 10_000;
/// Ids one record keeps (the best first).
const MAX_IDS: usize = 100;
const KEY: &str = "key";
const PREFIX: &str = "r";
pub const DEFAULT_LOG_LIMIT: usize = 50;
pub const MAX_LOG_LIMIT: usize = 1000;
/// Records a long-running process holds before it writes them all.
const PENDING_MAX: usize = 256;
/// Longest query `recall log --query` fingerprints.
pub const MAX_QUERY_CHARS: usize = 10_000;

/// What was recalled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RecallOp {
    Search,
    Context,
}

/// One search or context build, without its content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RecallRecord {
    pub seq: u64,
    pub at: Timestamp,
    pub op: RecallOp,
    /// Keyed hash of the normalised query (`recall log --query` computes it).
    pub fingerprint: String,
    /// Who asked: a token id, or `owner`.
    pub caller: String,
    /// Items per lane: recall lanes (`lexical`, `semantic`) and, for a
    /// context pack, its lanes (`must` ... `missing`).
    pub lanes: BTreeMap<String, u64>,
    /// Recall lanes that did not run normally, with their status.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub lane_status: BTreeMap<String, String>,
    /// Ids returned, best first (at most 100).
    pub ids: Vec<String>,
    /// Candidates the read gate rejected, by rule; filtered out, by filter.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub rejects: BTreeMap<String, u64>,
    /// Selection stages that ran, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chain: Vec<String>,
    /// Nothing was returned.
    pub empty: bool,
    /// Query terms or questions the pack left open.
    pub missing: u64,
    pub partial: bool,
    pub took_ms: u64,
}

/// A record before it has a sequence number and a time.
pub(crate) struct Observed {
    pub op: RecallOp,
    pub query: String,
    pub caller: String,
    pub took_ms: u64,
}

fn lane_name<T: Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| "unknown".into())
}

/// Search lanes: candidates per lane, and the lanes that were not `ok`.
fn recall_lanes(
    lanes: &[mem_core::index::LaneReport],
    counts: &mut BTreeMap<String, u64>,
    status: &mut BTreeMap<String, String>,
) {
    for l in lanes {
        let name = lane_name(&l.lane);
        counts.insert(name.clone(), l.candidates as u64);
        let s = lane_name(&l.status);
        if s != "ok" {
            status.insert(name, s);
        }
    }
}

impl RecallRecord {
    fn new(o: &Observed, fingerprint: String) -> Self {
        Self {
            seq: 0,
            at: now(),
            op: o.op,
            fingerprint,
            caller: o.caller.clone(),
            lanes: BTreeMap::new(),
            lane_status: BTreeMap::new(),
            ids: Vec::new(),
            rejects: BTreeMap::new(),
            chain: Vec::new(),
            empty: true,
            missing: 0,
            partial: false,
            took_ms: o.took_ms,
        }
    }

    pub(crate) fn of_search(o: &Observed, fingerprint: String, r: &SearchResult) -> Self {
        let mut rec = Self::new(o, fingerprint);
        recall_lanes(&r.lanes, &mut rec.lanes, &mut rec.lane_status);
        rec.lanes.insert("hits".into(), r.hits.len() as u64);
        rec.ids = unique(r.hits.iter().map(|h| h.id.as_str()));
        rec.empty = r.hits.is_empty();
        rec.partial = r.partial;
        rec
    }

    pub(crate) fn of_context(o: &Observed, fingerprint: String, p: &ContextPack) -> Self {
        let mut rec = Self::new(o, fingerprint);
        recall_lanes(&p.trace.lanes, &mut rec.lanes, &mut rec.lane_status);
        let packed = [
            ("must", &p.must),
            ("should", &p.should),
            ("context", &p.context),
            ("provisional", &p.provisional),
            ("conflict", &p.conflict),
        ];
        for (lane, items) in packed {
            rec.lanes.insert(lane.into(), items.len() as u64);
        }
        rec.lanes.insert("missing".into(), p.missing.len() as u64);
        rec.lanes.insert("omitted".into(), p.omitted.len() as u64);
        rec.ids = unique(
            packed
                .iter()
                .flat_map(|(_, items)| items.iter().map(|i| i.id.as_str())),
        );
        for r in &p.trace.rejected_by_gate {
            *rec.rejects.entry(r.rule.clone()).or_default() += 1;
        }
        for h in &p.trace.hidden_by_filter {
            *rec.rejects
                .entry(format!("filter:{}", h.filter))
                .or_default() += 1;
        }
        rec.chain = p
            .trace
            .selection
            .stages
            .iter()
            .map(|s| s.plugin.clone())
            .collect();
        rec.empty = rec.ids.is_empty();
        rec.missing = p.missing.len() as u64;
        rec.partial = p.partial;
        rec
    }
}

fn unique<'a>(ids: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for id in ids {
        if out.len() == MAX_IDS {
            break;
        }
        if !out.iter().any(|o| o == id) {
            out.push(id.to_string());
        }
    }
    out
}

/// The query as fingerprinted: lower case, words of letters and digits
/// separated by single spaces (so spacing and punctuation do not matter).
pub fn normalise(query: &str) -> String {
    query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect::<Vec<_>>()
        .join(" ")
}

/// `recall.log`: what the recall log says, optionally about one question.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecallLogQuery {
    /// Only records of this fingerprint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "fingerprint_schema")]
    pub fingerprint: Option<String>,
    /// Only records of this question (its fingerprint is computed; the
    /// text is not stored).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 10000))]
    pub query: Option<String>,
    /// Most records and most fingerprint groups returned (default 50).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<usize>,
}

fn fingerprint_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "type": ["string", "null"], "pattern": "^[0-9a-f]{32}$" })
}

/// The recall log's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RecallLogReport {
    /// The fingerprint asked about (given, or computed from `query`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
    /// Records in the log that match (up to [`KEEP`]).
    pub matched: u64,
    /// Questions by fingerprint, the most often unanswered first.
    pub questions: Vec<QuestionStats>,
    /// The newest matching records first.
    pub records: Vec<RecallRecord>,
}

/// How one question (fingerprint) fared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct QuestionStats {
    pub fingerprint: String,
    pub seen: u64,
    /// Times nothing was returned.
    pub empty: u64,
    /// Times a context pack left query terms or questions open.
    pub missing: u64,
    pub last_at: Timestamp,
}

fn corrupt_key() -> MemError {
    MemError::new(
        mem_core::ErrorCode::StoreCorrupt,
        "the recall log's fingerprint key cannot be read",
    )
    .with_hint("restore the workspace from a backup or a bundle (bundles leave the recall log out, so the import starts a new one)")
}

impl crate::Service {
    /// The workspace's fingerprint key, made on first use.
    fn log_key(&self) -> MemResult<Vec<u8>> {
        if let Some(key) = self.recall.log_key.get() {
            return Ok(key.clone());
        }
        let key = self.load_log_key()?;
        Ok(self.recall.log_key.get_or_init(|| key).clone())
    }

    fn load_log_key(&self) -> MemResult<Vec<u8>> {
        for _ in 0..3 {
            if let Some(raw) = self.store().get(Table::RecallLog, KEY)? {
                let hex = std::str::from_utf8(&raw).map_err(|_| corrupt_key())?;
                return hex::decode(hex).map_err(|_| corrupt_key());
            }
            let mut key = [0u8; 32];
            getrandom::fill(&mut key).map_err(|e| {
                MemError::internal(format!("no randomness for the recall log key: {e}"))
            })?;
            let mut batch = Batch::new();
            batch.expect(Table::RecallLog, KEY, None);
            batch.put(Table::RecallLog, KEY, hex::encode(key).into_bytes());
            match self.store().commit(batch, Durability::Immediate) {
                Ok(_) => return Ok(key.to_vec()),
                // Another writer made it first: read theirs.
                Err(StoreError::ConditionFailed { .. }) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(MemError::internal("the recall log key kept changing"))
    }

    /// The fingerprint of `query` in this workspace.
    pub(crate) fn fingerprint(&self, query: &str) -> MemResult<String> {
        let key = self.log_key()?;
        let digest = mem_core::hash::hmac_sha256_hex(&key, normalise(query).as_bytes());
        Ok(digest[..32].to_string())
    }

    fn last_seq(&self) -> MemResult<u64> {
        let last = self.store().scan(
            Table::RecallLog,
            &Scan {
                prefix: PREFIX,
                after: None,
                limit: 1,
                reverse: true,
            },
        )?;
        Ok(last
            .first()
            .and_then(|(k, _)| k[PREFIX.len()..].parse().ok())
            .unwrap_or(0))
    }

    /// Appends `records` in one batch (in order, dense sequence numbers),
    /// keeping the newest `keep`.
    pub(crate) fn append_recall(&self, records: Vec<RecallRecord>, keep: u64) -> MemResult<u64> {
        let _one_at_a_time = self.recall.log_lock.lock();
        self.append_locked(records, keep)
    }

    /// [`Self::append_recall`] with `log_lock` held. Returns the last
    /// sequence number written (0 when there was nothing to write).
    fn append_locked(&self, mut records: Vec<RecallRecord>, keep: u64) -> MemResult<u64> {
        // More than the log keeps: the older ones would be deleted by the
        // same batch that puts them.
        let beyond = records
            .len()
            .saturating_sub(usize::try_from(keep).unwrap_or(usize::MAX));
        records.drain(..beyond);
        if records.is_empty() {
            return Ok(0);
        }
        for _ in 0..8 {
            let first = self.last_seq()? + 1;
            let mut batch = Batch::new();
            let mut seq = first;
            for record in &mut records {
                record.seq = seq;
                let key = format!("{PREFIX}{seq:020}");
                batch.expect(Table::RecallLog, key.clone(), None);
                batch.put(Table::RecallLog, key, encode(record)?);
                if seq > keep {
                    batch.delete(Table::RecallLog, format!("{PREFIX}{:020}", seq - keep));
                }
                seq += 1;
            }
            // Observability need not be flushed before the answer.
            match self.store().commit(batch, Durability::Deferred) {
                Ok(_) => return Ok(seq - 1),
                // Another process appended: number them after its records.
                Err(StoreError::ConditionFailed { .. }) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(MemError::internal(
            "the recall log is contended; the record was dropped",
        ))
    }

    /// Records one search or context build. A failure to record never
    /// fails the recall: a short-lived process (the CLI) writes the record
    /// before it answers and a failure comes back as a warning; a
    /// long-running one holds it with the others its calls observed and
    /// writes them in one batch (a failure then goes to the log).
    ///
    /// Profiled under 8 clients of lexical search at 100k memories: a
    /// store commit per search (a sled transaction, and its I/O threads
    /// woken each time) took about a fifth of the server's CPU.
    pub(crate) fn observe(
        &self,
        o: &Observed,
        build: impl FnOnce(String) -> RecallRecord,
    ) -> Option<String> {
        let warning = |e: MemError| format!("the recall log was not written: {}", e.message);
        let record = match self.fingerprint(&o.query) {
            Ok(fp) => build(fp),
            Err(e) => return Some(warning(e)),
        };
        if !self.worker_runs() {
            return self.append_recall(vec![record], KEEP).err().map(warning);
        }
        let full = {
            let mut pending = self.recall.log_pending.lock();
            pending.push(record);
            pending.len() >= PENDING_MAX
        };
        if full {
            self.write_recall_log();
        }
        None
    }

    /// Writes the records a long-running process holds: when
    /// [`PENDING_MAX`] are waiting, when the workspace's deferred state is
    /// saved (the worker does it whenever it is idle, at least every few
    /// seconds, and as it stops), and before the log is read. Records that
    /// cannot be written are dropped (the recall log is observability).
    pub(crate) fn write_recall_log(&self) {
        let _one_at_a_time = self.recall.log_lock.lock();
        let records = std::mem::take(&mut *self.recall.log_pending.lock());
        if let Err(e) = self.append_locked(records, KEEP) {
            tracing::warn!(code = %e.code, error = %e.message, "the recall log was not written");
        }
    }

    pub(crate) fn recall_log(&self, q: &RecallLogQuery) -> MemResult<RecallLogReport> {
        // What this process's calls observed is part of the answer.
        self.write_recall_log();
        let limit = q.limit.unwrap_or(DEFAULT_LOG_LIMIT);
        if !(1..=MAX_LOG_LIMIT).contains(&limit) {
            return Err(crate::navigation::catalog::out_of_range(
                "limit",
                1,
                MAX_LOG_LIMIT,
            ));
        }
        let fingerprint = match (&q.fingerprint, &q.query) {
            (Some(_), Some(_)) => {
                return Err(MemError::new(
                    ErrorCode::Unprocessable,
                    "give fingerprint or query, not both",
                )
                .with_hint("query computes the fingerprint; send one of them")
                .with_details(json!({ "field": "query" })));
            }
            (Some(f), None) => Some(f.trim().to_ascii_lowercase()),
            (None, Some(text)) => {
                if text.trim().is_empty() || text.chars().count() > MAX_QUERY_CHARS {
                    return Err(MemError::bad_request(format!(
                        "query must be 1 to {MAX_QUERY_CHARS} characters and not blank"
                    ))
                    .with_details(json!({ "field": "query" })));
                }
                Some(self.fingerprint(text)?)
            }
            (None, None) => None,
        };
        let mut stats: BTreeMap<String, QuestionStats> = BTreeMap::new();
        let mut records = Vec::new();
        let mut matched = 0;
        let mut after: Option<String> = None;
        loop {
            let page = self.store().scan(
                Table::RecallLog,
                &Scan {
                    prefix: PREFIX,
                    after: after.as_deref(),
                    limit: 1024,
                    reverse: true,
                },
            )?;
            let done = page.len() < 1024;
            for (key, raw) in page {
                let r: RecallRecord = decode(Table::RecallLog, &key, &raw)?;
                after = Some(key);
                if fingerprint.as_ref().is_some_and(|f| *f != r.fingerprint) {
                    continue;
                }
                matched += 1;
                let s = stats
                    .entry(r.fingerprint.clone())
                    .or_insert_with(|| QuestionStats {
                        fingerprint: r.fingerprint.clone(),
                        seen: 0,
                        empty: 0,
                        missing: 0,
                        last_at: r.at,
                    });
                s.seen += 1;
                s.empty += u64::from(r.empty);
                s.missing += u64::from(r.missing > 0);
                if records.len() < limit {
                    records.push(r);
                }
            }
            if done {
                break;
            }
        }
        let mut questions: Vec<QuestionStats> = stats.into_values().collect();
        questions.sort_by(|a, b| {
            (b.empty + b.missing, b.seen)
                .cmp(&(a.empty + a.missing, a.seen))
                .then_with(|| a.fingerprint.cmp(&b.fingerprint))
        });
        questions.truncate(limit);
        Ok(RecallLogReport {
            fingerprint,
            matched,
            questions,
            records,
        })
    }
}

#[cfg(test)]
mod tests;
