//! The vectors of recent query texts. A context pack searches twice with
//! the same text (with and without the request's filters), and agents and
//! the web page repeat queries; embedding is the largest part of a hybrid
//! search's CPU, so a repeated text is embedded once. Keyed by the exact
//! text: the embedder is deterministic, so a hit returns the same vector
//! a fresh embedding would. The plugins' embedder keeps one too (see
//! [`crate::known`]).

use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;

/// Texts kept by default (about 1.5 KB each for MiniLM's 384 dimensions).
const CAPACITY: usize = 256;

pub(crate) struct QueryCache {
    inner: Mutex<Entries>,
    capacity: usize,
}

impl Default for QueryCache {
    fn default() -> Self {
        Self::with_capacity(CAPACITY)
    }
}

#[derive(Default)]
struct Entries {
    by_text: HashMap<String, (Arc<Vec<f32>>, u64)>,
    tick: u64,
}

impl QueryCache {
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            inner: Mutex::default(),
            capacity: capacity.max(1),
        }
    }

    pub fn get(&self, text: &str) -> Option<Arc<Vec<f32>>> {
        let mut e = self.inner.lock();
        e.tick += 1;
        let tick = e.tick;
        e.by_text.get_mut(text).map(|(v, used)| {
            *used = tick;
            v.clone()
        })
    }

    /// Keeps `vector` for `text`, dropping the least recently used text
    /// when full.
    pub fn put(&self, text: &str, vector: Arc<Vec<f32>>) {
        let mut e = self.inner.lock();
        e.tick += 1;
        let tick = e.tick;
        if e.by_text.len() >= self.capacity && !e.by_text.contains_key(text) {
            let oldest = e
                .by_text
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(t, _)| t.clone());
            if let Some(t) = oldest {
                e.by_text.remove(&t);
            }
        }
        e.by_text.insert(text.to_string(), (vector, tick));
    }

    /// Forgets every vector (the model's vectors were cleared).
    pub fn clear(&self) {
        self.inner.lock().by_text.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_recently_used_and_drops_the_oldest() {
        let c = QueryCache::default();
        for i in 0..CAPACITY {
            c.put(&format!("q{i}"), Arc::new(vec![i as f32]));
        }
        // q0 is used again, so q1 is now the oldest.
        assert_eq!(c.get("q0").as_deref(), Some(&vec![0.0]));
        c.put("new", Arc::new(vec![-1.0]));
        assert!(c.get("q1").is_none());
        assert!(c.get("q0").is_some());
        assert_eq!(c.get("new").as_deref(), Some(&vec![-1.0]));
        assert_eq!(c.inner.lock().by_text.len(), CAPACITY);
        c.clear();
        assert!(c.get("q0").is_none());
    }
}
