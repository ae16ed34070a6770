//! Reading a bundle defensively: bounded, hashed, and without ever
//! mapping an entry to a file path (see the crate's doc).

use crate::error::BundleError;
use crate::manifest::{BlobInfo, EntryName, FORMAT, FORMAT_VERSION, LogLine, Manifest, RecordLine};
use crate::write::{LogPart, PluginPart, TablePart};
use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use mem_core::MemResult;
use mem_core::hash::{is_sha256_hex, sha256_hex};
use sha2::{Digest, Sha256};
use std::collections::{HashMap, HashSet};
use std::io::Read;

/// Caps of one read. Each defends against a bundle that claims (or
/// decompresses to) more than any export of a workspace this host would
/// write: a decompression bomb, a manifest listing millions of entries,
/// one huge entry held in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Entries in the archive.
    pub max_entries: u64,
    /// Decompressed bytes of all entries together.
    pub max_total_bytes: u64,
    /// Bytes held in memory: the manifest, records, logs, settings, plugins.
    pub max_in_memory_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_entries: 1_000_000,
            max_total_bytes: 64 << 30,
            max_in_memory_bytes: 1 << 30,
        }
    }
}

/// Where blobs go as they are read (the store, or nowhere for `verify`).
/// The bytes are checked against their hash after the sink has them, so
/// a sink keeps them unreferenced until the whole bundle verified.
pub trait BlobSink {
    fn put(&mut self, sha256: &str, size: u64, reader: &mut dyn Read) -> MemResult<()>;
}

/// A verified bundle (its blobs went to the sink).
#[derive(Debug, Clone, PartialEq)]
pub struct Bundle {
    pub manifest: Manifest,
    /// SHA-256 of the manifest entry: names the bundle.
    pub manifest_sha256: String,
    pub settings: Vec<u8>,
    pub tables: Vec<TablePart>,
    pub logs: Vec<LogPart>,
    pub plugins: Vec<PluginPart>,
    pub blobs: Vec<BlobInfo>,
}

/// How a read ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Complete(Box<Bundle>),
    /// The caller stopped after the manifest (it already has this bundle).
    Stopped {
        manifest: Box<Manifest>,
        manifest_sha256: String,
    },
}

/// The decompressed stream may not run past this (headers included).
#[derive(Debug)]
struct CapExceeded(u64);

impl std::fmt::Display for CapExceeded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "decompresses to more than {} bytes", self.0)
    }
}
impl std::error::Error for CapExceeded {}

struct Capped<R> {
    inner: R,
    left: u64,
    cap: u64,
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.left == 0 {
            // One byte more than the cap tells a bomb from an exact fit.
            let mut probe = [0u8; 1];
            return match self.inner.read(&mut probe)? {
                0 => Ok(0),
                _ => Err(std::io::Error::other(CapExceeded(self.cap))),
            };
        }
        let want = buf
            .len()
            .min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..want])?;
        self.left -= n as u64;
        Ok(n)
    }
}

/// Bytes a tar header, its padding and extension headers may add per entry.
const PER_ENTRY_OVERHEAD: u64 = 4096;
/// The manifest is read before anything is known about the bundle.
const MAX_MANIFEST_BYTES: u64 = 256 << 20;

fn damaged(e: &std::io::Error) -> BundleError {
    if let Some(c) = e.get_ref().and_then(|i| i.downcast_ref::<CapExceeded>()) {
        return BundleError::TooLarge {
            what: format!("the archive {c}"),
            limit: c.0,
        };
    }
    BundleError::invalid(format!("the archive is truncated or damaged: {e}"))
}

/// Reads an entry of `size` bytes into memory, hashing it.
fn slurp(r: &mut dyn Read, size: u64) -> Result<Vec<u8>, BundleError> {
    let mut out = Vec::with_capacity(usize::try_from(size.min(1 << 20)).unwrap_or(0));
    r.take(size)
        .read_to_end(&mut out)
        .map_err(|e| damaged(&e))?;
    if (out.len() as u64) < size {
        return Err(BundleError::invalid("the archive ends inside an entry"));
    }
    Ok(out)
}

fn mismatch(
    path: &str,
    what: &'static str,
    expected: impl ToString,
    actual: impl ToString,
) -> BundleError {
    BundleError::HashMismatch {
        path: path.into(),
        what,
        expected: expected.to_string(),
        actual: actual.to_string(),
    }
}

/// Parses and checks the manifest against the format and `limits`.
fn manifest(bytes: &[u8], limits: &Limits) -> Result<Manifest, BundleError> {
    let v: serde_json::Value = serde_json::from_slice(bytes)
        .map_err(|e| BundleError::invalid(format!("the manifest is not JSON: {e}")))?;
    if v.get("format").and_then(|f| f.as_str()) != Some(FORMAT) {
        return Err(BundleError::invalid(format!(
            "the manifest's format is not {FORMAT:?}"
        )));
    }
    let version = v
        .get("format_version")
        .and_then(|f| f.as_u64())
        .ok_or_else(|| BundleError::invalid("the manifest has no format_version"))?;
    if version > u64::from(FORMAT_VERSION) {
        return Err(BundleError::UnsupportedVersion {
            found: version,
            supported: FORMAT_VERSION,
        });
    }
    let m: Manifest = serde_json::from_value(v)
        .map_err(|e| BundleError::invalid(format!("the manifest is malformed: {e}")))?;
    if m.entries.len() as u64 + 1 > limits.max_entries {
        return Err(BundleError::TooLarge {
            what: format!("{} entries", m.entries.len() + 1),
            limit: limits.max_entries,
        });
    }
    let (mut total, mut in_memory) = (0u64, bytes.len() as u64);
    let mut paths = HashSet::new();
    for e in &m.entries {
        let name = EntryName::parse(&e.path)
            .filter(|n| *n != EntryName::Manifest)
            .ok_or_else(|| {
                BundleError::invalid(format!(
                    "the manifest lists entry {:?}, which no bundle has",
                    e.path
                ))
            })?;
        if !is_sha256_hex(&e.sha256) {
            return Err(BundleError::invalid(format!(
                "entry {}: sha256 is not lower-case hex",
                e.path
            )));
        }
        if let EntryName::Blob(sha) = &name
            && *sha != e.sha256
        {
            return Err(mismatch(&e.path, "sha256", sha, &e.sha256));
        }
        if !paths.insert(e.path.as_str()) {
            return Err(BundleError::invalid(format!(
                "the manifest lists {} twice",
                e.path
            )));
        }
        total = total.saturating_add(e.size);
        if !matches!(name, EntryName::Blob(_)) {
            in_memory = in_memory.saturating_add(e.size);
        }
    }
    if total > limits.max_total_bytes {
        return Err(BundleError::TooLarge {
            what: format!("{total} bytes declared"),
            limit: limits.max_total_bytes,
        });
    }
    if in_memory > limits.max_in_memory_bytes {
        return Err(BundleError::TooLarge {
            what: format!("{in_memory} bytes of records, logs and plugins"),
            limit: limits.max_in_memory_bytes,
        });
    }
    Ok(m)
}

/// Passes a blob to the sink and checks what it was.
fn blob(
    r: &mut dyn Read,
    path: &str,
    sha256: &str,
    size: u64,
    sink: &mut dyn BlobSink,
) -> Result<(), BundleError> {
    struct Hashing<'a> {
        inner: std::io::Take<&'a mut dyn Read>,
        bytes: u64,
        hash: Sha256,
    }
    impl Read for Hashing<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.inner.read(buf)?;
            self.bytes += n as u64;
            self.hash.update(&buf[..n]);
            Ok(n)
        }
    }
    let mut h = Hashing {
        inner: r.take(size),
        bytes: 0,
        hash: Sha256::new(),
    };
    sink.put(sha256, size, &mut h).map_err(|e| {
        // A read error surfaces through the sink; name it as the archive's.
        if e.code == mem_core::ErrorCode::Io {
            BundleError::invalid(format!(
                "the archive is truncated or damaged: {}",
                e.message
            ))
        } else {
            BundleError::Other(e)
        }
    })?;
    std::io::copy(&mut h, &mut std::io::sink()).map_err(|e| damaged(&e))?;
    if h.bytes != size {
        return Err(BundleError::invalid("the archive ends inside an entry"));
    }
    let actual = hex::encode(h.hash.finalize());
    if actual != sha256 {
        return Err(mismatch(path, "sha256", sha256, actual));
    }
    Ok(())
}

fn lines<'a>(bytes: &'a [u8], path: &str) -> Result<Vec<&'a [u8]>, BundleError> {
    if !bytes.is_empty() && !bytes.ends_with(b"\n") {
        return Err(BundleError::invalid(format!(
            "{path} does not end with a newline"
        )));
    }
    Ok(bytes
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .collect())
}

fn b64(s: &str, path: &str) -> Result<Vec<u8>, BundleError> {
    B64.decode(s)
        .map_err(|e| BundleError::invalid(format!("{path}: a value is not base64: {e}")))
}

/// Parses a table's records and checks each against the manifest.
fn table(
    name: &str,
    bytes: &[u8],
    digests: &mut HashMap<(String, String), String>,
) -> Result<TablePart, BundleError> {
    let path = EntryName::Table(name.into()).path();
    let mut records = Vec::new();
    for line in lines(bytes, &path)? {
        let r: RecordLine = serde_json::from_slice(line)
            .map_err(|e| BundleError::invalid(format!("{path}: a line is malformed: {e}")))?;
        let value = b64(&r.value, &path)?;
        let expected = digests
            .remove(&(name.to_string(), r.key.clone()))
            .ok_or_else(|| {
                BundleError::invalid(format!(
                    "{path}: record {:?} is not in the manifest (or is there twice)",
                    r.key
                ))
            })?;
        let actual = sha256_hex(&value);
        if actual != expected {
            return Err(mismatch(
                &format!("{path}#{}", r.key),
                "sha256",
                expected,
                actual,
            ));
        }
        records.push((r.key, value));
    }
    Ok(TablePart {
        name: name.into(),
        records,
    })
}

fn log(name: &str, bytes: &[u8], expected: u64) -> Result<LogPart, BundleError> {
    let path = EntryName::Log(name.into()).path();
    let mut entries = Vec::new();
    for line in lines(bytes, &path)? {
        let l: LogLine = serde_json::from_slice(line)
            .map_err(|e| BundleError::invalid(format!("{path}: a line is malformed: {e}")))?;
        entries.push(b64(&l.value, &path)?);
    }
    if entries.len() as u64 != expected {
        return Err(mismatch(&path, "entry count", expected, entries.len()));
    }
    Ok(LogPart {
        name: name.into(),
        entries,
    })
}

/// Reads and verifies a bundle. `proceed` sees the manifest (and its
/// hash) first and may stop the read there; blobs go to `sink` as they
/// come. Nothing is returned unless every entry and record matched the
/// manifest and every manifest entry was present.
pub fn read(
    input: impl Read,
    limits: &Limits,
    proceed: &mut dyn FnMut(&Manifest, &str) -> MemResult<bool>,
    sink: &mut dyn BlobSink,
) -> Result<Outcome, BundleError> {
    let decoder = zstd::stream::Decoder::new(input).map_err(|e| damaged(&e))?;
    let cap = limits
        .max_total_bytes
        .saturating_add(MAX_MANIFEST_BYTES)
        .saturating_add(limits.max_entries.saturating_mul(PER_ENTRY_OVERHEAD));
    let capped = Capped {
        inner: decoder,
        left: cap,
        cap,
    };
    let mut archive = tar::Archive::new(capped);
    let mut entries = archive.entries().map_err(|e| damaged(&e))?;

    // The manifest first, alone.
    let mut first = entries
        .next()
        .ok_or_else(|| BundleError::invalid("the archive is empty"))?
        .map_err(|e| damaged(&e))?;
    let first_name = String::from_utf8_lossy(&first.path_bytes()).to_string();
    if first_name != crate::MANIFEST_ENTRY || first.header().entry_type() != tar::EntryType::Regular
    {
        return Err(BundleError::invalid(format!(
            "the first entry is {first_name:?}, not the manifest"
        )));
    }
    if first.size() > MAX_MANIFEST_BYTES {
        return Err(BundleError::TooLarge {
            what: "the manifest".into(),
            limit: MAX_MANIFEST_BYTES,
        });
    }
    let size = first.size();
    let manifest_bytes = slurp(&mut first, size)?;
    drop(first);
    let manifest = manifest(&manifest_bytes, limits)?;
    let manifest_sha256 = sha256_hex(&manifest_bytes);
    if !proceed(&manifest, &manifest_sha256).map_err(BundleError::Other)? {
        return Ok(Outcome::Stopped {
            manifest: Box::new(manifest),
            manifest_sha256,
        });
    }

    let mut expected: HashMap<&str, (u64, &str)> = manifest
        .entries
        .iter()
        .map(|e| (e.path.as_str(), (e.size, e.sha256.as_str())))
        .collect();
    let mut digests: HashMap<(String, String), String> = HashMap::new();
    for r in &manifest.records {
        if digests
            .insert((r.table.clone(), r.key.clone()), r.sha256.clone())
            .is_some()
        {
            return Err(BundleError::invalid(format!(
                "the manifest lists record {:?} of {} twice",
                r.key, r.table
            )));
        }
    }
    let mut settings = None;
    let mut docs: Vec<(EntryName, Vec<u8>)> = Vec::new();
    let mut blobs = Vec::new();
    let mut seen = HashSet::new();
    for entry in entries {
        let mut entry = entry.map_err(|e| damaged(&e))?;
        let raw = entry.path_bytes();
        let path = std::str::from_utf8(&raw)
            .map_err(|_| BundleError::invalid("an entry name is not UTF-8"))?
            .to_string();
        let kind = entry.header().entry_type();
        if kind != tar::EntryType::Regular {
            return Err(BundleError::invalid(format!(
                "entry {path:?} is a {kind:?}; bundles hold regular files only"
            )));
        }
        let name = EntryName::parse(&path).ok_or_else(|| {
            BundleError::invalid(format!("entry {path:?} is not one a bundle has"))
        })?;
        if !seen.insert(path.clone()) {
            return Err(BundleError::invalid(format!(
                "entry {path:?} appears twice"
            )));
        }
        let (size, sha256) = expected.remove(path.as_str()).ok_or_else(|| {
            BundleError::invalid(format!("entry {path:?} is not in the manifest"))
        })?;
        if entry.size() != size {
            return Err(mismatch(&path, "size", size, entry.size()));
        }
        match name {
            EntryName::Blob(sha) => {
                blob(&mut entry, &path, &sha, size, sink)?;
                blobs.push(BlobInfo { sha256: sha, size });
            }
            EntryName::Manifest => {
                return Err(BundleError::invalid(
                    "entry \"manifest.json\" appears twice",
                ));
            }
            other => {
                let bytes = slurp(&mut entry, size)?;
                let actual = sha256_hex(&bytes);
                if actual != sha256 {
                    return Err(mismatch(&path, "sha256", sha256, actual));
                }
                if other == EntryName::Settings {
                    settings = Some(bytes);
                } else {
                    docs.push((other, bytes));
                }
            }
        }
    }
    if let Some(path) = expected.keys().min() {
        return Err(match EntryName::parse(path) {
            Some(EntryName::Blob(sha256)) => BundleError::MissingBlob { sha256 },
            _ => BundleError::invalid(format!(
                "the archive lacks {path}, which the manifest lists"
            )),
        });
    }
    let settings = settings.ok_or_else(|| BundleError::invalid("the bundle has no settings"))?;
    let (mut tables, mut logs) = (Vec::new(), Vec::new());
    let mut plugins: Vec<PluginPart> = Vec::new();
    for (name, bytes) in docs {
        match name {
            EntryName::Table(t) => tables.push(table(&t, &bytes, &mut digests)?),
            EntryName::Log(l) => {
                let n = manifest.counts.logs.get(&l).copied().unwrap_or(0);
                logs.push(log(&l, &bytes, n)?);
            }
            EntryName::PluginManifest(ref p) | EntryName::PluginWasm(ref p) => {
                let is_wasm = matches!(name, EntryName::PluginWasm(_));
                let p = p.clone();
                let i = match plugins.iter().position(|x| x.name == p) {
                    Some(i) => i,
                    None => {
                        plugins.push(PluginPart {
                            name: p,
                            manifest: Vec::new(),
                            wasm: Vec::new(),
                        });
                        plugins.len() - 1
                    }
                };
                if is_wasm {
                    plugins[i].wasm = bytes;
                } else {
                    plugins[i].manifest = bytes;
                }
            }
            EntryName::Manifest | EntryName::Settings | EntryName::Blob(_) => {}
        }
    }
    if let Some(((table, key), _)) = digests.iter().min() {
        return Err(BundleError::invalid(format!(
            "record {key:?} of {table}, which the manifest lists, is not in the bundle"
        )));
    }
    if let Some(p) = plugins
        .iter()
        .find(|p| p.manifest.is_empty() || p.wasm.is_empty())
    {
        return Err(BundleError::invalid(format!(
            "plugin {} lacks its manifest or its component",
            p.name
        )));
    }
    for (t, n) in &manifest.counts.records {
        let found = tables
            .iter()
            .find(|x| &x.name == t)
            .map_or(0, |x| x.records.len() as u64);
        if found != *n {
            return Err(mismatch(
                &format!("tables/{t}.jsonl"),
                "record count",
                n,
                found,
            ));
        }
    }
    Ok(Outcome::Complete(Box::new(Bundle {
        manifest,
        manifest_sha256,
        settings,
        tables,
        logs,
        plugins,
        blobs,
    })))
}
