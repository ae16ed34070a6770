//! The contract of [`Store`], as tests every backend runs.
//!
//! Why a shared suite: the service expresses its rules (idempotency, CAS on
//! `state_version`, the audit chain's head) as batch conditions, so a
//! backend that checks a condition a little differently breaks a rule
//! without a single service test noticing. Each case takes two handles on
//! one fresh store: two hosts on a shared backend, the same handle twice on
//! the embedded one (one process owns it). A backend's tests expand
//! [`store_conformance_tests!`] with a function that opens such a pair.

#![allow(clippy::unwrap_used)]

use crate::hash::sha256_hex;
use crate::store::{Batch, Durability, Log, Scan, Store, StoreError, Table};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Two handles on one fresh, empty store, and whatever must outlive them
/// (a temporary folder); fields drop in this order.
pub struct Pair {
    pub a: Arc<dyn Store>,
    pub b: Arc<dyn Store>,
    pub guard: Box<dyn std::any::Any>,
}

/// Expands to one `#[test]` per conformance case. `$open` is a
/// `fn() -> Option<Pair>`; `None` skips (the opener says why).
#[macro_export]
macro_rules! store_conformance_tests {
    ($open:path) => {
        $crate::store_conformance_tests!(@cases $open;
            conditional_batches,
            log_order,
            scans_with_prefix_cursor_and_reverse,
            many_keys_are_read_in_the_order_asked,
            blob_refcounts,
            crash_between_blob_write_and_commit,
            large_blobs_round_trip,
            concurrent_conflicting_batches,
            followers_never_skip_a_log_entry,
            an_absent_key_is_claimed_once,
        );
    };
    (@cases $open:path; $($case:ident),* $(,)?) => {
        $(
            #[test]
            fn $case() {
                if let Some(pair) = $open() {
                    $crate::store_conformance::$case(&pair.a, &pair.b);
                }
            }
        )*
    };
}

/// Conditions on present and absent keys; a failed one applies nothing
/// and names its index.
pub fn conditional_batches(a: &Arc<dyn Store>, b: &Arc<dyn Store>) {
    let mut batch = Batch::new();
    batch
        .expect(Table::Memories, "m", None)
        .put(Table::Memories, "m", b"1".to_vec());
    a.commit(batch, Durability::Immediate).unwrap();
    assert_eq!(b.get(Table::Memories, "m").unwrap().unwrap(), b"1");

    let mut batch = Batch::new();
    batch
        .expect(Table::Memories, "m", Some(b"1".to_vec()))
        .expect(Table::Memories, "m", None)
        .put(Table::Memories, "m", b"2".to_vec())
        .put(Table::Files, "f", b"x".to_vec())
        .append(Log::Events, b"lost".to_vec());
    assert_eq!(
        b.commit(batch, Durability::Immediate).unwrap_err(),
        StoreError::ConditionFailed { index: 1 }
    );
    assert_eq!(a.get(Table::Memories, "m").unwrap().unwrap(), b"1");
    assert!(a.get(Table::Files, "f").unwrap().is_none());
    assert!(a.last_log_entry(Log::Events).unwrap().is_none());

    // Compare-and-swap on the exact bytes, then a delete under a condition.
    let mut batch = Batch::new();
    batch.expect(Table::Memories, "m", Some(b"1".to_vec())).put(
        Table::Memories,
        "m",
        b"2".to_vec(),
    );
    b.commit(batch, Durability::Deferred).unwrap();
    b.flush().unwrap();
    let mut batch = Batch::new();
    batch
        .expect(Table::Memories, "m", Some(b"1".to_vec()))
        .delete(Table::Memories, "m");
    assert!(matches!(
        a.commit(batch, Durability::Immediate),
        Err(StoreError::ConditionFailed { index: 0 })
    ));
    let mut batch = Batch::new();
    batch
        .expect(Table::Memories, "m", Some(b"2".to_vec()))
        .delete(Table::Memories, "m")
        .put(Table::Memories, "n", Vec::new());
    a.commit(batch, Durability::Immediate).unwrap();
    assert!(b.get(Table::Memories, "m").unwrap().is_none());
    // An empty value is a value, not an absent key.
    assert_eq!(b.get(Table::Memories, "n").unwrap(), Some(Vec::new()));
    assert_eq!(b.count(Table::Memories).unwrap(), 1);
    // Tables are separate collections.
    assert!(b.get(Table::Files, "n").unwrap().is_none());
    // The last op on a key wins within a batch.
    let mut batch = Batch::new();
    batch
        .put(Table::Folders, "k", b"first".to_vec())
        .delete(Table::Folders, "k")
        .put(Table::Folders, "k", b"last".to_vec())
        .put(Table::Folders, "gone", b"x".to_vec())
        .delete(Table::Folders, "gone");
    a.commit(batch, Durability::Immediate).unwrap();
    assert_eq!(b.get(Table::Folders, "k").unwrap().unwrap(), b"last");
    assert!(b.get(Table::Folders, "gone").unwrap().is_none());
}

/// Sequence numbers strictly increase from 1, in op order, are never
/// reused, and a failed batch consumes none.
pub fn log_order(a: &Arc<dyn Store>, b: &Arc<dyn Store>) {
    let mut batch = Batch::new();
    batch
        .append(Log::Events, b"e1".to_vec())
        .append(Log::Audit, b"a1".to_vec())
        .append(Log::Events, b"e2".to_vec());
    assert_eq!(
        a.commit(batch, Durability::Immediate).unwrap().seqs,
        vec![1, 1, 2]
    );
    let mut batch = Batch::new();
    batch
        .expect(Table::Meta, "x", Some(b"nope".to_vec()))
        .append(Log::Events, b"lost".to_vec());
    assert!(b.commit(batch, Durability::Immediate).is_err());
    let mut batch = Batch::new();
    batch.append(Log::Events, b"e3".to_vec());
    assert_eq!(
        b.commit(batch, Durability::Immediate).unwrap().seqs,
        vec![3]
    );
    let all = a.read_log(Log::Events, 0, 10).unwrap();
    assert_eq!(
        all,
        vec![
            (1, b"e1".to_vec()),
            (2, b"e2".to_vec()),
            (3, b"e3".to_vec())
        ]
    );
    assert_eq!(
        a.read_log(Log::Events, 1, 1).unwrap(),
        vec![(2, b"e2".to_vec())]
    );
    assert!(a.read_log(Log::Events, 3, 10).unwrap().is_empty());
    assert_eq!(
        b.last_log_entry(Log::Events).unwrap(),
        Some((3, b"e3".to_vec()))
    );
    assert_eq!(b.last_log_entry(Log::Audit).unwrap().unwrap().0, 1);
}

/// Ordered scans: prefix, resume after a cursor (also one outside the
/// prefix), reverse, limit, byte-wise order of UTF-8 keys with NUL.
pub fn scans_with_prefix_cursor_and_reverse(a: &Arc<dyn Store>, b: &Arc<dyn Store>) {
    let keys = [
        "a/1",
        "a/2",
        "a/3",
        "a\u{0}x",
        "a\u{e9}",
        "b/1",
        "\u{10348}",
    ];
    let mut batch = Batch::new();
    for k in keys {
        batch.put(Table::Folders, k, k.as_bytes().to_vec());
    }
    a.commit(batch, Durability::Immediate).unwrap();
    let scan = |prefix, after, limit, reverse| {
        b.scan(
            Table::Folders,
            &Scan {
                prefix,
                after,
                limit,
                reverse,
            },
        )
        .unwrap()
        .into_iter()
        .map(|(k, v)| {
            assert_eq!(k.as_bytes(), v.as_slice());
            k
        })
        .collect::<Vec<_>>()
    };
    assert_eq!(
        scan("", None, 100, false),
        [
            "a\u{0}x",
            "a/1",
            "a/2",
            "a/3",
            "a\u{e9}",
            "b/1",
            "\u{10348}"
        ]
    );
    assert_eq!(scan("a/", None, 100, false), ["a/1", "a/2", "a/3"]);
    assert_eq!(scan("a/", Some("a/1"), 100, false), ["a/2", "a/3"]);
    assert_eq!(scan("a/", None, 100, true), ["a/3", "a/2", "a/1"]);
    assert_eq!(scan("a/", Some("a/3"), 100, true), ["a/2", "a/1"]);
    assert_eq!(scan("a/", Some("a/3"), 1, true), ["a/2"]);
    assert_eq!(scan("", Some("a/3"), 2, false), ["a\u{e9}", "b/1"]);
    assert_eq!(scan("", None, 2, false), ["a\u{0}x", "a/1"]);
    // A cursor before the prefix starts at the prefix; one past it ends.
    assert_eq!(scan("a/", Some("0"), 100, false), ["a/1", "a/2", "a/3"]);
    assert!(scan("a/", Some("z"), 100, false).is_empty());
    assert_eq!(scan("a/", Some("z"), 100, true), ["a/3", "a/2", "a/1"]);
    assert_eq!(scan("a\u{0}", None, 100, false), ["a\u{0}x"]);
    assert_eq!(scan("\u{10348}", None, 100, true), ["\u{10348}"]);
    assert!(scan("c", None, 100, false).is_empty());
    assert_eq!(a.count(Table::Folders).unwrap(), keys.len() as u64);
}

/// `get_many` answers each key in the order asked, absent and repeated
/// keys included, as a `get` of each would.
pub fn many_keys_are_read_in_the_order_asked(a: &Arc<dyn Store>, b: &Arc<dyn Store>) {
    let mut batch = Batch::new();
    for k in ["m/1", "m/2", "m/\u{e9}", "m\u{0}z"] {
        batch.put(Table::Memories, k, format!("value of {k}").into_bytes());
    }
    a.commit(batch, Durability::Immediate).unwrap();
    let keys = ["m\u{0}z", "m/absent", "m/1", "m/\u{e9}", "m/1", "m/2"];
    let many = b.get_many(Table::Memories, &keys).unwrap();
    let one_by_one: Vec<_> = keys
        .iter()
        .map(|k| b.get(Table::Memories, k).unwrap())
        .collect();
    assert_eq!(many, one_by_one);
    assert_eq!(many[1], None);
    assert_eq!(many[2].as_deref(), Some(&b"value of m/1"[..]));
    assert_eq!(many[4], many[2]);
    assert!(b.get_many(Table::Memories, &[]).unwrap().is_empty());
    // Another table's keys are not found.
    assert_eq!(b.get_many(Table::Folders, &["m/1"]).unwrap(), [None]);
}

/// References count up and down in commits; the last one drops the blob;
/// a reference to a blob never stored is `MissingBlob` and applies nothing.
pub fn blob_refcounts(a: &Arc<dyn Store>, b: &Arc<dyn Store>) {
    let bytes = b"some content".to_vec();
    let sha = sha256_hex(&bytes);
    a.put_blob(&sha, &bytes).unwrap();
    a.put_blob(&sha, &bytes).unwrap();
    assert!(b.has_blob(&sha).unwrap());
    let mut batch = Batch::new();
    batch
        .put(Table::Files, "f1", sha.as_bytes().to_vec())
        .blob_ref(&sha, 1)
        .blob_ref(&sha, 1);
    b.commit(batch, Durability::Immediate).unwrap();
    assert_eq!(a.blob_refcount(&sha).unwrap(), 2);
    assert_eq!(a.get_blob(&sha).unwrap().unwrap(), bytes);

    let missing = sha256_hex(b"never stored");
    let mut batch = Batch::new();
    batch
        .put(Table::Files, "f2", missing.as_bytes().to_vec())
        .blob_ref(&missing, 1);
    assert_eq!(
        a.commit(batch, Durability::Immediate).unwrap_err(),
        StoreError::MissingBlob {
            sha256: missing.clone()
        }
    );
    assert!(b.get(Table::Files, "f2").unwrap().is_none());
    assert!(!b.has_blob(&missing).unwrap());
    assert_eq!(b.blob_refcount(&missing).unwrap(), 0);

    let mut batch = Batch::new();
    batch.blob_ref(&sha, -1);
    a.commit(batch, Durability::Immediate).unwrap();
    assert_eq!(b.blob_refcount(&sha).unwrap(), 1);
    assert!(b.get_blob(&sha).unwrap().is_some());
    let mut batch = Batch::new();
    batch.delete(Table::Files, "f1").blob_ref(&sha, -1);
    b.commit(batch, Durability::Immediate).unwrap();
    assert!(!a.has_blob(&sha).unwrap());
    assert!(a.get_blob(&sha).unwrap().is_none());
    assert!(a.open_blob(&sha).unwrap().is_none());
    assert_eq!(a.blob_refcount(&sha).unwrap(), 0);
    // Stored again after it went: readable again.
    let w = a.put_blob_from(&mut &bytes[..]).unwrap();
    assert_eq!((w.sha256.as_str(), w.existed), (sha.as_str(), false));
    assert!(b.put_blob_from(&mut &bytes[..]).unwrap().existed);
    assert_eq!(b.get_blob(&sha).unwrap().unwrap(), bytes);
}

/// A crash between `put_blob` and the commit that would reference it
/// leaves a blob no record holds; `gc_blobs` removes it and nothing else.
/// (The backend under test sweeps unreferenced blobs at once: a shared one
/// with its grace period set to zero.)
pub fn crash_between_blob_write_and_commit(a: &Arc<dyn Store>, b: &Arc<dyn Store>) {
    let kept = b"kept".to_vec();
    let kept_sha = sha256_hex(&kept);
    a.put_blob(&kept_sha, &kept).unwrap();
    let mut batch = Batch::new();
    batch
        .put(Table::Files, "kept", Vec::new())
        .blob_ref(&kept_sha, 1);
    a.commit(batch, Durability::Immediate).unwrap();

    // The "crashed" writer: the upload happened, the commit never did.
    let orphan = b"orphan".to_vec();
    let orphan_sha = sha256_hex(&orphan);
    b.put_blob(&orphan_sha, &orphan).unwrap();
    let big = noise(3 << 20, 11);
    let big_sha = b.put_blob_from(&mut &big[..]).unwrap().sha256;

    assert_eq!(a.gc_blobs().unwrap(), 2);
    assert!(!b.has_blob(&orphan_sha).unwrap());
    assert!(b.get_blob(&orphan_sha).unwrap().is_none());
    assert!(!b.has_blob(&big_sha).unwrap());
    assert_eq!(b.get_blob(&kept_sha).unwrap().unwrap(), kept);
    assert_eq!(b.blob_refcount(&kept_sha).unwrap(), 1);
    // Nothing refers to what went, so a commit naming it fails whole.
    let mut batch = Batch::new();
    batch
        .put(Table::Files, "late", Vec::new())
        .blob_ref(&orphan_sha, 1);
    assert!(matches!(
        b.commit(batch, Durability::Immediate),
        Err(StoreError::MissingBlob { .. })
    ));
    assert!(a.get(Table::Files, "late").unwrap().is_none());
    assert_eq!(a.gc_blobs().unwrap(), 0);
}

/// Non-compressible bytes, deterministic per seed.
pub fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// Blobs of several sizes stream in and out whole and dedupe.
pub fn large_blobs_round_trip(a: &Arc<dyn Store>, b: &Arc<dyn Store>) {
    for (len, seed) in [(0usize, 1u64), (5, 2), (3 * (1 << 20) + 17, 3)] {
        let bytes = noise(len, seed);
        let w = a.put_blob_from(&mut &bytes[..]).unwrap();
        assert_eq!(w.sha256, sha256_hex(&bytes));
        assert_eq!(w.size, len as u64);
        assert!(!w.existed);
        let mut batch = Batch::new();
        batch.blob_ref(&w.sha256, 1);
        a.commit(batch, Durability::Immediate).unwrap();
        assert!(b.put_blob_from(&mut &bytes[..]).unwrap().existed);
        assert_eq!(b.get_blob(&w.sha256).unwrap().unwrap(), bytes);
        let mut read = Vec::new();
        std::io::Read::read_to_end(&mut b.open_blob(&w.sha256).unwrap().unwrap(), &mut read)
            .unwrap();
        assert_eq!(read, bytes);
    }
    assert!(a.size_on_disk().unwrap() > 3 << 20);
}

/// Commits that each read a counter and write it back under a condition
/// (from both handles at once): every successful one counts exactly once,
/// and each appended entry takes the next sequence number.
pub fn concurrent_conflicting_batches(a: &Arc<dyn Store>, b: &Arc<dyn Store>) {
    const THREADS: usize = 6;
    const EACH: usize = 15;
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let s = if t % 2 == 0 { a.clone() } else { b.clone() };
            std::thread::spawn(move || {
                let mut conflicts = 0u64;
                for _ in 0..EACH {
                    loop {
                        let raw = s.get(Table::Meta, "counter").unwrap();
                        let n: u64 = raw
                            .as_deref()
                            .map(|r| std::str::from_utf8(r).unwrap().parse().unwrap())
                            .unwrap_or(0);
                        let mut batch = Batch::new();
                        batch
                            .expect(Table::Meta, "counter", raw)
                            .put(Table::Meta, "counter", (n + 1).to_string().into_bytes())
                            .append(Log::Events, (n + 1).to_string().into_bytes());
                        match s.commit(batch, Durability::Immediate) {
                            Ok(c) => {
                                assert_eq!(c.seqs, vec![n + 1]);
                                break;
                            }
                            Err(StoreError::ConditionFailed { index: 0 }) => conflicts += 1,
                            Err(e) => panic!("{e}"),
                        }
                    }
                }
                conflicts
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let total = (THREADS * EACH) as u64;
    assert_eq!(
        a.get(Table::Meta, "counter").unwrap().unwrap(),
        total.to_string().into_bytes()
    );
    let log = b.read_log(Log::Events, 0, 10_000).unwrap();
    assert_eq!(log.len() as u64, total);
    for (i, (seq, value)) in log.iter().enumerate() {
        assert_eq!(*seq, i as u64 + 1);
        assert_eq!(value, &seq.to_string().into_bytes());
    }
}

/// A follower that reads `after = last seen` while writers on both
/// handles append concurrently sees every entry, in order, none skipped
/// (the index of every host follows the event log this way).
pub fn followers_never_skip_a_log_entry(a: &Arc<dyn Store>, b: &Arc<dyn Store>) {
    const WRITERS: usize = 4;
    const EACH: usize = 25;
    let done = Arc::new(AtomicBool::new(false));
    let follower = {
        let (s, done) = (b.clone(), done.clone());
        std::thread::spawn(move || {
            let mut seen = Vec::new();
            let mut after = 0;
            loop {
                let finished = done.load(Ordering::SeqCst);
                for (seq, value) in s.read_log(Log::Events, after, 7).unwrap() {
                    assert!(seq > after, "{seq} after {after}");
                    after = seq;
                    seen.push(value);
                }
                if finished && s.read_log(Log::Events, after, 1).unwrap().is_empty() {
                    return seen;
                }
            }
        })
    };
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let s = if w % 2 == 0 { a.clone() } else { b.clone() };
            std::thread::spawn(move || {
                for i in 0..EACH {
                    let mut batch = Batch::new();
                    batch
                        .append(Log::Events, format!("{w}-{i}-a").into_bytes())
                        .append(Log::Events, format!("{w}-{i}-b").into_bytes());
                    s.commit(batch, Durability::Immediate).unwrap();
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    done.store(true, Ordering::SeqCst);
    let seen = follower.join().unwrap();
    assert_eq!(seen.len(), WRITERS * EACH * 2);
    let distinct: BTreeSet<_> = seen.iter().collect();
    assert_eq!(distinct.len(), seen.len());
    // A batch's entries are adjacent: nothing commits in between.
    for pair in seen.chunks(2) {
        let first = String::from_utf8(pair[0].clone()).unwrap();
        let second = String::from_utf8(pair[1].clone()).unwrap();
        assert_eq!(first.trim_end_matches("-a"), second.trim_end_matches("-b"));
    }
}

/// Many writers on both handles claim one absent key under a condition
/// (an idempotency key, a unique path): exactly one wins.
pub fn an_absent_key_is_claimed_once(a: &Arc<dyn Store>, b: &Arc<dyn Store>) {
    const THREADS: usize = 8;
    let barrier = Arc::new(std::sync::Barrier::new(THREADS));
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let s = if t % 2 == 0 { a.clone() } else { b.clone() };
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                barrier.wait();
                let mut batch = Batch::new();
                batch
                    .expect(Table::Idempotency, "key", None)
                    .put(Table::Idempotency, "key", vec![t as u8])
                    .put(Table::Memories, format!("m{t}"), Vec::new())
                    .append(Log::Events, vec![t as u8]);
                match s.commit(batch, Durability::Immediate) {
                    Ok(_) => true,
                    Err(StoreError::ConditionFailed { index: 0 }) => false,
                    Err(e) => panic!("{e}"),
                }
            })
        })
        .collect();
    let wins: usize = handles
        .into_iter()
        .map(|h| usize::from(h.join().unwrap()))
        .sum();
    assert_eq!(wins, 1);
    assert_eq!(a.count(Table::Memories).unwrap(), 1);
    let winner = b.get(Table::Idempotency, "key").unwrap().unwrap();
    assert_eq!(b.read_log(Log::Events, 0, 100).unwrap(), vec![(1, winner)]);
}
