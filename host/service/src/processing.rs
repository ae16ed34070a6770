//! File processing: stored files are handed to the processor plugins whose
//! `accepts` matches their MIME type, and their chunks (with line
//! locators) are kept per file for recall. `index_status` moves pending →
//! processing → done / partial / failed, with the error kept, so `status`
//! shows progress and `reindex` retries.

use crate::Service;
use crate::records::{decode, encode, load, push_event, scan_all, transact};
use mem_core::model::{ContentTime, FileAnnotations, FileRecord, IndexStatus, Lifecycle};
use mem_core::plugin::{FileInput, ProcessedFile};
use mem_core::store::{Batch, Durability, Table};
use mem_core::time::now;
use mem_core::{MemError, MemResult, VPath};
use parking_lot::{Condvar, Mutex};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::{BTreeMap, VecDeque};

/// Attempts before a file stays `failed` until someone runs `reindex`.
const MAX_ATTEMPTS: u32 = 3;

/// Outcome of one processing run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ProcessReport {
    pub processed: usize,
    pub done: usize,
    pub partial: usize,
    pub failed: usize,
    /// Files no installed processor accepts (left searchable by path only).
    pub unhandled: usize,
}

/// What `status` shows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WorkspaceStatus {
    pub workspace: String,
    pub files: u64,
    /// File count per index status.
    pub index_status: BTreeMap<String, u64>,
    pub memories: u64,
    pub queued_proposals: usize,
    pub budgets: Vec<crate::BudgetUsage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<mem_core::index::IndexStats>,
    pub plugins: Vec<PluginStatus>,
    /// Per scope the caller sees: memories since its last consolidation,
    /// and whether one is due.
    pub consolidation: Vec<crate::consolidation::ConsolidationScope>,
    /// How far relations are computed (whole-workspace callers, with
    /// relation detectors configured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relations: Option<crate::related::RelationsProgress>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PluginStatus {
    pub name: String,
    pub world: String,
    pub failures: u64,
}

/// Which files `reindex` sends back to the processors.
#[derive(Debug, Clone, PartialEq)]
pub enum Reindex {
    File(String),
    Failed,
    All,
}

/// Files waiting for the processors. A write enqueues; the worker of the
/// running process (`serve`, `mcp`, a CLI command before it exits)
/// drains; a put that waits for its file processes it at once. One drain
/// runs at a time, so a file is never processed twice concurrently.
#[derive(Debug, Default)]
pub(crate) struct ProcessingQueue {
    pub(crate) ids: Mutex<VecDeque<String>>,
    pub(crate) ready: Condvar,
    busy: Mutex<()>,
}

impl Service {
    /// Queues a file whose content is new for the processors.
    pub(crate) fn enqueue_processing(&self, f: &FileRecord) {
        if f.index_status == IndexStatus::Pending {
            let mut ids = self.processing.ids.lock();
            if !ids.contains(&f.id) {
                ids.push_back(f.id.clone());
            }
            self.processing.ready.notify_one();
        }
    }

    /// Processes one file now (a put that waits for its processing); the
    /// queue forgets it.
    pub(crate) fn process_now(&self, id: &str) -> MemResult<()> {
        self.processing.ids.lock().retain(|q| q != id);
        self.process_pending(Some(&[id.to_string()]))?;
        Ok(())
    }

    /// Processes everything queued now.
    pub fn drain_processing(&self) -> MemResult<ProcessReport> {
        let ids: Vec<String> = self.processing.ids.lock().drain(..).collect();
        if ids.is_empty() {
            return Ok(ProcessReport::default());
        }
        self.process_pending(Some(&ids))
    }

    /// Queues every file a crash or an earlier process left pending.
    pub fn requeue_pending(&self) -> MemResult<usize> {
        let mut n = 0;
        for (k, raw) in scan_all(self.store(), Table::Files, "")? {
            let f: FileRecord = decode(Table::Files, &k, &raw)?;
            if matches!(
                f.index_status,
                IndexStatus::Pending | IndexStatus::Processing
            ) && f.index_attempts < MAX_ATTEMPTS
            {
                let mut pending = f;
                pending.index_status = IndexStatus::Pending;
                self.enqueue_processing(&pending);
                n += 1;
            }
        }
        Ok(n)
    }
}

impl Service {
    /// Processes every pending file (or just `ids`). Without a plugin
    /// runtime attached, files stay pending.
    pub(crate) fn process_pending(&self, ids: Option<&[String]>) -> MemResult<ProcessReport> {
        // One file is processed by one caller at a time: the worker, a put
        // that waits, a reindex.
        let _one = self.processing.busy.lock();
        let mut report = ProcessReport::default();
        if self.plugins().is_none() {
            return Ok(report);
        }
        let candidates: Vec<FileRecord> = match ids {
            Some(ids) => ids
                .iter()
                .filter_map(|id| {
                    load::<FileRecord>(self.store(), Table::Files, id)
                        .ok()
                        .flatten()
                })
                .map(|s| s.value)
                .collect(),
            None => scan_all(self.store(), Table::Files, "")?
                .into_iter()
                .map(|(k, raw)| decode::<FileRecord>(Table::Files, &k, &raw))
                .collect::<MemResult<_>>()?,
        };
        for f in candidates {
            let due = f.index_status == IndexStatus::Pending
                || (f.index_status == IndexStatus::Processing && f.index_attempts < MAX_ATTEMPTS);
            if !due {
                continue;
            }
            report.processed += 1;
            match self.process_file(&f.id)? {
                Some(IndexStatus::Done) => report.done += 1,
                Some(IndexStatus::Partial) => report.partial += 1,
                Some(IndexStatus::Failed) => report.failed += 1,
                None => report.unhandled += 1,
                Some(_) => {}
            }
        }
        if report.processed > 0 {
            self.after_write();
        }
        Ok(report)
    }

    /// Marks files for processing again and processes them.
    pub(crate) fn reindex(&self, which: Reindex) -> MemResult<ProcessReport> {
        let files: Vec<FileRecord> = match &which {
            Reindex::File(target) => vec![self.file_info(target)?],
            _ => scan_all(self.store(), Table::Files, "")?
                .into_iter()
                .map(|(k, raw)| decode::<FileRecord>(Table::Files, &k, &raw))
                .collect::<MemResult<Vec<_>>>()?
                .into_iter()
                .filter(|f| {
                    which == Reindex::All
                        || matches!(f.index_status, IndexStatus::Failed | IndexStatus::Partial)
                })
                .collect(),
        };
        let ids: Vec<String> = files.iter().map(|f| f.id.clone()).collect();
        for id in &ids {
            self.set_file_status(id, IndexStatus::Pending, None, true)?;
        }
        self.process_pending(Some(&ids))
    }

    /// Runs the matching processors on one file and stores what they made.
    /// `None` when no processor accepts the file's MIME type.
    fn process_file(&self, id: &str) -> MemResult<Option<IndexStatus>> {
        let Some(host) = self.plugins() else {
            return Ok(None);
        };
        let f = self.set_file_status(id, IndexStatus::Processing, None, false)?;
        let processors = host.processors_for(&f.mime)?;
        if processors.is_empty() {
            self.set_file_status(id, IndexStatus::Done, None, false)?;
            return Ok(None);
        }
        // A processor gets the whole file in its linear memory, so a file
        // above its memory limit cannot fit: refused without reading it.
        let plugins = host.config();
        let mut errors = Vec::new();
        let mut fitting = Vec::new();
        for name in &processors {
            let limit = plugins.limits_for(name).memory_bytes;
            if f.size > limit {
                errors.push(format!(
                    "{name}: the file ({} bytes) is larger than the processors' input limit ({limit} bytes, the plugin's memory limit; raise [plugins.{name}.limits] memory_mib)",
                    f.size
                ));
            } else {
                fitting.push(name);
            }
        }
        let mut merged = ProcessedFile::default();
        let mut suggested = crate::annotations::Suggestions::default();
        let mut partial = Vec::new();
        if !fitting.is_empty() {
            let bytes = self
                .store()
                .get_blob(&f.sha256)?
                .ok_or_else(|| MemError::internal(format!("content of {id} is missing")))?;
            let input = FileInput {
                id: f.id.clone(),
                path: f.path.as_str().to_string(),
                name: f.name.clone(),
                mime: f.mime.clone(),
                bytes,
            };
            for name in fitting {
                match host.process(name, &input) {
                    Ok(mut p) => {
                        if let Some(reason) = take_partial(&mut p.metadata) {
                            partial.push(format!("{name}: {reason}"));
                        }
                        suggested.add(name, &p);
                        merged.title = merged.title.or(p.title);
                        merged.chunks.extend(p.chunks);
                        merged.metadata.extend(p.metadata);
                        merged.entities.extend(p.entities);
                        merged.tags.extend(p.tags);
                    }
                    Err(e) => errors.push(format!("{name}: {}", e.message)),
                }
            }
        }
        let status = match (errors.len(), processors.len()) {
            (e, n) if e == n => IndexStatus::Failed,
            (0, _) if partial.is_empty() => IndexStatus::Done,
            _ => IndexStatus::Partial,
        };
        errors.extend(partial);
        let error = (!errors.is_empty()).then(|| errors.join("; "));
        transact(self.store(), Durability::Immediate, || {
            let stored = load::<FileRecord>(self.store(), Table::Files, id)?
                .ok_or_else(|| MemError::not_found("file", id))?;
            let mut rec = stored.value.clone();
            if rec.sha256 != f.sha256 {
                // Replaced while we worked: the new content is pending again.
                return Ok((Batch::new(), ()));
            }
            rec.index_status = status;
            rec.index_error = error.clone();
            rec.content_time = ContentTime::from_metadata(&merged.metadata).map(Box::new);
            rec.state_version += 1;
            rec.updated_at = now();
            let mut batch = Batch::new();
            batch.expect(Table::Files, id, Some(stored.raw));
            batch.put(Table::Files, id, encode(&rec)?);
            if status != IndexStatus::Failed {
                batch.put(Table::FileContent, id, encode(&merged)?);
                // What the processors suggest waits for a person's decision.
                let stored_ann = load::<FileAnnotations>(self.store(), Table::Annotations, id)?;
                batch.expect(
                    Table::Annotations,
                    id,
                    stored_ann.as_ref().map(|s| s.raw.clone()),
                );
                let anns =
                    crate::annotations::merge(stored_ann.map(|s| s.value), &rec, suggested.clone());
                if anns.items.is_empty() && anns.notes.is_empty() {
                    batch.delete(Table::Annotations, id);
                } else {
                    batch.put(Table::Annotations, id, encode(&anns)?);
                }
            }
            push_event(
                &mut batch,
                "file.processed",
                id,
                Some(rec.state_version),
                json!({ "status": status, "chunks": merged.chunks.len(), "processors": processors, "error": error }),
            )?;
            Ok((batch, ()))
        })?;
        Ok(Some(status))
    }

    /// Sets a file's index status under compare-and-swap (`reset` clears
    /// the attempt count, as `reindex` does).
    fn set_file_status(
        &self,
        id: &str,
        status: IndexStatus,
        error: Option<String>,
        reset: bool,
    ) -> MemResult<FileRecord> {
        transact(self.store(), Durability::Immediate, || {
            let stored = load::<FileRecord>(self.store(), Table::Files, id)?
                .ok_or_else(|| MemError::not_found("file", id))?;
            let mut rec = stored.value.clone();
            rec.index_status = status;
            rec.index_error = error.clone();
            if reset {
                rec.index_attempts = 0;
            } else if status == IndexStatus::Processing {
                rec.index_attempts += 1;
            }
            rec.state_version += 1;
            rec.updated_at = now();
            let mut batch = Batch::new();
            batch.expect(Table::Files, id, Some(stored.raw));
            batch.put(Table::Files, id, encode(&rec)?);
            Ok((batch, rec))
        })
    }

    /// Counts and health of the workspace, as a caller confined to
    /// `within` (empty: the whole workspace) may see them: a confined
    /// caller gets the counts of its folders only, the budgets scoped
    /// inside them, and nothing workspace-wide (index, plugins, review).
    pub(crate) fn status(&self, within: &[VPath]) -> MemResult<WorkspaceStatus> {
        let whole = within.is_empty() || within.iter().any(VPath::is_root);
        let sees = |p: &VPath| whole || within.iter().any(|w| p.is_within(w));
        let mut index_status: BTreeMap<String, u64> = BTreeMap::new();
        let mut files = 0;
        for (k, raw) in scan_all(self.store(), Table::Files, "")? {
            let f: FileRecord = decode(Table::Files, &k, &raw)?;
            if !sees(&f.path) {
                continue;
            }
            files += 1;
            *index_status
                .entry(f.index_status.as_str().to_string())
                .or_default() += 1;
        }
        let tallied = self.tallies_for_read()?;
        let memories = if tallied {
            // Every memory of the workspace; a confined caller's, without
            // the forgotten (as the path index counts them). Counting the
            // table walked all of it: most of `status` at 100k memories.
            crate::tally::memories(self.store(), &VPath::root())?
                .into_iter()
                .filter(|t| {
                    whole || (t.lifecycle != Lifecycle::Forgotten.as_str() && sees(&t.folder))
                })
                .map(|t| t.count.n.max(0) as u64)
                .sum()
        } else if whole {
            self.store().count(Table::Memories)?
        } else {
            // Keys are `{path}\0{id}`: the folder itself, then below it.
            let mut ids = std::collections::BTreeSet::new();
            for w in within {
                for prefix in [format!("{}\0", w.as_str()), w.child_prefix()] {
                    for (k, _) in scan_all(self.store(), Table::MemoryPaths, &prefix)? {
                        ids.insert(k);
                    }
                }
            }
            ids.len() as u64
        };
        let plugins = match self.plugins() {
            Some(h) if whole => h
                .list()?
                .into_iter()
                .map(|p| PluginStatus {
                    name: p.manifest.name.clone(),
                    world: p.manifest.world.to_string(),
                    failures: p.failures.total,
                })
                .collect(),
            _ => Vec::new(),
        };
        let budgets = self
            .budgets()?
            .into_iter()
            .filter(|b| {
                whole
                    || b.budget
                        .strip_prefix("path:")
                        .and_then(|p| VPath::parse(p).ok())
                        .is_some_and(|p| sees(&p))
            })
            .collect();
        Ok(WorkspaceStatus {
            workspace: self.config().workspace.name.clone(),
            files,
            index_status,
            memories,
            queued_proposals: if whole { self.review_list()?.len() } else { 0 },
            budgets,
            index: if whole { self.index_stats()? } else { None },
            plugins,
            consolidation: self.consolidation(&sees, tallied)?,
            relations: if whole {
                self.relations_progress()?
            } else {
                None
            },
        })
    }
}

#[cfg(test)]
#[path = "processing_limit_tests.rs"]
mod limit_tests;

/// The metadata key by which a processor says it extracted only part of a
/// file, and why ("no text layer; OCR is not available"). A convention
/// rather than a WIT change, so v0.1.0 components keep working; the host
/// removes the entry and marks the file `partial` with the reason.
pub const PARTIAL_KEY: &str = "index.partial";

/// Removes the [`PARTIAL_KEY`] entry, returning its reason.
fn take_partial(metadata: &mut std::collections::BTreeMap<String, String>) -> Option<String> {
    metadata.remove(PARTIAL_KEY)
}

#[cfg(test)]
mod partial_tests {
    use super::*;

    #[test]
    fn partial_reason_is_taken_out_of_the_metadata() {
        let mut m: std::collections::BTreeMap<String, String> = [
            ("audio.title".to_string(), "Song".to_string()),
            (PARTIAL_KEY.to_string(), "tags only".to_string()),
        ]
        .into();
        assert_eq!(take_partial(&mut m).as_deref(), Some("tags only"));
        assert_eq!(m.len(), 1);
        assert_eq!(take_partial(&mut m), None);
    }
}
