//! Computing relations: each step recomputes the items the event log
//! names after the watermark, against a bounded pool of candidates (the
//! newest memories and files, and the step's own items), and stores what
//! the workspace's `[plugins] related` detectors find, from both ends.

use super::items::Relatable;
use super::{RelationType, StoredRelation, relation_key, split_key};
use crate::Service;
use crate::records::{decode, encode, scan_all};
use mem_core::model::{Event, FileRecord, Memory};
use mem_core::plugin::DetectItem;
use mem_core::store::{Batch, Durability, Log, Scan, Table};
use mem_core::time::now;
use mem_core::{MemError, MemResult};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashSet};

/// Where the watermark lives: in the relations table (derived state goes
/// together), under a key no item id can take.
const WATERMARK_KEY: &str = "#watermark";
/// Items recomputed per step: bounds the detector work one write waits for.
pub(crate) const STEP_ITEMS: usize = 32;
/// Newest memories and files each subject is compared with (each kind):
/// a deterministic, bounded candidate set.
const RECENT_PER_KIND: usize = 100;
/// Records read while looking for the newest active memories.
const RECENT_SCAN: usize = 400;
/// Events read per page while looking for items to recompute.
const EVENT_PAGE: usize = 1024;
/// Longest reason stored: a detector's text, for people, not a payload.
const MAX_REASON_CHARS: usize = 500;
/// Items `refresh` recomputes per call unless told otherwise.
pub const DEFAULT_REFRESH_ITEMS: usize = 256;

/// One relation computation at a time in a process: steps read and move
/// one watermark.
static RELATING: parking_lot::Mutex<()> = parking_lot::Mutex::new(());

/// What a refresh did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RefreshReport {
    /// Items whose relations were recomputed (or removed, for items gone).
    pub items: usize,
    /// Relations found by this refresh, per item recomputed (a pair found
    /// from both of its items counts twice).
    pub relations: usize,
    /// Events read from the log.
    pub events: u64,
    /// The log position relations are computed up to now.
    pub watermark: u64,
    /// True when items are still waiting: call again to go on.
    pub pending: bool,
    /// The detectors that ran.
    pub detectors: Vec<String>,
    /// Detectors that failed, with why: their earlier findings are kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<String>,
}

/// Relations computed so far, against the event log they follow: a bulk
/// import leaves a backlog the worker works through (see `worker`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RelationsProgress {
    /// The event log position relations are computed up to.
    pub computed_to: u64,
    /// The newest event's position.
    pub log_head: u64,
    /// Events wait for relations (what `related` answers as `pending`).
    pub pending: bool,
}

impl Service {
    fn related_watermark(&self) -> MemResult<u64> {
        match self.store().get(Table::Relations, WATERMARK_KEY)? {
            Some(raw) => decode(Table::Relations, WATERMARK_KEY, &raw),
            None => Ok(0),
        }
    }

    /// How far relations are computed behind the event log (what
    /// `status` shows); `None` without detectors.
    pub(crate) fn relations_progress(&self) -> MemResult<Option<RelationsProgress>> {
        if self.related_detectors().is_empty() {
            return Ok(None);
        }
        let computed_to = self.related_watermark()?;
        let log_head = self
            .store()
            .last_log_entry(Log::Events)?
            .map_or(0, |(seq, _)| seq);
        Ok(Some(RelationsProgress {
            computed_to,
            log_head,
            pending: log_head > computed_to,
        }))
    }

    fn related_detectors(&self) -> Vec<String> {
        match self.plugins() {
            Some(host) => host.config().related,
            None => Vec::new(),
        }
    }

    /// Whether the log holds writes whose relations are not computed yet.
    pub(crate) fn related_pending(&self) -> MemResult<bool> {
        Ok(self.relations_progress()?.is_some_and(|p| p.pending))
    }

    /// One bounded step, never failing the caller (a write is durable
    /// whatever its relations): what `settle` and `related` run. True
    /// when items are still waiting.
    pub(crate) fn catch_up_related(&self) -> bool {
        match self.relate_step(STEP_ITEMS) {
            Ok(step) => step.pending,
            Err(e) => {
                tracing::warn!(code = %e.code, error = %e.message, "computing relations failed");
                false
            }
        }
    }

    /// Recomputes up to `max_items` items (from the start of the log with
    /// `all`), in steps that each save the watermark: an interrupted
    /// refresh goes on where it stopped.
    pub(crate) fn refresh_related(&self, all: bool, max_items: usize) -> MemResult<RefreshReport> {
        if all {
            let _guard = RELATING.lock();
            let mut batch = Batch::new();
            batch.put(Table::Relations, WATERMARK_KEY, encode(&0u64)?);
            self.store().commit(batch, Durability::Immediate)?;
        }
        let mut total = RefreshReport::default();
        loop {
            let left = max_items.saturating_sub(total.items);
            let step = self.relate_step(left.min(STEP_ITEMS))?;
            total.items += step.items;
            total.relations += step.relations;
            total.events += step.events;
            total.watermark = step.watermark;
            total.pending = step.pending;
            total.detectors = step.detectors;
            total.failures.extend(step.failures);
            if !step.pending || total.items >= max_items || step.events == 0 {
                break;
            }
        }
        total.failures.sort();
        total.failures.dedup();
        Ok(total)
    }

    /// Recomputes the items named by up to `max_items` distinct targets
    /// of the events after the watermark, then moves the watermark past
    /// the events consumed.
    fn relate_step(&self, max_items: usize) -> MemResult<RefreshReport> {
        let _guard = RELATING.lock();
        let detectors = self.related_detectors();
        let mut report = RefreshReport {
            detectors: detectors.clone(),
            ..RefreshReport::default()
        };
        let mut watermark = self.related_watermark()?;
        let mut targets: Vec<String> = Vec::new();
        let mut seen = HashSet::new();
        'read: loop {
            let page = self.store().read_log(Log::Events, watermark, EVENT_PAGE)?;
            for (seq, raw) in &page {
                let ev: Event = decode(Table::Meta, &format!("event {seq}"), raw)?;
                let relevant = ev.action.starts_with("memory.") || ev.action.starts_with("file.");
                if relevant && !seen.contains(&ev.target) {
                    if targets.len() >= max_items {
                        report.pending = true;
                        break 'read;
                    }
                    seen.insert(ev.target.clone());
                    targets.push(ev.target);
                }
                watermark = *seq;
                report.events += 1;
            }
            if page.len() < EVENT_PAGE {
                break;
            }
        }
        report.watermark = watermark;
        if report.events == 0 {
            return Ok(report);
        }
        if !detectors.is_empty() {
            // Open (not caught up): the plugins' embedder answers the
            // texts the index embedded from its vectors instead of the
            // model (`mem_index::KnownFirst`); a process that only relates
            // would otherwise embed every item again. A failure to open
            // only leaves the model to embed them.
            if let Err(e) = self.index() {
                tracing::debug!(error = %e.message, "relations run without the index's vectors");
            }
            let pool = self.candidate_pool(&targets)?;
            let mut failed = BTreeSet::new();
            for target in &targets {
                let (stored, failures) = self.relate_one(target, &pool, &detectors)?;
                report.items += 1;
                report.relations += stored;
                failed.extend(failures);
            }
            report.failures = failed.into_iter().collect();
        }
        let mut batch = Batch::new();
        batch.put(Table::Relations, WATERMARK_KEY, encode(&watermark)?);
        self.store().commit(batch, Durability::Deferred)?;
        Ok(report)
    }

    /// The newest active memories and files, interleaved so a detector
    /// that reads only the first candidates sees both kinds, then the
    /// step's own items.
    fn candidate_pool(&self, targets: &[String]) -> MemResult<Vec<Relatable>> {
        let newest = |table: Table, limit: usize| {
            self.store().scan(
                table,
                &Scan {
                    prefix: "",
                    after: None,
                    limit,
                    reverse: true,
                },
            )
        };
        let mut memories = Vec::new();
        for (key, raw) in newest(Table::Memories, RECENT_SCAN)? {
            let m: Memory = decode(Table::Memories, &key, &raw)?;
            if let Some(r) = self.relatable_memory(&m) {
                memories.push(r);
                if memories.len() >= RECENT_PER_KIND {
                    break;
                }
            }
        }
        let mut files = Vec::new();
        for (key, raw) in newest(Table::Files, RECENT_PER_KIND)? {
            let f: FileRecord = decode(Table::Files, &key, &raw)?;
            files.push(self.relatable_file(&f)?);
        }
        let mut pool = Vec::new();
        let (mut m, mut f) = (memories.into_iter(), files.into_iter());
        loop {
            match (m.next(), f.next()) {
                (None, None) => break,
                (a, b) => pool.extend(a.into_iter().chain(b)),
            }
        }
        let have: HashSet<String> = pool.iter().map(|r| r.id.clone()).collect();
        for t in targets {
            if !have.contains(t)
                && let Some(r) = self.relatable(t)?
            {
                pool.push(r);
            }
        }
        Ok(pool)
    }

    /// Recomputes `target`'s relations: what each detector finds against
    /// the pool replaces what earlier runs from `target` found (a failing
    /// detector's earlier findings stay). An item gone or no longer active
    /// loses every relation, from both ends. Returns the relations stored
    /// and the failures.
    fn relate_one(
        &self,
        target: &str,
        pool: &[Relatable],
        detectors: &[String],
    ) -> MemResult<(usize, Vec<String>)> {
        let subject = match pool.iter().find(|r| r.id == target) {
            Some(r) => Some(r.detect.clone()),
            None => self.relatable(target)?.map(|r| r.detect),
        };
        let prefix = format!("{target}\0");
        let existing = scan_all(self.store(), Table::Relations, &prefix)?;
        let mut batch = Batch::new();
        let Some(subject) = subject else {
            for (key, _) in &existing {
                if let Some((kind, other)) = split_key(key) {
                    batch.delete(Table::Relations, key.clone());
                    batch.delete(Table::Relations, relation_key(other, kind, target));
                }
            }
            self.store().commit(batch, Durability::Deferred)?;
            return Ok((0, Vec::new()));
        };
        let candidates: Vec<DetectItem> = pool
            .iter()
            .filter(|r| r.id != target)
            .map(|r| r.detect.clone())
            .collect();
        let ids: HashSet<&str> = candidates.iter().map(|c| c.id.as_str()).collect();
        let mut found: BTreeMap<(RelationType, String), StoredRelation> = BTreeMap::new();
        let mut failed: Vec<String> = Vec::new();
        let host = self
            .plugins()
            .ok_or_else(|| MemError::internal("no plugin host"))?;
        let at = now();
        for name in detectors {
            if candidates.is_empty() {
                break;
            }
            let relations = match host.detect(name, &subject, &candidates) {
                Ok(r) => r,
                Err(e) => {
                    failed.push(format!("{name}: {}", e.message));
                    continue;
                }
            };
            for r in relations {
                let Some(kind) = RelationType::parse(&r.kind) else {
                    continue;
                };
                if !ids.contains(r.target.as_str()) || !r.score.is_finite() {
                    continue;
                }
                let rel = StoredRelation {
                    score: r.score.clamp(0.0, 1.0),
                    reason: r.reason.chars().take(MAX_REASON_CHARS).collect(),
                    detector: name.clone(),
                    found_from: target.to_string(),
                    found_at: at,
                    difference: r.difference,
                };
                let slot = found.entry((kind, r.target)).or_insert_with(|| rel.clone());
                if rel.score > slot.score {
                    *slot = rel;
                }
            }
        }
        let failed_names: Vec<&str> = failed.iter().filter_map(|f| f.split(':').next()).collect();
        for (key, raw) in &existing {
            let Some((kind, other)) = split_key(key) else {
                continue;
            };
            let old: StoredRelation = decode(Table::Relations, key, raw)?;
            let ours = old.found_from == target;
            if !ours || failed_names.contains(&old.detector.as_str()) {
                continue;
            }
            batch.delete(Table::Relations, key.clone());
            let mirror = relation_key(other, kind, target);
            if let Some(m) = self.store().get(Table::Relations, &mirror)? {
                let m: StoredRelation = decode(Table::Relations, &mirror, &m)?;
                if m.found_from == target {
                    batch.delete(Table::Relations, mirror);
                }
            }
        }
        let stored = found.len();
        for ((kind, other), rel) in found {
            let mut back = rel.clone();
            back.difference = rel.difference.as_ref().map(|d| d.swapped());
            batch.put(
                Table::Relations,
                relation_key(target, kind, &other),
                encode(&rel)?,
            );
            batch.put(
                Table::Relations,
                relation_key(&other, kind, target),
                encode(&back)?,
            );
        }
        self.store().commit(batch, Durability::Deferred)?;
        Ok((stored, failed))
    }
}
