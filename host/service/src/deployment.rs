//! `[store]` and `[blobs]` of `mem.toml`: where a workspace's data lives.
//!
//! The default keeps everything in the workspace folder (the embedded
//! store). A shared deployment (several `mem-host serve` processes on one
//! workspace) keeps records and logs in PostgreSQL and blob bytes in an
//! S3-compatible object store. These sections name engines and the
//! environment variables that hold their secrets; a secret written into
//! the file itself is refused without being read back or echoed.
//!
//! They describe one machine's deployment, not the workspace: a bundle
//! leaves them out, and an import keeps the importing host's own.

use mem_core::{ErrorCode, MemError};
use serde::{Deserialize, Serialize};

/// Which engine holds records, logs and blob reference counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StoreBackend {
    /// sled in the workspace folder: one process, zero set-up.
    #[default]
    Sled,
    /// PostgreSQL, shared by every host of the workspace.
    Postgres,
}

/// Where blob bytes live.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BlobsBackend {
    /// Inside the store (the embedded store's files).
    #[default]
    Store,
    /// An S3-compatible object store.
    S3,
}

/// `[store]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoreSection {
    #[serde(default)]
    pub backend: StoreBackend,
    /// The environment variable holding the PostgreSQL connection URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url_env: Option<String>,
    /// The PostgreSQL schema of this workspace (default `mem`); several
    /// workspaces can share a database under different schemas.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    /// Database connections per host (default 16).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool_size: Option<usize>,
    /// Refused when present (a secret does not belong in this file).
    #[serde(default, skip_serializing)]
    url: Option<toml::Value>,
    #[serde(default, skip_serializing)]
    password: Option<toml::Value>,
}

/// `[blobs]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlobsSection {
    #[serde(default)]
    pub backend: BlobsBackend,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bucket: Option<String>,
    /// `http(s)://host:port` of an S3-compatible server (AWS when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// Key prefix inside the bucket (several workspaces can share one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// Environment variables holding the access key id and secret key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_key_env: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_key_env: Option<String>,
    /// Seconds a blob no record references is kept before the sweep may
    /// remove it (default 3600): longer than any host's upload-then-commit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep_grace_secs: Option<u64>,
    #[serde(default, skip_serializing)]
    access_key: Option<toml::Value>,
    #[serde(default, skip_serializing)]
    secret_key: Option<toml::Value>,
}

/// The `[store]` and `[blobs]` tables' names.
const SECTIONS: [&str; 2] = ["store", "blobs"];

fn invalid(msg: String, hint: &str) -> MemError {
    MemError::new(
        ErrorCode::ConfigInvalid,
        format!("mem.toml is invalid: {msg}"),
    )
    .with_hint(hint)
}

fn env_name(field: &str, name: &Option<String>) -> Result<(), MemError> {
    if let Some(n) = name {
        let ok = !n.is_empty()
            && n.chars().next().is_some_and(|c| !c.is_ascii_digit())
            && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !ok {
            return Err(invalid(
                format!("{field} must name an environment variable (letters, digits, _)"),
                "write the variable's name here, e.g. MEM_DATABASE_URL, and its value in the environment",
            ));
        }
    }
    Ok(())
}

/// The sections' own rules, and whether they fit together.
pub(crate) fn validate(store: &StoreSection, blobs: &BlobsSection) -> Result<(), MemError> {
    const SECRET_HINT: &str = "remove it from mem.toml; put it in an environment variable and name that variable here ([store] url_env, [blobs] access_key_env / secret_key_env)";
    if store.url.is_some() || store.password.is_some() {
        return Err(invalid(
            "[store] holds a database URL or password; secrets never go in this file".into(),
            SECRET_HINT,
        ));
    }
    if blobs.access_key.is_some() || blobs.secret_key.is_some() {
        return Err(invalid(
            "[blobs] holds an access key; secrets never go in this file".into(),
            SECRET_HINT,
        ));
    }
    env_name("store.url_env", &store.url_env)?;
    env_name("blobs.access_key_env", &blobs.access_key_env)?;
    env_name("blobs.secret_key_env", &blobs.secret_key_env)?;
    match (store.backend, blobs.backend) {
        (StoreBackend::Postgres, BlobsBackend::S3) => {}
        (StoreBackend::Postgres, BlobsBackend::Store) => {
            return Err(invalid(
                "[store] backend = \"postgres\" needs [blobs] backend = \"s3\"".into(),
                "set [blobs] backend = \"s3\" with a bucket: every host must reach the same blobs",
            ));
        }
        (StoreBackend::Sled, BlobsBackend::S3) => {
            return Err(invalid(
                "[blobs] backend = \"s3\" needs [store] backend = \"postgres\"".into(),
                "blobs in an object store go with the shared store; remove [blobs] for the embedded one",
            ));
        }
        (StoreBackend::Sled, BlobsBackend::Store) => {}
    }
    if store.backend == StoreBackend::Postgres && store.url_env.is_none() {
        return Err(invalid(
            "[store] backend = \"postgres\" needs url_env".into(),
            "name the environment variable that holds the connection URL, e.g. url_env = \"MEM_DATABASE_URL\"",
        ));
    }
    if blobs.backend == BlobsBackend::S3 && blobs.bucket.as_deref().is_none_or(str::is_empty) {
        return Err(invalid(
            "[blobs] backend = \"s3\" needs a bucket".into(),
            "name an existing bucket, e.g. bucket = \"mem-blobs\"",
        ));
    }
    if store.pool_size == Some(0) {
        return Err(invalid(
            "store.pool_size must be at least 1".into(),
            "fix the value in mem.toml",
        ));
    }
    Ok(())
}

/// `text` without `[store]` and `[blobs]` (what a bundle carries).
pub(crate) fn without_deployment(text: &str) -> Result<String, MemError> {
    let mut doc: toml_edit::DocumentMut = text
        .parse()
        .map_err(|e| invalid(format!("{e}"), "fix mem.toml"))?;
    for s in SECTIONS {
        doc.remove(s);
    }
    Ok(doc.to_string())
}

/// A bundle's settings `incoming` with this host's `[store]` and `[blobs]`
/// (from `local`) in place of whatever it had.
pub(crate) fn with_local_deployment(incoming: &str, local: &str) -> Result<String, MemError> {
    let mut doc: toml_edit::DocumentMut = incoming
        .parse()
        .map_err(|e| invalid(format!("{e}"), "the bundle's mem.toml cannot be read"))?;
    let here: toml_edit::DocumentMut = local
        .parse()
        .map_err(|e| invalid(format!("{e}"), "fix mem.toml"))?;
    for s in SECTIONS {
        doc.remove(s);
        if let Some(item) = here.get(s) {
            doc.insert(s, item.clone());
        }
    }
    Ok(doc.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::WorkspaceConfig;

    const SHARED: &str = "[store]\nbackend = \"postgres\"\nurl_env = \"MEM_DATABASE_URL\"\n\n[blobs]\nbackend = \"s3\"\nbucket = \"b\"\n";

    #[test]
    fn a_shared_deployment_parses_and_halves_are_refused() {
        let cfg = WorkspaceConfig::parse(SHARED).unwrap();
        assert_eq!(cfg.store.backend, StoreBackend::Postgres);
        assert_eq!(cfg.blobs.bucket.as_deref(), Some("b"));
        for bad in [
            "[store]\nbackend = \"postgres\"\nurl_env = \"X\"\n",
            "[blobs]\nbackend = \"s3\"\nbucket = \"b\"\n",
            "[store]\nbackend = \"postgres\"\n[blobs]\nbackend = \"s3\"\nbucket = \"b\"\n",
            "[store]\nbackend = \"postgres\"\nurl_env = \"not a name\"\n[blobs]\nbackend = \"s3\"\nbucket = \"b\"\n",
        ] {
            let e = WorkspaceConfig::parse(bad).unwrap_err();
            assert_eq!(e.code, ErrorCode::ConfigInvalid, "{bad}");
        }
    }

    #[test]
    fn a_secret_in_the_file_is_refused_and_not_echoed() {
        for text in [
            SHARED.replace("url_env", "url = \"postgres://u:hunter22@h/db\"\nurl_env"),
            format!("{SHARED}secret_key = \"hunter22\"\n"),
        ] {
            let e = WorkspaceConfig::parse(&text).unwrap_err();
            assert_eq!(e.code, ErrorCode::ConfigInvalid);
            let shown = serde_json::to_string(&e).unwrap();
            assert!(!shown.contains("hunter22"), "{shown}");
        }
    }

    #[test]
    fn bundles_leave_the_deployment_out_and_imports_keep_their_own() {
        let source = format!("[workspace]\nname = \"a\"\n\n{SHARED}");
        let carried = without_deployment(&source).unwrap();
        assert!(!carried.contains("postgres") && carried.contains("name = \"a\""));
        let local = "[workspace]\nname = \"here\"\n\n[store]\nbackend = \"postgres\"\nurl_env = \"HERE_URL\"\n\n[blobs]\nbackend = \"s3\"\nbucket = \"here\"\n";
        let merged = with_local_deployment(&source, local).unwrap();
        let cfg = WorkspaceConfig::parse(&merged).unwrap();
        assert_eq!(cfg.workspace.name, "a");
        assert_eq!(cfg.store.url_env.as_deref(), Some("HERE_URL"));
        assert_eq!(cfg.blobs.bucket.as_deref(), Some("here"));
        let embedded = with_local_deployment(&source, "[workspace]\nname = \"x\"\n").unwrap();
        assert_eq!(
            WorkspaceConfig::parse(&embedded).unwrap().store.backend,
            StoreBackend::Sled
        );
    }
}
