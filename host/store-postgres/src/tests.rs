//! The shared backend against a real PostgreSQL and S3-compatible server
//! (see `testing`): the conformance suite with two hosts on one schema,
//! and what only a shared backend has to get right.

use super::*;
use crate::testing::TestEnv;
use mem_core::store::{Batch, Durability, Log, Store, StoreError, Table};
use mem_core::store_conformance::Pair;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Drops a test's schema once both hosts are gone.
struct DropSchema(PgOptions, S3Options);

impl Drop for DropSchema {
    fn drop(&mut self) {
        if let Ok(s) = PgStore::open(self.0.clone(), self.1.clone()) {
            let _ = s.drop_schema();
        }
    }
}

fn hosts(test: &str, grace: Duration) -> Option<(Arc<PgStore>, Arc<PgStore>, DropSchema)> {
    let env = TestEnv::get(test)?;
    let schema = env.fresh_schema(test);
    let mut pg = env.pg(&schema);
    pg.blob_grace = grace;
    let s3 = env.s3(&schema);
    let a = Arc::new(PgStore::open(pg.clone(), s3.clone()).unwrap());
    let b = Arc::new(PgStore::open(pg.clone(), s3.clone()).unwrap());
    Some((a, b, DropSchema(pg, s3)))
}

/// Two hosts on one fresh schema; unreferenced blobs are swept at once
/// (the conformance suite's crash case expects that).
fn conformance_pair() -> Option<Pair> {
    let (a, b, guard) = hosts("conformance", Duration::ZERO)?;
    Some(Pair {
        a,
        b,
        guard: Box::new(guard),
    })
}

mod conformance {
    use super::conformance_pair;
    mem_core::store_conformance_tests!(conformance_pair);
}

#[test]
fn a_newer_database_is_refused() {
    let Some((a, b, guard)) = hosts("newer", Duration::ZERO) else {
        return;
    };
    a.force_schema_version(SCHEMA_VERSION + 1).unwrap();
    drop((a, b));
    let err = PgStore::open(guard.0.clone(), guard.1.clone()).unwrap_err();
    assert_eq!(
        err,
        StoreError::UnsupportedVersion {
            found: SCHEMA_VERSION + 1,
            supported: SCHEMA_VERSION
        }
    );
    let e: mem_core::MemError = err.into();
    assert_eq!(e.code, mem_core::ErrorCode::StoreUnsupportedVersion);
}

#[test]
fn a_database_that_is_down_is_unavailable_and_names_no_password() {
    let Some(env) = TestEnv::get("down") else {
        return;
    };
    // A loopback port nothing listens on (the listener is closed at once).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut pg = env.pg("down");
    pg.url = format!("postgres://mem:pw-never-shown@127.0.0.1:{port}/mem");
    let err = PgStore::open(pg, env.s3("down")).unwrap_err();
    assert!(
        matches!(&err, StoreError::Unavailable { backend, .. } if backend == "database"),
        "{err:?}"
    );
    let e: mem_core::MemError = err.into();
    assert_eq!(e.code, mem_core::ErrorCode::StoreUnavailable);
    let shown = serde_json::to_string(&e).unwrap();
    assert!(!shown.contains("pw-never-shown"), "{shown}");

    let mut s3 = env.s3("down");
    s3.endpoint = Some(format!("http://127.0.0.1:{port}"));
    s3.secret_access_key = Some("s3-secret-never-shown".into());
    let err = PgStore::open(env.pg(&env.fresh_schema("down")), s3).unwrap_err();
    assert!(
        matches!(&err, StoreError::Unavailable { backend, .. } if backend == "object store"),
        "{err:?}"
    );
    assert!(!format!("{err:?}").contains("s3-secret-never-shown"));
}

/// Host A has uploaded a blob and is about to commit the record that
/// references it; a sweep on host B meanwhile must leave it alone (the
/// grace period), and once past the grace the sweep takes it and A's
/// commit fails whole instead of making a record without content.
#[test]
fn a_sweep_on_one_host_spares_a_blob_another_just_uploaded() {
    let Some((a, b, _guard)) = hosts("sweepgrace", DEFAULT_BLOB_GRACE) else {
        return;
    };
    let bytes = b"uploaded by host A".to_vec();
    let w = a.put_blob_from(&mut &bytes[..]).unwrap();
    assert_eq!(b.gc_blobs().unwrap(), 0);
    let mut batch = Batch::new();
    batch
        .put(Table::Files, "f", w.sha256.as_bytes().to_vec())
        .blob_ref(&w.sha256, 1);
    a.commit(batch, Durability::Immediate).unwrap();
    assert_eq!(b.get_blob(&w.sha256).unwrap().unwrap(), bytes);

    let late = b"host A stalled past the grace".to_vec();
    let w = a.put_blob_from(&mut &late[..]).unwrap();
    assert_eq!(b.gc_blobs_older_than(Duration::ZERO).unwrap(), 1);
    let mut batch = Batch::new();
    batch
        .put(Table::Files, "late", Vec::new())
        .blob_ref(&w.sha256, 1);
    assert!(matches!(
        a.commit(batch, Durability::Immediate),
        Err(StoreError::MissingBlob { .. })
    ));
    assert!(b.get(Table::Files, "late").unwrap().is_none());
    // Stored again, it is whole again.
    assert!(!a.put_blob_from(&mut &late[..]).unwrap().existed);
    assert_eq!(b.get_blob(&w.sha256).unwrap().unwrap(), late);
}

/// A host waiting for the log wakes when another host commits, well
/// before its timeout (the follower's bound rests on this).
#[test]
fn another_hosts_commit_wakes_a_waiting_follower() {
    let Some((a, b, _guard)) = hosts("wake", DEFAULT_BLOB_GRACE) else {
        return;
    };
    // The listener connects in the background: let it.
    b.wait_for_log(Log::Events, 0, Duration::from_millis(500));
    let writer = {
        let a = a.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            let mut batch = Batch::new();
            batch.append(Log::Events, b"e".to_vec());
            a.commit(batch, Durability::Immediate).unwrap();
        })
    };
    let t = Instant::now();
    b.wait_for_log(Log::Events, 0, Duration::from_secs(20));
    let waited = t.elapsed();
    writer.join().unwrap();
    assert!(waited < Duration::from_secs(5), "{waited:?}");
    assert_eq!(b.read_log(Log::Events, 0, 10).unwrap().len(), 1);
    eprintln!("a follower woke {waited:?} after waiting (the commit came after ~100 ms)");
}

/// The server calls the store from tokio's blocking pool; async code
/// might call it directly. Neither may panic.
#[test]
fn the_store_works_from_inside_a_tokio_runtime() {
    let Some((a, _b, _guard)) = hosts("inruntime", DEFAULT_BLOB_GRACE) else {
        return;
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let s = a.clone();
    rt.block_on(async move {
        let s2 = s.clone();
        tokio::task::spawn_blocking(move || {
            let mut batch = Batch::new();
            batch.put(Table::Meta, "k", b"v".to_vec());
            s2.commit(batch, Durability::Immediate).unwrap();
        })
        .await
        .unwrap();
        assert_eq!(s.get(Table::Meta, "k").unwrap().unwrap(), b"v");
    });
    // The last handle dropped inside a runtime context.
    rt.block_on(async move { drop(a) });
}

/// Deferred commits are durable at `flush`, and visible at once.
#[test]
fn deferred_commits_are_visible_and_flush() {
    let Some((a, b, _guard)) = hosts("deferred", DEFAULT_BLOB_GRACE) else {
        return;
    };
    let mut batch = Batch::new();
    batch.put(Table::Tokens, "use:x", b"1".to_vec());
    a.commit(batch, Durability::Deferred).unwrap();
    assert_eq!(b.get(Table::Tokens, "use:x").unwrap().unwrap(), b"1");
    a.flush().unwrap();
    a.flush().unwrap();
}
