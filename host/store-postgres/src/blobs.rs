//! Blob bytes in the object store, their bookkeeping in the database.
//!
//! Objects are content-addressed (`{prefix}blobs/ab/abcd…`), so two hosts
//! uploading the same bytes write the same object. A blob's row moves
//! through three states:
//! - `uploading`: the row is made (or refreshed) before the bytes go up;
//! - `stored`: the bytes are complete; only now may a commit reference it
//!   (a commit naming any other state fails with `MissingBlob`, so a failed
//!   upload leaves no record pointing at it);
//! - `deleting`: the commit that dropped the last reference hid it; the
//!   object is removed after that commit, or by the sweep after a crash.
//!
//! The sweep ([`sweep`]) removes `deleting` rows and rows no record
//! references (`refs = 0`) that nobody touched for the grace period, each
//! under a row lock held while its object is deleted. A host that stores
//! a blob touches its row first (waiting on that lock if a sweep holds it,
//! then finding the row gone and making it anew), and a commit that
//! references it needs the row `stored`: so a sweep on one host never
//! removes what another host just uploaded and is about to commit, and a
//! host that stalls past the grace gets a clean `MissingBlob` instead of a
//! record without content. Times are the database's, never a host's clock.

use crate::bridge::run_on;
use crate::errors::{self, OBJECT_STORE};
use crate::options::{S3Options, Secrets};
use crate::store::{Inner, PgStore};
use bytes::Bytes;
use mem_core::hash::{is_sha256_hex, sha256_hex};
use mem_core::store::{BlobWritten, StoreError};
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, PutPayload, WriteMultipart};
use sha2::{Digest, Sha256};
use std::io::{Read, Seek, SeekFrom, Write};
use std::sync::Arc;
use std::time::Duration;

/// Up to this size a blob travels whole (one request, held in memory);
/// above it, it is spooled to a temporary file while hashed, uploaded in
/// parts and read back in ranges, so memory stays bounded.
const WHOLE_MAX: usize = 8 << 20;

/// Part size of multipart uploads and ranged reads.
const PART: usize = 8 << 20;

/// Parts uploaded at once.
const PARTS_IN_FLIGHT: usize = 2;

/// Rows a sweep takes per transaction.
const SWEEP_PAGE: i64 = 64;

pub(crate) fn object_store(
    s3: &S3Options,
    secrets: &Secrets,
) -> Result<Arc<dyn ObjectStore>, StoreError> {
    let mut b = object_store::aws::AmazonS3Builder::new()
        .with_bucket_name(&s3.bucket)
        .with_region(&s3.region)
        .with_retry(object_store::RetryConfig {
            max_retries: 3,
            retry_timeout: Duration::from_secs(20),
            ..Default::default()
        });
    if let Some(endpoint) = &s3.endpoint {
        b = b
            .with_endpoint(endpoint)
            .with_allow_http(endpoint.starts_with("http://"))
            .with_virtual_hosted_style_request(false);
    }
    if let Some(k) = &s3.access_key_id {
        b = b.with_access_key_id(k);
    }
    if let Some(k) = &s3.secret_access_key {
        b = b.with_secret_access_key(k);
    }
    let store = b.build().map_err(|e| {
        StoreError::Io(secrets.redact(format!("the object store settings are not valid: {e}")))
    })?;
    Ok(Arc::new(store))
}

fn path(i: &Inner, sha256: &str) -> Result<ObjectPath, StoreError> {
    if !is_sha256_hex(sha256) {
        let shown: String = sha256.chars().take(80).collect();
        return Err(StoreError::Corrupt {
            reason: format!("blob key {shown:?} is not a SHA-256"),
        });
    }
    Ok(ObjectPath::from(format!(
        "{}blobs/{}/{sha256}",
        i.prefix,
        &sha256[..2]
    )))
}

/// Fails early (at open) when the bucket cannot be reached.
pub(crate) async fn probe(i: &Inner) -> Result<(), StoreError> {
    let p = ObjectPath::from(format!("{}probe/absent", i.prefix));
    match i.objects.head(&p).await {
        Ok(_) | Err(object_store::Error::NotFound { .. }) => Ok(()),
        Err(e) => Err(errors::unavailable(
            OBJECT_STORE,
            i.secrets.redact(e.to_string()),
        )),
    }
}

/// (size, references) of a `stored` blob.
pub(crate) async fn stored_row(i: &Inner, sha256: &str) -> Result<Option<(u64, u64)>, StoreError> {
    let c = i.client().await?;
    let stmt = c
        .prepare_cached(&format!(
            "SELECT size, refs FROM {} WHERE sha256 = $1 AND state = 'stored'",
            i.blobs()
        ))
        .await
        .map_err(|e| i.pg(e))?;
    let row = c.query_opt(&stmt, &[&sha256]).await.map_err(|e| i.pg(e))?;
    Ok(row.map(|r| {
        (
            r.get::<_, i64>(0).max(0) as u64,
            r.get::<_, i64>(1).max(0) as u64,
        )
    }))
}

/// Makes or refreshes the row before an upload; `true` when the blob is
/// already stored (nothing to upload).
async fn begin_upload(i: &Inner, sha256: &str, size: u64) -> Result<bool, StoreError> {
    let c = i.client().await?;
    let stmt = c
        .prepare_cached(&format!(
            "INSERT INTO {b} AS b (sha256, size, refs, state, touched_at) \
             VALUES ($1, $2, 0, 'uploading', now()) \
             ON CONFLICT (sha256) DO UPDATE SET touched_at = now(), \
               size = CASE WHEN b.state = 'stored' THEN b.size ELSE excluded.size END, \
               state = CASE WHEN b.state = 'deleting' THEN 'uploading' ELSE b.state END \
             RETURNING state",
            b = i.blobs()
        ))
        .await
        .map_err(|e| i.pg(e))?;
    let size = i64::try_from(size).unwrap_or(i64::MAX);
    let state: String = c
        .query_one(&stmt, &[&sha256, &size])
        .await
        .map_err(|e| i.pg(e))?
        .get(0);
    Ok(state == "stored")
}

/// Marks an uploaded blob readable (and referenceable).
async fn end_upload(i: &Inner, sha256: &str) -> Result<(), StoreError> {
    let c = i.client().await?;
    let n = c
        .execute(
            &format!(
                "UPDATE {} SET state = 'stored', touched_at = now() \
                 WHERE sha256 = $1 AND state <> 'deleting'",
                i.blobs()
            ),
            &[&sha256],
        )
        .await
        .map_err(|e| i.pg(e))?;
    if n == 0 {
        return Err(StoreError::Io(format!(
            "blob {sha256} was swept while it was being uploaded; store it again"
        )));
    }
    Ok(())
}

/// `put_blob`: bytes at hand; `true` when they were stored before.
pub(crate) async fn put(i: &Inner, sha256: &str, bytes: Bytes) -> Result<bool, StoreError> {
    let p = path(i, sha256)?;
    if begin_upload(i, sha256, bytes.len() as u64).await? {
        return Ok(true);
    }
    i.objects
        .put(&p, PutPayload::from(bytes))
        .await
        .map_err(|e| errors::object(&i.secrets, e))?;
    end_upload(i, sha256).await?;
    Ok(false)
}

/// Reads what is available, retrying interruptions.
fn read_some(reader: &mut dyn Read, buf: &mut [u8]) -> Result<usize, StoreError> {
    loop {
        match reader.read(buf) {
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(StoreError::Io(format!("cannot read the content: {e}"))),
        }
    }
}

/// `put_blob_from`: small content whole; larger content spooled to an
/// anonymous temporary file while hashed (the key is its SHA-256, known
/// only at the end), then uploaded in parts. A read error stores nothing.
pub(crate) fn put_from(s: &PgStore, reader: &mut dyn Read) -> Result<BlobWritten, StoreError> {
    let mut buf = vec![0u8; 256 * 1024];
    let mut head = Vec::new();
    while head.len() <= WHOLE_MAX {
        let n = read_some(reader, &mut buf)?;
        if n == 0 {
            let sha256 = sha256_hex(&head);
            let size = head.len() as u64;
            let (i, sha) = (s.inner.clone(), sha256.clone());
            let existed = s
                .bridge
                .run(async move { put(&i, &sha, head.into()).await })?;
            return Ok(BlobWritten {
                sha256,
                size,
                existed,
            });
        }
        head.extend_from_slice(&buf[..n]);
    }
    let io = |e: std::io::Error| StoreError::Io(format!("cannot spool a blob: {e}"));
    let mut spool = tempfile::tempfile().map_err(io)?;
    let mut hasher = Sha256::new();
    hasher.update(&head);
    spool.write_all(&head).map_err(io)?;
    let mut size = head.len() as u64;
    drop(head);
    loop {
        let n = read_some(reader, &mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        spool.write_all(&buf[..n]).map_err(io)?;
        size += n as u64;
    }
    let sha256 = hex::encode(hasher.finalize());
    spool.seek(SeekFrom::Start(0)).map_err(io)?;
    let (i, sha) = (s.inner.clone(), sha256.clone());
    let existed = s
        .bridge
        .run(async move { upload_file(&i, &sha, size, spool).await })?;
    Ok(BlobWritten {
        sha256,
        size,
        existed,
    })
}

async fn upload_file(
    i: &Inner,
    sha256: &str,
    size: u64,
    mut file: std::fs::File,
) -> Result<bool, StoreError> {
    let p = path(i, sha256)?;
    if begin_upload(i, sha256, size).await? {
        return Ok(true);
    }
    let upload = i
        .objects
        .put_multipart(&p)
        .await
        .map_err(|e| errors::object(&i.secrets, e))?;
    let mut parts = WriteMultipart::new_with_chunk_size(upload, PART);
    let mut buf = vec![0u8; PART];
    loop {
        // A local file: reads are short waits on this runtime's thread.
        let n = read_some(&mut file, &mut buf)?;
        if n == 0 {
            break;
        }
        parts
            .wait_for_capacity(PARTS_IN_FLIGHT)
            .await
            .map_err(|e| errors::object(&i.secrets, e))?;
        parts.write(&buf[..n]);
    }
    parts
        .finish()
        .await
        .map_err(|e| errors::object(&i.secrets, e))?;
    end_upload(i, sha256).await?;
    Ok(false)
}

/// `get_blob`: whole bytes of a stored blob.
pub(crate) async fn get(i: &Inner, sha256: &str) -> Result<Option<Vec<u8>>, StoreError> {
    if stored_row(i, sha256).await?.is_none() {
        return Ok(None);
    }
    let p = path(i, sha256)?;
    match i.objects.get(&p).await {
        Ok(r) => Ok(Some(
            r.bytes()
                .await
                .map_err(|e| errors::object(&i.secrets, e))?
                .to_vec(),
        )),
        Err(object_store::Error::NotFound { .. }) => missing(i, sha256).await,
        Err(e) => Err(errors::object(&i.secrets, e)),
    }
}

/// An object that vanished under a stored row: gone if the blob was
/// dropped meanwhile, damage otherwise.
async fn missing<T>(i: &Inner, sha256: &str) -> Result<Option<T>, StoreError> {
    if stored_row(i, sha256).await?.is_some() {
        return Err(StoreError::Corrupt {
            reason: format!("the object of blob {sha256} is missing from the object store"),
        });
    }
    Ok(None)
}

/// `open_blob`: a small blob whole, a large one read in ranges.
pub(crate) fn open(s: &PgStore, sha256: &str) -> Result<Option<Box<dyn Read + Send>>, StoreError> {
    let Some((size, _)) = s.blob_row(sha256)? else {
        return Ok(None);
    };
    if size as usize <= WHOLE_MAX {
        let (i, sha) = (s.inner.clone(), sha256.to_string());
        let bytes = s.bridge.run(async move { get(&i, &sha).await })?;
        return Ok(bytes.map(|b| Box::new(std::io::Cursor::new(b)) as Box<dyn Read + Send>));
    }
    Ok(Some(Box::new(RangeReader {
        handle: s.bridge.handle().clone(),
        inner: s.inner.clone(),
        path: path(&s.inner, sha256)?,
        size,
        pos: 0,
        buf: Bytes::new(),
    })))
}

/// Reads a large object one part at a time.
struct RangeReader {
    handle: tokio::runtime::Handle,
    inner: Arc<Inner>,
    path: ObjectPath,
    size: u64,
    pos: u64,
    buf: Bytes,
}

impl Read for RangeReader {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if self.buf.is_empty() {
            if self.pos >= self.size {
                return Ok(0);
            }
            let end = (self.pos + PART as u64).min(self.size);
            let (inner, path, range) = (self.inner.clone(), self.path.clone(), self.pos..end);
            self.buf = run_on(&self.handle, async move {
                inner
                    .objects
                    .get_range(&path, range)
                    .await
                    .map_err(|e| errors::object(&inner.secrets, e))
            })
            .map_err(std::io::Error::other)?;
            if self.buf.is_empty() {
                return Err(std::io::Error::other(
                    "the object store returned an empty range",
                ));
            }
            self.pos += self.buf.len() as u64;
        }
        let n = out.len().min(self.buf.len());
        out[..n].copy_from_slice(&self.buf.split_to(n));
        Ok(n)
    }
}

/// Removes the objects of blobs whose last reference a commit dropped.
/// Each under its row's lock, so a host storing the same bytes again
/// waits and then makes the blob anew. A failure leaves the row
/// `deleting` for the sweep.
pub(crate) async fn finish_drops(i: &Inner, dropped: Vec<String>) {
    for sha in dropped {
        let _ = remove(i, &sha, "state = 'deleting'").await;
    }
}

/// Deletes one blob's object and row if its row still matches `when`.
async fn remove(i: &Inner, sha256: &str, when: &str) -> Result<bool, StoreError> {
    let mut c = i.client().await?;
    let tx = c.transaction().await.map_err(|e| i.pg(e))?;
    let locked = tx
        .query_opt(
            &format!(
                "SELECT 1 FROM {} WHERE sha256 = $1 AND {when} FOR UPDATE",
                i.blobs()
            ),
            &[&sha256],
        )
        .await
        .map_err(|e| i.pg(e))?;
    if locked.is_none() {
        return Ok(false);
    }
    delete_object(i, sha256).await?;
    tx.execute(
        &format!("DELETE FROM {} WHERE sha256 = $1", i.blobs()),
        &[&sha256],
    )
    .await
    .map_err(|e| i.pg(e))?;
    tx.commit().await.map_err(|e| i.pg(e))?;
    Ok(true)
}

async fn delete_object(i: &Inner, sha256: &str) -> Result<(), StoreError> {
    // A row whose key is not a SHA-256 never had an object.
    let Ok(p) = path(i, sha256) else {
        return Ok(());
    };
    match i.objects.delete(&p).await {
        Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
        Err(e) => Err(errors::object(&i.secrets, e)),
    }
}

/// `gc_blobs`: removes `deleting` blobs and blobs no record references
/// that were last touched more than `grace` ago; returns how many.
pub(crate) async fn sweep(i: &Inner, grace: Duration) -> Result<u64, StoreError> {
    let grace = grace.as_secs_f64();
    let mut removed = 0u64;
    loop {
        let mut c = i.client().await?;
        let tx = c.transaction().await.map_err(|e| i.pg(e))?;
        let rows = tx
            .query(
                &format!(
                    "SELECT sha256 FROM {} WHERE state = 'deleting' \
                       OR (refs = 0 AND touched_at <= now() - make_interval(secs => $1)) \
                     ORDER BY sha256 LIMIT $2 FOR UPDATE SKIP LOCKED",
                    i.blobs()
                ),
                &[&grace, &SWEEP_PAGE],
            )
            .await
            .map_err(|e| i.pg(e))?;
        if rows.is_empty() {
            return Ok(removed);
        }
        let shas: Vec<String> = rows.iter().map(|r| r.get(0)).collect();
        for sha in &shas {
            delete_object(i, sha).await?;
        }
        tx.execute(
            &format!("DELETE FROM {} WHERE sha256 = ANY($1)", i.blobs()),
            &[&shas],
        )
        .await
        .map_err(|e| i.pg(e))?;
        tx.commit().await.map_err(|e| i.pg(e))?;
        removed += shas.len() as u64;
        if (shas.len() as i64) < SWEEP_PAGE {
            return Ok(removed);
        }
    }
}
