//! The semantic lane: the embedder, the vectors it made and what vouches
//! for them (each document's embedding digest), how a document gets its
//! vector, and how a query finds its nearest documents.

use crate::catalog::{Catalog, DocMeta, embedding_text, key_of, lifecycle_only, overfetch};
use crate::vectors::{self, Vectors};
use crate::{NativeIndex, Staged, query_cache};
use mem_core::index::{Embedder, IndexDoc, IndexError, SearchRequest};
use parking_lot::{Mutex, RwLock};
use std::collections::HashMap;
use std::sync::Arc;

/// Cosine similarity below which a nearest neighbour is not evidence: the
/// semantic lane always returns its k nearest, and without a floor a query
/// about nothing in the workspace would still get (min-max normalized,
/// hence full-weight) semantic hits. all-MiniLM-L6-v2 puts unrelated
/// sentences below 0.2; LoCoMo recall_any@10 is 81.3 with no floor, 0.2
/// and 0.3 alike (MRR 53.0 each), so the floor costs no recall there.
pub(crate) const MIN_SIMILARITY: f32 = 0.2;

/// Vectors inserted under one hold of the vectors' write lock, and the
/// part of a large group embedded while the last part is inserted: small
/// enough that searches wait little for the lock and the two stages
/// overlap for most of a group, large enough to keep both embedding
/// sessions busy.
pub(crate) const INSERT_PART: usize = 32;

/// Puts embedded vectors into the graph, under one hold of the lock.
fn insert(sem: &Semantic, part: Vec<(u64, Vec<f32>)>) -> Result<(), IndexError> {
    let mut store = sem.vectors.write();
    part.iter().try_for_each(|(key, v)| store.upsert(*key, v))
}

/// The semantic lane's answer: hits at or above the similarity floor, and
/// how many of the nearest fell below it (reported in the lane's message).
pub(crate) struct SemanticHits {
    pub hits: Vec<(String, f32)>,
    pub below_floor: usize,
}

pub(crate) struct Semantic {
    pub embedder: Arc<dyn Embedder>,
    pub vectors: RwLock<Vectors>,
    /// Set when embedding failed in this process: vectors then keep their
    /// old watermark, so a later open replays what they missed.
    pub failed: Mutex<Option<String>>,
    /// Vectors of documents removed since the last commit, by key, with
    /// the digest of the text they embed. Re-indexing a record (a memory
    /// whose neighbours changed, a file re-processed) removes and re-adds
    /// its documents; one whose text is unchanged keeps its vector instead
    /// of being embedded again. What is still here at commit is deleted.
    pub retired: Mutex<HashMap<u64, u64>>,
    pub queries: query_cache::QueryCache,
    /// The lexical commit the saved vectors trail (0 when they do not):
    /// vectors are saved less often than the lexical index commits, so
    /// after a kill a committed digest may be a newer text's than the
    /// vector under its key. Until the replay commits past it, digests
    /// vouch for no vector: what is re-indexed is embedded again.
    pub trails_until: u64,
}

impl Semantic {
    /// Whether the committed digests describe the vectors held (see
    /// [`Semantic::trails_until`]); `watermark` is the index's.
    pub(crate) fn digests_vouch(&self, watermark: u64) -> bool {
        watermark >= self.trails_until
    }

    /// Keeps the vectors through a rebuild (see [`crate::NativeIndex`]'s
    /// `clear`) as a removed record's are (see [`Semantic::retired`]): a
    /// document re-added with the text its vector was embedded from keeps
    /// it, and what is not re-added by the commit is deleted. When no
    /// digest vouches for the vectors (embedding failed in this process,
    /// or they trail the lexical index after a kill), every one is dropped
    /// and every document embedded again. `staged` is what the clear
    /// discarded; `watermark` the index's.
    pub(crate) fn keep_for_rebuild(
        &self,
        catalog: &RwLock<Catalog>,
        staged: &Staged,
        watermark: u64,
    ) -> Result<(), IndexError> {
        // In the order upserts and searches lock: catalog first.
        let catalog = catalog.read();
        let mut failed = self.failed.lock();
        let mut retired = self.retired.lock();
        let mut vectors = self.vectors.write();
        if failed.is_none() && self.digests_vouch(watermark) {
            // The latest digest of each key: staged (this process embedded
            // it), else retired, else the committed catalog's.
            if !staged.cleared {
                for (key, m) in catalog.iter() {
                    retired.entry(key).or_insert(m.embed_sig());
                }
            }
            retired.extend(staged.sigs.iter().map(|(k, s)| (*k, *s)));
            vectors.drop_unknown(|k| retired.contains_key(&k))?;
        } else {
            vectors.clear()?;
            retired.clear();
        }
        self.queries.clear();
        *failed = None;
        Ok(())
    }
}

impl NativeIndex {
    /// Embeds the documents whose vector is missing or stale. `prior` is
    /// the embedding digest each document had before this upsert (`None`
    /// when it is new).
    pub(crate) fn embed_docs(
        &self,
        sem: &Semantic,
        docs: &[IndexDoc],
        metas: &[DocMeta],
        prior: &[Option<u64>],
    ) -> Result<(), IndexError> {
        let stale: Vec<usize> = {
            let vectors = sem.vectors.read();
            (0..docs.len())
                .filter(|&i| {
                    prior[i] != Some(metas[i].embed_sig)
                        || !vectors.contains(key_of(&docs[i].doc_id))
                })
                .collect()
        };
        if stale.is_empty() {
            // Every vector kept: no write lock for searches to wait on.
            return Ok(());
        }
        let embed = |part: &[usize]| -> Result<Vec<(u64, Vec<f32>)>, IndexError> {
            let texts: Vec<&str> = part.iter().map(|&i| embedding_text(&docs[i])).collect();
            let vecs = sem.embedder.embed(&texts)?;
            Ok(part
                .iter()
                .map(|&i| key_of(&docs[i].doc_id))
                .zip(vecs)
                .collect())
        };
        if stale.len() <= INSERT_PART {
            return insert(sem, embed(&stale)?);
        }
        // A large group (ingest, rebuild): the vectors of one part go into
        // the graph on a thread of their own while the next part is
        // embedded. Inserted after the whole group, the graph's inserts
        // (one thread) left the other core idle: at 100k memories the
        // machine was 14% idle through a rebuild, more at 1M, where each
        // insert walks a larger graph.
        let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<(u64, Vec<f32>)>>(1);
        std::thread::scope(|s| {
            let inserter = s.spawn(move || rx.iter().try_for_each(|part| insert(sem, part)));
            let embedded = stale.chunks(INSERT_PART).try_for_each(|part| {
                tx.send(embed(part)?)
                    .map_err(|_| IndexError::Io("the vector inserter stopped".into()))
            });
            drop(tx);
            let inserted = inserter
                .join()
                .unwrap_or_else(|_| Err(IndexError::Io("the vector inserter panicked".into())));
            // A send fails only when the inserter stopped on an error: that
            // error is the cause.
            inserted.and(embedded)
        })
    }

    pub(crate) fn semantic_lane(
        &self,
        sem: &Semantic,
        req: &SearchRequest,
        depth: usize,
    ) -> Result<SemanticHits, IndexError> {
        if let Some(msg) = sem.failed.lock().clone() {
            return Err(IndexError::Embedding(msg));
        }
        let q = match sem.queries.get(&req.query) {
            Some(q) => q,
            None => {
                let q = Arc::new(
                    sem.embedder
                        .embed(&[req.query.as_str()])?
                        .into_iter()
                        .next()
                        .unwrap_or_default(),
                );
                sem.queries.put(&req.query, q.clone());
                q
            }
        };
        let catalog = self.catalog.read();
        let allowed = |k: u64| catalog.get(k).is_some_and(|m| m.passes(&req.filters));
        let vectors = sem.vectors.read();
        // Lifecycle only (most documents pass) in a graph too large to
        // compare exhaustively: the plain graph search, checked afterwards,
        // spares a call into the catalog per visited node (a tenth of a
        // hybrid search's CPU at 100k memories); a page the check leaves
        // short is searched again with the filter.
        let mut found = None;
        if lifecycle_only(&req.filters) && catalog.len() > vectors::EXACT_BELOW {
            let want = overfetch(depth);
            let nearest = vectors.search(&q, want, None, None)?;
            let whole = nearest.len() < want;
            let passing: Vec<(u64, f32)> = nearest
                .into_iter()
                .filter(|(k, _)| allowed(*k))
                .take(depth)
                .collect();
            if passing.len() == depth || whole {
                found = Some(passing);
            }
        }
        let found = match found {
            Some(f) => f,
            None => {
                let exact = catalog.passing_up_to(&req.filters, vectors::EXACT_BELOW);
                vectors.search(&q, depth, exact.as_deref(), Some(&allowed))?
            }
        };
        let floor = MIN_SIMILARITY;
        let below_floor = found.iter().filter(|(_, s)| *s < floor).count();
        let hits = found
            .into_iter()
            .filter(|(_, s)| *s >= floor)
            .filter_map(|(k, s)| catalog.get(k).map(|m| (m.doc_id().to_string(), s)))
            .collect();
        Ok(SemanticHits { hits, below_floor })
    }
}
