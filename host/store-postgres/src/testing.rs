//! The shared backend's test environment, for this crate's tests and the
//! end-to-end tests: `scripts/test` starts PostgreSQL and an S3-compatible
//! server and exports where they are. Run by hand without them, a test
//! that needs them says why and passes as skipped; under `scripts/test`
//! ([`REQUIRED`] set) or in CI (`CI` set) it fails, so a broken set-up can
//! never look green.

use crate::options::{DEFAULT_BLOB_GRACE, PgOptions, S3Options};
use std::sync::atomic::{AtomicU64, Ordering};

/// A PostgreSQL connection URL (a database the tests may create schemas in).
pub const PG_URL: &str = "MEM_TEST_PG_URL";
/// `http://127.0.0.1:PORT` of an S3-compatible server.
pub const S3_ENDPOINT: &str = "MEM_TEST_S3_ENDPOINT";
/// A bucket that exists there.
pub const S3_BUCKET: &str = "MEM_TEST_S3_BUCKET";
pub const S3_ACCESS_KEY_ID: &str = "MEM_TEST_S3_ACCESS_KEY_ID";
pub const S3_SECRET_ACCESS_KEY: &str = "MEM_TEST_S3_SECRET_ACCESS_KEY";

/// Set by `scripts/test`: a missing environment is a failure.
pub const REQUIRED: &str = "MEM_TEST_SHARED_REQUIRED";

/// Where the shared backend's servers are.
#[derive(Debug, Clone)]
pub struct TestEnv {
    pub pg_url: String,
    pub s3_endpoint: String,
    pub s3_bucket: String,
    pub s3_access_key_id: String,
    pub s3_secret_access_key: String,
}

static SEQ: AtomicU64 = AtomicU64::new(0);

impl TestEnv {
    /// The environment, or `None` (with the reason printed) when it is
    /// not set outside CI. Panics in CI without it.
    pub fn get(test: &str) -> Option<Self> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let found = (|| {
            Some(Self {
                pg_url: var(PG_URL)?,
                s3_endpoint: var(S3_ENDPOINT)?,
                s3_bucket: var(S3_BUCKET)?,
                s3_access_key_id: var(S3_ACCESS_KEY_ID).unwrap_or_else(|| "test".into()),
                s3_secret_access_key: var(S3_SECRET_ACCESS_KEY).unwrap_or_else(|| "test".into()),
            })
        })();
        if found.is_none() {
            let why = format!(
                "{test}: needs PostgreSQL and an S3-compatible server ({PG_URL}, {S3_ENDPOINT}, {S3_BUCKET}); scripts/test starts both"
            );
            if std::env::var_os("CI").is_some() || std::env::var_os(REQUIRED).is_some() {
                panic!("{why}");
            }
            eprintln!("skipped {why}");
        }
        found
    }

    /// A schema name no other test (or run) uses.
    pub fn fresh_schema(&self, tag: &str) -> String {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let tag: String = tag
            .chars()
            .filter(|c| c.is_ascii_alphanumeric())
            .take(12)
            .collect::<String>()
            .to_ascii_lowercase();
        format!(
            "t{}_{}_{nanos}_{tag}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        )
    }

    pub fn pg(&self, schema: &str) -> PgOptions {
        PgOptions {
            url: self.pg_url.clone(),
            schema: schema.into(),
            pool_size: 4,
            blob_grace: DEFAULT_BLOB_GRACE,
        }
    }

    /// Options whose objects live under their own prefix (the schema's).
    pub fn s3(&self, schema: &str) -> S3Options {
        S3Options {
            bucket: self.s3_bucket.clone(),
            endpoint: Some(self.s3_endpoint.clone()),
            region: "us-east-1".into(),
            prefix: schema.into(),
            access_key_id: Some(self.s3_access_key_id.clone()),
            secret_access_key: Some(self.s3_secret_access_key.clone()),
        }
    }
}
