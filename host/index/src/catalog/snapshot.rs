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

use super::Catalog;
use super::docs::{Doc, NO_AGENT};
use mem_core::index::SourceKind;
use std::fs::File;
use std::io::{self, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
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

/// Writes `catalog`'s snapshot of `stamp` to a temporary file beside
/// `path`, streamed (at 1M documents it is about 100 MB, and a buffer of it
/// was the serving process's peak). [`Saving::finish`] syncs it and puts it
/// in place: the caller lets the catalog's lock go in between.
pub(crate) fn save(path: &Path, stamp: &Stamp, catalog: &Catalog) -> io::Result<Saving> {
    let tmp = path.with_extension("tmp");
    let mut file = File::create(&tmp)?;
    write(&mut file, stamp, catalog)?;
    Ok(Saving {
        file,
        tmp,
        path: path.to_path_buf(),
    })
}

/// A snapshot written but not yet synced and in place.
pub(crate) struct Saving {
    file: File,
    tmp: PathBuf,
    path: PathBuf,
}

impl Saving {
    pub fn finish(self) -> io::Result<()> {
        self.file.sync_data()?;
        drop(self.file);
        std::fs::rename(&self.tmp, &self.path)
    }
}

/// The body is written in pieces of about this many bytes.
const PIECE: usize = 64 * 1024;

/// A snapshot's body on its way out, a piece at a time, with its CRC.
struct Body<W> {
    out: W,
    piece: Vec<u8>,
    crc: crc32fast::Hasher,
}

impl<W: Write> Body<W> {
    /// Sends the piece on once it is full (`all`: whatever it holds).
    fn spill(&mut self, all: bool) -> io::Result<()> {
        if all || self.piece.len() >= PIECE {
            self.crc.update(&self.piece);
            self.out.write_all(&self.piece)?;
            self.piece.clear();
        }
        Ok(())
    }
}

/// `catalog` as the snapshot of `stamp`, into `out` from its start.
fn write(out: &mut (impl Write + Seek), stamp: &Stamp, catalog: &Catalog) -> io::Result<()> {
    // The strings some document uses, renumbered densely (the catalog's
    // table keeps strings no document uses any more).
    let table = &catalog.strings.all;
    let mut index = vec![NONE; table.len()];
    let mut used = Vec::new();
    let mut mark = |i: u32| {
        if let Some(slot) = index.get_mut(i as usize)
            && *slot == NONE
        {
            *slot = used.len() as u32;
            used.push(i);
        }
    };
    for d in &catalog.docs {
        for i in [d.path, d.kind, d.lifecycle, d.agent] {
            mark(i);
        }
        for &t in catalog.tag_lists.get(d.tags) {
            mark(t);
        }
    }
    // An absent agent ([`NO_AGENT`]) lies outside the table: `NONE`.
    let index_of = |i: u32| index.get(i as usize).copied().unwrap_or(NONE);
    out.write_all(MAGIC)?;
    out.write_all(stamp)?;
    out.write_all(&[0; 4])?; // the body's CRC, once written
    let mut body = Body {
        out: &mut *out,
        piece: Vec::with_capacity(PIECE + 1024),
        crc: crc32fast::Hasher::new(),
    };
    put_u32(&mut body.piece, used.len() as u32);
    for &i in &used {
        put_str(&mut body.piece, table.get(i as usize).map_or("", |s| s));
        body.spill(false)?;
    }
    put_u64(&mut body.piece, catalog.len() as u64);
    for d in &catalog.docs {
        let piece = &mut body.piece;
        put_u64(piece, d.key);
        put_u64(piece, d.embed_sig);
        put_u64(piece, d.time_ms as u64);
        piece.push(match d.source {
            SourceKind::Memory => 0,
            SourceKind::File => 1,
        });
        put_str(piece, &d.doc_id);
        match &d.record_id {
            Some(r) => put_str(piece, r),
            None => put_u32(piece, NONE),
        }
        put_u32(piece, index_of(d.path));
        put_u32(piece, index_of(d.kind));
        put_u32(piece, index_of(d.lifecycle));
        put_u32(piece, index_of(d.agent));
        let tags = catalog.tag_lists.get(d.tags);
        put_u32(piece, tags.len() as u32);
        for &t in tags {
            put_u32(piece, index_of(t));
        }
        match catalog.locators.get(&d.key) {
            Some(l) => put_str(piece, l),
            None => put_u32(piece, NONE),
        }
        body.spill(false)?;
    }
    body.spill(true)?;
    let crc = body.crc.finalize();
    out.seek(SeekFrom::Start((MAGIC.len() + stamp.len()) as u64))?;
    out.write_all(&crc.to_le_bytes())?;
    out.seek(SeekFrom::End(0))?;
    Ok(())
}

/// `catalog` as the snapshot of `stamp`, in memory.
#[cfg(test)]
fn encode(stamp: &Stamp, catalog: &Catalog) -> Vec<u8> {
    let mut out = io::Cursor::new(Vec::new());
    write(&mut out, stamp, catalog).expect("writing to memory");
    out.into_inner()
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
        .map(|_| r.str())
        .collect::<Result<Vec<_>, _>>()?;
    let count = usize::try_from(r.u64()?).map_err(|_| "bad count")?;
    // Bounded by what the bytes can hold, whatever the count claims.
    let mut c = Catalog::with_capacity(count.min(r.0.len() / 40));
    // The snapshot's table mapped to the catalog's once, so no document's
    // strings are hashed again.
    let strings: Vec<u32> = strings.iter().map(|s| c.string_id(s)).collect();
    let shared = |i: u32| strings.get(i as usize).copied().ok_or("bad string index");
    let mut tags = Vec::new();
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
        let record_id = r.opt_str()?.map(Arc::from);
        let path = shared(r.u32()?)?;
        let kind = shared(r.u32()?)?;
        let lifecycle = shared(r.u32()?)?;
        let agent = match r.u32()? {
            NONE => NO_AGENT,
            i => shared(i)?,
        };
        tags.clear();
        for _ in 0..r.u32()? {
            tags.push(shared(r.u32()?)?);
        }
        let tags = c.tag_list_id(&tags);
        let locator = r.opt_str()?.map(Box::from);
        let doc = Doc {
            key,
            embed_sig,
            time_ms,
            doc_id,
            record_id,
            path,
            kind,
            lifecycle,
            agent,
            tags,
            source,
        };
        c.put(doc, locator);
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
    use crate::catalog::DocMeta;

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
        let mut v: Vec<(u64, DocMeta)> = c.iter().map(|(k, m)| (k, m.to_meta())).collect();
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
    fn a_snapshot_keeps_only_the_strings_its_documents_use() {
        let mut c = catalog();
        let mut gone = c.iter().next().expect("a doc").1.to_meta();
        gone.doc_id = "lonely".into();
        gone.record_id = "lonely".into();
        gone.path = "/only/here".into();
        c.insert(gone);
        c.remove_record("lonely");
        assert!(c.strings.all.iter().any(|s| &**s == "/only/here"));
        let back = decode(&encode(&[4; 32], &c), &[4; 32])
            .expect("valid")
            .expect("same stamp");
        assert!(!back.strings.all.iter().any(|s| &**s == "/only/here"));
        assert_eq!(sorted(&back), sorted(&c));
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
        save(&path, &[2; 32], &catalog())
            .and_then(Saving::finish)
            .expect("save");
        let mut smaller = Catalog::default();
        smaller.insert(catalog().iter().next().expect("a doc").1.to_meta());
        let saving = save(&path, &[3; 32], &smaller).expect("written");
        assert!(
            load(&path, &[2; 32]).is_some(),
            "in place only once finished"
        );
        saving.finish().expect("save again");
        assert!(load(&path, &[2; 32]).is_none(), "the old stamp is gone");
        assert_eq!(load(&path, &[3; 32]).expect("loads").len(), 1);
        assert!(!path.with_extension("tmp").exists());
    }
}
