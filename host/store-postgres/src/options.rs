//! What opening a shared store needs. Secrets (the database URL with its
//! password, the object store's keys) arrive here from the environment
//! (the workspace's `mem.toml` names the variables) and leave only inside
//! requests: every message this crate makes goes through [`Secrets::redact`].

use mem_core::store::StoreError;
use std::time::Duration;

/// How long a blob no record references is kept before the sweep may take
/// it: longer than any upload-then-commit of a live host takes, so a
/// sweep on one host never removes what another just uploaded.
pub const DEFAULT_BLOB_GRACE: Duration = Duration::from_secs(60 * 60);

/// Connections each host keeps to the database.
pub const DEFAULT_POOL_SIZE: usize = 16;

#[derive(Clone)]
pub struct PgOptions {
    /// `postgres://user:password@host:port/db` or key=value form.
    pub url: String,
    /// The PostgreSQL schema holding this workspace (several workspaces
    /// may share a database): lower-case letters, digits and `_`.
    pub schema: String,
    pub pool_size: usize,
    /// See [`DEFAULT_BLOB_GRACE`].
    pub blob_grace: Duration,
}

#[derive(Clone)]
pub struct S3Options {
    pub bucket: String,
    /// `http(s)://host:port` of an S3-compatible server; AWS when `None`.
    pub endpoint: Option<String>,
    pub region: String,
    /// Key prefix inside the bucket (several workspaces may share one).
    pub prefix: String,
    pub access_key_id: Option<String>,
    pub secret_access_key: Option<String>,
}

impl std::fmt::Debug for PgOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgOptions")
            .field("schema", &self.schema)
            .field("pool_size", &self.pool_size)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for S3Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("S3Options")
            .field("bucket", &self.bucket)
            .field("endpoint", &self.endpoint)
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

/// A schema name that is safe to quote into SQL and to name a channel.
pub fn check_schema(schema: &str) -> Result<(), StoreError> {
    let ok = !schema.is_empty()
        && schema.len() <= 40
        && schema
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && schema
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !schema.starts_with("pg_");
    if ok {
        Ok(())
    } else {
        Err(StoreError::Io(format!(
            "schema {schema:?} is not a valid name: use 1 to 40 lower-case letters, digits and _, not starting with a digit or pg_"
        )))
    }
}

/// The secret strings of a store's options, to scrub from messages.
#[derive(Clone, Default)]
pub(crate) struct Secrets(Vec<String>);

impl Secrets {
    pub(crate) fn of(pg: &PgOptions, s3: &S3Options) -> Self {
        let mut v = vec![pg.url.clone()];
        if let Some(p) = password_of(&pg.url) {
            v.push(p);
        }
        v.extend(s3.secret_access_key.iter().cloned());
        v.extend(s3.access_key_id.iter().cloned());
        v.retain(|s| s.len() >= 3);
        // Longest first, so a URL is scrubbed whole before its password.
        v.sort_by_key(|s| std::cmp::Reverse(s.len()));
        Self(v)
    }

    pub(crate) fn redact(&self, message: impl Into<String>) -> String {
        let mut m = message.into();
        for s in &self.0 {
            if m.contains(s.as_str()) {
                m = m.replace(s.as_str(), "***");
            }
        }
        m
    }
}

/// The password in a `postgres://user:password@host/db` URL or a
/// `password=...` key-value string.
fn password_of(url: &str) -> Option<String> {
    if let Some(rest) = url
        .strip_prefix("postgres://")
        .or_else(|| url.strip_prefix("postgresql://"))
    {
        let userinfo = rest.split('@').next().filter(|_| rest.contains('@'))?;
        let (_, pw) = userinfo.split_once(':')?;
        return Some(pw.to_string());
    }
    url.split_whitespace()
        .find_map(|kv| kv.strip_prefix("password="))
        .map(|p| p.trim_matches('\'').to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(url: &str) -> (PgOptions, S3Options) {
        (
            PgOptions {
                url: url.into(),
                schema: "s".into(),
                pool_size: 1,
                blob_grace: DEFAULT_BLOB_GRACE,
            },
            S3Options {
                bucket: "b".into(),
                endpoint: None,
                region: "r".into(),
                prefix: String::new(),
                access_key_id: Some("AKIAEXAMPLE".into()),
                secret_access_key: Some("s3cr3t-key".into()),
            },
        )
    }

    #[test]
    fn secrets_never_reach_a_message() {
        let (pg, s3) = opts("postgres://mem:hunter22@db.internal:5432/mem");
        let s = Secrets::of(&pg, &s3);
        let m = s.redact(
            "cannot connect to postgres://mem:hunter22@db.internal:5432/mem (password hunter22), key s3cr3t-key AKIAEXAMPLE",
        );
        for secret in ["hunter22", "s3cr3t-key", "AKIAEXAMPLE"] {
            assert!(!m.contains(secret), "{m}");
        }
        let (pg, s3) = opts("host=/run/pg user=mem password='topsecret9'");
        assert!(
            !Secrets::of(&pg, &s3)
                .redact("x topsecret9 y")
                .contains("topsecret9")
        );
        assert!(!format!("{pg:?} {s3:?}").contains("topsecret9"));
        assert!(!format!("{s3:?}").contains("s3cr3t"));
    }

    #[test]
    fn schema_names_are_checked() {
        for ok in ["mem", "team_a", "_x9"] {
            assert!(check_schema(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "Mem",
            "9a",
            "a-b",
            "a\"b",
            "pg_catalog",
            &"a".repeat(41),
        ] {
            assert!(check_schema(bad).is_err(), "{bad}");
        }
    }
}
