//! Rules that must hold across hosts: two services over one store that
//! says it is shared (the embedded store behind it, so these run without
//! servers; the shared backend itself is held to the same contract by the
//! store conformance suite, and end to end by `tests/all/shared.rs`).

use crate::{RememberRequest, Service, WorkspaceConfig};
use mem_core::ErrorCode;
use mem_core::store::{
    Batch, BlobWritten, Committed, Durability, Log, Scan, Store, StoreError, Table,
};
use mem_store::SledStore;
use std::io::Read;
use std::sync::Arc;

/// The embedded store, claiming to be shared.
struct Shared(SledStore);

impl Store for Shared {
    fn get(&self, table: Table, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.0.get(table, key)
    }
    fn scan(&self, table: Table, scan: &Scan<'_>) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        self.0.scan(table, scan)
    }
    fn count(&self, table: Table) -> Result<u64, StoreError> {
        self.0.count(table)
    }
    fn commit(&self, batch: Batch, durability: Durability) -> Result<Committed, StoreError> {
        self.0.commit(batch, durability)
    }
    fn flush(&self) -> Result<(), StoreError> {
        self.0.flush()
    }
    fn put_blob(&self, sha256: &str, bytes: &[u8]) -> Result<(), StoreError> {
        self.0.put_blob(sha256, bytes)
    }
    fn get_blob(&self, sha256: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.0.get_blob(sha256)
    }
    fn put_blob_from(&self, reader: &mut dyn Read) -> Result<BlobWritten, StoreError> {
        self.0.put_blob_from(reader)
    }
    fn has_blob(&self, sha256: &str) -> Result<bool, StoreError> {
        self.0.has_blob(sha256)
    }
    fn blob_refcount(&self, sha256: &str) -> Result<u64, StoreError> {
        self.0.blob_refcount(sha256)
    }
    fn gc_blobs(&self) -> Result<u64, StoreError> {
        self.0.gc_blobs()
    }
    fn read_log(
        &self,
        log: Log,
        after: u64,
        limit: usize,
    ) -> Result<Vec<(u64, Vec<u8>)>, StoreError> {
        self.0.read_log(log, after, limit)
    }
    fn last_log_entry(&self, log: Log) -> Result<Option<(u64, Vec<u8>)>, StoreError> {
        self.0.last_log_entry(log)
    }
    fn size_on_disk(&self) -> Result<u64, StoreError> {
        self.0.size_on_disk()
    }
    fn is_shared(&self) -> bool {
        true
    }
}

fn two_hosts() -> (tempfile::TempDir, Arc<Service>, Arc<Service>) {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> =
        Arc::new(Shared(SledStore::open(&dir.path().join("store")).unwrap()));
    let a = Service::new(store.clone(), WorkspaceConfig::default());
    let b = Service::new(store, WorkspaceConfig::default());
    (dir, Arc::new(a), Arc::new(b))
}

/// A duplicate of a running request sent to another host is refused like
/// one sent to the same host: the claim is a record, not a process's set.
#[test]
fn a_kept_answer_key_is_claimed_across_hosts() {
    let (_d, a, b) = two_hosts();
    let claim = a.claim_key("owner", "k").unwrap();
    let Err(e) = b.claim_key("owner", "k") else {
        panic!("another host must see the claim")
    };
    assert_eq!(e.code, ErrorCode::IdempotencyConflict);
    assert!(b.claim_key("tok_other", "k").is_ok(), "keys are per caller");
    drop(claim);
    assert!(b.claim_key("owner", "k").is_ok());
}

/// A host that died mid-request leaves its claim; after the lease the key
/// can be used again.
#[test]
fn a_claim_left_by_a_dead_host_expires() {
    let (_d, a, b) = two_hosts();
    let claim = a.claim_key("owner", "k").unwrap();
    // The host dies: its claim stays, with an old time.
    std::mem::forget(claim);
    a.in_flight.lock().clear();
    let key = a
        .store()
        .scan(
            Table::Idempotency,
            &Scan {
                prefix: "claim:",
                after: None,
                limit: 10,
                reverse: false,
            },
        )
        .unwrap()
        .remove(0)
        .0;
    let mut batch = Batch::new();
    batch.put(Table::Idempotency, key, b"2000-01-01T00:00:00Z".to_vec());
    a.store().commit(batch, Durability::Immediate).unwrap();
    assert!(b.claim_key("owner", "k").is_ok());
}

/// Writers on two hosts at once all get their write, and the audit chain
/// they all extend stays one verified chain.
#[test]
fn concurrent_writers_on_two_hosts_all_commit_on_one_audit_chain() {
    let (_d, a, b) = two_hosts();
    let threads: Vec<_> = (0..6)
        .map(|t| {
            let s = if t % 2 == 0 { a.clone() } else { b.clone() };
            std::thread::spawn(move || {
                for i in 0..8 {
                    s.remember(&RememberRequest {
                        content: format!("writer {t} note {i}"),
                        kind: "fact".into(),
                        path: "/team".into(),
                        idempotency_key: format!("w{t}-{i}"),
                        ..Default::default()
                    })
                    .unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(a.store().count(Table::Memories).unwrap(), 48);
    let v = b.audit_verify().unwrap();
    assert!(v.ok, "{v:?}");
    assert_eq!(v.entries, 48);
}
