//! Texts the index already embedded. The plugins' `embed` capability is
//! mostly asked for items the index holds: the `topic` detector compares
//! each new memory with its neighbours by their vectors. Profiled on a
//! 100k-memory relations backlog, half of the detectors' time was the
//! model embedding again texts whose vectors the index had (each memory
//! was embedded once at ingest and once more when relations were computed).
//! [`KnownFirst`] answers those texts from the index's vectors and embeds
//! only the others, and keeps the model's answers for the texts it is
//! asked again: a step of relations compares each of its items with the
//! same candidates, and the newest of those may not be indexed yet (writes
//! arrived after the step's sync). Beside an agent remembering 20 memories
//! a second, the same 23 such texts were embedded for each of a step's 32
//! items: a third of the server's CPU.

use crate::NativeIndex;
use crate::catalog::digest64;
use crate::query_cache::QueryCache;
use mem_core::index::{Embedder, IndexError};
use std::sync::{Arc, OnceLock};

impl NativeIndex {
    /// The vector the index holds for a document whose embedding text is
    /// `text`, embedded by `model`: `None` when there is none, when the
    /// semantic lane runs another model or failed, or when the document
    /// was re-indexed with another text since the last commit (its vector
    /// is then the new text's).
    pub fn known_vector(&self, model: &str, text: &str) -> Option<Vec<f32>> {
        let sem = self.semantic.as_ref()?;
        if sem.embedder.model_id() != model
            || sem.failed.lock().is_some()
            || !sem.digests_vouch(self.watermark.load(std::sync::atomic::Ordering::SeqCst))
        {
            return None;
        }
        let sig = digest64(text);
        let catalog = self.catalog.read();
        let key = catalog.key_of_sig(sig)?;
        let staged = self.staged.lock();
        if staged.cleared || staged.sigs.get(&key).is_some_and(|s| *s != sig) {
            return None;
        }
        sem.vectors.read().get(key)
    }
}

/// An embedder that answers texts the index already embedded from their
/// stored vectors (16-bit floats, as the semantic lane compares them) and
/// passes the rest to the model. The index opens on first use, after the
/// plugins are attached: until it is open every text goes to the model.
pub struct KnownFirst {
    embedder: Arc<dyn Embedder>,
    index: Arc<OnceLock<Arc<NativeIndex>>>,
    /// What the model answered lately, by text.
    recent: QueryCache,
}

/// Texts whose model vectors [`KnownFirst`] keeps (a step's candidates:
/// 100 memories and 100 files, with room to spare; ~1.5 MiB for MiniLM).
const RECENT_TEXTS: usize = 1024;

impl KnownFirst {
    /// `index` is filled when the workspace's index opens.
    pub fn new(embedder: Arc<dyn Embedder>, index: Arc<OnceLock<Arc<NativeIndex>>>) -> Self {
        Self {
            embedder,
            index,
            recent: QueryCache::with_capacity(RECENT_TEXTS),
        }
    }
}

impl std::fmt::Debug for KnownFirst {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KnownFirst")
            .field("model", &self.embedder.model_id())
            .field("index_open", &self.index.get().is_some())
            .finish()
    }
}

impl Embedder for KnownFirst {
    fn model_id(&self) -> &str {
        self.embedder.model_id()
    }

    fn dimensions(&self) -> usize {
        self.embedder.dimensions()
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, IndexError> {
        let model = self.embedder.model_id();
        let mut out: Vec<Option<Vec<f32>>> = match self.index.get() {
            Some(index) => texts.iter().map(|t| index.known_vector(model, t)).collect(),
            None => vec![None; texts.len()],
        };
        for (v, t) in out.iter_mut().zip(texts) {
            if v.is_none() {
                *v = self.recent.get(t).map(|v| v.to_vec());
            }
        }
        let missing: Vec<usize> = (0..texts.len()).filter(|&i| out[i].is_none()).collect();
        if !missing.is_empty() {
            let asked: Vec<&str> = missing.iter().map(|&i| texts[i]).collect();
            let embedded = self.embedder.embed(&asked)?;
            if embedded.len() != asked.len() {
                return Err(IndexError::Embedding(format!(
                    "the model returned {} vectors for {} texts",
                    embedded.len(),
                    asked.len()
                )));
            }
            for (i, v) in missing.into_iter().zip(embedded) {
                self.recent.put(texts[i], Arc::new(v.clone()));
                out[i] = Some(v);
            }
        }
        Ok(out.into_iter().map(Option::unwrap_or_default).collect())
    }
}
