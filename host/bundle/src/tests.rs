use super::*;
use mem_core::hash::sha256_hex;
use mem_core::{ErrorCode, MemError, MemResult};
use proptest::prelude::*;
use std::collections::HashMap;
use std::io::Read;

fn blobs() -> HashMap<String, Vec<u8>> {
    [b"hello world".to_vec(), vec![7u8; 5000]]
        .into_iter()
        .map(|b| (sha256_hex(&b), b))
        .collect()
}

fn sample() -> Contents {
    let mut blob_list: Vec<BlobInfo> = blobs()
        .iter()
        .map(|(sha256, b)| BlobInfo {
            sha256: sha256.clone(),
            size: b.len() as u64,
        })
        .collect();
    blob_list.sort();
    Contents {
        source: Source {
            workspace: "w".into(),
            mem_host_version: "0.1.0".into(),
        },
        scope: None,
        excluded: vec![Excluded {
            what: "tokens".into(),
            why: "secrets".into(),
        }],
        settings: b"[workspace]\nname = \"w\"\n".to_vec(),
        tables: vec![
            TablePart {
                name: "memories".into(),
                records: vec![
                    ("mem_1".into(), br#"{"a":1}"#.to_vec()),
                    ("mem_2".into(), vec![0, 159, 255]),
                ],
            },
            TablePart {
                name: "files".into(),
                records: vec![],
            },
        ],
        logs: vec![LogPart {
            name: "events".into(),
            entries: vec![b"{}".to_vec(), b"{\"x\":2}".to_vec()],
        }],
        plugins: vec![PluginPart {
            name: "agents-md".into(),
            manifest: b"{}".to_vec(),
            wasm: b"\0asm....".to_vec(),
        }],
        blobs: blob_list,
    }
}

fn source(sha: &str) -> MemResult<Box<dyn Read + Send>> {
    let b = blobs()
        .remove(sha)
        .ok_or_else(|| MemError::not_found("blob", sha))?;
    Ok(Box::new(std::io::Cursor::new(b)))
}

fn written(c: &Contents) -> Vec<u8> {
    let mut out = Vec::new();
    write(&mut out, c, "2026-12-03T00:00:00Z", &mut source).unwrap();
    out
}

/// Keeps what it is given.
#[derive(Debug, Default)]
struct Keep(HashMap<String, Vec<u8>>);

impl BlobSink for Keep {
    fn put(&mut self, sha256: &str, _size: u64, r: &mut dyn Read) -> MemResult<()> {
        let mut b = Vec::new();
        r.read_to_end(&mut b)
            .map_err(|e| MemError::io("read", &e))?;
        self.0.insert(sha256.into(), b);
        Ok(())
    }
}

fn read_all(bytes: &[u8], limits: &Limits) -> Result<(Bundle, Keep), MemError> {
    let mut keep = Keep::default();
    match read(bytes, limits, &mut |_, _| Ok(true), &mut keep)? {
        Outcome::Complete(b) => Ok((*b, keep)),
        Outcome::Stopped { .. } => Err(MemError::internal("stopped")),
    }
}

#[test]
fn a_bundle_reads_back_as_written() {
    let c = sample();
    let bytes = written(&c);
    let (b, keep) = read_all(&bytes, &Limits::default()).unwrap();
    assert_eq!(b.settings, c.settings);
    assert_eq!(b.tables.len(), 2);
    let mems = b.tables.iter().find(|t| t.name == "memories").unwrap();
    assert_eq!(mems.records, c.tables[0].records);
    assert_eq!(b.logs, c.logs);
    assert_eq!(b.plugins, c.plugins);
    assert_eq!(keep.0, blobs());
    assert_eq!(b.manifest.records.len(), 2);
    assert_eq!(b.manifest.counts.blobs, 2);
    assert_eq!(b.manifest.format_version, FORMAT_VERSION);
}

#[test]
fn a_read_can_stop_after_the_manifest() {
    let bytes = written(&sample());
    let mut keep = Keep::default();
    let out = read(
        &bytes[..],
        &Limits::default(),
        &mut |_, _| Ok(false),
        &mut keep,
    )
    .unwrap();
    assert!(matches!(out, Outcome::Stopped { .. }));
    assert!(keep.0.is_empty(), "no blob is read past a stop");
}

/// A raw tar entry, for archives no writer of ours would make.
struct Raw {
    name: Vec<u8>,
    kind: tar::EntryType,
    data: Vec<u8>,
    /// The header's size when it lies about the data.
    declared: Option<u64>,
    link: Option<&'static str>,
}

fn raw(name: &str, data: &[u8]) -> Raw {
    Raw {
        name: name.as_bytes().to_vec(),
        kind: tar::EntryType::Regular,
        data: data.to_vec(),
        declared: None,
        link: None,
    }
}

/// The uncompressed tar of `entries` (names written as given: `..` and
/// absolute names included, which `Header::set_path` would refuse).
fn tar_of(entries: &[Raw]) -> Vec<u8> {
    let mut out = Vec::new();
    for e in entries {
        let mut h = tar::Header::new_gnu();
        let name = &mut h.as_gnu_mut().unwrap().name;
        name[..e.name.len()].copy_from_slice(&e.name);
        h.set_entry_type(e.kind);
        h.set_mode(0o600);
        h.set_size(e.declared.unwrap_or(e.data.len() as u64));
        if let Some(l) = e.link {
            h.set_link_name(l).unwrap();
        }
        h.set_cksum();
        out.extend_from_slice(h.as_bytes());
        out.extend_from_slice(&e.data);
        out.resize(out.len().div_ceil(512) * 512, 0);
    }
    out.extend_from_slice(&[0u8; 1024]);
    out
}

fn zst(tar: &[u8]) -> Vec<u8> {
    zstd::encode_all(tar, 1).unwrap()
}

/// The entries of a good bundle, to tamper with.
fn entries_of(bytes: &[u8]) -> Vec<Raw> {
    let tar_bytes = zstd::decode_all(bytes).unwrap();
    let mut a = tar::Archive::new(&tar_bytes[..]);
    a.entries()
        .unwrap()
        .map(|e| {
            let mut e = e.unwrap();
            let name = e.path_bytes().to_vec();
            let mut data = Vec::new();
            e.read_to_end(&mut data).unwrap();
            Raw {
                name,
                kind: tar::EntryType::Regular,
                data,
                declared: None,
                link: None,
            }
        })
        .collect()
}

fn code(bytes: &[u8]) -> ErrorCode {
    read_all(bytes, &Limits::default()).unwrap_err().code
}

fn manifest_with(f: impl FnOnce(&mut serde_json::Value)) -> Vec<Raw> {
    let mut es = entries_of(&written(&sample()));
    let mut m: serde_json::Value = serde_json::from_slice(&es[0].data).unwrap();
    f(&mut m);
    es[0].data = serde_json::to_vec(&m).unwrap();
    es
}

#[test]
fn a_newer_format_is_its_own_error() {
    let es = manifest_with(|m| m["format_version"] = 2.into());
    assert_eq!(
        code(&zst(&tar_of(&es))),
        ErrorCode::BundleUnsupportedVersion
    );
}

#[test]
fn a_missing_blob_is_its_own_error() {
    let mut es = entries_of(&written(&sample()));
    es.retain(|e| !e.name.starts_with(b"blobs/"));
    assert_eq!(code(&zst(&tar_of(&es))), ErrorCode::BundleMissingBlob);
}

#[test]
fn a_changed_byte_is_a_hash_mismatch() {
    let mut es = entries_of(&written(&sample()));
    let blob = es
        .iter_mut()
        .find(|e| e.name.starts_with(b"blobs/"))
        .unwrap();
    blob.data[0] ^= 1;
    assert_eq!(code(&zst(&tar_of(&es))), ErrorCode::BundleHashMismatch);
    // A record changed along with its table's entry hash in the manifest.
    let mut es = entries_of(&written(&sample()));
    let i = es
        .iter()
        .position(|e| e.name == b"tables/memories.jsonl")
        .unwrap();
    let text = String::from_utf8(es[i].data.clone())
        .unwrap()
        .replace("eyJhIjoxfQ==", "eyJhIjoyfQ==");
    es[i].data = text.into_bytes();
    let (sha, size) = (sha256_hex(&es[i].data), es[i].data.len());
    let mut m: serde_json::Value = serde_json::from_slice(&es[0].data).unwrap();
    for e in m["entries"].as_array_mut().unwrap() {
        if e["path"] == "tables/memories.jsonl" {
            e["sha256"] = sha.clone().into();
            e["size"] = size.into();
        }
    }
    es[0].data = serde_json::to_vec(&m).unwrap();
    assert_eq!(code(&zst(&tar_of(&es))), ErrorCode::BundleHashMismatch);
}

#[test]
fn hostile_entry_names_and_kinds_are_refused() {
    let good = entries_of(&written(&sample()));
    let manifest = &good[0].data;
    let cases: Vec<Raw> = vec![
        raw("../escape", b"x"),
        raw("/etc/passwd", b"x"),
        raw("blobs/../../escape", b"x"),
        raw("tables/../../x.jsonl", b"x"),
        raw("plugins/a/../../b/plugin.wasm", b"x"),
        Raw {
            kind: tar::EntryType::Symlink,
            link: Some("/etc/passwd"),
            ..raw("settings/mem.toml", b"")
        },
        Raw {
            kind: tar::EntryType::Link,
            link: Some("manifest.json"),
            ..raw("settings/mem.toml", b"")
        },
        Raw {
            kind: tar::EntryType::Directory,
            ..raw("tables/", b"")
        },
    ];
    for case in cases {
        let label = String::from_utf8_lossy(&case.name).to_string();
        let es = vec![raw("manifest.json", manifest), case];
        assert_eq!(
            code(&zst(&tar_of(&es))),
            ErrorCode::BundleInvalid,
            "{label}"
        );
    }
    // The manifest must come first, and as a regular file.
    let es = vec![Raw {
        kind: tar::EntryType::Symlink,
        link: Some("/etc/passwd"),
        ..raw("manifest.json", b"")
    }];
    assert_eq!(code(&zst(&tar_of(&es))), ErrorCode::BundleInvalid);
}

#[test]
fn a_duplicate_entry_is_refused() {
    let mut es = entries_of(&written(&sample()));
    let dup = raw(
        std::str::from_utf8(&es[1].name).unwrap(),
        &es[1].data.clone(),
    );
    es.push(dup);
    assert_eq!(code(&zst(&tar_of(&es))), ErrorCode::BundleInvalid);
}

#[test]
fn a_truncated_or_garbage_archive_is_invalid() {
    let bytes = written(&sample());
    for cut in [0, 1, 10, bytes.len() / 2, bytes.len() - 1] {
        assert_eq!(
            code(&bytes[..cut]),
            ErrorCode::BundleInvalid,
            "cut at {cut}"
        );
    }
    assert_eq!(code(b"PK\x03\x04 not a bundle"), ErrorCode::BundleInvalid);
    // A plain tar, not compressed.
    assert_eq!(code(&tar_of(&entries_of(&bytes))), ErrorCode::BundleInvalid);
}

#[test]
fn huge_declared_sizes_are_refused_before_reading() {
    // The manifest declares a blob of a terabyte.
    let es = manifest_with(|m| {
        let e = m["entries"]
            .as_array_mut()
            .unwrap()
            .iter_mut()
            .find(|e| e["path"].as_str().unwrap().starts_with("blobs/"));
        e.unwrap()["size"] = (1u64 << 40).into();
    });
    assert_eq!(code(&zst(&tar_of(&es))), ErrorCode::PayloadTooLarge);
    // A header that claims more than the manifest says.
    let mut es = entries_of(&written(&sample()));
    let blob = es
        .iter_mut()
        .find(|e| e.name.starts_with(b"blobs/"))
        .unwrap();
    blob.declared = Some(1 << 40);
    assert_eq!(code(&zst(&tar_of(&es))), ErrorCode::BundleHashMismatch);
    // A manifest past its own cap is never read.
    let es = vec![Raw {
        declared: Some(1 << 40),
        ..raw("manifest.json", b"{}")
    }];
    assert_eq!(code(&zst(&tar_of(&es))), ErrorCode::PayloadTooLarge);
}

#[test]
fn a_decompression_bomb_stops_at_the_cap() {
    // 64 MiB of zeros compresses to a few KiB; the caps are 1 MiB.
    let limits = Limits {
        max_entries: 16,
        max_total_bytes: 1 << 20,
        max_in_memory_bytes: 1 << 20,
    };
    let zeros = vec![0u8; 64 << 20];
    let bomb = zstd::encode_all(&zeros[..], 19).unwrap();
    assert!(bomb.len() < 64 << 10);
    let started = std::time::Instant::now();
    let e = read_all(&bomb, &limits).unwrap_err();
    // Zeros are an empty tar (end marker) or a cap hit; either way no bundle.
    assert!(
        matches!(
            e.code,
            ErrorCode::BundleInvalid | ErrorCode::PayloadTooLarge
        ),
        "{e}"
    );
    // A real bundle whose one blob entry is a bomb past the cap.
    let mut es = manifest_with(|m| {
        let e = m["entries"]
            .as_array_mut()
            .unwrap()
            .iter_mut()
            .find(|e| e["path"].as_str().unwrap().starts_with("blobs/"));
        e.unwrap()["size"] = (64u64 << 20).into();
    });
    let blob = es
        .iter_mut()
        .find(|e| e.name.starts_with(b"blobs/"))
        .unwrap();
    blob.data = zeros;
    let e = read_all(&zst(&tar_of(&es)), &limits).unwrap_err();
    assert_eq!(e.code, ErrorCode::PayloadTooLarge, "{e}");
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
}

#[test]
fn entry_names_parse_only_in_their_forms() {
    for good in [
        "manifest.json",
        "settings/mem.toml",
        "tables/file_paths.jsonl",
        "logs/audit.jsonl",
        "plugins/agents-md/plugin.wasm",
    ] {
        assert_eq!(
            EntryName::parse(good).map(|n| n.path()),
            Some(good.to_string())
        );
    }
    for bad in [
        "tables/Files.jsonl",
        "tables/.jsonl",
        "plugins/-x/plugin.wasm",
        "plugins/a/b/plugin.wasm",
        "blobs/ABC",
        "./manifest.json",
        "settings/mem.toml/",
    ] {
        assert_eq!(EntryName::parse(bad), None, "{bad}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// Whatever a damaged or hostile archive holds, reading it returns an
    /// error (or, untouched, the bundle): it never panics, and a bundle is
    /// only returned when every hash matched.
    #[test]
    fn damaged_archives_never_panic(
        cut in proptest::option::of(0usize..4096),
        flips in proptest::collection::vec((0usize..8192, any::<u8>()), 0..6),
        in_tar in any::<bool>(),
    ) {
        let good = written(&sample());
        let mut bytes = if in_tar { zstd::decode_all(&good[..]).unwrap() } else { good.clone() };
        let mut changed = false;
        for (at, x) in &flips {
            if *x != 0 && !bytes.is_empty() {
                let i = at % bytes.len();
                bytes[i] ^= x;
                changed = true;
            }
        }
        if let Some(c) = cut && c < bytes.len() {
            bytes.truncate(c);
            changed = true;
        }
        let bytes = if in_tar { zst(&bytes) } else { bytes };
        match read_all(&bytes, &Limits::default()) {
            Ok((b, keep)) => {
                // Only a change tar ignores (padding, header fields we do not
                // read) may still read, and then to the same bundle.
                prop_assert_eq!(b.tables.iter().map(|t| t.records.len()).sum::<usize>(), 2);
                prop_assert_eq!(keep.0, blobs());
            }
            Err(e) => prop_assert!(changed, "an untouched bundle failed: {e}"),
        }
    }

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048), framed in any::<bool>()) {
        let bytes = if framed { zst(&bytes) } else { bytes };
        prop_assert!(read_all(&bytes, &Limits::default()).is_err());
    }
}
