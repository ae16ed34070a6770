//! Writing a bundle: the manifest is computed first (records, logs,
//! settings and plugins are in memory; blobs are known by hash and size),
//! then every entry streams out behind it.

use crate::error::BundleError;
use crate::manifest::{
    BlobInfo, Counts, EntryDigest, EntryName, Excluded, FORMAT, FORMAT_VERSION, LogLine,
    MANIFEST_ENTRY, Manifest, RecordDigest, RecordLine, Source,
};
use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use mem_core::MemResult;
use mem_core::hash::sha256_hex;
use sha2::{Digest, Sha256};
use std::io::{Read, Write};

/// One table's records, in key order.
#[derive(Debug, Clone, PartialEq)]
pub struct TablePart {
    pub name: String,
    pub records: Vec<(String, Vec<u8>)>,
}

/// One log's entries, oldest first.
#[derive(Debug, Clone, PartialEq)]
pub struct LogPart {
    pub name: String,
    pub entries: Vec<Vec<u8>>,
}

/// An installed plugin: its manifest and component, as installed.
#[derive(Debug, Clone, PartialEq)]
pub struct PluginPart {
    pub name: String,
    pub manifest: Vec<u8>,
    pub wasm: Vec<u8>,
}

/// Everything a bundle is made of.
#[derive(Debug, Clone, PartialEq)]
pub struct Contents {
    pub source: Source,
    pub scope: Option<String>,
    pub excluded: Vec<Excluded>,
    /// `mem.toml` as the workspace has it.
    pub settings: Vec<u8>,
    pub tables: Vec<TablePart>,
    pub logs: Vec<LogPart>,
    pub plugins: Vec<PluginPart>,
    /// Each blob once.
    pub blobs: Vec<BlobInfo>,
}

/// What [`write`] wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct Written {
    pub manifest: Manifest,
    /// SHA-256 of the manifest entry: names the bundle.
    pub manifest_sha256: String,
    /// Bytes of the compressed archive.
    pub bytes: u64,
    /// SHA-256 of the compressed archive.
    pub sha256: String,
}

/// zstd level: fast, and most of a bundle is JSON that compresses well.
const LEVEL: i32 = 3;

fn encode_lines<T: serde::Serialize>(
    lines: impl Iterator<Item = T>,
) -> Result<Vec<u8>, BundleError> {
    let mut out = Vec::new();
    for line in lines {
        serde_json::to_writer(&mut out, &line).map_err(|e| BundleError::Write(e.to_string()))?;
        out.push(b'\n');
    }
    Ok(out)
}

/// Named documents of an archive, in the order they are written.
type Documents = Vec<(String, Vec<u8>)>;

/// The manifest and the in-memory entries of `c`, in archive order.
fn plan(c: &Contents, created_at: &str) -> Result<(Manifest, Documents), BundleError> {
    let mut docs: Documents = vec![(EntryName::Settings.path(), c.settings.clone())];
    let mut counts = Counts::default();
    let mut records = Vec::new();
    for t in &c.tables {
        let lines = t.records.iter().map(|(key, value)| RecordLine {
            key: key.clone(),
            value: B64.encode(value),
        });
        docs.push((
            EntryName::Table(t.name.clone()).path(),
            encode_lines(lines)?,
        ));
        counts
            .records
            .insert(t.name.clone(), t.records.len() as u64);
        records.extend(t.records.iter().map(|(key, value)| RecordDigest {
            table: t.name.clone(),
            key: key.clone(),
            sha256: sha256_hex(value),
        }));
    }
    for l in &c.logs {
        let lines = l.entries.iter().map(|v| LogLine {
            value: B64.encode(v),
        });
        docs.push((EntryName::Log(l.name.clone()).path(), encode_lines(lines)?));
        counts.logs.insert(l.name.clone(), l.entries.len() as u64);
    }
    for p in &c.plugins {
        docs.push((
            EntryName::PluginManifest(p.name.clone()).path(),
            p.manifest.clone(),
        ));
        docs.push((EntryName::PluginWasm(p.name.clone()).path(), p.wasm.clone()));
    }
    counts.plugins = c.plugins.len() as u64;
    counts.blobs = c.blobs.len() as u64;
    counts.blob_bytes = c.blobs.iter().map(|b| b.size).sum();
    let mut entries: Vec<EntryDigest> = docs
        .iter()
        .map(|(path, bytes)| EntryDigest {
            path: path.clone(),
            size: bytes.len() as u64,
            sha256: sha256_hex(bytes),
        })
        .collect();
    entries.extend(c.blobs.iter().map(|b| EntryDigest {
        path: EntryName::Blob(b.sha256.clone()).path(),
        size: b.size,
        sha256: b.sha256.clone(),
    }));
    let manifest = Manifest {
        format: FORMAT.into(),
        format_version: FORMAT_VERSION,
        created_at: created_at.into(),
        source: c.source.clone(),
        scope: c.scope.clone(),
        counts,
        excluded: c.excluded.clone(),
        entries,
        records,
    };
    Ok((manifest, docs))
}

/// Counts and hashes what passes through to the output.
struct Tally<W> {
    inner: W,
    bytes: u64,
    hash: Sha256,
}

impl<W: Write> Write for Tally<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.bytes += n as u64;
        self.hash.update(&buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Hashes what a blob's reader yields.
struct Hashing<R> {
    inner: R,
    bytes: u64,
    hash: Sha256,
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.bytes += n as u64;
        self.hash.update(&buf[..n]);
        Ok(n)
    }
}

fn header(path: &str, size: u64) -> Result<tar::Header, BundleError> {
    let mut h = tar::Header::new_ustar();
    h.set_path(path)
        .map_err(|e| BundleError::Write(format!("entry name {path}: {e}")))?;
    h.set_entry_type(tar::EntryType::Regular);
    h.set_mode(0o600);
    h.set_mtime(0);
    h.set_size(size);
    h.set_cksum();
    Ok(h)
}

fn io(e: std::io::Error) -> BundleError {
    BundleError::Write(e.to_string())
}

/// Writes `c` as a bundle to `out`. `open_blob` streams a blob's bytes;
/// a blob that is not the size and hash it claims fails the export (the
/// store is damaged) rather than producing a bundle that cannot import.
pub fn write<W: Write>(
    out: W,
    c: &Contents,
    created_at: &str,
    open_blob: &mut dyn FnMut(&str) -> MemResult<Box<dyn Read + Send>>,
) -> Result<Written, BundleError> {
    let (manifest, docs) = plan(c, created_at)?;
    let manifest_bytes =
        serde_json::to_vec_pretty(&manifest).map_err(|e| BundleError::Write(e.to_string()))?;
    let tally = Tally {
        inner: out,
        bytes: 0,
        hash: Sha256::new(),
    };
    let encoder = zstd::stream::Encoder::new(tally, LEVEL).map_err(io)?;
    let mut tar = tar::Builder::new(encoder);
    tar.append(
        &header(MANIFEST_ENTRY, manifest_bytes.len() as u64)?,
        &manifest_bytes[..],
    )
    .map_err(io)?;
    for (path, bytes) in &docs {
        tar.append(&header(path, bytes.len() as u64)?, &bytes[..])
            .map_err(io)?;
    }
    for b in &c.blobs {
        let path = EntryName::Blob(b.sha256.clone()).path();
        let reader = open_blob(&b.sha256).map_err(BundleError::Other)?;
        let mut hashing = Hashing {
            inner: reader.take(b.size),
            bytes: 0,
            hash: Sha256::new(),
        };
        tar.append(&header(&path, b.size)?, &mut hashing)
            .map_err(io)?;
        let actual = hex::encode(hashing.hash.finalize());
        if hashing.bytes != b.size || actual != b.sha256 {
            return Err(BundleError::Other(
                mem_core::MemError::new(
                    mem_core::ErrorCode::StoreCorrupt,
                    format!(
                        "blob {} is not the {} bytes it is stored as",
                        b.sha256, b.size
                    ),
                )
                .with_details(serde_json::json!({ "sha256": b.sha256 })),
            ));
        }
    }
    let encoder = tar.into_inner().map_err(io)?;
    let mut tally = encoder.finish().map_err(io)?;
    tally.flush().map_err(io)?;
    Ok(Written {
        manifest_sha256: sha256_hex(&manifest_bytes),
        manifest,
        bytes: tally.bytes,
        sha256: hex::encode(tally.hash.finalize()),
    })
}
