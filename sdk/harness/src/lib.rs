//! mem-plugin-harness: run a plugin's `.wasm` the way mem-host runs it.
//!
//! A [`Harness`] is a throw-away workspace (temporary store and plugins
//! folder) around the real `mem-runtime`: installing verifies digest, WIT
//! version and world exactly like `mem-host plugin install`, calls run with
//! the production limits and only the capabilities you grant, and failures
//! come back as the same `plugin_failed` / `capability_denied` errors. So a
//! plugin that passes here behaves the same in a user's workspace.
//!
//! ```no_run
//! use mem_plugin_harness::Harness;
//! use mem_core::plugin::{Capability, PluginHost, World};
//! let h = Harness::new()?;
//! h.install_built("target/wasm32-wasip2/release/csv_processor.wasm", "csv", World::Processor, &[Capability::Config])?;
//! let out = h.process_path("csv", "tests/cases/people/input.csv")?;
//! assert!(!out.chunks.is_empty());
//! h.check_cases("csv", "tests/cases")?; // input.* + expected.json / error.txt
//! # Ok::<(), mem_core::MemError>(())
//! ```

use std::path::{Path, PathBuf};
use std::sync::Arc;

use mem_core::plugin::{
    Capability, ConfigValue, FileInput, InstallOptions, PluginHost, PluginInfo, PluginLimits,
    PluginManifest, PluginsConfig, ProcessedFile, World,
};
use mem_core::{ErrorCode, MemError, MemResult};
use mem_runtime::WasmPluginHost;

pub use mem_runtime::{CURRENT_WIT_VERSION, LoadStats};

/// A temporary workspace running plugins through the real runtime.
pub struct Harness {
    host: WasmPluginHost,
    /// Rewrite `expected.json` instead of comparing (`MEM_HOST_BLESS=1`).
    bless: bool,
    _dir: tempfile::TempDir,
}

impl std::fmt::Debug for Harness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Harness").field("host", &self.host).finish()
    }
}

/// A manifest for `wasm` (its sha256 computed) — what an author ships
/// beside the `.wasm` as `manifest.json`.
pub fn manifest_for(
    wasm: &[u8],
    name: &str,
    version: &str,
    world: World,
    capabilities: &[Capability],
) -> PluginManifest {
    PluginManifest {
        name: name.to_string(),
        version: version.to_string(),
        world,
        wit_version: CURRENT_WIT_VERSION.to_string(),
        description: String::new(),
        capabilities: capabilities.to_vec(),
        sha256: mem_core::hash::sha256_hex(wasm),
    }
}

fn read(path: &Path) -> MemResult<Vec<u8>> {
    std::fs::read(path).map_err(|e| MemError::io(&format!("read {}", path.display()), &e))
}

/// The MIME type mem-host would give a file name (the common cases).
pub fn mime_for(name: &str) -> &'static str {
    match name
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .as_deref()
    {
        Some("md" | "markdown") => "text/markdown",
        Some("csv") => "text/csv",
        Some("tsv") => "text/tab-separated-values",
        Some("json") => "application/json",
        Some("html" | "htm") => "text/html",
        Some("rs") => "text/x-rust",
        Some("py") => "text/x-python",
        Some("pdf") => "application/pdf",
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        _ => "text/plain",
    }
}

impl Harness {
    /// A fresh workspace with the default `[plugins]` settings (baseline
    /// grants `log` and `config`, default limits).
    pub fn new() -> MemResult<Self> {
        Self::with_config(PluginsConfig::default())
    }

    pub fn with_config(config: PluginsConfig) -> MemResult<Self> {
        let dir =
            tempfile::tempdir().map_err(|e| MemError::io("create a temporary workspace", &e))?;
        let store = mem_store::SledStore::open(&dir.path().join("store"))?;
        let host = WasmPluginHost::open(dir.path().join("plugins"), Arc::new(store), config, None)?;
        let bless = std::env::var_os("MEM_HOST_BLESS").is_some_and(|v| v == "1");
        Ok(Self {
            host,
            bless,
            _dir: dir,
        })
    }

    /// Whether [`Harness::check_cases`] rewrites `expected.json` (default:
    /// `MEM_HOST_BLESS=1` in the environment).
    pub fn set_bless(&mut self, bless: bool) {
        self.bless = bless;
    }

    /// The runtime, for calls of any world (`select`, `check_write`, ...).
    pub fn host(&self) -> &WasmPluginHost {
        &self.host
    }

    /// Installs a plugin from its `.wasm` and `manifest.json`, verified as in production.
    pub fn install(
        &self,
        wasm: impl AsRef<Path>,
        manifest: impl AsRef<Path>,
    ) -> MemResult<PluginInfo> {
        let wasm = read(wasm.as_ref())?;
        let text = read(manifest.as_ref())?;
        let manifest: PluginManifest = serde_json::from_slice(&text).map_err(|e| {
            MemError::new(
                ErrorCode::PluginInvalid,
                format!("manifest.json does not parse: {e}"),
            )
        })?;
        self.host
            .install(&wasm, &manifest, InstallOptions { replace: true })
    }

    /// Installs a freshly built `.wasm` under a manifest made on the spot.
    pub fn install_built(
        &self,
        wasm: impl AsRef<Path>,
        name: &str,
        world: World,
        capabilities: &[Capability],
    ) -> MemResult<PluginInfo> {
        let bytes = read(wasm.as_ref())?;
        let manifest = manifest_for(&bytes, name, "0.0.0", world, capabilities);
        self.host
            .install(&bytes, &manifest, InstallOptions { replace: true })
    }

    fn update(&self, f: impl FnOnce(&mut PluginsConfig) -> MemResult<()>) -> MemResult<()> {
        let mut config = self.host.config();
        f(&mut config)?;
        self.host.set_config(config)
    }

    /// Grants a capability (as `mem-host plugin grant NAME CAP` would).
    pub fn grant(&self, plugin: &str, capability: Capability) -> MemResult<()> {
        self.update(|c| c.grant(plugin, capability, &[]))
    }

    /// Grants read-only access to these host folders.
    pub fn grant_fs(&self, plugin: &str, folders: &[&Path]) -> MemResult<()> {
        let paths: Vec<String> = folders.iter().map(|p| p.display().to_string()).collect();
        self.update(|c| c.grant(plugin, Capability::Fs, &paths))
    }

    /// Takes every capability away, including the baseline ones.
    pub fn revoke_all(&self) -> MemResult<()> {
        self.update(|c| {
            c.baseline_grants.clear();
            for s in c.plugin.values_mut() {
                s.grants.clear();
                s.fs.clear();
            }
            Ok(())
        })
    }

    /// Sets a plugin's limits (unset fields keep the defaults).
    pub fn set_limits(&self, plugin: &str, limits: PluginLimits) -> MemResult<()> {
        self.update(|c| {
            c.plugin.entry(plugin.to_string()).or_default().limits = limits;
            c.validate()
        })
    }

    /// Sets one setting the plugin reads through `config`.
    pub fn set_config(&self, plugin: &str, key: &str, value: &str) -> MemResult<()> {
        self.update(|c| {
            c.plugin
                .entry(plugin.to_string())
                .or_default()
                .config
                .insert(key.to_string(), ConfigValue::Text(value.to_string()));
            Ok(())
        })
    }

    /// Runs processor `plugin` on in-memory bytes.
    pub fn process_bytes(
        &self,
        plugin: &str,
        name: &str,
        mime: &str,
        bytes: &[u8],
    ) -> MemResult<ProcessedFile> {
        let file = FileInput {
            id: "harness-file".into(),
            path: format!("/{name}"),
            name: name.to_string(),
            mime: mime.to_string(),
            bytes: bytes.to_vec(),
        };
        self.host.process(plugin, &file)
    }

    /// Runs processor `plugin` on a file from disk (MIME from its extension).
    pub fn process_path(&self, plugin: &str, path: impl AsRef<Path>) -> MemResult<ProcessedFile> {
        let path = path.as_ref();
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        self.process_bytes(plugin, &name, mime_for(&name), &read(path)?)
    }

    /// Data-driven cases: every sub-folder of `cases` holds one `input.*`
    /// file and either `expected.json` (the `ProcessedFile` the processor
    /// must produce) or `error.txt` (the error code it must fail with, e.g.
    /// `plugin_failed`). When blessing (`MEM_HOST_BLESS=1`), `expected.json` files are
    /// (re)written from the actual output. Fails listing every mismatch
    /// with a diff.
    pub fn check_cases(&self, plugin: &str, cases: impl AsRef<Path>) -> MemResult<usize> {
        let bless = self.bless;
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(cases.as_ref())
            .map_err(|e| MemError::io("list the cases folder", &e))?
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect();
        dirs.sort();
        let mut failures = Vec::new();
        for dir in &dirs {
            let input = std::fs::read_dir(dir)
                .map_err(|e| MemError::io("list a case folder", &e))?
                .flatten()
                .map(|e| e.path())
                .find(|p| p.file_stem().is_some_and(|s| s == "input"))
                .ok_or_else(|| {
                    MemError::bad_request(format!("case {} has no input.* file", dir.display()))
                })?;
            let result = self.process_path(plugin, &input);
            let error_file = dir.join("error.txt");
            let expected_file = dir.join("expected.json");
            if error_file.is_file() {
                let want = String::from_utf8_lossy(&read(&error_file)?)
                    .trim()
                    .to_string();
                match result {
                    Err(e) if e.code.as_str() == want => {}
                    Err(e) => failures.push(format!(
                        "{}: expected error {want}, got {}: {}",
                        dir.display(),
                        e.code,
                        e.message
                    )),
                    Ok(_) => failures.push(format!(
                        "{}: expected error {want}, got success",
                        dir.display()
                    )),
                }
                continue;
            }
            let actual = match result {
                Ok(p) => {
                    serde_json::to_string_pretty(&p)
                        .map_err(|e| MemError::internal(e.to_string()))?
                        + "\n"
                }
                Err(e) => {
                    failures.push(format!("{}: {e}", dir.display()));
                    continue;
                }
            };
            if bless {
                std::fs::write(&expected_file, &actual)
                    .map_err(|e| MemError::io("write expected.json", &e))?;
                continue;
            }
            let want = String::from_utf8_lossy(&read(&expected_file)?).into_owned();
            if want != actual {
                let diff = similar::TextDiff::from_lines(&want, &actual)
                    .unified_diff()
                    .header("expected", "actual")
                    .to_string();
                failures.push(format!(
                    "{}: output differs (MEM_HOST_BLESS=1 to accept)\n{diff}",
                    dir.display()
                ));
            }
        }
        if failures.is_empty() {
            Ok(dirs.len())
        } else {
            Err(MemError::bad_request(format!(
                "{} of {} cases failed:\n{}",
                failures.len(),
                dirs.len(),
                failures.join("\n")
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_a_fixture_with_production_limits_and_grants() {
        let h = Harness::new().unwrap();
        let spin = mem_bundled::fixture("spin").unwrap();
        h.install(spin.wasm_path(), spin.manifest_path()).unwrap();
        h.set_limits(
            "spin",
            PluginLimits {
                timeout_ms: Some(100),
                ..Default::default()
            },
        )
        .unwrap();
        let e = h
            .process_bytes("spin", "a.txt", "text/plain", b"x")
            .unwrap_err();
        assert_eq!(e.details["reason"], "deadline");

        let kv = mem_bundled::fixture("wants-kv").unwrap();
        h.install(kv.wasm_path(), kv.manifest_path()).unwrap();
        assert_eq!(
            h.process_bytes("wants-kv", "a.txt", "text/plain", b"x")
                .unwrap_err()
                .code,
            ErrorCode::CapabilityDenied
        );
        h.grant("wants-kv", Capability::Kv).unwrap();
        assert!(
            h.process_bytes("wants-kv", "a.txt", "text/plain", b"x")
                .is_ok()
        );
    }

    #[test]
    fn cases_pass_fail_and_bless() {
        let mut h = Harness::new().unwrap();
        h.set_bless(false);
        let text = mem_bundled::get("text").unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let wasm = tmp.path().join("text.wasm");
        std::fs::write(&wasm, text.wasm).unwrap();
        h.install_built(&wasm, "text", World::Processor, &[Capability::Config])
            .unwrap();

        let cases = tmp.path().join("cases");
        std::fs::create_dir_all(cases.join("md")).unwrap();
        std::fs::write(cases.join("md/input.md"), "# T\n\nbody\n").unwrap();
        let expected = h.process_path("text", cases.join("md/input.md")).unwrap();
        std::fs::write(
            cases.join("md/expected.json"),
            serde_json::to_string_pretty(&expected).unwrap() + "\n",
        )
        .unwrap();
        assert_eq!(h.check_cases("text", &cases).unwrap(), 1);

        std::fs::write(cases.join("md/expected.json"), "{}\n").unwrap();
        let e = h.check_cases("text", &cases).unwrap_err();
        assert!(e.message.contains("output differs"), "{}", e.message);
        h.set_bless(true);
        assert_eq!(h.check_cases("text", &cases).unwrap(), 1);
        h.set_bless(false);
        assert_eq!(
            h.check_cases("text", &cases).unwrap(),
            1,
            "blessing rewrote expected.json"
        );
    }

    #[test]
    fn the_example_csv_processor_passes_its_cases() {
        let mut h = Harness::new().unwrap();
        h.set_bless(false);
        h.install_built(
            mem_bundled::example_csv_wasm(),
            "csv",
            World::Processor,
            &[Capability::Log, Capability::Config],
        )
        .unwrap();
        assert_eq!(
            h.check_cases("csv", mem_bundled::example_csv_cases())
                .unwrap(),
            2
        );
        h.set_config("csv", "rows_per_chunk", "1").unwrap();
        let p = h
            .process_path(
                "csv",
                mem_bundled::example_csv_cases().join("people/input.csv"),
            )
            .unwrap();
        assert_eq!(p.chunks.len(), 3, "the config import reaches the plugin");
        assert_eq!(p.chunks[1].lines.locator(), "L3");
    }

    #[test]
    fn manifest_for_validates() {
        let m = manifest_for(
            b"\0asm",
            "csv",
            "1.2.3",
            World::Processor,
            &[Capability::Log],
        );
        m.validate().unwrap();
        assert_eq!(mime_for("a.CSV"), "text/csv");
    }
}
