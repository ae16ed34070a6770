//! The in-memory catalog of indexed documents: what the semantic lane needs
//! to apply the same filters as the lexical lane (usearch only knows keys),
//! and which vector keys belong to a record. Loaded at open from its
//! snapshot when that matches the lexical index's last commit, else built
//! from the index's stored fields; kept in step by upserts and removals.

mod docs;
mod snapshot;

pub(crate) use docs::Catalog;

pub(crate) use snapshot::{Stamp, load as load_snapshot, save as save_snapshot};

use mem_core::index::{IndexDoc, SearchFilters, SourceKind};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

/// A document's filterable fields, as the index hands them to the catalog
/// (which keeps them compact, see `docs`) and reads them from tantivy's
/// stored fields.
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

#[cfg(test)]
mod tests {
    use super::*;

    /// What the catalog's copy of `m` says of `f`.
    fn passes(m: &DocMeta, f: &SearchFilters) -> bool {
        let mut c = Catalog::default();
        c.insert(m.clone());
        c.by_doc_id(&m.doc_id).expect("inserted").passes(f)
    }

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
        assert!(passes(&meta("/a/b"), &f("/a")));
        assert!(passes(&meta("/a/b"), &f("/a/b")));
        assert!(passes(&meta("/a/b"), &f("/")));
        assert!(!passes(&meta("/a/bc"), &f("/a/b")));
        assert!(!passes(&meta("/x"), &f("/a")));
        let within = |ps: &[&str]| SearchFilters {
            within: ps.iter().map(|p| p.to_string()).collect(),
            ..Default::default()
        };
        assert!(passes(&meta("/a/b"), &within(&["/x", "/a"])));
        assert!(!passes(&meta("/a/b"), &within(&["/x", "/y"])));
    }

    #[test]
    fn lifecycle_defaults_to_active_and_other_filters_conjoin() {
        let mut m = meta("/a");
        assert!(passes(&m, &SearchFilters::default()));
        m.lifecycle = "archived".into();
        assert!(!passes(&m, &SearchFilters::default()));
        assert!(passes(
            &m,
            &SearchFilters {
                lifecycles: vec!["archived".into()],
                ..Default::default()
            }
        ));
        let m = meta("/a");
        assert!(!passes(
            &m,
            &SearchFilters {
                tags: vec!["a".into(), "c".into()],
                ..Default::default()
            }
        ));
        assert!(passes(
            &m,
            &SearchFilters {
                since_ms: Some(1000),
                until_ms: Some(1000),
                ..Default::default()
            }
        ));
        assert!(!passes(
            &m,
            &SearchFilters {
                since_ms: Some(1001),
                ..Default::default()
            }
        ));
        assert!(!passes(
            &m,
            &SearchFilters {
                agent_id: Some("x".into()),
                ..Default::default()
            }
        ));
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
