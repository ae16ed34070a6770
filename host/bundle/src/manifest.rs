//! The manifest: what a bundle holds, with the SHA-256 of every entry and
//! record, and the few entry names a bundle may have.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The `format` every manifest carries.
pub const FORMAT: &str = "mem-host-bundle";
/// The version this crate writes and the newest it reads.
pub const FORMAT_VERSION: u32 = 1;
/// The first entry of every bundle.
pub const MANIFEST_ENTRY: &str = "manifest.json";

/// A bundle's table of contents (`schemas/bundle-manifest.schema.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// Always `mem-host-bundle`.
    pub format: String,
    /// Readers refuse a version newer than theirs.
    pub format_version: u32,
    /// RFC 3339.
    pub created_at: String,
    pub source: Source,
    /// The path the export was limited to (absent: the whole workspace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    pub counts: Counts,
    /// What a bundle never holds, and why.
    pub excluded: Vec<Excluded>,
    /// Every entry but the manifest, with its size and SHA-256.
    pub entries: Vec<EntryDigest>,
    /// Every record, by table and key, with the SHA-256 of its value.
    pub records: Vec<RecordDigest>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Source {
    /// The exporting workspace's name.
    pub workspace: String,
    /// The mem-host version that wrote the bundle.
    pub mem_host_version: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Counts {
    /// Records per table.
    pub records: BTreeMap<String, u64>,
    /// Entries per log.
    pub logs: BTreeMap<String, u64>,
    pub blobs: u64,
    pub blob_bytes: u64,
    pub plugins: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Excluded {
    pub what: String,
    pub why: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EntryDigest {
    pub path: String,
    pub size: u64,
    pub sha256: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecordDigest {
    pub table: String,
    pub key: String,
    pub sha256: String,
}

/// A blob a bundle carries (its entry is `blobs/<sha256>`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct BlobInfo {
    pub sha256: String,
    pub size: u64,
}

/// The only entry names a bundle has. Parsing is the whole defence
/// against hostile names: `../x`, `/etc/passwd` or `blobs/../../x` are
/// simply not one of these.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum EntryName {
    Manifest,
    /// `settings/mem.toml`.
    Settings,
    /// `tables/<table>.jsonl`: one record a line.
    Table(String),
    /// `logs/<log>.jsonl`: one entry a line, oldest first.
    Log(String),
    /// `plugins/<name>/manifest.json`.
    PluginManifest(String),
    /// `plugins/<name>/plugin.wasm`.
    PluginWasm(String),
    /// `blobs/<sha256>`.
    Blob(String),
}

/// Longest table, log or plugin name in an entry name.
const MAX_NAME: usize = 64;

fn table_name_ok(s: &str) -> bool {
    !s.is_empty() && s.len() <= MAX_NAME && s.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
}

fn plugin_name_ok(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= MAX_NAME
        && !s.starts_with(['-', '_'])
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
}

impl EntryName {
    pub fn parse(path: &str) -> Option<EntryName> {
        if path == MANIFEST_ENTRY {
            return Some(EntryName::Manifest);
        }
        if path == "settings/mem.toml" {
            return Some(EntryName::Settings);
        }
        if let Some(rest) = path.strip_prefix("tables/") {
            let name = rest.strip_suffix(".jsonl")?;
            return table_name_ok(name).then(|| EntryName::Table(name.into()));
        }
        if let Some(rest) = path.strip_prefix("logs/") {
            let name = rest.strip_suffix(".jsonl")?;
            return table_name_ok(name).then(|| EntryName::Log(name.into()));
        }
        if let Some(rest) = path.strip_prefix("plugins/") {
            let (name, file) = rest.split_once('/')?;
            if !plugin_name_ok(name) {
                return None;
            }
            return match file {
                "manifest.json" => Some(EntryName::PluginManifest(name.into())),
                "plugin.wasm" => Some(EntryName::PluginWasm(name.into())),
                _ => None,
            };
        }
        if let Some(sha) = path.strip_prefix("blobs/") {
            return mem_core::hash::is_sha256_hex(sha).then(|| EntryName::Blob(sha.into()));
        }
        None
    }

    pub fn path(&self) -> String {
        match self {
            EntryName::Manifest => MANIFEST_ENTRY.into(),
            EntryName::Settings => "settings/mem.toml".into(),
            EntryName::Table(t) => format!("tables/{t}.jsonl"),
            EntryName::Log(l) => format!("logs/{l}.jsonl"),
            EntryName::PluginManifest(p) => format!("plugins/{p}/manifest.json"),
            EntryName::PluginWasm(p) => format!("plugins/{p}/plugin.wasm"),
            EntryName::Blob(b) => format!("blobs/{b}"),
        }
    }
}

/// A record's line in `tables/<table>.jsonl`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RecordLine {
    pub key: String,
    /// The stored bytes, base64.
    pub value: String,
}

/// An entry's line in `logs/<log>.jsonl`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LogLine {
    /// The stored bytes, base64.
    pub value: String,
}
