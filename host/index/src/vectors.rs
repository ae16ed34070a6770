//! The semantic lane's store: a usearch cosine HNSW index keyed by
//! [`crate::catalog::key_of`], saved beside a small state file naming the
//! model that made the vectors and the watermark they are current to.
//! Vectors of another model are never mixed in: a mismatch marks the lane
//! stale and the owner rebuilds it.

use mem_core::index::IndexError;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use usearch::{Index, IndexOptions, MetricKind, ScalarKind};

const INDEX_FILE: &str = "vectors.usearch";
const STATE_FILE: &str = "vectors.json";
/// Below this many candidate documents the lane compares exhaustively:
/// exact, and faster than a graph walk that rejects most nodes.
const EXACT_BELOW: usize = 4096;

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
    dir: PathBuf,
    state: State,
    dirty: bool,
}

impl std::fmt::Debug for Vectors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vectors")
            .field("state", &self.state)
            .field("size", &self.index.size())
            .finish()
    }
}

fn new_index(dimensions: usize) -> Result<Index, IndexError> {
    let opts = IndexOptions {
        dimensions,
        metric: MetricKind::Cos,
        quantization: ScalarKind::F16,
        connectivity: 16,
        expansion_add: 128,
        expansion_search: 128,
        multi: false,
    };
    let index = Index::new(&opts).map_err(io)?;
    index.reserve(1024).map_err(io)?;
    Ok(index)
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
        {
            let index = new_index(dimensions)?;
            if index.load(path).is_ok() && index.dimensions() == dimensions {
                return Ok((
                    Self {
                        index,
                        dir: dir.to_path_buf(),
                        state: s,
                        dirty: false,
                    },
                    false,
                ));
            }
        }
        let index = new_index(dimensions)?;
        Ok((
            Self {
                index,
                dir: dir.to_path_buf(),
                state: fresh,
                dirty: true,
            },
            true,
        ))
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

    pub fn upsert(&mut self, key: u64, vector: &[f32]) -> Result<(), IndexError> {
        if vector.len() != self.state.dimensions {
            return Err(IndexError::Embedding(format!(
                "vector has {} dimensions, the index {}",
                vector.len(),
                self.state.dimensions
            )));
        }
        if self.index.contains(key) {
            self.index.remove(key).map_err(io)?;
        }
        if self.index.size() + 1 > self.index.capacity() {
            self.index
                .reserve((self.index.capacity() * 2).max(1024))
                .map_err(io)?;
        }
        self.index.add(key, vector).map_err(io)?;
        self.dirty = true;
        Ok(())
    }

    pub fn remove(&mut self, key: u64) -> Result<(), IndexError> {
        if self.index.contains(key) {
            self.index.remove(key).map_err(io)?;
            self.dirty = true;
        }
        Ok(())
    }

    pub fn clear(&mut self) -> Result<(), IndexError> {
        self.index = new_index(self.state.dimensions)?;
        self.dirty = true;
        Ok(())
    }

    /// Saves the index (when changed) and the state, each through a
    /// temporary file and a rename, so a crash leaves the old or the new.
    pub fn save(&mut self, watermark: u64) -> Result<(), IndexError> {
        if self.dirty {
            let tmp = self.dir.join(format!("{INDEX_FILE}.tmp"));
            let tmp_str = tmp
                .to_str()
                .ok_or_else(|| IndexError::Io("index path is not UTF-8".into()))?;
            self.index.save(tmp_str).map_err(io)?;
            std::fs::rename(&tmp, self.dir.join(INDEX_FILE)).map_err(io)?;
            self.dirty = false;
        }
        self.state.watermark = watermark;
        let tmp = self.dir.join(format!("{STATE_FILE}.tmp"));
        let bytes = serde_json::to_vec(&self.state).map_err(io)?;
        std::fs::write(&tmp, bytes).map_err(io)?;
        std::fs::rename(&tmp, self.dir.join(STATE_FILE)).map_err(io)?;
        Ok(())
    }

    /// The `count` nearest keys among those `allowed` accepts, with cosine
    /// similarity, best first. `candidates` is how many keys pass `allowed`.
    pub fn search(
        &self,
        query: &[f32],
        count: usize,
        candidates: usize,
        allowed: &dyn Fn(u64) -> bool,
        all_keys: &mut dyn Iterator<Item = u64>,
    ) -> Result<Vec<(u64, f32)>, IndexError> {
        if self.index.size() == 0 || count == 0 || candidates == 0 {
            return Ok(Vec::new());
        }
        if candidates <= EXACT_BELOW {
            let mut buf = vec![0f32; self.state.dimensions];
            let mut scored: Vec<(u64, f32)> = Vec::with_capacity(candidates);
            for key in all_keys.filter(|k| allowed(*k)) {
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
            .index
            .filtered_search(query, count, allowed)
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
