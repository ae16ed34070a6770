//! The catalog's documents, kept compact. At 1M documents a hash map of
//! [`DocMeta`]s (seven 16-byte string handles, a tag vector, in a table
//! sized for the next doubling) was 530 MB of the serving process's
//! memory, touched at every open. Here a document is an 80-byte record in
//! a dense vector, its shared strings (path, kind, lifecycle, agent, tag
//! list) are indexes into one table, its locator (file chunks only) lives
//! beside it, and a memory (the record is its one document) is found by
//! its key rather than through a second map of record ids.

use super::{ByKey, DocMeta, key_of, within};
use mem_core::index::{SearchFilters, SourceKind};
use rustc_hash::FxHashMap;
use smallvec::SmallVec;
use std::sync::Arc;

/// An absent agent.
pub(super) const NO_AGENT: u32 = u32::MAX;

/// A document as the catalog keeps it.
#[derive(Debug, Clone)]
pub(super) struct Doc {
    pub key: u64,
    pub embed_sig: u64,
    pub time_ms: i64,
    pub doc_id: Arc<str>,
    /// `None` when the record is the document itself (a memory).
    pub record_id: Option<Arc<str>>,
    pub path: u32,
    pub kind: u32,
    pub lifecycle: u32,
    /// [`NO_AGENT`] when absent.
    pub agent: u32,
    /// Index of the document's tag list (0: no tags).
    pub tags: u32,
    pub source: SourceKind,
}

/// The strings documents share, each stored once. Never shrinks while the
/// process runs (a folder's name outlives its last document); a snapshot
/// keeps only the strings its documents use.
#[derive(Debug, Default)]
pub(super) struct Strings {
    pub all: Vec<Arc<str>>,
    ids: FxHashMap<Arc<str>, u32>,
}

impl Strings {
    fn id(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.ids.get(s) {
            return i;
        }
        let shared: Arc<str> = s.into();
        let i = self.all.len() as u32;
        self.all.push(shared.clone());
        self.ids.insert(shared, i);
        i
    }

    fn get(&self, i: u32) -> &str {
        self.all.get(i as usize).map_or("", |s| s)
    }
}

/// Distinct tag lists (as string indexes), each stored once; 0 is the
/// empty list most documents have.
#[derive(Debug)]
pub(super) struct TagLists {
    all: Vec<Box<[u32]>>,
    ids: FxHashMap<Box<[u32]>, u32>,
}

impl Default for TagLists {
    fn default() -> Self {
        let empty: Box<[u32]> = Box::new([]);
        Self {
            all: vec![empty.clone()],
            ids: std::iter::once((empty, 0)).collect(),
        }
    }
}

impl TagLists {
    fn id(&mut self, tags: &[u32]) -> u32 {
        if tags.is_empty() {
            return 0;
        }
        if let Some(&i) = self.ids.get(tags) {
            return i;
        }
        let i = self.all.len() as u32;
        self.all.push(tags.into());
        self.ids.insert(tags.into(), i);
        i
    }

    pub fn get(&self, i: u32) -> &[u32] {
        self.all.get(i as usize).map_or(&[], |t| t)
    }
}

#[derive(Debug, Default)]
pub(crate) struct Catalog {
    pub(super) docs: Vec<Doc>,
    /// A document's position in `docs`, by key.
    slots: ByKey<u32>,
    /// The documents of records that are not themselves a document (a
    /// file's chunks); a memory's one document is found by its key.
    by_record: FxHashMap<Arc<str>, SmallVec<[u64; 1]>>,
    /// A document by the digest of its embedding text (one of them when
    /// several share a text; an entry whose document changed since is
    /// checked and ignored): the plugins' embedder answers a text the
    /// index already embedded from its vector (see `known`).
    by_sig: ByKey<u64>,
    /// File chunks' locators (memories have none).
    pub(super) locators: ByKey<Box<str>>,
    pub(super) strings: Strings,
    pub(super) tag_lists: TagLists,
}

impl Catalog {
    pub fn with_capacity(docs: usize) -> Self {
        Self {
            docs: Vec::with_capacity(docs),
            slots: ByKey::with_capacity_and_hasher(docs, Default::default()),
            by_sig: ByKey::with_capacity_and_hasher(docs, Default::default()),
            ..Self::default()
        }
    }

    pub fn from_metas(metas: Vec<DocMeta>) -> Self {
        let mut c = Self::with_capacity(metas.len());
        for m in metas {
            c.insert(m);
        }
        c
    }

    /// The table index of a shared string (a snapshot maps its own table
    /// through this once, not every document's strings).
    pub(super) fn string_id(&mut self, s: &str) -> u32 {
        self.strings.id(s)
    }

    /// The index of a tag list given as string indexes.
    pub(super) fn tag_list_id(&mut self, tags: &[u32]) -> u32 {
        self.tag_lists.id(tags)
    }

    pub fn insert(&mut self, m: DocMeta) {
        let key = key_of(&m.doc_id);
        self.insert_keyed(key, m);
    }

    /// [`Self::insert`] with the key already known.
    pub fn insert_keyed(&mut self, key: u64, m: DocMeta) {
        let tags: SmallVec<[u32; 4]> = m.tags.iter().map(|t| self.strings.id(t)).collect();
        let doc = Doc {
            key,
            embed_sig: m.embed_sig,
            time_ms: m.time_ms,
            record_id: (m.record_id != m.doc_id).then_some(m.record_id),
            doc_id: m.doc_id,
            path: self.strings.id(&m.path),
            kind: self.strings.id(&m.kind),
            lifecycle: self.strings.id(&m.lifecycle),
            agent: m
                .agent_id
                .as_deref()
                .map_or(NO_AGENT, |a| self.strings.id(a)),
            tags: self.tag_lists.id(&tags),
            source: m.source,
        };
        self.put(doc, m.locator.as_deref().map(Box::from));
    }

    /// Inserts (or replaces) a document whose string and tag-list indexes
    /// are this catalog's.
    pub(super) fn put(&mut self, mut doc: Doc, locator: Option<Box<str>>) {
        let key = doc.key;
        if let Some(record_id) = doc.record_id.take() {
            // The map's copy of the id, shared with its other documents.
            let shared = match self.by_record.get_key_value(&*record_id) {
                Some((shared, _)) => shared.clone(),
                None => record_id,
            };
            let keys = self.by_record.entry(shared.clone()).or_default();
            if !keys.contains(&key) {
                keys.push(key);
            }
            doc.record_id = Some(shared);
        }
        if doc.embed_sig != 0 {
            self.by_sig.insert(doc.embed_sig, key);
        }
        match locator {
            Some(l) => {
                self.locators.insert(key, l);
            }
            None => {
                self.locators.remove(&key);
            }
        }
        match self.slots.get(&key) {
            Some(&slot) => self.docs[slot as usize] = doc,
            None => {
                self.slots.insert(key, self.docs.len() as u32);
                self.docs.push(doc);
            }
        }
    }

    fn doc(&self, key: u64) -> Option<&Doc> {
        self.slots
            .get(&key)
            .and_then(|&s| self.docs.get(s as usize))
    }

    /// The keys of a record's documents: the record's own document (a
    /// memory), and those listed under its id (a file's chunks).
    fn record_keys(&self, record_id: &str) -> SmallVec<[u64; 1]> {
        let mut keys = self.by_record.get(record_id).cloned().unwrap_or_default();
        let own = key_of(record_id);
        if self
            .doc(own)
            .is_some_and(|d| d.record_id.is_none() && &*d.doc_id == record_id)
            && !keys.contains(&own)
        {
            keys.push(own);
        }
        keys
    }

    /// Removes a document; its embedding digest, 0 when it was absent.
    fn remove_doc(&mut self, key: u64) -> u64 {
        let Some(slot) = self.slots.remove(&key) else {
            return 0;
        };
        let doc = self.docs.swap_remove(slot as usize);
        if let Some(moved) = self.docs.get(slot as usize) {
            self.slots.insert(moved.key, slot);
        }
        self.locators.remove(&key);
        if self.by_sig.get(&doc.embed_sig) == Some(&key) {
            self.by_sig.remove(&doc.embed_sig);
        }
        doc.embed_sig
    }

    /// Removes a record's documents; returns their keys and embedding
    /// digests.
    pub fn remove_record(&mut self, record_id: &str) -> Vec<(u64, u64)> {
        let keys = self.record_keys(record_id);
        self.by_record.remove(record_id);
        keys.into_iter().map(|k| (k, self.remove_doc(k))).collect()
    }

    /// The key of a document whose embedding text has digest `sig`.
    pub fn key_of_sig(&self, sig: u64) -> Option<u64> {
        let key = *self.by_sig.get(&sig)?;
        let current = self.doc(key)?.embed_sig == sig;
        current.then_some(key)
    }

    /// A record's documents: their keys and embedding digests.
    pub fn record_docs(&self, record_id: &str) -> Vec<(u64, u64)> {
        self.record_keys(record_id)
            .into_iter()
            .map(|k| (k, self.doc(k).map_or(0, |d| d.embed_sig)))
            .collect()
    }

    pub fn get(&self, key: u64) -> Option<DocView<'_>> {
        self.doc(key).map(|doc| self.view(doc))
    }

    pub fn by_doc_id(&self, doc_id: &str) -> Option<DocView<'_>> {
        self.get(key_of(doc_id))
    }

    fn view<'c>(&'c self, doc: &'c Doc) -> DocView<'c> {
        DocView { doc, catalog: self }
    }

    /// Every document with its key, in no order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, DocView<'_>)> {
        self.docs.iter().map(|d| (d.key, self.view(d)))
    }

    pub fn len(&self) -> usize {
        self.docs.len()
    }

    pub fn clear(&mut self) {
        *self = Self::default();
    }

    /// The keys of the documents that pass `filters`, or `None` as soon as
    /// more than `bound` pass. Below the bound the semantic lane compares
    /// them exhaustively; above it the graph search applies the filter as
    /// it walks, so an unselective filter never walks the whole catalog.
    pub fn passing_up_to(&self, filters: &SearchFilters, bound: usize) -> Option<Vec<u64>> {
        let mut keys = Vec::new();
        for (key, m) in self.iter() {
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

/// A document of the catalog, its strings resolved on demand.
#[derive(Clone, Copy)]
pub(crate) struct DocView<'c> {
    doc: &'c Doc,
    catalog: &'c Catalog,
}

impl<'c> DocView<'c> {
    pub fn doc_id(&self) -> &'c str {
        &self.doc.doc_id
    }

    pub fn record_id(&self) -> &'c str {
        self.doc.record_id.as_deref().unwrap_or(&self.doc.doc_id)
    }

    pub fn source(&self) -> SourceKind {
        self.doc.source
    }

    /// `event_at`, else creation time, unix ms.
    pub fn time_ms(&self) -> i64 {
        self.doc.time_ms
    }

    pub fn embed_sig(&self) -> u64 {
        self.doc.embed_sig
    }

    pub fn path(&self) -> &'c str {
        self.catalog.strings.get(self.doc.path)
    }

    pub fn kind(&self) -> &'c str {
        self.catalog.strings.get(self.doc.kind)
    }

    pub fn lifecycle(&self) -> &'c str {
        self.catalog.strings.get(self.doc.lifecycle)
    }

    pub fn agent_id(&self) -> Option<&'c str> {
        (self.doc.agent != NO_AGENT).then(|| self.catalog.strings.get(self.doc.agent))
    }

    pub fn tags(&self) -> impl Iterator<Item = &'c str> + use<'c> {
        let strings = &self.catalog.strings;
        self.catalog
            .tag_lists
            .get(self.doc.tags)
            .iter()
            .map(move |&t| strings.get(t))
    }

    pub fn locator(&self) -> Option<&'c str> {
        self.catalog.locators.get(&self.doc.key).map(|l| &**l)
    }

    /// The same predicate the lexical lane's filter query expresses.
    pub fn passes(&self, f: &SearchFilters) -> bool {
        let lifecycle = self.lifecycle();
        let lifecycle_ok = if f.lifecycles.is_empty() {
            lifecycle == "active"
        } else {
            f.lifecycles.iter().any(|l| l == lifecycle)
        };
        let kind = self.kind();
        let path = self.path();
        lifecycle_ok
            && f.source.is_none_or(|s| s == self.doc.source)
            && (f.kinds.is_empty() || f.kinds.iter().any(|k| k == kind))
            && (f.kind_prefixes.is_empty()
                || f.kind_prefixes.iter().any(|p| kind.starts_with(p.as_str())))
            && f.path.as_deref().is_none_or(|p| within(path, p))
            && (f.within.is_empty() || f.within.iter().any(|p| within(path, p)))
            && f.tags.iter().all(|t| self.tags().any(|m| m == t))
            && f.agent_id
                .as_deref()
                .is_none_or(|a| self.agent_id() == Some(a))
            && f.since_ms.is_none_or(|s| self.doc.time_ms >= s)
            && f.until_ms.is_none_or(|u| self.doc.time_ms <= u)
    }

    /// The document as an owned [`DocMeta`].
    #[cfg(test)]
    pub fn to_meta(self) -> DocMeta {
        DocMeta {
            doc_id: self.doc.doc_id.clone(),
            record_id: self
                .doc
                .record_id
                .clone()
                .unwrap_or_else(|| self.doc.doc_id.clone()),
            source: self.doc.source,
            path: self.path().into(),
            kind: self.kind().into(),
            tags: self.tags().map(Arc::from).collect(),
            agent_id: self.agent_id().map(Arc::from),
            lifecycle: self.lifecycle().into(),
            time_ms: self.doc.time_ms,
            locator: self.locator().map(Arc::from),
            embed_sig: self.doc.embed_sig,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn memory(i: usize) -> DocMeta {
        let id: Arc<str> = format!("mem_{i}").into();
        DocMeta {
            doc_id: id.clone(),
            record_id: id,
            source: SourceKind::Memory,
            path: format!("/f/{}", i % 3).into(),
            kind: "fact".into(),
            tags: (0..i % 3).map(|t| format!("t{t}").into()).collect(),
            agent_id: i.is_multiple_of(2).then(|| "claude".into()),
            lifecycle: "active".into(),
            time_ms: i as i64,
            locator: None,
            embed_sig: 100 + i as u64,
        }
    }

    fn chunk(file: &str, n: usize) -> DocMeta {
        DocMeta {
            doc_id: format!("{file}#{n}").into(),
            record_id: file.into(),
            source: SourceKind::File,
            locator: Some(format!("lines:{n}").into()),
            embed_sig: 900 + n as u64,
            ..memory(n)
        }
    }

    #[test]
    fn a_document_stays_compact() {
        // 1M documents: this record, times a million, is most of the
        // catalog's memory.
        assert!(
            std::mem::size_of::<Doc>() <= 80,
            "{}",
            std::mem::size_of::<Doc>()
        );
    }

    #[test]
    fn every_field_reads_back_as_inserted() {
        let mut c = Catalog::default();
        let metas: Vec<DocMeta> = (0..20)
            .map(memory)
            .chain((0..3).map(|n| chunk("file_a", n)))
            .collect();
        for m in &metas {
            c.insert(m.clone());
        }
        assert_eq!(c.len(), metas.len());
        for m in &metas {
            assert_eq!(&c.by_doc_id(&m.doc_id).expect("present").to_meta(), m);
        }
        // The shared strings are stored once: three paths, a kind, two
        // tags, an agent, a lifecycle.
        assert_eq!(c.strings.all.len(), 3 + 1 + 2 + 1 + 1);
        assert_eq!(c.tag_lists.all.len(), 3);
    }

    #[test]
    fn removing_a_record_in_the_middle_keeps_every_other_document_findable() {
        let mut c = Catalog::default();
        for i in 0..10 {
            c.insert(memory(i));
        }
        for n in 0..3 {
            c.insert(chunk("file_a", n));
        }
        let removed = c.remove_record("mem_3");
        assert_eq!(removed, vec![(key_of("mem_3"), 103)]);
        let mut chunks = c.remove_record("file_a");
        chunks.sort_unstable_by_key(|(_, sig)| *sig);
        assert_eq!(
            chunks,
            (0..3)
                .map(|n| (key_of(&format!("file_a#{n}")), 900 + n as u64))
                .collect::<Vec<_>>()
        );
        assert_eq!(c.len(), 9);
        for i in (0..10).filter(|&i| i != 3) {
            let m = c.by_doc_id(&format!("mem_{i}")).expect("still present");
            assert_eq!(m.to_meta(), memory(i));
            assert_eq!(
                c.record_docs(&format!("mem_{i}")),
                vec![(key_of(&format!("mem_{i}")), 100 + i as u64)]
            );
            assert_eq!(
                c.key_of_sig(100 + i as u64),
                Some(key_of(&format!("mem_{i}")))
            );
        }
        assert!(c.by_doc_id("mem_3").is_none());
        assert!(c.by_doc_id("file_a#1").is_none());
        assert_eq!(c.key_of_sig(103), None);
        assert_eq!(c.key_of_sig(901), None);
        assert!(c.record_docs("file_a").is_empty());
        assert!(
            c.remove_record("mem_3").is_empty(),
            "removing twice removes nothing"
        );
    }

    #[test]
    fn a_reinserted_document_replaces_its_fields_and_digest() {
        let mut c = Catalog::default();
        c.insert(chunk("file_a", 0));
        let mut changed = chunk("file_a", 0);
        changed.locator = None;
        changed.embed_sig = 5;
        changed.lifecycle = "archived".into();
        c.insert(changed.clone());
        assert_eq!(c.len(), 1);
        assert_eq!(c.by_doc_id("file_a#0").expect("present").to_meta(), changed);
        assert_eq!(c.key_of_sig(900), None, "the old digest no longer answers");
        assert_eq!(c.record_docs("file_a"), vec![(key_of("file_a#0"), 5)]);
    }
}
