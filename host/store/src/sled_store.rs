use crate::blobs::BlobDir;
use mem_core::store::{
    Batch, BlobWritten, Committed, Condition, Durability, Log, Op, Scan, Store, StoreError, Table,
};
use sled::transaction::{ConflictableTransactionError, TransactionError, TransactionalTree};
use sled::{Db, Transactional, Tree};
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::Read;
use std::ops::Bound;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Schema version this binary writes and the newest it can read.
///
/// 2: blobs above [`crate::blobs::INLINE_MAX`] live in files named in the
/// `blob_files` tree. A version-1 binary would read their empty `blobs`
/// value as the content, so it must refuse such a store; a version-1 store
/// is a valid version-2 store and is upgraded at open.
///
/// 3: files carry annotations (the `annotations` table), an accepted
/// `description` and the processors' `content_time`. A version-2 binary
/// would drop those fields when it
/// rewrites a file record and leave annotations behind a removed file,
/// so it must refuse such a store; a version-2 store is a valid
/// version-3 store and is upgraded at open.
pub const SCHEMA_VERSION: u32 = 3;

const META_SCHEMA_VERSION: &[u8] = b"__schema_version";
const BLOBS: &str = "blobs";
const BLOB_REFS: &str = "blob_refs";
/// Blobs written by `put_blob` whose first reference is not committed yet.
const BLOB_PENDING: &str = "blob_pending";
/// sha256 → size of the blobs held as files (see [`crate::blobs`]).
const BLOB_FILES: &str = "blob_files";

/// The sled-backed store of one workspace.
pub struct SledStore {
    db: Db,
    dir: PathBuf,
    /// All trees in a fixed order; a commit transacts over every one.
    trees: Vec<Tree>,
    table_pos: HashMap<Table, usize>,
    log_pos: HashMap<Log, usize>,
    blobs_pos: usize,
    refs_pos: usize,
    pending_pos: usize,
    files_pos: usize,
    /// Where large blobs live as files.
    pub(crate) blob_dir: BlobDir,
    /// Serializes installing a blob file with deleting one, so a blob
    /// stored again while its last reference goes keeps its file.
    pub(crate) install_lock: Mutex<()>,
    /// Serializes commits; holds the next sequence number of each log.
    pub(crate) commit_lock: Mutex<HashMap<Log, u64>>,
    /// Held for the lifetime of the store: the cross-process lock.
    _lock_file: File,
}

impl std::fmt::Debug for SledStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SledStore").field("dir", &self.dir).finish()
    }
}

pub(crate) fn io_err(e: impl std::fmt::Display) -> StoreError {
    StoreError::Io(e.to_string())
}

pub(crate) fn sled_err(e: sled::Error) -> StoreError {
    match e {
        sled::Error::Corruption { .. } | sled::Error::ReportableBug(_) => StoreError::Corrupt {
            reason: e.to_string(),
        },
        sled::Error::Io(io) if io.kind() == std::io::ErrorKind::InvalidData => {
            StoreError::Corrupt {
                reason: io.to_string(),
            }
        }
        other => StoreError::Io(other.to_string()),
    }
}

/// sled's page cache (its default is 1 GiB). A rebuild of the index reads
/// every record, and at 1M memories filled it: peak RSS 5.18 GB, 4.47 GB
/// with 256 MiB (and 49 s -> 38 s). Searches were unchanged by it (100k
/// memories, 8 clients: lexical 1,658 vs 1,662 req/s, hybrid 360 vs 375;
/// 1M: hybrid 155 vs 161): the OS caches the file either way. At 64 MiB
/// a server at 1M memories grew 86 MB under lexical load instead of 314
/// (the cache's nodes take more memory than sled counts them at), with
/// hybrid searches unchanged (1M, 8 clients, two runs each: 160 and 164
/// req/s against 153 and 168) and `remember --jsonl` too (0.81 of the
/// embedding limit against 0.82).
const SLED_CACHE_BYTES: u64 = 64 * 1024 * 1024;

/// How long to wait for sled's file lock held by this process's own
/// just-dropped handle (its flusher thread finishes asynchronously).
const SLED_LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// sled reports a held file lock as `ErrorKind::Other` with this message.
fn is_sled_lock_busy(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::WouldBlock
        || e.to_string().starts_with("could not acquire lock")
}

fn log_key(seq: u64) -> [u8; 8] {
    seq.to_be_bytes()
}

pub(crate) fn decode_u64(bytes: &[u8]) -> Result<u64, StoreError> {
    let arr: [u8; 8] = bytes.try_into().map_err(|_| StoreError::Corrupt {
        reason: format!("expected 8 bytes, found {}", bytes.len()),
    })?;
    Ok(u64::from_be_bytes(arr))
}

/// The smallest key greater than every key starting with `prefix`.
fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

impl SledStore {
    /// Opens (creating if absent) the store in `dir`.
    ///
    /// Fails with `Locked` when another process holds it, `UnsupportedVersion`
    /// for a newer schema, `Corrupt` when sled cannot read it or the schema
    /// marker is missing from an existing store.
    pub fn open(dir: &Path) -> Result<Self, StoreError> {
        std::fs::create_dir_all(dir).map_err(io_err)?;
        let lock_path = dir.join("LOCK");
        let lock_file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(io_err)?;
        match lock_file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(StoreError::Locked {
                    path: dir.display().to_string(),
                });
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(io_err(e)),
        }

        let db_path = dir.join("db");
        let existed = db_path.exists();
        // sled can panic on some kinds of damage; a panic must never reach
        // the user as a crash, and never lead to a silent re-init.
        let open_db = || {
            catch_unwind(AssertUnwindSafe(|| {
                sled::Config::new()
                    .path(&db_path)
                    .mode(sled::Mode::HighThroughput)
                    .flush_every_ms(Some(500))
                    .cache_capacity(SLED_CACHE_BYTES)
                    .open()
            }))
        };
        // We hold LOCK, so no other process has this store. sled's own file
        // lock can still be held for a moment by the background threads of a
        // handle this process just dropped; wait for them instead of failing.
        let deadline = std::time::Instant::now() + SLED_LOCK_WAIT;
        let mut opened = open_db();
        while matches!(&opened, Ok(Err(sled::Error::Io(e))) if is_sled_lock_busy(e))
            && std::time::Instant::now() < deadline
        {
            std::thread::sleep(std::time::Duration::from_millis(10));
            opened = open_db();
        }
        let db = match opened {
            Ok(Ok(db)) => db,
            Ok(Err(e)) => {
                return Err(match sled_err(e) {
                    StoreError::Io(reason) if existed => StoreError::Corrupt { reason },
                    other => other,
                });
            }
            Err(_) => {
                return Err(StoreError::Corrupt {
                    reason: "the storage engine could not read its files".into(),
                });
            }
        };
        Self::from_db(db, dir.to_path_buf(), lock_file, existed)
    }

    fn from_db(db: Db, dir: PathBuf, lock_file: File, existed: bool) -> Result<Self, StoreError> {
        let mut trees = Vec::new();
        let mut table_pos = HashMap::new();
        let mut log_pos = HashMap::new();
        for t in Table::ALL {
            table_pos.insert(*t, trees.len());
            trees.push(db.open_tree(t.name()).map_err(sled_err)?);
        }
        for l in Log::ALL {
            log_pos.insert(*l, trees.len());
            trees.push(
                db.open_tree(format!("log_{}", l.name()))
                    .map_err(sled_err)?,
            );
        }
        let blobs_pos = trees.len();
        trees.push(db.open_tree(BLOBS).map_err(sled_err)?);
        let refs_pos = trees.len();
        trees.push(db.open_tree(BLOB_REFS).map_err(sled_err)?);
        let pending_pos = trees.len();
        trees.push(db.open_tree(BLOB_PENDING).map_err(sled_err)?);
        let files_pos = trees.len();
        trees.push(db.open_tree(BLOB_FILES).map_err(sled_err)?);

        let meta = &trees[table_pos[&Table::Meta]];
        match meta.get(META_SCHEMA_VERSION).map_err(sled_err)? {
            Some(v) => {
                let bytes: [u8; 4] = v.as_ref().try_into().map_err(|_| StoreError::Corrupt {
                    reason: "schema version marker is malformed".into(),
                })?;
                let found = u32::from_be_bytes(bytes);
                if found > SCHEMA_VERSION {
                    return Err(StoreError::UnsupportedVersion {
                        found,
                        supported: SCHEMA_VERSION,
                    });
                }
                if found < SCHEMA_VERSION {
                    meta.insert(META_SCHEMA_VERSION, &SCHEMA_VERSION.to_be_bytes())
                        .map_err(sled_err)?;
                    db.flush().map_err(sled_err)?;
                }
            }
            None if existed || db.was_recovered() => {
                return Err(StoreError::Corrupt {
                    reason: "schema version marker is missing".into(),
                });
            }
            None => {
                meta.insert(META_SCHEMA_VERSION, &SCHEMA_VERSION.to_be_bytes())
                    .map_err(sled_err)?;
                db.flush().map_err(sled_err)?;
            }
        }

        let mut next_seq = HashMap::new();
        for l in Log::ALL {
            let tree = &trees[log_pos[l]];
            let last = match tree.last().map_err(sled_err)? {
                Some((k, _)) => decode_u64(&k)?,
                None => 0,
            };
            next_seq.insert(*l, last + 1);
        }

        // We hold LOCK: a temp file left in the blob folder is from a dead process.
        let blob_dir = BlobDir::new(&dir);
        blob_dir.clean_temps()?;
        Ok(Self {
            db,
            blob_dir,
            install_lock: Mutex::new(()),
            dir,
            trees,
            table_pos,
            log_pos,
            blobs_pos,
            refs_pos,
            pending_pos,
            files_pos,
            commit_lock: Mutex::new(next_seq),
            _lock_file: lock_file,
        })
    }

    pub(crate) fn blobs_tree(&self) -> &Tree {
        &self.trees[self.blobs_pos]
    }

    pub(crate) fn blob_files_tree(&self) -> &Tree {
        &self.trees[self.files_pos]
    }

    pub(crate) fn pending_tree(&self) -> &Tree {
        &self.trees[self.pending_pos]
    }

    pub(crate) fn refs_tree(&self) -> &Tree {
        &self.trees[self.refs_pos]
    }

    pub(crate) fn db(&self) -> &Db {
        &self.db
    }

    fn table(&self, t: Table) -> &Tree {
        &self.trees[self.table_pos[&t]]
    }

    fn log(&self, l: Log) -> &Tree {
        &self.trees[self.log_pos[&l]]
    }

    /// Writes a schema version marker directly (tests of version refusal).
    pub fn force_schema_version(&self, version: u32) -> Result<(), StoreError> {
        self.table(Table::Meta)
            .insert(META_SCHEMA_VERSION, &version.to_be_bytes())
            .map_err(sled_err)?;
        self.db.flush().map_err(sled_err)?;
        Ok(())
    }

    /// Applies `batch` inside the transaction; also returns the blobs held
    /// as files whose last reference went (their files go after the commit).
    fn apply(
        &self,
        txs: &[TransactionalTree],
        batch: &Batch,
        next_seq: &HashMap<Log, u64>,
    ) -> Result<(Committed, Vec<String>), ConflictableTransactionError<StoreError>> {
        for (index, cond) in batch.conditions.iter().enumerate() {
            let Condition::Equals { table, key, value } = cond;
            let current = txs[self.table_pos[table]].get(key.as_bytes())?;
            if current.as_deref() != value.as_deref() {
                return Err(ConflictableTransactionError::Abort(
                    StoreError::ConditionFailed { index },
                ));
            }
        }
        let mut seqs = Vec::new();
        let mut dropped_files = Vec::new();
        let mut local_seq = next_seq.clone();
        for op in &batch.ops {
            match op {
                Op::Put { table, key, value } => {
                    txs[self.table_pos[table]].insert(key.as_bytes(), value.as_slice())?;
                }
                Op::Delete { table, key } => {
                    txs[self.table_pos[table]].remove(key.as_bytes())?;
                }
                Op::Append { log, value } => {
                    let seq = local_seq.get(log).copied().unwrap_or(1);
                    txs[self.log_pos[log]].insert(&log_key(seq), value.as_slice())?;
                    local_seq.insert(*log, seq + 1);
                    seqs.push(seq);
                }
                Op::BlobRef { sha256, delta } => {
                    let refs = &txs[self.refs_pos];
                    let blobs = &txs[self.blobs_pos];
                    if blobs.get(sha256.as_bytes())?.is_none() {
                        return Err(ConflictableTransactionError::Abort(
                            StoreError::MissingBlob {
                                sha256: sha256.clone(),
                            },
                        ));
                    }
                    let current = match refs.get(sha256.as_bytes())? {
                        Some(v) => decode_u64(&v).map_err(ConflictableTransactionError::Abort)?,
                        None => 0,
                    };
                    txs[self.pending_pos].remove(sha256.as_bytes())?;
                    let next = current as i64 + delta;
                    if next <= 0 {
                        refs.remove(sha256.as_bytes())?;
                        blobs.remove(sha256.as_bytes())?;
                        if txs[self.files_pos].remove(sha256.as_bytes())?.is_some() {
                            // Pending again until its file is deleted, so a
                            // crash in between leaves an orphan gc finds.
                            txs[self.pending_pos].insert(sha256.as_bytes(), &[])?;
                            if !dropped_files.contains(sha256) {
                                dropped_files.push(sha256.clone());
                            }
                        }
                    } else {
                        refs.insert(sha256.as_bytes(), &(next as u64).to_be_bytes())?;
                    }
                }
            }
        }
        Ok((Committed { seqs }, dropped_files))
    }
}

impl Store for SledStore {
    fn get(&self, table: Table, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self
            .table(table)
            .get(key.as_bytes())
            .map_err(sled_err)?
            .map(|v| v.to_vec()))
    }

    fn scan(&self, table: Table, scan: &Scan<'_>) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        let tree = self.table(table);
        let prefix = scan.prefix.as_bytes();
        let end = prefix_end(prefix);
        let (lo, hi): (Bound<Vec<u8>>, Bound<Vec<u8>>) = if scan.reverse {
            let hi = match (scan.after, end) {
                (Some(a), Some(e)) if a.as_bytes() < e.as_slice() => {
                    Bound::Excluded(a.as_bytes().to_vec())
                }
                (Some(a), None) => Bound::Excluded(a.as_bytes().to_vec()),
                (_, Some(e)) => Bound::Excluded(e),
                (None, None) => Bound::Unbounded,
            };
            (Bound::Included(prefix.to_vec()), hi)
        } else {
            let lo = match scan.after {
                Some(a) if a.as_bytes() >= prefix => Bound::Excluded(a.as_bytes().to_vec()),
                _ => Bound::Included(prefix.to_vec()),
            };
            (lo, end.map_or(Bound::Unbounded, Bound::Excluded))
        };
        let range = tree.range::<Vec<u8>, _>((lo, hi));
        let iter: Box<dyn Iterator<Item = sled::Result<(sled::IVec, sled::IVec)>>> = if scan.reverse
        {
            Box::new(range.rev())
        } else {
            Box::new(range)
        };
        let mut out = Vec::new();
        for item in iter {
            if out.len() >= scan.limit {
                break;
            }
            let (k, v) = item.map_err(sled_err)?;
            let key = String::from_utf8(k.to_vec()).map_err(|_| StoreError::Corrupt {
                reason: format!("non-UTF-8 key in {}", table.name()),
            })?;
            out.push((key, v.to_vec()));
        }
        Ok(out)
    }

    fn count(&self, table: Table) -> Result<u64, StoreError> {
        Ok(self.table(table).len() as u64)
    }

    fn commit(&self, batch: Batch, durability: Durability) -> Result<Committed, StoreError> {
        let (committed, dropped_files) = {
            let mut next_seq = self
                .commit_lock
                .lock()
                .map_err(|_| StoreError::Io("a previous commit panicked".into()))?;
            let result = self
                .trees
                .as_slice()
                .transaction(|txs| self.apply(txs, &batch, &next_seq));
            let committed = match result {
                Ok(c) => c,
                Err(TransactionError::Abort(e)) => return Err(e),
                Err(TransactionError::Storage(e)) => return Err(sled_err(e)),
            };
            for op in &batch.ops {
                if let Op::Append { log, .. } = op {
                    *next_seq.entry(*log).or_insert(1) += 1;
                }
            }
            committed
        };
        // A file may only go once the commit that dropped it is durable.
        if durability == Durability::Immediate || !dropped_files.is_empty() {
            self.flush()?;
        }
        self.delete_dropped_files(&dropped_files);
        Ok(committed)
    }

    fn flush(&self) -> Result<(), StoreError> {
        self.db.flush().map_err(sled_err)?;
        Ok(())
    }

    fn put_blob(&self, sha256: &str, bytes: &[u8]) -> Result<(), StoreError> {
        self.put_blob_bytes(sha256, bytes)
    }

    fn get_blob(&self, sha256: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.read_blob(sha256)
    }

    fn put_blob_from(&self, reader: &mut dyn Read) -> Result<BlobWritten, StoreError> {
        self.put_blob_stream(reader)
    }

    fn open_blob(&self, sha256: &str) -> Result<Option<Box<dyn Read + Send>>, StoreError> {
        self.open_blob_reader(sha256)
    }

    fn has_blob(&self, sha256: &str) -> Result<bool, StoreError> {
        self.blobs_tree()
            .contains_key(sha256.as_bytes())
            .map_err(sled_err)
    }

    fn blob_refcount(&self, sha256: &str) -> Result<u64, StoreError> {
        match self.trees[self.refs_pos]
            .get(sha256.as_bytes())
            .map_err(sled_err)?
        {
            Some(v) => decode_u64(&v),
            None => Ok(0),
        }
    }

    fn gc_blobs(&self) -> Result<u64, StoreError> {
        self.sweep_pending_blobs()
    }

    fn read_log(
        &self,
        log: Log,
        after: u64,
        limit: usize,
    ) -> Result<Vec<(u64, Vec<u8>)>, StoreError> {
        let start = log_key(after.saturating_add(1));
        let mut out = Vec::new();
        for item in self.log(log).range(start..).take(limit) {
            let (k, v) = item.map_err(sled_err)?;
            out.push((decode_u64(&k)?, v.to_vec()));
        }
        Ok(out)
    }

    fn last_log_entry(&self, log: Log) -> Result<Option<(u64, Vec<u8>)>, StoreError> {
        match self.log(log).last().map_err(sled_err)? {
            Some((k, v)) => Ok(Some((decode_u64(&k)?, v.to_vec()))),
            None => Ok(None),
        }
    }

    fn size_on_disk(&self) -> Result<u64, StoreError> {
        Ok(self.db.size_on_disk().map_err(sled_err)? + self.blob_file_bytes()?)
    }
}

#[cfg(test)]
#[path = "sled_store_tests.rs"]
mod tests;
