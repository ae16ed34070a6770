//! [`PgStore`]: opening a shared workspace store and the read side of the
//! `Store` trait. Commits are in `commit`, blobs in `blobs`.

use crate::bridge::Bridge;
use crate::errors;
use crate::listen::{self, Signal};
use crate::options::{PgOptions, S3Options, Secrets, check_schema};
use crate::schema::{self, SCHEMA_VERSION};
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use mem_core::store::{
    Batch, BlobWritten, Committed, Durability, Log, Scan, Store, StoreError, Table,
};
use object_store::ObjectStore;
use std::io::Read;
use std::ops::Bound;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio_postgres::NoTls;

/// How long to wait for a new database connection or a free one.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// What every call shares; futures on the store's runtime hold it.
pub(crate) struct Inner {
    pub(crate) pool: Pool,
    pub(crate) schema: String,
    pub(crate) commit_key: i64,
    pub(crate) objects: Arc<dyn ObjectStore>,
    /// Key prefix of this workspace's objects (empty or ending in `/`).
    pub(crate) prefix: String,
    pub(crate) grace: Duration,
    pub(crate) secrets: Secrets,
    pub(crate) signal: Arc<Signal>,
    /// A deferred commit happened since the last flush.
    pub(crate) deferred: AtomicBool,
}

impl Inner {
    pub(crate) async fn client(&self) -> Result<deadpool_postgres::Object, StoreError> {
        self.pool
            .get()
            .await
            .map_err(|e| errors::pool(&self.secrets, e))
    }

    pub(crate) fn pg(&self, e: tokio_postgres::Error) -> StoreError {
        errors::pg(&self.secrets, e)
    }

    pub(crate) fn table(&self, t: Table) -> String {
        schema::table(&self.schema, t)
    }

    pub(crate) fn log(&self, l: Log) -> String {
        schema::log(&self.schema, l)
    }

    pub(crate) fn blobs(&self) -> String {
        format!("\"{}\".blobs", self.schema)
    }
}

/// The store of one workspace shared by several hosts: records, logs and
/// blob reference counts in PostgreSQL, blob bytes in an S3-compatible
/// object store.
pub struct PgStore {
    pub(crate) inner: Arc<Inner>,
    /// Dropped last: the pool's connections live on its runtime.
    pub(crate) bridge: Bridge,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("schema", &self.inner.schema)
            .finish_non_exhaustive()
    }
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

/// The key range of a scan, as sled reads it.
fn scan_bounds(scan: &Scan<'_>) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
    let prefix = scan.prefix.as_bytes();
    let end = prefix_end(prefix);
    if scan.reverse {
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
    }
}

fn utf8_key(table: Table, k: Vec<u8>) -> Result<String, StoreError> {
    String::from_utf8(k).map_err(|_| StoreError::Corrupt {
        reason: format!("non-UTF-8 key in {}", table.name()),
    })
}

impl PgStore {
    /// Connects, migrates the workspace's schema (creating it when new)
    /// and starts listening for other hosts' commits.
    ///
    /// `UnsupportedVersion` for a schema newer than this binary;
    /// `Unavailable` when the database or the object store cannot be
    /// reached. No message names a secret.
    pub fn open(pg: PgOptions, s3: S3Options) -> Result<Self, StoreError> {
        check_schema(&pg.schema)?;
        let secrets = Secrets::of(&pg, &s3);
        let bridge = Bridge::new()?;
        let mut config: tokio_postgres::Config = pg.url.parse().map_err(|e| {
            StoreError::Io(secrets.redact(format!("the database URL is not valid: {e}")))
        })?;
        config
            .connect_timeout(CONNECT_TIMEOUT)
            .keepalives(true)
            .application_name("mem-host");
        let manager = Manager::from_config(
            config.clone(),
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(pg.pool_size.max(1))
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .wait_timeout(Some(CONNECT_TIMEOUT))
            .create_timeout(Some(CONNECT_TIMEOUT))
            .build()
            .map_err(|e| StoreError::Io(secrets.redact(e.to_string())))?;
        let objects = crate::blobs::object_store(&s3, &secrets)?;
        let prefix = match s3.prefix.trim_matches('/') {
            "" => String::new(),
            p => format!("{p}/"),
        };
        let (commit_key, migrate_key) = schema::lock_keys(&pg.schema);
        let inner = Arc::new(Inner {
            pool,
            schema: pg.schema.clone(),
            commit_key,
            objects,
            prefix,
            grace: pg.blob_grace,
            secrets,
            signal: Arc::new(Signal::default()),
            deferred: AtomicBool::new(false),
        });
        let i = inner.clone();
        bridge.run(async move { migrate(&i, migrate_key).await })?;
        let i = inner.clone();
        bridge.run(async move { crate::blobs::probe(&i).await })?;
        bridge.handle().spawn(listen::run(
            config,
            schema::channel(&pg.schema),
            inner.signal.clone(),
        ));
        Ok(Self { inner, bridge })
    }

    fn run<T, F, Fut>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(Arc<Inner>) -> Fut,
        Fut: std::future::Future<Output = Result<T, StoreError>> + Send + 'static,
    {
        self.bridge.run(f(self.inner.clone()))
    }

    /// Writes a schema version marker directly (tests of version refusal).
    pub fn force_schema_version(&self, version: u32) -> Result<(), StoreError> {
        self.run(move |i| async move {
            let c = i.client().await?;
            c.execute(
                &format!(
                    "UPDATE \"{}\".store_meta SET v = $1 WHERE k = 'schema_version'",
                    i.schema
                ),
                &[&i64::from(version)],
            )
            .await
            .map_err(|e| i.pg(e))?;
            Ok(())
        })
    }

    /// Removes blobs no record references that were last touched more than
    /// `grace` ago (see `gc_blobs`, which uses the configured grace).
    pub fn gc_blobs_older_than(&self, grace: Duration) -> Result<u64, StoreError> {
        self.run(move |i| async move { crate::blobs::sweep(&i, grace).await })
    }

    /// Drops the workspace's schema and everything in it (tests and
    /// benchmarks that made their own; the object store is not touched).
    pub fn drop_schema(self) -> Result<(), StoreError> {
        self.run(|i| async move {
            let c = i.client().await?;
            c.batch_execute(&format!("DROP SCHEMA IF EXISTS \"{}\" CASCADE", i.schema))
                .await
                .map_err(|e| i.pg(e))
        })
    }
}

/// Creates or upgrades the schema under the migration lock.
async fn migrate(i: &Inner, migrate_key: i64) -> Result<(), StoreError> {
    let mut c = i.client().await?;
    let tx = c.transaction().await.map_err(|e| i.pg(e))?;
    let s = &i.schema;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&migrate_key])
        .await
        .map_err(|e| i.pg(e))?;
    tx.batch_execute(&format!(
        "CREATE SCHEMA IF NOT EXISTS \"{s}\";\n\
         CREATE TABLE IF NOT EXISTS \"{s}\".store_meta (k text PRIMARY KEY, v bigint NOT NULL);"
    ))
    .await
    .map_err(|e| i.pg(e))?;
    let found = tx
        .query_opt(
            &format!("SELECT v FROM \"{s}\".store_meta WHERE k = 'schema_version'"),
            &[],
        )
        .await
        .map_err(|e| i.pg(e))?
        .map(|r| r.get::<_, i64>(0));
    let found = match found {
        Some(v) => u32::try_from(v).map_err(|_| StoreError::Corrupt {
            reason: format!("schema version {v} is not a version"),
        })?,
        None => {
            let tables = tx
                .query_one(
                    "SELECT count(*) FROM information_schema.tables WHERE table_schema = $1 AND table_name <> 'store_meta'",
                    &[&s.as_str()],
                )
                .await
                .map_err(|e| i.pg(e))?
                .get::<_, i64>(0);
            if tables > 0 {
                return Err(StoreError::Corrupt {
                    reason: format!("schema {s} holds tables but no schema version"),
                });
            }
            0
        }
    };
    if found > SCHEMA_VERSION {
        return Err(StoreError::UnsupportedVersion {
            found,
            supported: SCHEMA_VERSION,
        });
    }
    if found == SCHEMA_VERSION {
        return tx.commit().await.map_err(|e| i.pg(e));
    }
    for v in found + 1..=SCHEMA_VERSION {
        let sql = schema::migration(s, v).ok_or_else(|| StoreError::Corrupt {
            reason: format!("no migration to schema version {v}"),
        })?;
        tx.batch_execute(&sql).await.map_err(|e| i.pg(e))?;
    }
    tx.execute(
        &format!(
            "INSERT INTO \"{s}\".store_meta (k, v) VALUES ('schema_version', $1)\n\
             ON CONFLICT (k) DO UPDATE SET v = excluded.v"
        ),
        &[&i64::from(SCHEMA_VERSION)],
    )
    .await
    .map_err(|e| i.pg(e))?;
    tx.commit().await.map_err(|e| i.pg(e))
}

impl Store for PgStore {
    fn get(&self, table: Table, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let key = key.as_bytes().to_vec();
        self.run(move |i| async move {
            let c = i.client().await?;
            let stmt = c
                .prepare_cached(&format!("SELECT v FROM {} WHERE k = $1", i.table(table)))
                .await
                .map_err(|e| i.pg(e))?;
            let row = c.query_opt(&stmt, &[&key]).await.map_err(|e| i.pg(e))?;
            Ok(row.map(|r| r.get::<_, Vec<u8>>(0)))
        })
    }

    fn get_many(&self, table: Table, keys: &[&str]) -> Result<Vec<Option<Vec<u8>>>, StoreError> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let wanted: Vec<Vec<u8>> = keys.iter().map(|k| k.as_bytes().to_vec()).collect();
        let found = self.run(move |i| async move {
            let c = i.client().await?;
            let stmt = c
                .prepare_cached(&format!(
                    "SELECT k, v FROM {} WHERE k = ANY($1)",
                    i.table(table)
                ))
                .await
                .map_err(|e| i.pg(e))?;
            let rows = c.query(&stmt, &[&wanted]).await.map_err(|e| i.pg(e))?;
            Ok(rows
                .into_iter()
                .map(|r| (r.get::<_, Vec<u8>>(0), r.get::<_, Vec<u8>>(1)))
                .collect::<std::collections::HashMap<_, _>>())
        })?;
        Ok(keys
            .iter()
            .map(|k| found.get(k.as_bytes()).cloned())
            .collect())
    }

    fn scan(&self, table: Table, scan: &Scan<'_>) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        let (lo, hi) = scan_bounds(scan);
        let limit = i64::try_from(scan.limit).unwrap_or(i64::MAX);
        let reverse = scan.reverse;
        if limit == 0 {
            return Ok(Vec::new());
        }
        self.run(move |i| async move {
            let mut sql = format!("SELECT k, v FROM {} WHERE true", i.table(table));
            let mut params: Vec<Vec<u8>> = Vec::new();
            for (bound, op_in, op_ex) in [(&lo, ">=", ">"), (&hi, "<=", "<")] {
                let (op, key) = match bound {
                    Bound::Included(k) => (op_in, k),
                    Bound::Excluded(k) => (op_ex, k),
                    Bound::Unbounded => continue,
                };
                params.push(key.clone());
                sql.push_str(&format!(" AND k {op} ${}", params.len()));
            }
            sql.push_str(if reverse {
                " ORDER BY k DESC"
            } else {
                " ORDER BY k"
            });
            sql.push_str(&format!(" LIMIT {limit}"));
            let c = i.client().await?;
            let stmt = c.prepare_cached(&sql).await.map_err(|e| i.pg(e))?;
            let refs: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> = params
                .iter()
                .map(|p| p as &(dyn tokio_postgres::types::ToSql + Sync))
                .collect();
            let rows = c.query(&stmt, &refs).await.map_err(|e| i.pg(e))?;
            rows.into_iter()
                .map(|r| Ok((utf8_key(table, r.get(0))?, r.get(1))))
                .collect()
        })
    }

    fn count(&self, table: Table) -> Result<u64, StoreError> {
        self.run(move |i| async move {
            let c = i.client().await?;
            let n: i64 = c
                .query_one(&format!("SELECT count(*) FROM {}", i.table(table)), &[])
                .await
                .map_err(|e| i.pg(e))?
                .get(0);
            Ok(n.max(0) as u64)
        })
    }

    fn commit(&self, batch: Batch, durability: Durability) -> Result<Committed, StoreError> {
        let (committed, dropped) =
            self.run(move |i| async move { crate::commit::commit(&i, batch, durability).await })?;
        if !dropped.is_empty() {
            // The commit happened; a failure here leaves the blobs to the sweep.
            let _ = self.run(move |i| async move {
                crate::blobs::finish_drops(&i, dropped).await;
                Ok(())
            });
        }
        Ok(committed)
    }

    fn flush(&self) -> Result<(), StoreError> {
        if !self.inner.deferred.swap(false, Ordering::SeqCst) {
            return Ok(());
        }
        // A synchronous commit flushes the write-ahead log up to itself,
        // and with it every asynchronous commit before it.
        self.run(|i| async move {
            let mut c = i.client().await?;
            let tx = c.transaction().await.map_err(|e| i.pg(e))?;
            tx.execute("SELECT pg_current_xact_id()", &[])
                .await
                .map_err(|e| i.pg(e))?;
            tx.commit().await.map_err(|e| i.pg(e))
        })
    }

    fn put_blob(&self, sha256: &str, bytes: &[u8]) -> Result<(), StoreError> {
        let (sha, bytes) = (sha256.to_string(), bytes.to_vec());
        self.run(move |i| async move {
            crate::blobs::put(&i, &sha, bytes.into()).await?;
            Ok(())
        })
    }

    fn get_blob(&self, sha256: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let sha = sha256.to_string();
        self.run(move |i| async move { crate::blobs::get(&i, &sha).await })
    }

    fn put_blob_from(&self, reader: &mut dyn Read) -> Result<BlobWritten, StoreError> {
        crate::blobs::put_from(self, reader)
    }

    fn open_blob(&self, sha256: &str) -> Result<Option<Box<dyn Read + Send>>, StoreError> {
        crate::blobs::open(self, sha256)
    }

    fn has_blob(&self, sha256: &str) -> Result<bool, StoreError> {
        Ok(self.blob_row(sha256)?.is_some())
    }

    fn blob_refcount(&self, sha256: &str) -> Result<u64, StoreError> {
        Ok(self.blob_row(sha256)?.map_or(0, |(_, refs)| refs))
    }

    fn gc_blobs(&self) -> Result<u64, StoreError> {
        self.gc_blobs_older_than(self.inner.grace)
    }

    fn read_log(
        &self,
        log: Log,
        after: u64,
        limit: usize,
    ) -> Result<Vec<(u64, Vec<u8>)>, StoreError> {
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.run(move |i| async move {
            let c = i.client().await?;
            let stmt = c
                .prepare_cached(&format!(
                    "SELECT seq, v FROM {} WHERE seq > $1 ORDER BY seq LIMIT $2",
                    i.log(log)
                ))
                .await
                .map_err(|e| i.pg(e))?;
            let rows = c
                .query(&stmt, &[&after, &limit])
                .await
                .map_err(|e| i.pg(e))?;
            Ok(rows
                .into_iter()
                .map(|r| (r.get::<_, i64>(0) as u64, r.get(1)))
                .collect())
        })
    }

    fn last_log_entry(&self, log: Log) -> Result<Option<(u64, Vec<u8>)>, StoreError> {
        self.run(move |i| async move {
            let c = i.client().await?;
            let row = c
                .query_opt(
                    &format!(
                        "SELECT seq, v FROM {} ORDER BY seq DESC LIMIT 1",
                        i.log(log)
                    ),
                    &[],
                )
                .await
                .map_err(|e| i.pg(e))?;
            Ok(row.map(|r| (r.get::<_, i64>(0) as u64, r.get(1))))
        })
    }

    fn size_on_disk(&self) -> Result<u64, StoreError> {
        self.run(|i| async move {
            let c = i.client().await?;
            let tables: i64 = c
                .query_one(
                    "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint \
                     FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
                     WHERE n.nspname = $1 AND c.relkind = 'r'",
                    &[&i.schema.as_str()],
                )
                .await
                .map_err(|e| i.pg(e))?
                .get(0);
            let blobs: i64 = c
                .query_one(
                    &format!(
                        "SELECT coalesce(sum(size), 0)::bigint FROM {} WHERE state = 'stored'",
                        i.blobs()
                    ),
                    &[],
                )
                .await
                .map_err(|e| i.pg(e))?
                .get(0);
            Ok((tables.max(0) + blobs.max(0)) as u64)
        })
    }

    fn is_shared(&self) -> bool {
        true
    }

    fn wait_for_log(&self, log: Log, after: u64, timeout: Duration) {
        match log {
            Log::Events => self.inner.signal.wait(after, timeout),
            // Only the events log is notified; others are polled.
            _ => std::thread::sleep(timeout),
        }
    }
}

impl PgStore {
    /// (size, references) of a readable blob.
    pub(crate) fn blob_row(&self, sha256: &str) -> Result<Option<(u64, u64)>, StoreError> {
        let sha = sha256.to_string();
        self.run(move |i| async move { crate::blobs::stored_row(&i, &sha).await })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scan_bounds_follow_the_embedded_store() {
        let s = |prefix, after, reverse| {
            scan_bounds(&Scan {
                prefix,
                after,
                limit: 1,
                reverse,
            })
        };
        assert_eq!(
            s("a/", Some("0"), false),
            (
                Bound::Included(b"a/".to_vec()),
                Bound::Excluded(b"a0".to_vec())
            )
        );
        assert_eq!(
            s("a/", Some("a/3"), true),
            (
                Bound::Included(b"a/".to_vec()),
                Bound::Excluded(b"a/3".to_vec())
            )
        );
        assert_eq!(
            s("", None, false),
            (Bound::Included(Vec::new()), Bound::Unbounded)
        );
        assert_eq!(prefix_end(&[0x61, 0xff]), Some(vec![0x62]));
        assert_eq!(prefix_end(&[0xff]), None);
    }
}
