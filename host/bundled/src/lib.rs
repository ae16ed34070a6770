//! mem-bundled: the first-party plugins inside the mem-host binary, and
//! the hostile fixtures for tests.
//!
//! The key decision: plugins are built from `plugins/` source by this
//! crate's build script (a nested `cargo build --target wasm32-wasip2`,
//! once per change), never committed as binaries, and embedded, so
//! `mem-host init` can install them into a new workspace with nothing but
//! the binary. Fixtures are only referenced by path (never embedded).

use std::path::PathBuf;

use mem_core::plugin::{InstallOptions, PluginHost, PluginInfo, PluginManifest};
use mem_core::{ErrorCode, MemError, MemResult};

/// A first-party plugin embedded in the binary.
#[derive(Debug, Clone, Copy)]
pub struct BundledPlugin {
    pub name: &'static str,
    /// The plugin's `manifest.json` (with the sha256 of `wasm`).
    pub manifest_json: &'static str,
    pub wasm: &'static [u8],
}

impl BundledPlugin {
    pub fn manifest(&self) -> MemResult<PluginManifest> {
        serde_json::from_str(self.manifest_json).map_err(|e| {
            MemError::internal(format!(
                "the bundled manifest of plugin '{}' does not parse: {e}",
                self.name
            ))
        })
    }
}

include!(concat!(env!("OUT_DIR"), "/bundled.rs"));

/// The first-party plugins, in a stable order.
pub fn first_party() -> &'static [BundledPlugin] {
    FIRST_PARTY
}

/// One first-party plugin by name.
pub fn get(name: &str) -> Option<&'static BundledPlugin> {
    FIRST_PARTY.iter().find(|p| p.name == name)
}

/// Installs every first-party plugin (what `mem-host init` does).
/// With `replace`, installed copies are overwritten (an upgrade).
pub fn install_first_party(host: &dyn PluginHost, replace: bool) -> MemResult<Vec<PluginInfo>> {
    let mut out = Vec::new();
    for p in FIRST_PARTY {
        let manifest = p.manifest()?;
        match host.install(p.wasm, &manifest, InstallOptions { replace }) {
            Ok(info) => out.push(info),
            Err(e) if !replace && e.code == ErrorCode::AlreadyExists => {
                out.push(host.inspect(p.name)?)
            }
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}

/// A built test fixture: its folder holds `plugin.wasm` and `manifest.json`.
#[derive(Debug, Clone)]
pub struct Fixture {
    pub name: &'static str,
    pub dir: PathBuf,
}

impl Fixture {
    pub fn wasm_path(&self) -> PathBuf {
        self.dir.join("plugin.wasm")
    }

    pub fn manifest_path(&self) -> PathBuf {
        self.dir.join("manifest.json")
    }

    pub fn wasm(&self) -> MemResult<Vec<u8>> {
        std::fs::read(self.wasm_path()).map_err(|e| MemError::io("read fixture wasm", &e))
    }

    pub fn manifest(&self) -> MemResult<PluginManifest> {
        let text = std::fs::read_to_string(self.manifest_path())
            .map_err(|e| MemError::io("read fixture manifest", &e))?;
        serde_json::from_str(&text)
            .map_err(|e| MemError::internal(format!("fixture manifest: {e}")))
    }
}

/// A hostile fixture by name (`spin`, `alloc-bomb`, `huge-output`,
/// `panic`, `fs-read`, `wants-kv`, `wrong-wit`); see [`FIXTURE_NAMES`].
pub fn fixture(name: &str) -> Option<Fixture> {
    FIXTURE_NAMES.iter().find(|n| **n == name).map(|n| Fixture {
        name: n,
        dir: PathBuf::from(FIXTURES_DIR).join(n),
    })
}

/// The built `examples/csv-processor` component (a plugin made only with
/// the SDK; tests of the harness run it).
pub fn example_csv_wasm() -> PathBuf {
    PathBuf::from(EXAMPLE_CSV_WASM)
}

/// The example's data-driven cases (`examples/csv-processor/tests/cases`).
pub fn example_csv_cases() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/csv-processor/tests/cases")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundled_manifests_match_their_bytes() {
        assert!(!first_party().is_empty());
        for p in first_party() {
            let m = p.manifest().unwrap();
            assert_eq!(m.name, p.name);
            m.validate().unwrap();
            assert_eq!(m.sha256, mem_core::hash::sha256_hex(p.wasm), "{}", p.name);
        }
        assert!(get("text").is_some());
    }

    #[test]
    fn fixtures_exist_on_disk() {
        for name in FIXTURE_NAMES {
            let f = fixture(name).unwrap();
            assert!(f.wasm_path().is_file(), "{name}");
            assert_eq!(f.manifest().unwrap().name, *name);
        }
        assert!(fixture("nope").is_none());
    }
}
