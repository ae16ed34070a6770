//! The in-memory catalog of indexed documents: what the semantic lane needs
//! to apply the same filters as the lexical lane (usearch only knows keys),
//! and which vector keys belong to a record. Loaded at open from its
//! snapshot when that matches the lexical index's last commit, else built
//! from the index's stored fields; kept in step by upserts and removals.

mod snapshot;

pub(crate) use snapshot::{
    Stamp, encode as encode_snapshot, load as load_snapshot, save as save_snapshot,
};

use mem_core::index::{IndexDoc, SearchFilters, SourceKind};
use rustc_hash::FxHashMap;
use sha2::{Digest, Sha256};
use smallvec::{SmallVec, smallvec};
use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

/// A document's filterable fields. The strings many documents share (a
/// folder, a kind, a lifecycle, an agent, a tag) are one allocation each
/// in the catalog: at 100k documents building the catalog was mostly
/// allocating them.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DocMeta {
    pub doc_id: Arc<str>,
    pub record_id: Arc<str>,
    pub source: SourceKind,
    pub path: Arc<str>,
    pub kind: Arc<str>,
    pub tags: Vec<Arc<str>>,
    pub agent_id: Option<Arc<str>>,
    pub lifecycle: Arc<str>,
    /// `event_at`, else creation time, unix ms.
    pub time_ms: i64,
    pub locator: Option<Arc<str>>,
    /// Digest of the text the embedder saw ([`embed_sig`]): a re-indexed
    /// document whose text did not change keeps its vector.
    pub embed_sig: u64,
}

/// What the embedder sees of a document: its text alone (prefixing the
/// neighbouring context measured slightly worse on LoCoMo: 78.0 vs 78.5
/// recall_any@10).
pub(crate) fn embedding_text(d: &IndexDoc) -> &str {
    &d.text
}

/// A stable digest of a document's embedding text (persisted with it).
pub(crate) fn embed_sig(d: &IndexDoc) -> u64 {
    digest64(embedding_text(d))
}

impl DocMeta {
    pub fn of(d: &IndexDoc) -> Self {
        let doc_id: Arc<str> = d.doc_id.as_str().into();
        Self {
            record_id: if d.record_id == d.doc_id {
                doc_id.clone()
            } else {
                d.record_id.as_str().into()
            },
            doc_id,
            source: d.source,
            path: d.path.as_str().into(),
            kind: d.kind.as_str().into(),
            tags: d.tags.iter().map(|t| t.as_str().into()).collect(),
            agent_id: d.agent_id.as_deref().map(Arc::from),
            lifecycle: d.lifecycle.as_str().into(),
            time_ms: d.event_at_ms.unwrap_or(d.created_at_ms),
            locator: d.locator.as_deref().map(Arc::from),
            embed_sig: embed_sig(d),
        }
    }

    /// The same predicate the lexical lane's filter query expresses.
    pub fn passes(&self, f: &SearchFilters) -> bool {
        let lifecycle_ok = if f.lifecycles.is_empty() {
            &*self.lifecycle == "active"
        } else {
            f.lifecycles.iter().any(|l| **l == *self.lifecycle)
        };
        lifecycle_ok
            && f.source.is_none_or(|s| s == self.source)
            && (f.kinds.is_empty() || f.kinds.iter().any(|k| **k == *self.kind))
            && (f.kind_prefixes.is_empty()
                || f.kind_prefixes
                    .iter()
                    .any(|p| self.kind.starts_with(p.as_str())))
            && f.path.as_deref().is_none_or(|p| within(&self.path, p))
            && (f.within.is_empty() || f.within.iter().any(|p| within(&self.path, p)))
            && f.tags.iter().all(|t| self.tags.iter().any(|m| **m == **t))
            && f.agent_id
                .as_deref()
                .is_none_or(|a| self.agent_id.as_deref() == Some(a))
            && f.since_ms.is_none_or(|s| self.time_ms >= s)
            && f.until_ms.is_none_or(|u| self.time_ms <= u)
    }
}

/// The lifecycles a search admits (active unless it names others).
pub(crate) fn lifecycles_of(filters: &SearchFilters) -> Vec<String> {
    if filters.lifecycles.is_empty() {
        vec!["active".to_string()]
    } else {
        filters.lifecycles.clone()
    }
}

/// The filters ask for nothing but lifecycles that include `active` (most
/// documents pass, so checking after ranking costs a few candidates).
pub(crate) fn lifecycle_only(filters: &SearchFilters) -> bool {
    let SearchFilters {
        source,
        kinds,
        kind_prefixes,
        path,
        within,
        tags,
        agent_id,
        since_ms,
        until_ms,
        lifecycles,
    } = filters;
    source.is_none()
        && kinds.is_empty()
        && kind_prefixes.is_empty()
        && path.is_none()
        && within.is_empty()
        && tags.is_empty()
        && agent_id.is_none()
        && since_ms.is_none()
        && until_ms.is_none()
        && (lifecycles.is_empty() || lifecycles.iter().any(|l| l == "active"))
}

/// Candidates fetched beyond the wanted number when the lifecycle filter is
/// applied after ranking (the semantic lane's graph search): enough that
/// the few archived or superseded memories among the nearest rarely leave
/// the page short (a short page is searched again with the filter).
pub(crate) fn overfetch(limit: usize) -> usize {
    limit + limit / 2 + 8
}

/// `path` equals `folder` or lies below it.
fn within(path: &str, folder: &str) -> bool {
    folder == "/"
        || path == folder
        || (path.starts_with(folder) && path.as_bytes().get(folder.len()) == Some(&b'/'))
}

/// The usearch key of a document: the first 8 bytes of SHA-256(doc_id).
pub(crate) fn key_of(doc_id: &str) -> u64 {
    digest64(doc_id)
}

/// The first 8 bytes of SHA-256(`text`), little-endian: stable across
/// builds and platforms, unlike `std`'s hasher.
pub(crate) fn digest64(text: &str) -> u64 {
    let d = Sha256::digest(text.as_bytes());
    let mut b = [0u8; 8];
    b.copy_from_slice(&d[..8]);
    u64::from_le_bytes(b)
}

/// Hashes a key that is already a digest ([`key_of`]) by passing it on.
#[derive(Default, Clone, Copy)]
pub(crate) struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

type ByKey<V> = HashMap<u64, V, BuildHasherDefault<KeyHasher>>;
/// A set of document keys.
pub(crate) type KeySet = std::collections::HashSet<u64, BuildHasherDefault<KeyHasher>>;

#[derive(Debug, Default)]
pub(crate) struct Catalog {
    by_key: ByKey<DocMeta>,
    /// A record's documents: one for a memory, a file's chunks (inline,
    /// so loading a memory's entry allocates nothing).
    by_record: FxHashMap<Arc<str>, SmallVec<[u64; 1]>>,
    /// A document by the digest of its embedding text (one of them when
    /// several share a text; an entry whose document changed since is
    /// checked and ignored): the plugins' embedder answers a text the
    /// index already embedded from its vector (see `known`).
    by_sig: ByKey<u64>,
    /// One allocation per distinct shared string (see [`DocMeta`]).
    strings: FxHashMap<Arc<str>, ()>,
}

impl Catalog {
    pub fn with_capacity(docs: usize) -> Self {
        Self {
            by_key: ByKey::with_capacity_and_hasher(docs, Default::default()),
            by_record: FxHashMap::with_capacity_and_hasher(docs, Default::default()),
            by_sig: ByKey::with_capacity_and_hasher(docs, Default::default()),
            strings: FxHashMap::default(),
        }
    }

    pub fn from_metas(metas: Vec<DocMeta>) -> Self {
        let mut c = Self::with_capacity(metas.len());
        for m in metas {
            c.insert(m);
        }
        c
    }

    /// The catalog's one copy of `s`.
    pub fn intern(&mut self, s: &Arc<str>) -> Arc<str> {
        match self.strings.get_key_value(s) {
            Some((k, ())) => k.clone(),
            None => {
                self.strings.insert(s.clone(), ());
                s.clone()
            }
        }
    }

    pub fn insert(&mut self, m: DocMeta) {
        let key = key_of(&m.doc_id);
        self.insert_keyed(key, m);
    }

    /// [`Self::insert`] with the key already known (a snapshot stores it).
    pub fn insert_keyed(&mut self, key: u64, mut m: DocMeta) {
        m.path = self.intern(&m.path);
        m.kind = self.intern(&m.kind);
        m.lifecycle = self.intern(&m.lifecycle);
        m.agent_id = m.agent_id.as_ref().map(|a| self.intern(a));
        for t in &mut m.tags {
            *t = self.intern(t);
        }
        self.insert_interned(key, m);
    }

    /// Inserts `m`, whose shared strings are already the catalog's own
    /// (a snapshot's string table is interned first): loading a snapshot
    /// at 100k documents spent a tenth of a cold CLI search hashing them
    /// again.
    pub(crate) fn insert_interned(&mut self, key: u64, mut m: DocMeta) {
        match self.by_record.entry(m.record_id.clone()) {
            Entry::Occupied(mut e) => {
                m.record_id = e.key().clone();
                if !e.get().contains(&key) {
                    e.get_mut().push(key);
                }
            }
            Entry::Vacant(e) => {
                e.insert(smallvec![key]);
            }
        }
        if m.embed_sig != 0 {
            self.by_sig.insert(m.embed_sig, key);
        }
        self.by_key.insert(key, m);
    }

    /// Removes a record's documents; returns their keys and embedding
    /// digests.
    pub fn remove_record(&mut self, record_id: &str) -> Vec<(u64, u64)> {
        let keys = self.by_record.remove(record_id).unwrap_or_default();
        keys.into_iter()
            .map(|k| {
                let sig = self.by_key.remove(&k).map_or(0, |m| m.embed_sig);
                if self.by_sig.get(&sig) == Some(&k) {
                    self.by_sig.remove(&sig);
                }
                (k, sig)
            })
            .collect()
    }

    /// The key of a document whose embedding text has digest `sig`.
    pub fn key_of_sig(&self, sig: u64) -> Option<u64> {
        let key = *self.by_sig.get(&sig)?;
        let current = self.by_key.get(&key)?.embed_sig == sig;
        current.then_some(key)
    }

    /// A record's documents: their keys and embedding digests.
    pub fn record_docs(&self, record_id: &str) -> Vec<(u64, u64)> {
        self.by_record
            .get(record_id)
            .into_iter()
            .flatten()
            .map(|&k| (k, self.by_key.get(&k).map_or(0, |m| m.embed_sig)))
            .collect()
    }

    pub fn get(&self, key: u64) -> Option<&DocMeta> {
        self.by_key.get(&key)
    }

    pub fn by_doc_id(&self, doc_id: &str) -> Option<&DocMeta> {
        self.by_key.get(&key_of(doc_id))
    }

    /// Every document with its key, in no order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, &DocMeta)> {
        self.by_key.iter().map(|(k, m)| (*k, m))
    }

    pub fn len(&self) -> usize {
        self.by_key.len()
    }

    pub fn clear(&mut self) {
        self.by_key.clear();
        self.by_record.clear();
        self.by_sig.clear();
        self.strings.clear();
    }

    /// The keys of the documents that pass `filters`, or `None` as soon as
    /// more than `bound` pass. Below the bound the semantic lane compares
    /// them exhaustively; above it the graph search applies the filter as
    /// it walks, so an unselective filter never walks the whole catalog.
    pub fn passing_up_to(&self, filters: &SearchFilters, bound: usize) -> Option<Vec<u64>> {
        let mut keys = Vec::new();
        for (&key, m) in &self.by_key {
            if m.passes(filters) {
                if keys.len() == bound {
                    return None;
                }
                keys.push(key);
            }
        }
        Some(keys)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(path: &str) -> DocMeta {
        DocMeta {
            doc_id: "d".into(),
            record_id: "r".into(),
            source: SourceKind::Memory,
            path: path.into(),
            kind: "fact".into(),
            tags: vec!["a".into(), "b".into()],
            agent_id: Some("claude".into()),
            lifecycle: "active".into(),
            time_ms: 1000,
            locator: None,
            embed_sig: 0,
        }
    }

    #[test]
    fn path_filter_matches_folder_and_below_only() {
        let f = |p: &str| SearchFilters {
            path: Some(p.into()),
            ..Default::default()
        };
        assert!(meta("/a/b").passes(&f("/a")));
        assert!(meta("/a/b").passes(&f("/a/b")));
        assert!(meta("/a/b").passes(&f("/")));
        assert!(!meta("/a/bc").passes(&f("/a/b")));
        assert!(!meta("/x").passes(&f("/a")));
        let within = |ps: &[&str]| SearchFilters {
            within: ps.iter().map(|p| p.to_string()).collect(),
            ..Default::default()
        };
        assert!(meta("/a/b").passes(&within(&["/x", "/a"])));
        assert!(!meta("/a/b").passes(&within(&["/x", "/y"])));
    }

    #[test]
    fn lifecycle_defaults_to_active_and_other_filters_conjoin() {
        let mut m = meta("/a");
        assert!(m.passes(&SearchFilters::default()));
        m.lifecycle = "archived".into();
        assert!(!m.passes(&SearchFilters::default()));
        assert!(m.passes(&SearchFilters {
            lifecycles: vec!["archived".into()],
            ..Default::default()
        }));
        let m = meta("/a");
        assert!(!m.passes(&SearchFilters {
            tags: vec!["a".into(), "c".into()],
            ..Default::default()
        }));
        assert!(m.passes(&SearchFilters {
            since_ms: Some(1000),
            until_ms: Some(1000),
            ..Default::default()
        }));
        assert!(!m.passes(&SearchFilters {
            since_ms: Some(1001),
            ..Default::default()
        }));
        assert!(!m.passes(&SearchFilters {
            agent_id: Some("x".into()),
            ..Default::default()
        }));
    }

    #[test]
    fn passing_up_to_stops_past_its_bound() {
        let mut c = Catalog::default();
        for i in 0..10 {
            let mut m = meta(if i % 2 == 0 { "/even" } else { "/odd" });
            m.doc_id = format!("d{i}").into();
            m.record_id = format!("r{i}").into();
            c.insert(m);
        }
        let even = SearchFilters {
            path: Some("/even".into()),
            ..Default::default()
        };
        let mut keys = c.passing_up_to(&even, 5).expect("5 pass, within the bound");
        keys.sort_unstable();
        let mut want: Vec<u64> = (0..10)
            .step_by(2)
            .map(|i| key_of(&format!("d{i}")))
            .collect();
        want.sort_unstable();
        assert_eq!(keys, want);
        assert_eq!(c.passing_up_to(&even, 4), None);
        assert_eq!(c.passing_up_to(&SearchFilters::default(), 9), None);
        assert_eq!(
            c.passing_up_to(&SearchFilters::default(), 10)
                .map(|k| k.len()),
            Some(10)
        );
    }
}
