//! Native recall hot path of mem-host: tantivy BM25, usearch vectors, ONNX
//! embeddings, behind the `mem_core::index::SearchIndex` seam.
//!
//! Key decision: the index is derived state that can always be thrown away.
//! The lexical index carries the watermark (last applied event) in its
//! commit payload and the vectors carry theirs in a state file; on open the
//! lower of the two is reported, so the service replays what either lane
//! missed, and anything unreadable is recreated empty and flagged for a
//! rebuild instead of failing the workspace. Both lanes run in parallel and
//! apply the same filters before ranking; the semantic lane is optional
//! (no model installed → reported `unavailable`, never an error).

mod catalog;
pub mod embed;
mod fusion;
mod known;
mod lexical;
mod open;
mod query_cache;
mod semantic;
mod vectors;

use catalog::{Catalog, DocMeta, Stamp, key_of, save_snapshot};
use fusion::{Fusion, fuse, prefer_period};
use mem_core::index::{
    Embedder, IndexDoc, IndexError, IndexHit, IndexStats, Lane, LaneReport, LaneStatus,
    SearchIndex, SearchRequest, SearchResponse,
};
use open::{OpenedLexical, catalog_file, open_lexical, set_aside_gone};
use parking_lot::{Mutex, RwLock, RwLockUpgradableReadGuard, RwLockWriteGuard};
use semantic::{MIN_SIMILARITY, Semantic};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use vectors::Vectors;

pub use embed::{EmbedderFiles, LazyEmbedder, OrtEmbedder, SessionStart};
pub use known::KnownFirst;
pub use vectors::graph_options;

/// Candidates each lane contributes to fusion, at least.
const MIN_LANE_DEPTH: usize = 60;

/// How lanes are fused, chosen by measurement on LoCoMo evidence recall
/// (recall_any@10, 759 questions): lexical alone 73.3, reciprocal rank
/// fusion k=60 69.8 (k=10 76.8), linear 0.5 75.8, linear 0.7 77.5 (78.5 with
/// the neighbour-context weight in `lexical`, 81.3 with both neighbours and
/// the agent match; 0.6 and 0.8 measured lower). RRF lets a mediocre
/// semantic rank outvote a strong BM25 score; score fusion keeps the margin.
const FUSION: Fusion = Fusion::Linear {
    lexical_weight: 0.7,
};

/// What a candidate from the period the query names gains, on the fused
/// scale (0..1). LoCoMo recall_any@10 (759 questions, 89 of which name a
/// period): 81.3 without, 83.8 with 0.3, better in each of the five
/// conversations; re-ranking the same fused lists with 0.1, 0.2 and 0.5
/// gave +1.1, +2.1 and +2.5 points. Large enough to choose among
/// comparably relevant hits, too small to lift a weak one over a strong
/// match.
const PERIOD_BOOST: f32 = 0.3;

/// The workspace's search index (lexical + optional semantic lane).
pub struct NativeIndex {
    dir: PathBuf,
    lexical: lexical::Lexical,
    semantic: Option<Semantic>,
    /// Why there is no semantic lane (shown in every response).
    semantic_off: Option<String>,
    catalog: RwLock<Catalog>,
    /// Catalog changes since the last commit, applied by the commit: the
    /// catalog says what searches may return, so it changes with the
    /// committed index, not before (a record re-indexed with new context
    /// is removed and re-added; between the two, a search dropped it).
    staged: Mutex<Staged>,
    /// The catalog's snapshot on disk and when it was last written.
    snapshot: Mutex<SnapshotState>,
    watermark: AtomicU64,
    rebuild: AtomicBool,
    /// Searches running now, and how many may run their two lanes on two
    /// threads: when every core is already searching, a second thread per
    /// search only adds switching, so the lanes run one after the other.
    searching: AtomicUsize,
    cores: usize,
    /// Tests: drop without saving, as a killed process would.
    #[cfg(test)]
    killed: AtomicBool,
}

impl std::fmt::Debug for NativeIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NativeIndex")
            .field("dir", &self.dir)
            .finish()
    }
}

impl NativeIndex {
    /// Opens (creating when absent) the index under `dir`. With an
    /// embedder the semantic lane runs; without one, `semantic_off` says why.
    pub fn open(
        dir: &Path,
        embedder: Option<Arc<dyn Embedder>>,
        semantic_off: Option<String>,
    ) -> Result<Self, IndexError> {
        std::fs::create_dir_all(dir).map_err(|e| IndexError::Io(e.to_string()))?;
        let OpenedLexical {
            lexical,
            catalog,
            watermark: lex_wm,
            mut rebuild,
            snapshot,
            carried,
        } = open_lexical(dir)?;
        let mut watermark = lex_wm;
        let semantic = match embedder {
            Some(embedder) => {
                let (mut vectors, stale) = Vectors::open(
                    &dir.join("vectors"),
                    embedder.model_id(),
                    embedder.dimensions(),
                )?;
                if stale && (lex_wm > 0 || catalog.len() > 0) {
                    rebuild = true;
                }
                // Vectors are saved after the lexical commit; a crash between
                // leaves vectors of documents already removed. Nothing could
                // find them (searches go through the catalog), but forgotten
                // content's vectors must not stay on disk. (A rebuild clears
                // them all anyway.)
                if !rebuild {
                    vectors.drop_unknown(|k| catalog.get(k).is_some())?;
                }
                let trails_until = if !rebuild && vectors.watermark() < lex_wm {
                    lex_wm
                } else {
                    0
                };
                // An earlier version's index was set aside: its digests
                // vouch for the vectors (unless these trail it or belong to
                // another model), so its rebuild embeds only what changed.
                let retired = match carried {
                    Some(c) if !stale && vectors.watermark() >= c.watermark => c.digests,
                    _ => HashMap::new(),
                };
                watermark = watermark.min(vectors.watermark());
                Some(Semantic {
                    embedder,
                    vectors: RwLock::new(vectors),
                    failed: Mutex::new(None),
                    retired: Mutex::new(retired),
                    queries: Default::default(),
                    trails_until,
                })
            }
            None => None,
        };
        if rebuild {
            watermark = 0;
        }
        Ok(Self {
            dir: dir.to_path_buf(),
            lexical,
            semantic_off: if semantic.is_none() {
                Some(semantic_off.unwrap_or_else(|| "no embedding model is active".into()))
            } else {
                None
            },
            semantic,
            catalog: RwLock::new(catalog),
            staged: Mutex::new(Staged::default()),
            snapshot: Mutex::new(snapshot),
            watermark: AtomicU64::new(watermark),
            rebuild: AtomicBool::new(rebuild),
            searching: AtomicUsize::new(0),
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            #[cfg(test)]
            killed: AtomicBool::new(false),
        })
    }

    /// Writes the catalog's snapshot if it is stale (the catalog is the
    /// committed index's); `due_only`: not again within
    /// [`CATALOG_SAVE_EVERY`] of the last write.
    fn save_catalog(&self, due_only: bool) -> Result<(), IndexError> {
        let catalog = self.catalog.read();
        let mut state = self.snapshot.lock();
        if due_only
            && state
                .saved_at
                .is_some_and(|t| t.elapsed() < CATALOG_SAVE_EVERY)
        {
            return Ok(());
        }
        let stamp = state.current;
        if state.saved == Some(stamp) {
            return Ok(());
        }
        let failed = |e: std::io::Error| IndexError::Io(format!("cannot save the catalog: {e}"));
        let saving = save_snapshot(&catalog_file(&self.dir), &stamp, &catalog).map_err(failed)?;
        // Commits wait for the catalog's lock, and searches behind them:
        // the file is synced without it.
        drop(catalog);
        saving.finish().map_err(failed)?;
        state.saved = Some(stamp);
        state.saved_at = Some(std::time::Instant::now());
        Ok(())
    }
}

/// A busy process rewrites the catalog's snapshot at most this often (at
/// a million documents it is over a hundred megabytes); a process always
/// writes it once, at its first flush, if it is stale.
const CATALOG_SAVE_EVERY: std::time::Duration = std::time::Duration::from_secs(60);

#[derive(Debug, Default)]
struct SnapshotState {
    /// The commit the catalog in memory describes (set with the catalog's
    /// changes under its lock: the lexical commit itself is made before,
    /// without the lock, so the one on disk may be a step ahead).
    current: Stamp,
    /// The commit the file on disk describes (`None`: no valid file).
    saved: Option<Stamp>,
    saved_at: Option<std::time::Instant>,
}

/// One catalog change waiting for the commit.
#[derive(Debug)]
enum Change {
    Clear,
    Remove(String),
    Insert(u64, DocMeta),
}

#[derive(Debug, Default)]
struct Staged {
    changes: Vec<Change>,
    /// Keys and embedding digests of the documents staged by record (for
    /// a removal of a record staged in the same batch).
    records: HashMap<String, Vec<(u64, u64)>>,
    /// Embedding digests of the documents staged, by key.
    sigs: HashMap<u64, u64>,
    /// A clear is staged: the committed catalog will be empty.
    cleared: bool,
}

/// Counts a running search for as long as it lives.
struct Searching<'a>(&'a AtomicUsize);

impl<'a> Searching<'a> {
    fn enter(n: &'a AtomicUsize) -> Self {
        n.fetch_add(1, Ordering::Relaxed);
        Self(n)
    }
}

impl Drop for Searching<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

fn lane_report(lane: Lane, r: &Result<usize, String>) -> LaneReport {
    match r {
        Ok(n) => LaneReport {
            lane,
            status: LaneStatus::Ok,
            candidates: *n,
            message: None,
        },
        Err(m) => LaneReport {
            lane,
            status: LaneStatus::Failed,
            candidates: 0,
            message: Some(m.clone()),
        },
    }
}

impl SearchIndex for NativeIndex {
    fn upsert(&self, docs: Vec<IndexDoc>) -> Result<(), IndexError> {
        if docs.is_empty() {
            return Ok(());
        }
        let metas: Vec<DocMeta> = docs.iter().map(DocMeta::of).collect();
        self.lexical.upsert(&docs, &metas)?;
        let vouched = self
            .semantic
            .as_ref()
            .is_none_or(|sem| sem.digests_vouch(self.watermark()));
        let prior: Vec<Option<u64>> = {
            let c = self.catalog.read();
            let mut staged = self.staged.lock();
            let mut retired = self.semantic.as_ref().map(|sem| sem.retired.lock());
            metas
                .iter()
                .map(|m| {
                    let key = key_of(&m.doc_id);
                    let committed = || {
                        (!staged.cleared)
                            .then(|| c.get(key).map(|old| old.embed_sig()))
                            .flatten()
                    };
                    let was = retired
                        .as_mut()
                        .and_then(|r| r.remove(&key))
                        .or_else(|| staged.sigs.get(&key).copied())
                        .or_else(committed);
                    staged.sigs.insert(key, m.embed_sig);
                    staged
                        .records
                        .entry(m.record_id.to_string())
                        .or_default()
                        .push((key, m.embed_sig));
                    staged.changes.push(Change::Insert(key, m.clone()));
                    was.filter(|_| vouched)
                })
                .collect()
        };
        if let Some(sem) = &self.semantic
            && sem.failed.lock().is_none()
            && let Err(e) = self.embed_docs(sem, &docs, &metas, &prior)
        {
            *sem.failed.lock() = Some(e.to_string());
        }
        Ok(())
    }

    fn remove_record(&self, record_id: &str) -> Result<(), IndexError> {
        self.lexical.remove_record(record_id)?;
        let removed = {
            let c = self.catalog.read();
            let mut staged = self.staged.lock();
            let mut removed = if staged.cleared {
                Vec::new()
            } else {
                c.record_docs(record_id)
            };
            removed.extend(staged.records.remove(record_id).unwrap_or_default());
            for (key, _) in &removed {
                staged.sigs.remove(key);
            }
            staged.changes.push(Change::Remove(record_id.to_string()));
            removed
        };
        if let Some(sem) = &self.semantic {
            // Out of the catalog at the commit, so no search returns them
            // after it; their vectors wait for the commit in case the
            // record comes back unchanged.
            sem.retired.lock().extend(removed);
        }
        Ok(())
    }

    fn commit(&self, watermark: u64) -> Result<(), IndexError> {
        let rebuilt;
        {
            // Written and synced first, while searches go on with the last
            // commit (it took 5 to 40 ms, which every search waited for
            // under the catalog's lock); then, under the lock, a search or
            // a snapshot sees the commit and its catalog changes together.
            let stamp = self.lexical.commit(watermark)?;
            let mut catalog = self.catalog.write();
            self.lexical.reload()?;
            self.snapshot.lock().current = stamp;
            let staged = std::mem::take(&mut *self.staged.lock());
            rebuilt = staged.cleared;
            for change in staged.changes {
                match change {
                    Change::Clear => catalog.clear(),
                    Change::Remove(record_id) => {
                        catalog.remove_record(&record_id);
                    }
                    Change::Insert(key, meta) => catalog.insert_keyed(key, meta),
                }
            }
        }
        if rebuilt {
            set_aside_gone(&self.dir);
        }
        self.watermark.store(watermark, Ordering::SeqCst);
        self.rebuild.store(false, Ordering::SeqCst);
        if let Some(sem) = &self.semantic {
            let retired = std::mem::take(&mut *sem.retired.lock());
            let mut vectors = sem.vectors.write();
            for key in retired.into_keys() {
                vectors.remove(key)?;
            }
            if sem.failed.lock().is_none() && vectors.save_due() {
                // Written while searches go on (seconds at 1M vectors);
                // changes wait, so what is marked saved is what was written.
                let vectors = RwLockWriteGuard::downgrade_to_upgradable(vectors);
                let took = vectors.write_files(watermark)?;
                RwLockUpgradableReadGuard::upgrade(vectors).saved(watermark, took);
            }
        }
        Ok(())
    }

    fn flush(&self) -> Result<(), IndexError> {
        self.save_catalog(true)?;
        if let Some(sem) = &self.semantic
            && sem.failed.lock().is_none()
        {
            let mut vectors = sem.vectors.write();
            let watermark = self.watermark();
            // Before a pending rebuild, the vectors' own watermark says
            // which commit of the earlier index they match (a save would
            // stamp them 0, and the next process could no longer keep them).
            let restamp = vectors.watermark() != watermark && !self.needs_rebuild();
            if vectors.dirty() || restamp {
                vectors.save(watermark)?;
            }
        }
        Ok(())
    }

    fn watermark(&self) -> u64 {
        self.watermark.load(Ordering::SeqCst)
    }

    /// Empties the index for a rebuild, keeping the vectors whose text
    /// comes back (`Semantic::keep_for_rebuild`): a rebuild with the same
    /// model re-embeds only what changed (at 1M memories the model's work
    /// is an hour on two cores).
    fn clear(&self) -> Result<(), IndexError> {
        self.lexical.clear()?;
        let staged = {
            let mut staged = self.staged.lock();
            let before = std::mem::take(&mut *staged);
            staged.cleared = true;
            staged.changes.push(Change::Clear);
            before
        };
        if let Some(sem) = &self.semantic {
            sem.keep_for_rebuild(&self.catalog, &staged, self.watermark())?;
        }
        Ok(())
    }

    fn needs_rebuild(&self) -> bool {
        self.rebuild.load(Ordering::SeqCst)
    }

    fn search(&self, req: &SearchRequest) -> Result<SearchResponse, IndexError> {
        let depth = (req.limit * 2).max(MIN_LANE_DEPTH);
        let run_semantic = req.semantic && !req.query.trim().is_empty();
        let _searching = Searching::enter(&self.searching);
        let side_by_side = self.searching.load(Ordering::Relaxed) <= self.cores;
        let (lex, sem) = match (&self.semantic, run_semantic) {
            (Some(sem), true) if side_by_side => std::thread::scope(|s| {
                let sem = s.spawn(move || self.semantic_lane(sem, req, depth));
                let lex = self.lexical.search(&req.query, &req.filters, depth);
                let sem = sem.join().unwrap_or_else(|_| {
                    Err(IndexError::Embedding("the semantic lane panicked".into()))
                });
                (lex, Some(sem))
            }),
            (Some(sem), true) => (
                self.lexical.search(&req.query, &req.filters, depth),
                Some(self.semantic_lane(sem, req, depth)),
            ),
            _ => (self.lexical.search(&req.query, &req.filters, depth), None),
        };
        let mut lex = lex?;
        let mut lanes = vec![lane_report(Lane::Lexical, &Ok(lex.hits.len()))];
        let sem_hits = match (&self.semantic, sem) {
            (None, _) => {
                lanes.push(LaneReport {
                    lane: Lane::Semantic,
                    status: LaneStatus::Unavailable,
                    candidates: 0,
                    message: self.semantic_off.clone(),
                });
                Vec::new()
            }
            (Some(_), None) => {
                lanes.push(LaneReport {
                    lane: Lane::Semantic,
                    status: LaneStatus::Ok,
                    candidates: 0,
                    message: Some(
                        "not run: the request has no query text or asked for lexical only".into(),
                    ),
                });
                Vec::new()
            }
            (Some(_), Some(Ok(found))) => {
                let mut report = lane_report(Lane::Semantic, &Ok(found.hits.len()));
                if found.below_floor > 0 {
                    report.message = Some(match found.below_floor {
                        1 => format!(
                            "1 nearest candidate was below cosine similarity {MIN_SIMILARITY} and dropped"
                        ),
                        n => format!(
                            "{n} nearest candidates were below cosine similarity {MIN_SIMILARITY} and dropped"
                        ),
                    });
                }
                lanes.push(report);
                found.hits
            }
            (Some(_), Some(Err(e))) => {
                lanes.push(lane_report(Lane::Semantic, &Err(e.to_string())));
                Vec::new()
            }
        };
        let catalog = self.catalog.read();
        for h in &mut lex.hits {
            if let Some(m) = catalog.get(h.key) {
                h.doc_id = m.doc_id().to_string();
            }
        }
        let mut fused = fuse(FUSION, &lex.hits, &sem_hits);
        if let Some(period) = &req.period {
            prefer_period(&mut fused, PERIOD_BOOST, |doc_id| {
                catalog
                    .by_doc_id(doc_id)
                    .is_some_and(|m| period.contains(m.time_ms()))
            });
        }
        let kept: Vec<_> = fused
            .into_iter()
            .filter_map(|f| catalog.by_doc_id(&f.doc_id).map(|m| (f, m)))
            .take(req.limit)
            .collect();
        // Matched terms of the hits kept, not of every candidate.
        let kept_lex: Vec<usize> = kept
            .iter()
            .filter_map(|(f, _)| f.lexical_rank.map(|r| r as usize - 1))
            .collect();
        self.lexical.fill_matched(&mut lex, &kept_lex)?;
        let hits = kept
            .into_iter()
            .map(|(f, m)| IndexHit {
                matched_terms: f
                    .lexical_rank
                    .map(|r| lex.hits[r as usize - 1].matched.clone())
                    .unwrap_or_default(),
                doc_id: f.doc_id,
                record_id: m.record_id().to_string(),
                source: m.source(),
                score: f.score,
                lexical_rank: f.lexical_rank,
                semantic_rank: f.semantic_rank,
                locator: m.locator().map(str::to_string),
                in_period: f.in_period,
            })
            .collect();
        Ok(SearchResponse { hits, lanes })
    }

    fn stats(&self) -> IndexStats {
        let lexical_bytes = dir_size(&self.dir.join("lexical"));
        let (vectors, vector_bytes, model) = match &self.semantic {
            Some(s) => {
                let v = s.vectors.read();
                (
                    v.len() as u64,
                    v.bytes_on_disk(),
                    Some(s.embedder.model_id().to_string()),
                )
            }
            None => (0, 0, None),
        };
        IndexStats {
            documents: self.lexical.num_docs(),
            vectors,
            lexical_bytes,
            vector_bytes,
            model,
            watermark: self.watermark(),
        }
    }
}

fn dir_size(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .filter_map(|e| e.metadata().ok())
                .filter(|m| m.is_file())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

impl Drop for NativeIndex {
    /// Saves what a deferred vector save still holds; if this never runs
    /// (the process is killed) the next open replays it instead.
    fn drop(&mut self) {
        #[cfg(test)]
        if self.killed.load(Ordering::SeqCst) {
            return;
        }
        if let Err(e) = self.flush() {
            tracing::warn!(error = %e, "cannot save the vectors on close");
        }
        if let Err(e) = self.save_catalog(false) {
            tracing::warn!(error = %e, "cannot save the catalog on close");
        }
    }
}

#[cfg(test)]
mod snapshot_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod vector_life_tests;
