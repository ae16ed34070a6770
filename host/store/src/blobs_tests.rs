use super::*;
use mem_core::store::{Batch, Durability, Store};
use std::os::unix::fs::PermissionsExt;

fn open(dir: &Path) -> SledStore {
    SledStore::open(dir).unwrap()
}

/// Non-compressible bytes, deterministic per seed.
fn noise(len: usize, seed: u64) -> Vec<u8> {
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

fn reference(s: &SledStore, sha256: &str, delta: i64) {
    let mut b = Batch::new();
    b.blob_ref(sha256, delta);
    s.commit(b, Durability::Immediate).unwrap();
}

/// Every file under the blob folder, temp files included.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.join("blobs")];
    while let Some(d) = stack.pop() {
        let Ok(entries) = fs::read_dir(&d) else {
            continue;
        };
        for e in entries {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}

fn read_all(s: &SledStore, sha256: &str) -> Vec<u8> {
    let mut out = Vec::new();
    s.open_blob(sha256)
        .unwrap()
        .unwrap()
        .read_to_end(&mut out)
        .unwrap();
    out
}

/// A reader that yields `good` bytes and then fails.
struct Failing {
    left: usize,
}

impl Read for Failing {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.left == 0 {
            return Err(io::Error::other("disk unplugged"));
        }
        let n = buf.len().min(self.left);
        buf[..n].fill(7);
        self.left -= n;
        Ok(n)
    }
}

#[test]
fn blobs_are_reference_counted() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    s.put_blob("h", b"bytes").unwrap();
    let mut b = Batch::new();
    b.blob_ref("h", 1).blob_ref("h", 1);
    s.commit(b, Durability::Immediate).unwrap();
    assert_eq!(s.blob_refcount("h").unwrap(), 2);
    reference(&s, "h", -1);
    assert_eq!(s.get_blob("h").unwrap().unwrap(), b"bytes");
    reference(&s, "h", -1);
    assert!(s.get_blob("h").unwrap().is_none());

    let mut b = Batch::new();
    b.blob_ref("missing", 1);
    assert!(matches!(
        s.commit(b, Durability::Immediate),
        Err(StoreError::MissingBlob { .. })
    ));
}

#[test]
fn gc_removes_unreferenced_blobs_only() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    s.put_blob("kept", b"k").unwrap();
    s.put_blob("orphan", b"o").unwrap();
    reference(&s, "kept", 1);
    assert_eq!(s.gc_blobs().unwrap(), 1);
    assert!(s.get_blob("kept").unwrap().is_some());
    assert!(s.get_blob("orphan").unwrap().is_none());
}

#[test]
fn small_blobs_stay_inline_and_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    for bytes in [Vec::new(), b"hello".to_vec(), noise(INLINE_MAX, 1)] {
        let w = s.put_blob_from(&mut &bytes[..]).unwrap();
        assert_eq!(w.sha256, sha256_hex(&bytes));
        assert_eq!(w.size, bytes.len() as u64);
        assert!(!w.existed);
        assert!(s.put_blob_from(&mut &bytes[..]).unwrap().existed);
        assert_eq!(s.get_blob(&w.sha256).unwrap().unwrap(), bytes);
        assert_eq!(read_all(&s, &w.sha256), bytes);
    }
    assert!(files_under(dir.path()).is_empty());
}

#[test]
fn large_blobs_stream_to_private_files_and_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    let bytes = noise(2 * INLINE_MAX + 12_345, 2);
    let w = s.put_blob_from(&mut &bytes[..]).unwrap();
    assert_eq!(w.sha256, sha256_hex(&bytes));
    assert_eq!(w.size, bytes.len() as u64);
    assert!(!w.existed);

    let path = s.blob_dir.path_for(&w.sha256).unwrap();
    assert_eq!(files_under(dir.path()), vec![path.clone()]);
    let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(path.parent().unwrap()), 0o700);
    assert_eq!(mode(&dir.path().join("blobs")), 0o700);
    // sled holds a marker, not the bytes.
    assert!(s.blobs_tree().get(&w.sha256).unwrap().unwrap().is_empty());
    assert!(s.size_on_disk().unwrap() >= bytes.len() as u64);

    assert_eq!(s.get_blob(&w.sha256).unwrap().unwrap(), bytes);
    assert_eq!(read_all(&s, &w.sha256), bytes);
    assert!(s.has_blob(&w.sha256).unwrap());

    // Dedup: the same bytes again write nothing new.
    let again = s.put_blob_from(&mut &bytes[..]).unwrap();
    assert!(again.existed);
    assert_eq!(again.sha256, w.sha256);
    assert_eq!(files_under(dir.path()), vec![path]);
}

#[test]
fn put_blob_of_large_bytes_is_a_file_too() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    let bytes = noise(INLINE_MAX + 1, 3);
    let sha = sha256_hex(&bytes);
    s.put_blob(&sha, &bytes).unwrap();
    assert!(s.blob_dir.path_for(&sha).unwrap().is_file());
    assert_eq!(s.get_blob(&sha).unwrap().unwrap(), bytes);
    assert!(s.put_blob_from(&mut &bytes[..]).unwrap().existed);
}

#[test]
fn last_reference_deletes_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    let bytes = noise(INLINE_MAX + 100, 4);
    let w = s.put_blob_from(&mut &bytes[..]).unwrap();
    let path = s.blob_dir.path_for(&w.sha256).unwrap();
    reference(&s, &w.sha256, 1);
    reference(&s, &w.sha256, 1);
    assert!(s.pending_tree().is_empty());
    reference(&s, &w.sha256, -1);
    assert!(path.is_file());
    // A deferred commit too: the file goes once the drop is durable.
    let mut b = Batch::new();
    b.blob_ref(&w.sha256, -1);
    s.commit(b, Durability::Deferred).unwrap();
    assert!(!path.exists());
    assert!(!s.has_blob(&w.sha256).unwrap());
    assert!(s.get_blob(&w.sha256).unwrap().is_none());
    assert!(s.open_blob(&w.sha256).unwrap().is_none());
    assert!(s.pending_tree().is_empty());
    assert!(s.blob_files_tree().is_empty());

    // Stored again after it went: a fresh file.
    let again = s.put_blob_from(&mut &bytes[..]).unwrap();
    assert!(!again.existed);
    assert_eq!(s.get_blob(&w.sha256).unwrap().unwrap(), bytes);
}

#[test]
fn gc_removes_orphan_files_and_pending_markers() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    let kept = s.put_blob_from(&mut &noise(INLINE_MAX + 1, 5)[..]).unwrap();
    reference(&s, &kept.sha256, 1);
    let orphan = s.put_blob_from(&mut &noise(INLINE_MAX + 1, 6)[..]).unwrap();

    // A crash after the rename, before the marker: a pending key and a
    // file, nothing else.
    let crashed = sha256_hex(b"crashed mid-install");
    s.pending_tree().insert(crashed.as_bytes(), &[]).unwrap();
    let crashed_path = s.blob_dir.path_for(&crashed).unwrap();
    fs::create_dir_all(crashed_path.parent().unwrap()).unwrap();
    fs::write(&crashed_path, b"partial").unwrap();

    assert_eq!(s.gc_blobs().unwrap(), 2);
    assert!(!s.blob_dir.path_for(&orphan.sha256).unwrap().exists());
    assert!(!crashed_path.exists());
    assert!(!s.has_blob(&orphan.sha256).unwrap());
    assert!(s.pending_tree().is_empty());
    assert!(s.get_blob(&kept.sha256).unwrap().is_some());
    assert_eq!(files_under(dir.path()).len(), 1);
}

#[test]
fn a_failing_reader_stores_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    for left in [10, 3 * INLINE_MAX] {
        let err = s.put_blob_from(&mut Failing { left }).unwrap_err();
        assert!(matches!(err, StoreError::Io(ref m) if m.contains("disk unplugged")));
    }
    assert!(files_under(dir.path()).is_empty());
    assert!(s.blobs_tree().is_empty());
    assert!(s.pending_tree().is_empty());
}

#[test]
fn temp_files_of_a_dead_writer_are_swept_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("blobs").join(TEMP_DIR);
    fs::create_dir_all(&tmp).unwrap();
    fs::write(tmp.join("4242-0"), b"half a blob").unwrap();
    let _s = open(dir.path());
    assert!(files_under(dir.path()).is_empty());
}

#[test]
fn large_blobs_survive_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = noise(INLINE_MAX * 3 / 2, 7);
    let sha = {
        let s = open(dir.path());
        let w = s.put_blob_from(&mut &bytes[..]).unwrap();
        reference(&s, &w.sha256, 1);
        w.sha256
    };
    let s = open(dir.path());
    assert_eq!(s.gc_blobs().unwrap(), 0);
    assert_eq!(s.blob_refcount(&sha).unwrap(), 1);
    assert_eq!(read_all(&s, &sha), bytes);
}

#[test]
fn a_key_that_is_not_a_sha256_never_becomes_a_path() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    let bd = &s.blob_dir;
    for key in ["../../etc/passwd", "/etc/passwd", "", "ab", &"A".repeat(64)] {
        assert!(bd.path_for(key).is_err(), "{key}");
    }
    let dotted = format!("..{}", "a".repeat(62));
    assert!(bd.path_for(&dotted).is_err());

    // Large bytes under a hostile key stay inline: no file anywhere.
    let hostile = "../../outside";
    s.put_blob(hostile, &noise(INLINE_MAX + 1, 8)).unwrap();
    assert!(files_under(dir.path()).is_empty());
    assert!(!dir.path().parent().unwrap().join("outside").exists());
    assert_eq!(s.gc_blobs().unwrap(), 1);

    // A tampered `blob_files` naming such a key is damage, not a path.
    s.blobs_tree().insert(hostile, &[]).unwrap();
    s.blob_files_tree()
        .insert(hostile, &1u64.to_be_bytes())
        .unwrap();
    assert!(matches!(
        s.get_blob(hostile),
        Err(StoreError::Corrupt { .. })
    ));
    assert!(matches!(
        s.open_blob(hostile),
        Err(StoreError::Corrupt { .. })
    ));
}

#[test]
fn a_missing_file_under_a_marker_is_damage() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    let w = s.put_blob_from(&mut &noise(INLINE_MAX + 1, 9)[..]).unwrap();
    fs::remove_file(s.blob_dir.path_for(&w.sha256).unwrap()).unwrap();
    assert!(matches!(
        s.get_blob(&w.sha256),
        Err(StoreError::Corrupt { .. })
    ));
}

#[test]
fn a_version_1_store_is_upgraded() {
    let dir = tempfile::tempdir().unwrap();
    {
        let s = open(dir.path());
        s.force_schema_version(1).unwrap();
    }
    drop(open(dir.path()));
    let s = open(dir.path());
    let v = s
        .get(mem_core::store::Table::Meta, "__schema_version")
        .unwrap();
    assert_eq!(v.unwrap(), crate::SCHEMA_VERSION.to_be_bytes());
}
