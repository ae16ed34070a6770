//! The storage seam: records, blobs and append-only logs behind one trait.
//!
//! The trait is deliberately small and backend-neutral (an ordered
//! key-value table set with atomic, conditional batches) so that the
//! embedded sled store and the shared PostgreSQL + object-store backend
//! implement the same contract (held to it by [`crate::store_conformance`]). Business rules (idempotency, CAS on
//! `state_version`, folder rules) live in the service layer and are
//! expressed as batch conditions, never as backend code.

use crate::error::{ErrorCode, MemError};
use thiserror::Error;

/// The record collections. Keys are UTF-8 strings ordered byte-wise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Table {
    /// Workspace-level metadata (schema version, counters).
    Meta,
    /// file id → `FileRecord`.
    Files,
    /// virtual path → file id (unique path index).
    FilePaths,
    /// folder path → `FolderRecord`.
    Folders,
    /// memory id → `Memory`.
    Memories,
    /// `"{path}\0{memory id}"` → empty; answers "does this folder hold memories".
    MemoryPaths,
    /// sha256(idempotency key) → idempotency record.
    Idempotency,
    /// Processor output per file (chunks, metadata): file id → document.
    FileContent,
    /// A file's annotations (processor suggestions and their decisions):
    /// file id → `FileAnnotations`.
    Annotations,
    /// Plugin-private key-value namespaces: `"{plugin}\0{key}"`.
    PluginKv,
    /// Proposals of the write gate.
    Proposals,
    /// Auth tokens by id.
    Tokens,
    /// task key → `Task` (its scope and head checkpoint).
    Tasks,
    /// `"{task key}\0{seq:016}"` → `Checkpoint` (immutable), and
    /// `"#{checkpoint id}"` → its `"{task key}\0{seq:016}"` key.
    Checkpoints,
    /// `"{item id}\0{relation type}\0{other item id}"` → a relation a
    /// detector found between two memories or files, stored from both
    /// ends so `related` is one prefix scan.
    Relations,
    /// Content-free records of searches and context builds (`"r{seq:020}"`,
    /// the newest N kept) and the workspace's fingerprint key (`"key"`).
    RecallLog,
}

impl Table {
    pub const ALL: &'static [Table] = &[
        Table::Meta,
        Table::Files,
        Table::FilePaths,
        Table::Folders,
        Table::Memories,
        Table::MemoryPaths,
        Table::Idempotency,
        Table::FileContent,
        Table::Annotations,
        Table::PluginKv,
        Table::Proposals,
        Table::Tokens,
        Table::Tasks,
        Table::Checkpoints,
        Table::Relations,
        Table::RecallLog,
    ];

    /// Stable name, used as the backend's collection name.
    pub fn name(self) -> &'static str {
        match self {
            Table::Meta => "meta",
            Table::Files => "files",
            Table::FilePaths => "file_paths",
            Table::Folders => "folders",
            Table::Memories => "memories",
            Table::MemoryPaths => "memory_paths",
            Table::Idempotency => "idempotency",
            Table::FileContent => "file_content",
            Table::Annotations => "annotations",
            Table::PluginKv => "plugin_kv",
            Table::Proposals => "proposals",
            Table::Tokens => "tokens",
            Table::Tasks => "tasks",
            Table::Checkpoints => "checkpoints",
            Table::Relations => "relations",
            Table::RecallLog => "recall_log",
        }
    }

    /// The table called `name` (bundles name tables by [`Table::name`]).
    pub fn from_name(name: &str) -> Option<Table> {
        Table::ALL.iter().copied().find(|t| t.name() == name)
    }
}

/// Append-only logs; entries get a strictly increasing sequence number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Log {
    /// Change feed of records; search indexes replay it.
    Events,
    /// Hash-chained governance log.
    Audit,
}

impl Log {
    pub const ALL: &'static [Log] = &[Log::Events, Log::Audit];

    pub fn name(self) -> &'static str {
        match self {
            Log::Events => "events",
            Log::Audit => "audit",
        }
    }

    pub fn from_name(name: &str) -> Option<Log> {
        Log::ALL.iter().copied().find(|l| l.name() == name)
    }
}

/// One mutation inside a [`Batch`].
#[derive(Debug, Clone)]
pub enum Op {
    Put {
        table: Table,
        key: String,
        value: Vec<u8>,
    },
    Delete {
        table: Table,
        key: String,
    },
    /// Appends to a log; the assigned sequence number is returned by commit.
    Append {
        log: Log,
        value: Vec<u8>,
    },
    /// Adjusts a blob's reference count; at zero the blob is deleted in the
    /// same atomic step. The blob must have been stored with `put_blob`.
    BlobRef {
        sha256: String,
        delta: i64,
    },
}

/// A precondition checked atomically with the batch's mutations.
#[derive(Debug, Clone)]
pub enum Condition {
    /// The key currently holds exactly `value` (`None`: the key is absent).
    Equals {
        table: Table,
        key: String,
        value: Option<Vec<u8>>,
    },
}

/// An atomic unit of work: all conditions hold and all ops apply, or nothing.
#[derive(Debug, Clone, Default)]
pub struct Batch {
    pub conditions: Vec<Condition>,
    pub ops: Vec<Op>,
}

impl Batch {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn put(&mut self, table: Table, key: impl Into<String>, value: Vec<u8>) -> &mut Self {
        self.ops.push(Op::Put {
            table,
            key: key.into(),
            value,
        });
        self
    }

    pub fn delete(&mut self, table: Table, key: impl Into<String>) -> &mut Self {
        self.ops.push(Op::Delete {
            table,
            key: key.into(),
        });
        self
    }

    pub fn append(&mut self, log: Log, value: Vec<u8>) -> &mut Self {
        self.ops.push(Op::Append { log, value });
        self
    }

    pub fn blob_ref(&mut self, sha256: impl Into<String>, delta: i64) -> &mut Self {
        self.ops.push(Op::BlobRef {
            sha256: sha256.into(),
            delta,
        });
        self
    }

    pub fn expect(
        &mut self,
        table: Table,
        key: impl Into<String>,
        value: Option<Vec<u8>>,
    ) -> &mut Self {
        self.conditions.push(Condition::Equals {
            table,
            key: key.into(),
            value,
        });
        self
    }

    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }
}

/// When a commit must be on stable storage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// Flushed before `commit` returns: safe to acknowledge.
    Immediate,
    /// Applied atomically but flushed later by [`Store::flush`]; callers
    /// must flush before acknowledging (bulk writers group many commits
    /// under one flush).
    Deferred,
}

/// What a successful commit assigned.
#[derive(Debug, Clone, Default)]
pub struct Committed {
    /// Sequence numbers of the batch's `Append` ops, in op order.
    pub seqs: Vec<u64>,
}

/// What [`Store::put_blob_from`] stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobWritten {
    pub sha256: String,
    pub size: u64,
    /// The same bytes were stored before (nothing new was written).
    pub existed: bool,
}

/// Options of an ordered scan.
#[derive(Debug, Clone, Default)]
pub struct Scan<'a> {
    /// Only keys starting with this prefix.
    pub prefix: &'a str,
    /// Resume strictly after this key (strictly before it when `reverse`).
    pub after: Option<&'a str>,
    pub limit: usize,
    pub reverse: bool,
}

#[derive(Debug, Error, Clone, PartialEq)]
pub enum StoreError {
    #[error("the store is in use by another process")]
    Locked { path: String },
    #[error("the store is damaged: {reason}")]
    Corrupt { reason: String },
    #[error(
        "the store was written by schema version {found}; this binary supports up to {supported}"
    )]
    UnsupportedVersion { found: u32, supported: u32 },
    #[error("condition {index} of the batch did not hold")]
    ConditionFailed { index: usize },
    #[error("blob {sha256} is not stored")]
    MissingBlob { sha256: String },
    #[error("storage I/O failed: {0}")]
    Io(String),
    /// A shared backend (its database or object store) cannot be reached.
    /// `reason` never carries a credential.
    #[error("the {backend} cannot be reached: {reason}")]
    Unavailable { backend: String, reason: String },
}

impl From<StoreError> for MemError {
    fn from(e: StoreError) -> Self {
        match &e {
            StoreError::Locked { path } => MemError::new(ErrorCode::StoreLocked, e.to_string())
                .with_hint("another mem-host process (a server, or a running command) holds this workspace; stop it or talk to it over REST/MCP")
                .with_details(serde_json::json!({ "path": path })),
            StoreError::Corrupt { reason } => MemError::new(ErrorCode::StoreCorrupt, e.to_string())
                .with_hint("restore the workspace from a backup or a bundle export; mem-host will not guess at damaged data")
                .with_details(serde_json::json!({ "reason": reason })),
            StoreError::UnsupportedVersion { found, supported } => {
                MemError::new(ErrorCode::StoreUnsupportedVersion, e.to_string())
                    .with_hint("upgrade mem-host to a version that supports this store")
                    .with_details(serde_json::json!({ "found": found, "supported": supported }))
            }
            StoreError::ConditionFailed { .. } => MemError::new(ErrorCode::VersionConflict, e.to_string())
                .with_hint("the record changed concurrently; read it again and retry"),
            StoreError::MissingBlob { sha256 } => MemError::new(ErrorCode::StoreCorrupt, e.to_string())
                .with_details(serde_json::json!({ "sha256": sha256 })),
            StoreError::Io(_) => MemError::new(ErrorCode::Io, e.to_string())
                .with_hint("check free disk space and permissions of the workspace folder"),
            StoreError::Unavailable { backend, .. } => MemError::new(ErrorCode::StoreUnavailable, e.to_string())
                .with_hint("check that the database and object store named in mem.toml are running and reachable, then retry")
                .with_details(serde_json::json!({ "backend": backend })),
        }
    }
}

/// Records, blobs and logs of one workspace.
///
/// Invariants every backend upholds:
/// - `commit` is atomic: conditions are checked and ops applied as one step;
///   a failed condition applies nothing and reports its index.
/// - With `Durability::Immediate`, the batch is on stable storage when
///   `commit` returns `Ok`.
/// - Log sequence numbers strictly increase and are never reused.
/// - `put_blob` is idempotent; a blob is readable until its reference count
///   drops to zero through `Op::BlobRef`.
/// - A reader that follows a log with `read_log(after = last seq it saw)`
///   never skips an entry: an entry becomes visible only after every entry
///   with a smaller sequence number (commits of a log are serialized, on a
///   shared backend across hosts too).
pub trait Store: Send + Sync {
    fn get(&self, table: Table, key: &str) -> Result<Option<Vec<u8>>, StoreError>;
    /// The values of `keys`, in the order asked (`None` where absent): one
    /// round trip for a shared store, where a `get` each would be one per key.
    fn get_many(&self, table: Table, keys: &[&str]) -> Result<Vec<Option<Vec<u8>>>, StoreError> {
        keys.iter().map(|k| self.get(table, k)).collect()
    }
    fn scan(&self, table: Table, scan: &Scan<'_>) -> Result<Vec<(String, Vec<u8>)>, StoreError>;
    fn count(&self, table: Table) -> Result<u64, StoreError>;
    fn commit(&self, batch: Batch, durability: Durability) -> Result<Committed, StoreError>;
    /// Makes every deferred commit durable.
    fn flush(&self) -> Result<(), StoreError>;

    /// Stores bytes under their SHA-256 (idempotent; not yet referenced).
    fn put_blob(&self, sha256: &str, bytes: &[u8]) -> Result<(), StoreError>;
    fn get_blob(&self, sha256: &str) -> Result<Option<Vec<u8>>, StoreError>;

    /// Stores everything `reader` yields as a blob (idempotent; not yet
    /// referenced) and returns its SHA-256 and size. A backend that can
    /// stream writes with bounded memory; this default holds the bytes
    /// once. A read error stores nothing.
    fn put_blob_from(&self, reader: &mut dyn std::io::Read) -> Result<BlobWritten, StoreError> {
        let mut bytes = Vec::new();
        reader
            .read_to_end(&mut bytes)
            .map_err(|e| StoreError::Io(format!("cannot read the content: {e}")))?;
        let sha256 = crate::hash::sha256_hex(&bytes);
        let existed = self.has_blob(&sha256)?;
        if !existed {
            self.put_blob(&sha256, &bytes)?;
        }
        Ok(BlobWritten {
            sha256,
            size: bytes.len() as u64,
            existed,
        })
    }

    /// A reader over a stored blob. A backend that can stream reads with
    /// bounded memory; this default reads the blob whole.
    fn open_blob(&self, sha256: &str) -> Result<Option<Box<dyn std::io::Read + Send>>, StoreError> {
        Ok(self
            .get_blob(sha256)?
            .map(|b| Box::new(std::io::Cursor::new(b)) as Box<dyn std::io::Read + Send>))
    }
    fn has_blob(&self, sha256: &str) -> Result<bool, StoreError>;
    fn blob_refcount(&self, sha256: &str) -> Result<u64, StoreError>;
    /// Deletes blobs stored by `put_blob` that no record ever referenced
    /// (left behind by a crash between `put_blob` and `commit`). Cost is
    /// proportional to such blobs, not to all blobs. The embedded store
    /// runs it when no write is in flight (at open); a shared store spares
    /// blobs touched within its grace period, so a sweep on one host never
    /// takes what another host uploaded and is about to commit.
    fn gc_blobs(&self) -> Result<u64, StoreError>;

    /// Entries with a sequence number greater than `after`, oldest first.
    fn read_log(
        &self,
        log: Log,
        after: u64,
        limit: usize,
    ) -> Result<Vec<(u64, Vec<u8>)>, StoreError>;
    /// The newest entry, if any.
    fn last_log_entry(&self, log: Log) -> Result<Option<(u64, Vec<u8>)>, StoreError>;

    /// Bytes on disk, for status and benchmarks.
    fn size_on_disk(&self) -> Result<u64, StoreError>;

    /// True when other processes (other hosts) commit to this store too, so
    /// derived state (a host's search index) must follow the log rather
    /// than only this process's own writes, and process-local locks
    /// serialize nothing across hosts. The embedded store is one process's.
    fn is_shared(&self) -> bool {
        false
    }

    /// Waits until `log` may hold entries after `after`, or `timeout`
    /// passes; the caller then reads the log (a wake-up may be spurious).
    /// A shared backend wakes on the other hosts' commits; this default,
    /// for a store only this process writes, just waits.
    fn wait_for_log(&self, log: Log, after: u64, timeout: std::time::Duration) {
        let _ = (log, after);
        std::thread::sleep(timeout);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bundles name tables and logs by name: every one must come back.
    #[test]
    fn every_table_and_log_is_found_by_its_name() {
        for t in Table::ALL {
            assert_eq!(Table::from_name(t.name()), Some(*t));
        }
        for l in Log::ALL {
            assert_eq!(Log::from_name(l.name()), Some(*l));
        }
        assert_eq!(Table::from_name("../files"), None);
    }
}
