//! Keeping the search index in step with the event log.
//!
//! The log is the truth: after each write the service applies every event
//! after the index's watermark (loading the record as it is *now*, so the
//! order of intermediate states does not matter: upsert if it should be
//! found, remove if not), then commits the index at the last applied
//! sequence number. At open the same replay recovers what a crash lost; an
//! index that cannot replay (missing, damaged, other model) is rebuilt from
//! the records.

use crate::Service;
use crate::records::{decode, load, scan_all};
use mem_core::index::{IndexDoc, SearchIndex, SourceKind};
use mem_core::model::{Event, FileRecord, Lifecycle, Memory};
use mem_core::plugin::ProcessedFile;
use mem_core::store::{Log, Scan, Table};
use mem_core::{MemError, MemResult};
use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::Ordering;

/// Events read per page while replaying.
const PAGE: usize = 2048;
/// Records (re)indexed per `upsert` call: one embedding batch group.
const UPSERT_GROUP: usize = 256;

/// A memory as a search document (`None` when it must not be found).
pub(crate) fn memory_doc(m: &Memory, context: Option<String>) -> Option<IndexDoc> {
    if m.lifecycle == Lifecycle::Forgotten {
        return None;
    }
    let text = m.content.clone()?;
    Some(IndexDoc {
        doc_id: m.id.clone(),
        record_id: m.id.clone(),
        source: SourceKind::Memory,
        text,
        path: m.path.as_str().to_string(),
        kind: m.kind.clone(),
        tags: Vec::new(),
        agent_id: m.provenance.agent_id.clone(),
        lifecycle: m.lifecycle.as_str().to_string(),
        created_at_ms: m.created_at.timestamp_millis(),
        event_at_ms: m.provenance.event_at.map(|t| t.timestamp_millis()),
        locator: None,
        context,
    })
}

/// The chunks of a processed file as search documents.
pub(crate) fn file_docs(f: &FileRecord, content: &ProcessedFile) -> Vec<IndexDoc> {
    content
        .chunks
        .iter()
        .enumerate()
        .filter(|(_, c)| !c.text.trim().is_empty())
        .map(|(i, c)| {
            let mut context = Vec::new();
            if let Some(t) = &content.title {
                context.push(t.clone());
            }
            context.extend(c.section.iter().cloned());
            context.push(f.name.clone());
            IndexDoc {
                doc_id: format!("{}#{i}", f.id),
                record_id: f.id.clone(),
                source: SourceKind::File,
                text: c.text.clone(),
                path: f.path.as_str().to_string(),
                kind: f.mime.clone(),
                tags: f.tags.clone(),
                agent_id: None,
                lifecycle: "active".into(),
                created_at_ms: f.created_at.timestamp_millis(),
                event_at_ms: None,
                locator: Some(c.locator()),
                context: Some(context.join(" / ")),
            }
        })
        .collect()
}

/// What a record should look like in the index now.
enum Target {
    Upsert(Vec<IndexDoc>),
    Remove,
}

/// Memories read during one step of a sync. A write re-indexes the memory
/// and both its neighbours, and each of those needs its own neighbours for
/// context: without this, the same records and path scans were read twice.
/// Scoped to a page of events (or a group of a rebuild) so it stays small.
#[derive(Default)]
struct Reads {
    memories: HashMap<String, Option<Memory>>,
    /// A memory's neighbours in its scope (before, after), by its id.
    around: HashMap<String, [Option<String>; 2]>,
}

impl Service {
    fn memory_read(&self, reads: &mut Reads, id: &str) -> MemResult<Option<Memory>> {
        if let Some(m) = reads.memories.get(id) {
            return Ok(m.clone());
        }
        let m = load::<Memory>(self.store(), Table::Memories, id)?.map(|m| m.value);
        reads.memories.insert(id.to_string(), m.clone());
        Ok(m)
    }

    /// The memory written just before (`before`) or after `m` in the same
    /// scope, if any and not forgotten: the context a conversational or
    /// session memory is read in.
    fn neighbour_in_scope(
        &self,
        reads: &mut Reads,
        m: &Memory,
        before: bool,
    ) -> MemResult<Option<Memory>> {
        let prefix = format!("{}\0", m.path.as_str());
        let after = format!("{prefix}{}", m.id);
        let page = self.store().scan(
            Table::MemoryPaths,
            &Scan {
                prefix: &prefix,
                after: Some(&after),
                limit: 1,
                reverse: before,
            },
        )?;
        let Some((key, _)) = page.into_iter().next() else {
            return Ok(None);
        };
        let Some(id) = key.strip_prefix(&prefix) else {
            return Ok(None);
        };
        Ok(self
            .memory_read(reads, id)?
            .filter(|p| p.lifecycle != Lifecycle::Forgotten))
    }

    /// Both neighbours of `m` (before, after), each looked up once per sync step.
    fn neighbours(&self, reads: &mut Reads, m: &Memory) -> MemResult<Vec<Memory>> {
        let ids = match reads.around.get(&m.id) {
            Some(ids) => ids.clone(),
            None => {
                let mut ids = [None, None];
                for (slot, before) in ids.iter_mut().zip([true, false]) {
                    *slot = self.neighbour_in_scope(reads, m, before)?.map(|n| n.id);
                }
                reads.around.insert(m.id.clone(), ids.clone());
                ids
            }
        };
        let mut out = Vec::new();
        for id in ids.iter().flatten() {
            out.extend(self.memory_read(reads, id)?);
        }
        Ok(out)
    }

    /// The neighbours of the memories among `targets`: a memory written,
    /// changed or forgotten changes their indexed context too.
    fn neighbours_of(
        &self,
        reads: &mut Reads,
        targets: &BTreeSet<String>,
    ) -> MemResult<BTreeSet<String>> {
        let mut out = BTreeSet::new();
        for id in targets {
            if let Some(m) = self.memory_read(reads, id)? {
                out.extend(self.neighbours(reads, &m)?.into_iter().map(|n| n.id));
            }
        }
        Ok(out)
    }

    /// Both neighbours' text, the indexed context of `m`.
    fn neighbour_context(&self, reads: &mut Reads, m: &Memory) -> MemResult<Option<String>> {
        let parts: Vec<String> = self
            .neighbours(reads, m)?
            .into_iter()
            .filter_map(|n| n.content)
            .collect();
        Ok((!parts.is_empty()).then(|| parts.join("\n")))
    }

    fn target_of(&self, reads: &mut Reads, record_id: &str) -> MemResult<Option<Target>> {
        if let Some(m) = self.memory_read(reads, record_id)? {
            let context = if m.lifecycle == Lifecycle::Forgotten {
                None
            } else {
                self.neighbour_context(reads, &m)?
            };
            return Ok(Some(match memory_doc(&m, context) {
                Some(d) => Target::Upsert(vec![d]),
                None => Target::Remove,
            }));
        }
        if let Some(f) = load::<FileRecord>(self.store(), Table::Files, record_id)? {
            let content = load::<ProcessedFile>(self.store(), Table::FileContent, record_id)?;
            return Ok(Some(match content {
                Some(c) => Target::Upsert(file_docs(&f.value, &c.value)),
                None => Target::Remove,
            }));
        }
        // Neither a memory nor a file (deleted, or a folder): nothing may be found.
        Ok(Some(Target::Remove))
    }

    fn apply<'a>(
        &self,
        index: &dyn SearchIndex,
        reads: &mut Reads,
        targets: impl IntoIterator<Item = &'a String>,
    ) -> MemResult<()> {
        let mut docs: Vec<IndexDoc> = Vec::new();
        for id in targets {
            match self.target_of(reads, id)? {
                Some(Target::Upsert(d)) => {
                    // Replace all of a record's documents (a file may lose chunks).
                    index.remove_record(id)?;
                    docs.extend(d);
                }
                Some(Target::Remove) => index.remove_record(id)?,
                None => {}
            }
            if docs.len() >= UPSERT_GROUP {
                index.upsert(std::mem::take(&mut docs))?;
            }
        }
        index.upsert(docs)?;
        Ok(())
    }

    /// Applies every event after the index's watermark and commits.
    /// Returns how many events were applied.
    pub fn sync_index(&self) -> MemResult<u64> {
        let Some(index) = self.index()? else {
            return Ok(0);
        };
        let _guard = self
            .recall
            .sync_lock
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if index.needs_rebuild() {
            return self.rebuild_locked(index);
        }
        let mut after = index.watermark();
        let mut applied = 0;
        loop {
            let page = self.store().read_log(Log::Events, after, PAGE)?;
            let Some((last, _)) = page.last() else { break };
            let last = *last;
            let mut targets = BTreeSet::new();
            for (seq, raw) in &page {
                let ev: Event = decode(Table::Meta, &format!("event {seq}"), raw)?;
                if ev.action.starts_with("memory.") || ev.action.starts_with("file.") {
                    targets.insert(ev.target);
                }
            }
            let mut reads = Reads::default();
            let neighbours = self.neighbours_of(&mut reads, &targets)?;
            targets.extend(neighbours);
            self.apply(index, &mut reads, &targets)?;
            index.commit(last)?;
            applied += page.len() as u64;
            after = last;
            if page.len() < PAGE {
                break;
            }
        }
        self.recall.caught_up.store(true, Ordering::SeqCst);
        Ok(applied)
    }

    /// Notes that acknowledged writes wait for the index, and wakes the
    /// worker to replay them.
    pub(crate) fn index_behind(&self) {
        let written = self.recall.written.fetch_add(1, Ordering::SeqCst) + 1;
        self.saw_own_write(written);
        self.wake_worker();
    }

    /// Whether this process acknowledged writes no finished sync covers.
    pub(crate) fn is_index_behind(&self) -> bool {
        self.recall.synced.load(Ordering::SeqCst) < self.recall.written.load(Ordering::SeqCst)
    }

    /// Replays what the index is behind on, if a read on this thread must
    /// find it (before every read of the index, and in the worker: see
    /// `own_writes`). While the worker replays, such a read waits for it
    /// rather than read an index without the writes.
    pub(crate) fn catch_up_index(&self) {
        if self.recall.synced.load(Ordering::SeqCst) < self.writes_to_see() {
            self.sync_index_after_write();
        }
    }

    /// After an acknowledged write: sync, but never fail the write (it is
    /// durable; the index catches up at the next sync or open). A failure
    /// is kept and reported as a warning by searches until a sync succeeds.
    pub(crate) fn sync_index_after_write(&self) {
        // Every write counted by now is in the log the sync reads.
        let covers = self.recall.written.load(Ordering::SeqCst);
        let result = self.sync_index();
        self.recall.synced.fetch_max(covers, Ordering::SeqCst);
        let mut last = self
            .recall
            .last_sync_error
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        *last = result.err();
    }

    /// Drops the index and re-indexes every record.
    pub fn rebuild_index(&self) -> MemResult<u64> {
        let Some(index) = self.index()? else {
            return Ok(0);
        };
        let _guard = self
            .recall
            .sync_lock
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        self.rebuild_locked(index)
    }

    fn rebuild_locked(&self, index: &dyn SearchIndex) -> MemResult<u64> {
        // Events after this point are replayed next time (idempotently).
        let watermark = self
            .store()
            .last_log_entry(Log::Events)?
            .map_or(0, |(seq, _)| seq);
        index.clear()?;
        let mut records: BTreeSet<String> = BTreeSet::new();
        for (id, raw) in scan_all(self.store(), Table::Memories, "")? {
            let m: Memory = decode(Table::Memories, &id, &raw)?;
            if m.lifecycle != Lifecycle::Forgotten {
                records.insert(id);
            }
        }
        for (id, _) in scan_all(self.store(), Table::FileContent, "")? {
            records.insert(id);
        }
        let n = records.len() as u64;
        // Records in id order rarely neighbour each other: read each group
        // afresh rather than hold every memory of the workspace.
        let records: Vec<String> = records.into_iter().collect();
        for group in records.chunks(UPSERT_GROUP) {
            self.apply(index, &mut Reads::default(), group)?;
        }
        index.commit(watermark)?;
        self.recall.caught_up.store(true, Ordering::SeqCst);
        Ok(n)
    }

    /// The last failed sync after a write, if the index is still behind.
    pub(crate) fn index_warning(&self) -> Option<MemError> {
        self.recall
            .last_sync_error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}
