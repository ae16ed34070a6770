//! Workspace bundles: a workspace (or what lies under one path) exported
//! as one verifiable archive, and imported into an empty workspace on
//! another machine, all or nothing. The archive format is `mem-bundle`'s;
//! what goes in, what stays out and what an import may change are the
//! rules here.
//!
//! Tokens never travel (see [`NEVER_EXPORTED`]): the importing owner uses
//! the workspace locally as before, and creates new tokens for its agents.

mod export;
mod import;

use crate::records::decode;
use mem_bundle::Source;
use mem_core::model::FileRecord;
use mem_core::store::Table;
use mem_core::{MemResult, model::Memory};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use import::verify;
pub use mem_bundle::{Counts, Limits, Manifest, Source as BundleSource};

/// Tables a bundle never carries: what they hold and why not (the
/// manifest's `excluded` says the same).
pub(crate) const NEVER_EXPORTED: &[(Table, &str, &str)] = &[
    (
        Table::Tokens,
        "API tokens",
        "their secrets belong to the machine that issued them; the importing owner creates new tokens (`mem-host token create`)",
    ),
    (
        Table::Idempotency,
        "idempotency keys and kept answers",
        "a client's retry state, not workspace content; a retry after the move is a new request",
    ),
    (
        Table::Relations,
        "related-item relations",
        "derived state: the importing workspace recomputes them from the records as it settles",
    ),
    (
        Table::RecallLog,
        "the recall log and its fingerprint key",
        "machine-local observability; the importing workspace starts its own log under a new key",
    ),
];

/// `Table::Meta` keys that mark an imported bundle (by its manifest's hash).
pub(crate) const IMPORT_MARK: &str = "bundle_import/";

/// Keys the storage backend keeps for itself (its schema version).
pub(crate) fn is_backend_key(key: &str) -> bool {
    key.starts_with("__")
}

/// Derived counts the importing workspace makes itself from the records
/// (the catalog's tallies): never carried, never taken from a bundle.
pub(crate) fn is_derived_key(key: &str) -> bool {
    key.starts_with(crate::tally::PREFIX)
}

/// The blobs a record holds a reference to, with their sizes: a file's
/// content, a memory's content (until it is forgotten). An import takes
/// exactly these references, so blob reference counts come out as the
/// source had them.
pub(crate) fn blob_refs(table: Table, key: &str, value: &[u8]) -> MemResult<Vec<(String, u64)>> {
    Ok(match table {
        Table::Files => {
            let f: FileRecord = decode(table, key, value)?;
            vec![(f.sha256, f.size)]
        }
        Table::Memories => {
            let m: Memory = decode(table, key, value)?;
            m.content
                .map(|c| (m.content_sha256, c.len() as u64))
                .into_iter()
                .collect()
        }
        _ => Vec::new(),
    })
}

/// What `export` wrote.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExportReport {
    /// SHA-256 of the manifest: names the bundle (an import of it again is a no-op).
    pub bundle: String,
    /// SHA-256 of the archive file.
    pub sha256: String,
    /// Bytes of the archive file.
    pub bytes: u64,
    pub format_version: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    pub counts: Counts,
    /// The archive, base64 (only where the answer must be JSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bundle_base64: Option<String>,
}

/// What `import` did (`schemas/bundle-import-result.schema.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ImportReport {
    /// True when this import wrote the bundle; false for a repeat.
    pub imported: bool,
    /// The same bundle was imported here before: nothing changed.
    pub replayed: bool,
    pub message: String,
    /// SHA-256 of the bundle's manifest.
    pub bundle: String,
    pub format_version: u32,
    pub source: Source,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    pub counts: Counts,
    /// Records the search index was rebuilt from.
    pub reindexed_records: u64,
    /// Plugins installed from the bundle.
    pub plugins: Vec<String>,
}

/// What `verify` found (`schemas/bundle-verify-result.schema.json`). A bundle that
/// does not verify is an error with its own code instead.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct VerifyReport {
    /// Always true: every entry, record and blob matched the manifest.
    pub ok: bool,
    pub bundle: String,
    pub format_version: u32,
    pub created_at: String,
    pub source: Source,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    pub counts: Counts,
    /// Entries checked (the manifest included).
    pub entries: u64,
    /// Records checked.
    pub records: u64,
}
