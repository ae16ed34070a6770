//! Blobs with bounded memory: small ones inline in sled, large ones as
//! content-addressed files beside it.
//!
//! Why files: sled reads and writes a value whole, so a 1 GiB blob cost
//! 1 GiB of RAM (more while sled logged it). A blob above [`INLINE_MAX`] is
//! streamed into a temp file while it is hashed, fsync'd, renamed to
//! `blobs/<first two hex digits>/<sha256>` and its folder fsync'd. The
//! `blobs` tree keeps an empty marker for it, so commit's `BlobRef` check,
//! refcounts, dedup and `has_blob` stay transactional in sled; the
//! `blob_files` tree says the bytes are in a file (value: the size). Small
//! blobs stay inline: a file each would cost an inode and two fsyncs.
//!
//! Crash safety rests on `blob_pending`: a key is pending (and flushed)
//! before its file is renamed into place, and becomes pending again in the
//! commit that drops its last reference, until the file is deleted;
//! `gc_blobs` deletes the marker and the file of every pending key without
//! references. Temp files are swept at open, where the store lock proves
//! their writer is gone.
//!
//! A key becomes a path component only after [`is_sha256_hex`] accepts it.

use crate::sled_store::{SledStore, decode_u64, io_err, sled_err};
use mem_core::hash::{is_sha256_hex, sha256_hex};
use mem_core::store::{BlobWritten, StoreError};
use sha2::{Digest, Sha256};
use sled::Transactional;
use sled::transaction::TransactionError;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufReader, Cursor, Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Largest blob kept inline in sled. Memories and ordinary documents stay
/// inline (one sled write); a put holds at most this much before it spills
/// to a file.
pub const INLINE_MAX: usize = 1 << 20;

/// Read size while streaming: few syscalls, noise in RSS.
const CHUNK: usize = 256 * 1024;

/// Inside the blob folder, so a rename into place never crosses filesystems.
const TEMP_DIR: &str = "tmp";

/// Makes temp names unique within this process (the pid separates processes).
static TEMP_SEQ: AtomicU64 = AtomicU64::new(0);

/// The folder of the blobs held as files.
#[derive(Debug)]
pub(crate) struct BlobDir {
    root: PathBuf,
}

impl BlobDir {
    pub(crate) fn new(store_dir: &Path) -> Self {
        Self {
            root: store_dir.join("blobs"),
        }
    }

    /// Where the file of `sha256` lives. Anything but 64 lower-case hex
    /// digits is refused, so no key can name a path outside this folder.
    pub(crate) fn path_for(&self, sha256: &str) -> Result<PathBuf, StoreError> {
        if !is_sha256_hex(sha256) {
            let shown: String = sha256.chars().take(80).collect();
            return Err(StoreError::Corrupt {
                reason: format!("blob key {shown:?} is not a SHA-256"),
            });
        }
        Ok(self.root.join(&sha256[..2]).join(sha256))
    }

    /// Deletes the temp files a dead writer left.
    pub(crate) fn clean_temps(&self) -> Result<(), StoreError> {
        let dir = self.root.join(TEMP_DIR);
        let entries = match fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(io_err(format!("cannot read {}: {e}", dir.display()))),
        };
        for entry in entries {
            let entry = entry.map_err(io_err)?;
            // Only files are ours; anything else is left for a person to see.
            // A temp file that cannot be deleted is only wasted space: it
            // never keeps the workspace from opening.
            if entry.file_type().map_err(io_err)?.is_file() {
                let _ = remove_if_present(&entry.path());
            }
        }
        Ok(())
    }

    fn temp(&self) -> Result<TempBlob, StoreError> {
        let dir = self.root.join(TEMP_DIR);
        mkdir_private(&dir)?;
        let path = dir.join(format!(
            "{}-{}",
            std::process::id(),
            TEMP_SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(|e| io_err(format!("cannot create {}: {e}", path.display())))?;
        Ok(TempBlob {
            path,
            file,
            installed: false,
        })
    }

    /// Moves a complete, synced temp file to its place, durably.
    fn install(&self, mut temp: TempBlob, sha256: &str) -> Result<(), StoreError> {
        let dest = self.path_for(sha256)?;
        let shard = dest.parent().unwrap_or(&self.root);
        if !shard.is_dir() {
            mkdir_private(shard)?;
            sync_dir(&self.root)?;
        }
        fs::rename(&temp.path, &dest)
            .map_err(|e| io_err(format!("cannot move a blob into {}: {e}", dest.display())))?;
        temp.installed = true;
        sync_dir(shard)
    }

    /// Deletes the file of `sha256`; `false` when there was none.
    fn remove(&self, sha256: &str) -> Result<bool, StoreError> {
        remove_if_present(&self.path_for(sha256)?)
    }
}

/// A blob being written; deleted on drop unless installed, so an error
/// or a size-limit abort midway leaves nothing behind.
struct TempBlob {
    path: PathBuf,
    file: File,
    installed: bool,
}

impl TempBlob {
    fn write(&mut self, bytes: &[u8]) -> Result<(), StoreError> {
        self.file
            .write_all(bytes)
            .map_err(|e| io_err(format!("cannot write a blob: {e}")))
    }

    fn sync(&self) -> Result<(), StoreError> {
        self.file
            .sync_all()
            .map_err(|e| io_err(format!("cannot sync a blob: {e}")))
    }
}

impl Drop for TempBlob {
    fn drop(&mut self) {
        if !self.installed {
            let _ = fs::remove_file(&self.path);
        }
    }
}

fn mkdir_private(dir: &Path) -> Result<(), StoreError> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| io_err(format!("cannot create {}: {e}", dir.display())))
}

fn sync_dir(dir: &Path) -> Result<(), StoreError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| io_err(format!("cannot sync {}: {e}", dir.display())))
}

fn remove_if_present(path: &Path) -> Result<bool, StoreError> {
    match fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(io_err(format!("cannot delete {}: {e}", path.display()))),
    }
}

/// Reads what is available, retrying interruptions.
fn read_some(reader: &mut dyn Read, buf: &mut [u8]) -> Result<usize, StoreError> {
    loop {
        match reader.read(buf) {
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(StoreError::Io(format!("cannot read the content: {e}"))),
        }
    }
}

/// Where a stored blob's bytes are.
enum Located {
    Inline(sled::IVec),
    File(PathBuf),
}

fn lock_err<T>(_: T) -> StoreError {
    StoreError::Io("a previous blob write panicked".into())
}

impl SledStore {
    /// `put_blob`: bytes already in memory; large ones still go to a file
    /// so sled stays small. A key that is not a SHA-256 stays inline.
    pub(crate) fn put_blob_bytes(&self, sha256: &str, bytes: &[u8]) -> Result<(), StoreError> {
        if bytes.len() <= INLINE_MAX || !is_sha256_hex(sha256) {
            return self.put_inline(sha256, bytes);
        }
        if self.blobs_tree().contains_key(sha256).map_err(sled_err)? {
            return Ok(());
        }
        let mut temp = self.blob_dir.temp()?;
        temp.write(bytes)?;
        self.install_file(temp, sha256, bytes.len() as u64)?;
        Ok(())
    }

    fn put_inline(&self, sha256: &str, bytes: &[u8]) -> Result<(), StoreError> {
        let blobs = self.blobs_tree();
        if !blobs.contains_key(sha256.as_bytes()).map_err(sled_err)? {
            // Marked pending first, so a crash never leaves an unreferenced
            // blob that `gc_blobs` would not find.
            self.pending_tree()
                .insert(sha256.as_bytes(), &[])
                .map_err(sled_err)?;
            blobs.insert(sha256.as_bytes(), bytes).map_err(sled_err)?;
        }
        Ok(())
    }

    /// `put_blob_from`: holds at most [`INLINE_MAX`] plus one chunk; past
    /// that, hashes while writing a temp file.
    pub(crate) fn put_blob_stream(&self, reader: &mut dyn Read) -> Result<BlobWritten, StoreError> {
        let mut buf = vec![0u8; CHUNK];
        let mut head = Vec::new();
        while head.len() <= INLINE_MAX {
            let n = read_some(reader, &mut buf)?;
            if n == 0 {
                let sha256 = sha256_hex(&head);
                let existed = self.blobs_tree().contains_key(&sha256).map_err(sled_err)?;
                if !existed {
                    self.put_inline(&sha256, &head)?;
                }
                return Ok(BlobWritten {
                    sha256,
                    size: head.len() as u64,
                    existed,
                });
            }
            head.extend_from_slice(&buf[..n]);
        }
        let mut temp = self.blob_dir.temp()?;
        let mut hasher = Sha256::new();
        hasher.update(&head);
        temp.write(&head)?;
        let mut size = head.len() as u64;
        drop(head);
        loop {
            let n = read_some(reader, &mut buf)?;
            if n == 0 {
                break;
            }
            hasher.update(&buf[..n]);
            temp.write(&buf[..n])?;
            size += n as u64;
        }
        let sha256 = hex::encode(hasher.finalize());
        let existed = self.install_file(temp, &sha256, size)?;
        Ok(BlobWritten {
            sha256,
            size,
            existed,
        })
    }

    /// Syncs a temp file, puts it in place and marks it stored; `true`
    /// when the blob was already stored (the temp file is dropped unsynced:
    /// a repeated upload costs no writeback).
    fn install_file(&self, temp: TempBlob, sha256: &str, size: u64) -> Result<bool, StoreError> {
        let _guard = self.install_lock.lock().map_err(lock_err)?;
        if self.blobs_tree().contains_key(sha256).map_err(sled_err)? {
            return Ok(true);
        }
        temp.sync()?;
        // Durably pending before the file exists: a crash after the rename
        // leaves a file that `gc_blobs` finds.
        self.pending_tree().insert(sha256, &[]).map_err(sled_err)?;
        self.db().flush().map_err(sled_err)?;
        self.blob_dir.install(temp, sha256)?;
        // `blob_files` first: whoever sees the marker finds the file.
        self.blob_files_tree()
            .insert(sha256, &size.to_be_bytes())
            .map_err(sled_err)?;
        self.blobs_tree().insert(sha256, &[]).map_err(sled_err)?;
        Ok(false)
    }

    /// Reads the marker and `blob_files` in one transaction: a blob
    /// installed or dropped meanwhile is seen whole, never its empty
    /// marker as content.
    fn locate(&self, sha256: &str) -> Result<Option<Located>, StoreError> {
        let key = sha256.as_bytes();
        let found = (self.blobs_tree(), self.blob_files_tree())
            .transaction(|(blobs, files)| Ok((blobs.get(key)?, files.get(key)?)));
        let (value, file) = match found {
            Ok(pair) => pair,
            Err(TransactionError::Abort(())) => {
                return Err(StoreError::Io("a blob lookup was aborted".into()));
            }
            Err(TransactionError::Storage(e)) => return Err(sled_err(e)),
        };
        match (value, file) {
            (None, _) => Ok(None),
            (Some(_), Some(_)) => Ok(Some(Located::File(self.blob_dir.path_for(sha256)?))),
            (Some(v), None) => Ok(Some(Located::Inline(v))),
        }
    }

    /// A file that vanished under a stored marker: gone if the blob was
    /// dropped meanwhile, damage otherwise.
    fn missing_file<T>(&self, sha256: &str) -> Result<Option<T>, StoreError> {
        if self.blobs_tree().contains_key(sha256).map_err(sled_err)? {
            return Err(StoreError::Corrupt {
                reason: format!("the file of blob {sha256} is missing"),
            });
        }
        Ok(None)
    }

    /// `get_blob`: whole bytes, also of a large blob (callers that need
    /// them whole, such as processors, enforce their own limits first).
    pub(crate) fn read_blob(&self, sha256: &str) -> Result<Option<Vec<u8>>, StoreError> {
        match self.locate(sha256)? {
            None => Ok(None),
            Some(Located::Inline(v)) => Ok(Some(v.to_vec())),
            Some(Located::File(path)) => match fs::read(&path) {
                Ok(bytes) => Ok(Some(bytes)),
                Err(e) if e.kind() == io::ErrorKind::NotFound => self.missing_file(sha256),
                Err(e) => Err(io_err(format!("cannot read {}: {e}", path.display()))),
            },
        }
    }

    /// `open_blob`: a large blob streams from its file (an open file stays
    /// readable even if the blob is dropped meanwhile).
    pub(crate) fn open_blob_reader(
        &self,
        sha256: &str,
    ) -> Result<Option<Box<dyn Read + Send>>, StoreError> {
        match self.locate(sha256)? {
            None => Ok(None),
            Some(Located::Inline(v)) => Ok(Some(Box::new(Cursor::new(v)))),
            Some(Located::File(path)) => match File::open(&path) {
                Ok(file) => Ok(Some(Box::new(BufReader::with_capacity(CHUNK, file)))),
                Err(e) if e.kind() == io::ErrorKind::NotFound => self.missing_file(sha256),
                Err(e) => Err(io_err(format!("cannot open {}: {e}", path.display()))),
            },
        }
    }

    /// Deletes the files whose last reference a durable commit dropped.
    /// A failure leaves the key pending, so `gc_blobs` retries at the next
    /// open; the commit itself has happened and is not reported failed.
    pub(crate) fn delete_dropped_files(&self, keys: &[String]) {
        if keys.is_empty() {
            return;
        }
        let Ok(_guard) = self.install_lock.lock() else {
            return;
        };
        for key in keys {
            // Stored again meanwhile: the file is the new blob's.
            if !matches!(self.blobs_tree().contains_key(key), Ok(false)) {
                continue;
            }
            if self.blob_dir.remove(key).is_ok() {
                let _ = self.pending_tree().remove(key.as_bytes());
            }
        }
    }

    /// `gc_blobs`: drops every pending blob without references, its file
    /// included.
    pub(crate) fn sweep_pending_blobs(&self) -> Result<u64, StoreError> {
        let _commits = self.commit_lock.lock().map_err(lock_err)?;
        let _installs = self.install_lock.lock().map_err(lock_err)?;
        let pending = self.pending_tree();
        let mut removed = 0;
        let mut swept = false;
        for item in pending.iter() {
            let (k, _) = item.map_err(sled_err)?;
            swept = true;
            if !self.refs_tree().contains_key(&k).map_err(sled_err)? {
                let mut gone = self.blobs_tree().remove(&k).map_err(sled_err)?.is_some();
                self.blob_files_tree().remove(&k).map_err(sled_err)?;
                // Only keys we could have written as files name a path.
                // A file that cannot be deleted now (permissions, a busy
                // disk) keeps its key pending for the next sweep: it never
                // keeps the workspace from opening.
                if let Ok(key) = std::str::from_utf8(&k)
                    && is_sha256_hex(key)
                {
                    match self.blob_dir.remove(key) {
                        Ok(file_gone) => gone |= file_gone,
                        Err(_) => continue,
                    }
                }
                if gone {
                    removed += 1;
                }
            }
            pending.remove(&k).map_err(sled_err)?;
        }
        if swept {
            self.db().flush().map_err(sled_err)?;
        }
        Ok(removed)
    }

    /// Bytes held in blob files (for `size_on_disk`).
    pub(crate) fn blob_file_bytes(&self) -> Result<u64, StoreError> {
        let mut total = 0u64;
        for item in self.blob_files_tree().iter() {
            let (_, v) = item.map_err(sled_err)?;
            total = total.saturating_add(decode_u64(&v)?);
        }
        Ok(total)
    }
}

#[cfg(test)]
#[path = "blobs_tests.rs"]
mod tests;
