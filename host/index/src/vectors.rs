//! The semantic lane's store: a usearch cosine HNSW index keyed by
//! [`crate::catalog::key_of`], saved beside the list of its keys (usearch
//! cannot enumerate them) and a small state file naming the model that made
//! the vectors and the watermark they are current to. Vectors of another
//! model are never mixed in: a mismatch marks the lane stale and the owner
//! rebuilds it.
//!
//! Saving rewrites the whole index file (90 MB at 100k memories, 880 MB
//! at 1M), so it is not done at every commit but when the last save is
//! [`save_interval`] old, and when the index is flushed or dropped; after a
//! crash the lane reopens at its last saved watermark and the caller
//! replays what came after. Searches go on while the file is written
//! ([`Vectors::write_files`] only reads the graph).
//!
//! A saved index opens memory-mapped (usearch's view): a command that only
//! searches reads the pages its search visits, not the whole file (a
//! quarter of a second at 100k memories). The first change reads it in.

use crate::catalog::KeySet;
use mem_core::index::IndexError;
use parking_lot::{Condvar, Mutex};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use usearch::{Index, IndexOptions, MetricKind, ScalarKind};

const INDEX_FILE: &str = "vectors.usearch";
const KEYS_FILE: &str = "vectors.keys";
const STATE_FILE: &str = "vectors.json";
/// Shortest time between two saves of changed vectors.
pub(crate) const SAVE_EVERY: Duration = Duration::from_secs(5);
/// A save waits this many times as long as the last one took, so writing
/// the file takes at most a twentieth of the time however large it grows.
/// At 1M vectors one save writes 920 MB and took 1.6-2.0 s here; under a
/// steady 20 writes/s the file was rewritten every 8-15 s (the next save
/// now comes ~40 s later). What is unsaved at a crash is replayed from the
/// log when the lane reopens.
const SAVE_SHARE: u32 = 20;

/// How long after a save that took `took` the next one is due.
pub(crate) fn save_interval(took: Duration) -> Duration {
    SAVE_EVERY.max(took.saturating_mul(SAVE_SHARE))
}
/// Below this many candidate documents the lane compares exhaustively:
/// exact, and faster than a graph walk that rejects most nodes.
pub(crate) const EXACT_BELOW: usize = 4096;
/// Graph searches that may run at once. usearch keeps one search context
/// per thread slot (by default one per core) and fails a search that finds
/// none free ("Reserve capacity ahead of searches!"), which made the
/// semantic lane fail under concurrent load. Each slot costs a visited set
/// and two small heaps; [`Vectors::search`] waits for a free one.
const SEARCH_SLOTS: usize = 64;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct State {
    model: String,
    dimensions: usize,
    watermark: u64,
}

fn io(e: impl std::fmt::Display) -> IndexError {
    IndexError::Io(e.to_string())
}

pub(crate) struct Vectors {
    index: Index,
    /// `index` is a read-only view of the saved file (see the module doc).
    viewed: bool,
    /// Free usearch search slots (see [`SEARCH_SLOTS`]).
    slots: Slots,
    /// Every key in `index`.
    keys: KeySet,
    dir: PathBuf,
    state: State,
    dirty: bool,
    saved_at: Instant,
    /// How long the last save took (see [`save_interval`]).
    save_took: Duration,
}

impl std::fmt::Debug for Vectors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vectors")
            .field("state", &self.state)
            .field("size", &self.index.size())
            .finish()
    }
}

/// The graph's settings for a new index. Vectors are kept as bfloat16: it
/// widens to float32 with a shift (and on AVX-512 BF16 cores its cosine is
/// one dot-product instruction), where float16 needs a conversion.
/// Measured on 100k of the serve bench's vectors, one thread, against
/// exact top-10 (the earlier float16, expansion 128/128 in brackets): an
/// insert 280-370 us (870), a search 740 us (1,190), recall@10 0.980
/// (0.976). A saved index
/// opens as it was saved (usearch reads the scalar kind from the file), so
/// a workspace indexed before keeps its float16 vectors until they are
/// made again (a model change, or the index folder removed and `reindex`).
/// `cargo bench -p mem-index --bench graph` measures them again.
pub fn graph_options(dimensions: usize) -> IndexOptions {
    IndexOptions {
        dimensions,
        metric: MetricKind::Cos,
        quantization: ScalarKind::BF16,
        connectivity: 16,
        // Half the candidates per insert of the earlier 128 (recall −0.4
        // points at expansion_search 128), made up for at search time.
        expansion_add: 64,
        expansion_search: 160,
        multi: false,
    }
}

fn new_index(dimensions: usize) -> Result<Index, IndexError> {
    let index = Index::new(&graph_options(dimensions)).map_err(io)?;
    reserve(&index, 1024)?;
    Ok(index)
}

/// Room for `capacity` vectors, and [`SEARCH_SLOTS`] search contexts.
fn reserve(index: &Index, capacity: usize) -> Result<(), IndexError> {
    index
        .reserve_capacity_and_threads(capacity, SEARCH_SLOTS)
        .map_err(io)
}

/// Search contexts for a graph just viewed or read in (and room for what
/// it holds: a view keeps its own size).
fn ready(index: &Index) -> Result<(), IndexError> {
    reserve(index, index.size().max(1024))
}

/// The room a full graph of `capacity` vectors grows to: an eighth more.
/// Doubling gave a graph read in at 1M vectors slots and a key table for
/// 2M at its first write; growing by an eighth reindexes the keys more
/// often (every 125k writes at 1M, a fraction of a second each).
fn grown(capacity: usize) -> usize {
    (capacity + capacity / 8).max(1024)
}

/// `index` becomes a memory-mapped view of the saved file at `path`.
fn view(index: &Index, path: &str) -> Result<(), IndexError> {
    index.view(path).map_err(io)?;
    ready(index)
}

/// A counting semaphore over usearch's search contexts.
#[derive(Debug)]
struct Slots {
    free: Mutex<usize>,
    freed: Condvar,
}

impl Slots {
    fn new() -> Self {
        Self {
            free: Mutex::new(SEARCH_SLOTS),
            freed: Condvar::new(),
        }
    }

    /// Runs `f` holding one slot, waiting for one when all are taken.
    fn with<T>(&self, f: impl FnOnce() -> T) -> T {
        {
            let mut free = self.free.lock();
            while *free == 0 {
                self.freed.wait(&mut free);
            }
            *free -= 1;
        }
        let _held = Held(self);
        f()
    }
}

/// Gives its slot back when dropped (also if the search unwinds).
struct Held<'a>(&'a Slots);

impl Drop for Held<'_> {
    fn drop(&mut self) {
        *self.0.free.lock() += 1;
        self.0.freed.notify_one();
    }
}

impl Vectors {
    /// Opens the vectors of `model` in `dir`. Returns `(vectors, stale)`:
    /// stale when they were missing, unreadable or made by another model
    /// (then the returned index is empty and must be rebuilt).
    pub fn open(dir: &Path, model: &str, dimensions: usize) -> Result<(Self, bool), IndexError> {
        std::fs::create_dir_all(dir).map_err(io)?;
        let state_path = dir.join(STATE_FILE);
        let index_path = dir.join(INDEX_FILE);
        let saved: Option<State> = std::fs::read(&state_path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok());
        let fresh = State {
            model: model.to_string(),
            dimensions,
            watermark: 0,
        };
        if let Some(s) = saved.filter(|s| s.model == model && s.dimensions == dimensions)
            && let Some(path) = index_path.to_str()
            && let Some(keys) = read_keys(&dir.join(KEYS_FILE))
        {
            let index = new_index(dimensions)?;
            // The keys must be exactly the index's (both are renamed into
            // place one after the other; a crash between leaves a mismatch).
            if view(&index, path).is_ok()
                && index.dimensions() == dimensions
                && index.size() == keys.len()
                && keys.iter().all(|&k| index.contains(k))
            {
                let mut vectors = Self::with(index, keys, dir, s, false);
                vectors.viewed = true;
                return Ok((vectors, false));
            }
        }
        let index = new_index(dimensions)?;
        Ok((Self::with(index, KeySet::default(), dir, fresh, true), true))
    }

    fn with(index: Index, keys: KeySet, dir: &Path, state: State, dirty: bool) -> Self {
        Self {
            index,
            viewed: false,
            slots: Slots::new(),
            keys,
            dir: dir.to_path_buf(),
            state,
            dirty,
            saved_at: Instant::now(),
            save_took: Duration::ZERO,
        }
    }

    /// Keys that `known` does not know (documents removed after the last
    /// save whose removal was lost with the process): removed here.
    pub fn drop_unknown(&mut self, known: impl Fn(u64) -> bool) -> Result<usize, IndexError> {
        let stray: Vec<u64> = self.keys.iter().copied().filter(|&k| !known(k)).collect();
        for &k in &stray {
            self.remove(k)?;
        }
        Ok(stray.len())
    }

    /// Reads a viewed index in, so it can change (once per process). The
    /// view is let go first: its pages and the copy read in were resident
    /// side by side (at 1M vectors, 880 MB each), the serving process's
    /// peak. No search runs meanwhile (the caller holds the vectors
    /// exclusively). When the file cannot be read in, it is viewed again.
    fn writable(&mut self) -> Result<(), IndexError> {
        if !self.viewed {
            return Ok(());
        }
        let path = self.dir.join(INDEX_FILE);
        let path = path
            .to_str()
            .ok_or_else(|| IndexError::Io("index path is not UTF-8".into()))?;
        let viewed = self.index.size();
        // Both made before the view goes: a failure past this point views
        // the file again.
        let index = new_index(self.state.dimensions)?;
        self.index = new_index(self.state.dimensions)?;
        let read_in = index
            .load(path)
            .map_err(io)
            .and_then(|()| ready(&index))
            .and_then(|()| match index.size() {
                n if n == viewed => Ok(()),
                n => Err(IndexError::Io(format!(
                    "the vectors file changed while open ({n} vectors, {viewed} viewed)"
                ))),
            });
        if let Err(e) = read_in {
            // Searches keep what the file holds; the next change tries again.
            return Err(match view(&self.index, path) {
                Ok(()) => e,
                Err(again) => {
                    IndexError::Io(format!("{e}; viewing the file again failed: {again}"))
                }
            });
        }
        self.index = index;
        self.viewed = false;
        Ok(())
    }

    /// There are unsaved changes and the last save is [`save_interval`] old.
    pub fn save_due(&self) -> bool {
        self.dirty && self.saved_at.elapsed() >= save_interval(self.save_took)
    }

    pub fn dirty(&self) -> bool {
        self.dirty
    }

    pub fn watermark(&self) -> u64 {
        self.state.watermark
    }

    pub fn contains(&self, key: u64) -> bool {
        self.index.contains(key)
    }

    pub fn len(&self) -> usize {
        self.index.size()
    }

    /// The stored vector of `key` (as kept, in 16 bits, widened).
    pub fn get(&self, key: u64) -> Option<Vec<f32>> {
        let mut v = vec![0f32; self.state.dimensions];
        match self.index.get(key, &mut v[..]) {
            Ok(n) if n > 0 => Some(v),
            _ => None,
        }
    }

    pub fn upsert(&mut self, key: u64, vector: &[f32]) -> Result<(), IndexError> {
        if vector.len() != self.state.dimensions {
            return Err(IndexError::Embedding(format!(
                "vector has {} dimensions, the index {}",
                vector.len(),
                self.state.dimensions
            )));
        }
        self.writable()?;
        if self.index.contains(key) {
            self.index.remove(key).map_err(io)?;
        }
        if self.index.size() + 1 > self.index.capacity() {
            reserve(&self.index, grown(self.index.capacity()))?;
        }
        self.index.add(key, vector).map_err(io)?;
        self.keys.insert(key);
        self.dirty = true;
        Ok(())
    }

    pub fn remove(&mut self, key: u64) -> Result<(), IndexError> {
        if self.index.contains(key) {
            self.writable()?;
            self.index.remove(key).map_err(io)?;
            self.dirty = true;
        }
        self.keys.remove(&key);
        Ok(())
    }

    pub fn clear(&mut self) -> Result<(), IndexError> {
        self.index = new_index(self.state.dimensions)?;
        self.viewed = false;
        self.keys.clear();
        self.dirty = true;
        Ok(())
    }

    /// Saves the index and its keys (when changed) and the state, each
    /// through a temporary file and a rename, so a crash leaves the old or
    /// the new (a crash between the two renames is caught at open).
    pub fn save(&mut self, watermark: u64) -> Result<(), IndexError> {
        let took = self.write_files(watermark)?;
        self.saved(watermark, took);
        Ok(())
    }

    /// The files of [`Vectors::save`], written from a shared borrow so
    /// searches go on meanwhile; [`Vectors::saved`] then records it.
    /// Returns how long the index file took (zero when it was unchanged).
    pub fn write_files(&self, watermark: u64) -> Result<Duration, IndexError> {
        let started = Instant::now();
        let mut took = Duration::ZERO;
        if self.dirty {
            let tmp = self.dir.join(format!("{INDEX_FILE}.tmp"));
            let tmp_str = tmp
                .to_str()
                .ok_or_else(|| IndexError::Io("index path is not UTF-8".into()))?;
            self.index.save(tmp_str).map_err(io)?;
            let keys_tmp = self.dir.join(format!("{KEYS_FILE}.tmp"));
            let bytes: Vec<u8> = self.keys.iter().flat_map(|k| k.to_le_bytes()).collect();
            std::fs::write(&keys_tmp, bytes).map_err(io)?;
            std::fs::rename(&tmp, self.dir.join(INDEX_FILE)).map_err(io)?;
            std::fs::rename(&keys_tmp, self.dir.join(KEYS_FILE)).map_err(io)?;
            took = started.elapsed();
        }
        let state = State {
            watermark,
            ..self.state.clone()
        };
        let tmp = self.dir.join(format!("{STATE_FILE}.tmp"));
        let bytes = serde_json::to_vec(&state).map_err(io)?;
        std::fs::write(&tmp, bytes).map_err(io)?;
        std::fs::rename(&tmp, self.dir.join(STATE_FILE)).map_err(io)?;
        Ok(took)
    }

    /// Records a save by [`Vectors::write_files`] of what `self` holds now
    /// (nothing changed in between: the caller held the vectors meanwhile).
    pub fn saved(&mut self, watermark: u64, took: Duration) {
        if self.dirty {
            self.dirty = false;
            self.saved_at = Instant::now();
            self.save_took = took;
        }
        self.state.watermark = watermark;
    }

    /// The `count` nearest keys among those `allowed` accepts, with cosine
    /// similarity, best first. `exact` lists every allowed key when there
    /// are at most [`EXACT_BELOW`] of them (compared exhaustively); `None`
    /// means more, and the graph search filters as it walks. Without
    /// `allowed` every key is a candidate (no call back per visited node).
    pub fn search(
        &self,
        query: &[f32],
        count: usize,
        exact: Option<&[u64]>,
        allowed: Option<&dyn Fn(u64) -> bool>,
    ) -> Result<Vec<(u64, f32)>, IndexError> {
        if self.index.size() == 0 || count == 0 {
            return Ok(Vec::new());
        }
        if let Some(keys) = exact {
            let mut buf = vec![0f32; self.state.dimensions];
            let mut scored: Vec<(u64, f32)> = Vec::with_capacity(keys.len());
            for &key in keys {
                if self.index.get(key, &mut buf).map_err(io)? == 0 {
                    continue;
                }
                let (mut dot, mut norm) = (0f32, 0f32);
                for (a, b) in query.iter().zip(&buf) {
                    dot += a * b;
                    norm += b * b;
                }
                scored.push((key, if norm > 0.0 { dot / norm.sqrt() } else { 0.0 }));
            }
            scored.sort_by(|a, b| b.1.total_cmp(&a.1));
            scored.truncate(count);
            return Ok(scored);
        }
        let m = self
            .slots
            .with(|| match allowed {
                Some(allowed) => self.index.filtered_search(query, count, allowed),
                None => self.index.search(query, count),
            })
            .map_err(io)?;
        Ok(m.keys
            .into_iter()
            .zip(m.distances)
            .map(|(k, d)| (k, 1.0 - d))
            .collect())
    }

    pub fn bytes_on_disk(&self) -> u64 {
        std::fs::metadata(self.dir.join(INDEX_FILE))
            .map(|m| m.len())
            .unwrap_or(0)
    }
}

/// The saved key list (little-endian u64s), if present and well formed.
fn read_keys(path: &Path) -> Option<KeySet> {
    let bytes = std::fs::read(path).ok()?;
    if bytes.len() % 8 != 0 {
        return None;
    }
    Some(
        bytes
            .chunks_exact(8)
            .filter_map(|c| c.try_into().ok().map(u64::from_le_bytes))
            .collect(),
    )
}

#[cfg(test)]
#[path = "vectors_tests.rs"]
mod tests;
