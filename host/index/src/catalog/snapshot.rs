//! The catalog on disk, so that a process opening the index (every CLI
//! command) reads one file instead of every document's stored fields: at
//! 100k documents building it from tantivy took most of a cold search.
//!
//! A snapshot is only valid for the lexical commit it names (its `stamp`):
//! any later commit makes it stale and the catalog is built from the index
//! again. It is written whole to a temporary file and renamed, and carries
//! a CRC of its body; an unreadable, truncated or mismatched snapshot is
//! ignored, never trusted (it is derived state).
//!
//! Layout (little-endian): magic, 32-byte stamp, CRC-32 of the rest, then
//! a table of the strings documents share, then the documents, each as
//! key, embedding digest, time, source, doc id, record id (absent when it
//! is the doc id), indexes into the table for path, kind, lifecycle, agent
//! and tags, and its locator.

use super::{Catalog, DocMeta};
use mem_core::index::SourceKind;
use rustc_hash::FxHashMap;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

const MAGIC: &[u8; 8] = b"MHCAT\x001\n";
/// An absent optional string (agent, locator), or a record id that is the
/// document's id (a memory's one document).
const NONE: u32 = u32::MAX;

/// The lexical commit a snapshot describes.
pub(crate) type Stamp = [u8; 32];

/// The catalog saved for `stamp`, or `None` when the file is absent,
/// unreadable, or describes another commit.
pub(crate) fn load(path: &Path, stamp: &Stamp) -> Option<Catalog> {
    let bytes = std::fs::read(path).ok()?;
    match decode(&bytes, stamp) {
        Ok(c) => c,
        Err(why) => {
            tracing::warn!(file = %path.display(), why, "ignoring an unreadable catalog snapshot");
            None
        }
    }
}

/// Writes a snapshot [`encode`]d earlier (atomically), so the catalog's
/// lock need not be held while the file is written and synced.
pub(crate) fn save(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(bytes)?;
    f.sync_data()?;
    drop(f);
    std::fs::rename(&tmp, path)
}

/// `catalog` as the snapshot of `stamp`.
pub(crate) fn encode(stamp: &Stamp, catalog: &Catalog) -> Vec<u8> {
    let mut table = Table::default();
    let mut docs = Vec::with_capacity(catalog.len() * 96);
    put_u64(&mut docs, catalog.len() as u64);
    for (key, m) in catalog.iter() {
        put_u64(&mut docs, key);
        put_u64(&mut docs, m.embed_sig);
        put_u64(&mut docs, m.time_ms as u64);
        docs.push(match m.source {
            SourceKind::Memory => 0,
            SourceKind::File => 1,
        });
        put_str(&mut docs, &m.doc_id);
        if m.record_id == m.doc_id {
            put_u32(&mut docs, NONE);
        } else {
            put_str(&mut docs, &m.record_id);
        }
        put_u32(&mut docs, table.index_of(&m.path));
        put_u32(&mut docs, table.index_of(&m.kind));
        put_u32(&mut docs, table.index_of(&m.lifecycle));
        let agent = m.agent_id.as_deref().map_or(NONE, |a| table.index_of(a));
        put_u32(&mut docs, agent);
        put_u32(&mut docs, m.tags.len() as u32);
        for t in &m.tags {
            put_u32(&mut docs, table.index_of(t));
        }
        match &m.locator {
            Some(l) => put_str(&mut docs, l),
            None => put_u32(&mut docs, NONE),
        }
    }
    let strings = table.strings;
    let mut body = Vec::with_capacity(docs.len() + strings.len() * 24 + 8);
    put_u32(&mut body, strings.len() as u32);
    for s in &strings {
        put_str(&mut body, s);
    }
    body.extend_from_slice(&docs);
    let mut out = Vec::with_capacity(body.len() + 44);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(stamp);
    put_u32(&mut out, crc32fast::hash(&body));
    out.extend_from_slice(&body);
    out
}

/// The shared strings in first-seen order, each with its index.
#[derive(Default)]
struct Table<'c> {
    index: FxHashMap<&'c str, u32>,
    strings: Vec<&'c str>,
}

impl<'c> Table<'c> {
    fn index_of(&mut self, s: &'c str) -> u32 {
        *self.index.entry(s).or_insert_with(|| {
            self.strings.push(s);
            (self.strings.len() - 1) as u32
        })
    }
}

/// `Ok(None)`: a valid snapshot of another commit.
fn decode(bytes: &[u8], stamp: &Stamp) -> Result<Option<Catalog>, &'static str> {
    let mut r = Reader(bytes);
    if r.take(MAGIC.len())? != MAGIC {
        return Err("not a catalog snapshot of this version");
    }
    if r.take(stamp.len())? != stamp {
        return Ok(None);
    }
    let crc = r.u32()?;
    if crc32fast::hash(r.0) != crc {
        return Err("checksum mismatch");
    }
    let strings = (0..r.u32()?)
        .map(|_| r.str().map(Arc::<str>::from))
        .collect::<Result<Vec<_>, _>>()?;
    let count = usize::try_from(r.u64()?).map_err(|_| "bad count")?;
    // Bounded by what the bytes can hold, whatever the count claims.
    let mut c = Catalog::with_capacity(count.min(r.0.len() / 40));
    // The catalog's own copies, so each document's are shared as they are.
    let strings: Vec<Arc<str>> = strings.iter().map(|s| c.intern(s)).collect();
    let shared = |i: u32| strings.get(i as usize).cloned().ok_or("bad string index");
    for _ in 0..count {
        let key = r.u64()?;
        let embed_sig = r.u64()?;
        let time_ms = r.u64()? as i64;
        let source = match r.take(1)?[0] {
            0 => SourceKind::Memory,
            1 => SourceKind::File,
            _ => return Err("bad source"),
        };
        let doc_id: Arc<str> = Arc::from(r.str()?);
        let record_id = match r.opt_str()? {
            Some(id) => Arc::from(id),
            None => doc_id.clone(),
        };
        let path = shared(r.u32()?)?;
        let kind = shared(r.u32()?)?;
        let lifecycle = shared(r.u32()?)?;
        let agent_id = match r.u32()? {
            NONE => None,
            i => Some(shared(i)?),
        };
        let tags = (0..r.u32()?)
            .map(|_| r.u32().and_then(shared))
            .collect::<Result<Vec<_>, _>>()?;
        let locator = r.opt_str()?.map(Arc::from);
        c.insert_interned(
            key,
            DocMeta {
                doc_id,
                record_id,
                source,
                path,
                kind,
                tags,
                agent_id,
                lifecycle,
                time_ms,
                locator,
                embed_sig,
            },
        );
    }
    if !r.0.is_empty() {
        return Err("trailing bytes");
    }
    Ok(Some(c))
}

fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    put_u32(out, s.len() as u32);
    out.extend_from_slice(s.as_bytes());
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], &'static str> {
        if self.0.len() < n {
            return Err("truncated");
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn u32(&mut self) -> Result<u32, &'static str> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self) -> Result<u64, &'static str> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(a))
    }

    fn str(&mut self) -> Result<&'a str, &'static str> {
        let n = self.u32()? as usize;
        std::str::from_utf8(self.take(n)?).map_err(|_| "bad UTF-8")
    }

    fn opt_str(&mut self) -> Result<Option<&'a str>, &'static str> {
        let n = self.u32()?;
        if n == NONE {
            return Ok(None);
        }
        std::str::from_utf8(self.take(n as usize)?)
            .map(Some)
            .map_err(|_| "bad UTF-8")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalog() -> Catalog {
        let mut c = Catalog::default();
        for i in 0..50 {
            c.insert(DocMeta {
                doc_id: format!("doc-{i}").into(),
                record_id: format!("rec-{}", i / 2).into(),
                source: if i % 3 == 0 {
                    SourceKind::File
                } else {
                    SourceKind::Memory
                },
                path: format!("/p/{}", i % 4).into(),
                kind: "fact".into(),
                tags: (0..i % 3).map(|t| format!("t{t}").into()).collect(),
                agent_id: (i % 2 == 0).then(|| "claude".into()),
                lifecycle: if i % 5 == 0 { "archived" } else { "active" }.into(),
                time_ms: i - 25,
                locator: (i % 3 == 0).then(|| format!("line:{i}").into()),
                embed_sig: i as u64 * 7,
            });
        }
        c
    }

    fn sorted(c: &Catalog) -> Vec<(u64, DocMeta)> {
        let mut v: Vec<(u64, DocMeta)> = c.iter().map(|(k, m)| (k, m.clone())).collect();
        v.sort_by_key(|(k, _)| *k);
        v
    }

    #[test]
    fn a_snapshot_reads_back_the_same_catalog_for_its_stamp_only() {
        let mut c = catalog();
        let bytes = encode(&[7; 32], &c);
        let mut back = decode(&bytes, &[7; 32])
            .expect("valid")
            .expect("same stamp");
        assert_eq!(sorted(&back), sorted(&c));
        // A record's documents are found by the record, too.
        let mut removed = back.remove_record("rec-3");
        let mut want = c.remove_record("rec-3");
        removed.sort_unstable();
        want.sort_unstable();
        assert_eq!(removed.len(), 2);
        assert_eq!(removed, want);
        assert!(decode(&bytes, &[8; 32]).expect("valid").is_none());
    }

    #[test]
    fn a_damaged_snapshot_is_refused_not_trusted() {
        let bytes = encode(&[1; 32], &catalog());
        for cut in [0, 10, 44, bytes.len() / 2, bytes.len() - 1] {
            assert!(decode(&bytes[..cut], &[1; 32]).is_err(), "cut at {cut}");
        }
        let mut flipped = bytes.clone();
        let at = flipped.len() - 20;
        flipped[at] ^= 0x40;
        assert_eq!(decode(&flipped, &[1; 32]).err(), Some("checksum mismatch"));
        let mut longer = bytes;
        longer.push(0);
        assert!(decode(&longer, &[1; 32]).is_err());
    }

    #[test]
    fn saving_replaces_the_file_whole() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("catalog.bin");
        assert!(load(&path, &[2; 32]).is_none(), "absent");
        save(&path, &encode(&[2; 32], &catalog())).expect("save");
        let mut smaller = Catalog::default();
        smaller.insert(catalog().iter().next().expect("a doc").1.clone());
        save(&path, &encode(&[3; 32], &smaller)).expect("save again");
        assert!(load(&path, &[2; 32]).is_none(), "the old stamp is gone");
        assert_eq!(load(&path, &[3; 32]).expect("loads").len(), 1);
        assert!(!path.with_extension("tmp").exists());
    }
}
