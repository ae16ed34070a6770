//! Verification of a plugin before it is installed or loaded, and its
//! folder layout: `<plugins>/<name>/plugin.wasm` + `manifest.json`.
//!
//! Checks, in order, each with an error a person can act on: manifest
//! fields; sha256 of the bytes; WIT version supported by this host; the
//! component's exports (the manifest's world, at the manifest's WIT
//! version); its imports (only what the linker provides).

use std::path::{Path, PathBuf};

use mem_core::plugin::{PluginManifest, World};
use mem_core::{ErrorCode, MemError, MemResult};
use wasmtime::Engine;
use wasmtime::component::Component;

use crate::bindings::{SUPPORTED_WIT_VERSIONS, is_supported};

pub(crate) const WASM_FILE: &str = "plugin.wasm";
pub(crate) const MANIFEST_FILE: &str = "manifest.json";
const WIT_PREFIX: &str = "mem:plugin/";

fn invalid(plugin: &str, message: String, hint: &str) -> MemError {
    MemError::new(ErrorCode::PluginInvalid, message)
        .with_hint(hint)
        .with_details(serde_json::json!({ "plugin": plugin }))
}

/// The file is a WebAssembly component (binary), not WebAssembly text, a
/// core module or anything else: each gets its own plain answer instead
/// of a parser's error about the wrong format.
pub(crate) fn check_component_header(name: &str, wasm: &[u8]) -> MemResult<()> {
    const MAGIC: &[u8] = b"\0asm";
    let invalid = |what: &str, hint: &str| {
        MemError::new(
            ErrorCode::PluginInvalid,
            format!("plugin '{name}' is not a WebAssembly component: {what}"),
        )
        .with_hint(hint.to_string())
        .with_details(serde_json::json!({ "plugin": name }))
    };
    if !wasm.starts_with(MAGIC) || wasm.len() < 8 {
        return Err(invalid(
            "the file is not WebAssembly at all (it does not start with \\0asm)",
            "install the .wasm file the plugin's build produced (cargo build --target wasm32-wasip2)",
        ));
    }
    // Bytes 4..8: a core module is version 1, layer 0; a component has layer 1.
    if wasm[6..8] == [0, 0] {
        return Err(invalid(
            "it is a core WebAssembly module",
            "build the plugin for wasm32-wasip2 (a Rust cdylib for that target is already a component), or wrap the module with `wasm-tools component new`",
        ));
    }
    Ok(())
}

/// The sha256 of `wasm` must be the manifest's.
pub(crate) fn check_digest(manifest: &PluginManifest, wasm: &[u8]) -> MemResult<String> {
    let actual = mem_core::hash::sha256_hex(wasm);
    if actual != manifest.sha256 {
        return Err(MemError::new(
            ErrorCode::PluginInvalid,
            format!(
                "plugin '{}': the wasm's sha256 {actual} does not match the manifest's {}",
                manifest.name, manifest.sha256
            ),
        )
        .with_hint("the file was modified or the manifest belongs to another build; get both from the same release, or reinstall the plugin")
        .with_details(serde_json::json!({
            "plugin": manifest.name,
            "expected_sha256": manifest.sha256,
            "actual_sha256": actual,
        })));
    }
    Ok(actual)
}

fn supported_list() -> String {
    SUPPORTED_WIT_VERSIONS
        .iter()
        .map(|v| format!("mem:plugin@{v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn version_error(plugin: &str, plugin_version: &str) -> MemError {
    MemError::new(
        ErrorCode::PluginInvalid,
        format!(
            "plugin '{plugin}' was built against mem:plugin@{plugin_version}; this host supports {}",
            supported_list()
        ),
    )
    .with_hint("rebuild the plugin against a supported version of mem-plugin-sdk, or upgrade mem-host")
    .with_details(serde_json::json!({
        "plugin": plugin,
        "plugin_wit_version": plugin_version,
        "host_wit_versions": SUPPORTED_WIT_VERSIONS,
    }))
}

/// The manifest's WIT version must be one this host serves.
pub(crate) fn check_wit_version(manifest: &PluginManifest) -> MemResult<()> {
    if is_supported(&manifest.wit_version) {
        Ok(())
    } else {
        Err(version_error(&manifest.name, &manifest.wit_version))
    }
}

/// `mem:plugin/processor-api@0.1.0` → `("processor-api", "0.1.0")`.
fn split_wit_name(name: &str) -> Option<(&str, &str)> {
    let rest = name.strip_prefix(WIT_PREFIX)?;
    rest.split_once('@')
}

/// The component must export the manifest world's interface at the
/// manifest's WIT version, and import `mem:plugin` only at that version.
pub(crate) fn check_component(
    engine: &Engine,
    component: &Component,
    manifest: &PluginManifest,
) -> MemResult<()> {
    let ty = component.component_type();
    let exports: Vec<String> = ty.exports(engine).map(|(n, _)| n.to_string()).collect();
    let imports: Vec<String> = ty.imports(engine).map(|(n, _)| n.to_string()).collect();
    let ours: Vec<(&str, &str)> = exports.iter().filter_map(|n| split_wit_name(n)).collect();
    let name = &manifest.name;
    if ours.is_empty() {
        return Err(invalid(
            name,
            format!(
                "plugin '{name}' exports no mem:plugin interface (it exports: {})",
                if exports.is_empty() {
                    "nothing".to_string()
                } else {
                    exports.join(", ")
                }
            ),
            "build the plugin with mem-plugin-sdk's export_plugin! macro for wasm32-wasip2",
        ));
    }
    for (_, version) in ours.iter().chain(
        imports
            .iter()
            .filter_map(|n| split_wit_name(n))
            .collect::<Vec<_>>()
            .iter(),
    ) {
        if *version != manifest.wit_version {
            if !is_supported(version) {
                return Err(version_error(name, version));
            }
            return Err(invalid(
                name,
                format!(
                    "plugin '{name}' was built against mem:plugin@{version} but its manifest says wit_version {}",
                    manifest.wit_version
                ),
                "fix wit_version in manifest.json to the version the plugin was built with",
            ));
        }
    }
    let expected = format!("{}-api", manifest.world.as_str());
    if !ours.iter().any(|(iface, _)| *iface == expected) {
        let found: Vec<String> = ours
            .iter()
            .map(|(iface, _)| {
                let world = iface.strip_suffix("-api").unwrap_or(iface);
                World::parse(world).map_or_else(|| (*iface).to_string(), |w| w.as_str().to_string())
            })
            .collect();
        return Err(invalid(
            name,
            format!(
                "plugin '{name}': the manifest says world '{}' but the component implements {}",
                manifest.world,
                found.join(", ")
            ),
            "fix world in manifest.json, or install the right .wasm",
        ));
    }
    Ok(())
}

/// A plugin folder's files.
pub(crate) struct PluginDir {
    pub dir: PathBuf,
}

impl PluginDir {
    pub fn new(root: &Path, name: &str) -> Self {
        Self {
            dir: root.join(name),
        }
    }

    pub fn exists(&self) -> bool {
        self.dir.join(MANIFEST_FILE).is_file()
    }

    pub fn read_manifest(&self) -> MemResult<PluginManifest> {
        let path = self.dir.join(MANIFEST_FILE);
        let bytes = std::fs::read(&path)
            .map_err(|e| MemError::io(&format!("read {}", path.display()), &e))?;
        serde_json::from_slice(&bytes).map_err(|e| {
            MemError::new(
                ErrorCode::PluginInvalid,
                format!("{} is not a valid plugin manifest: {e}", path.display()),
            )
            .with_hint("reinstall the plugin with `mem-host plugin install`")
        })
    }

    pub fn read_wasm(&self) -> MemResult<Vec<u8>> {
        let path = self.dir.join(WASM_FILE);
        std::fs::read(&path).map_err(|e| MemError::io(&format!("read {}", path.display()), &e))
    }
}

/// Writes a verified plugin as `<root>/<name>/` atomically: a temporary
/// folder renamed into place (the previous folder, if replaced, removed
/// afterwards).
pub(crate) fn write_plugin(
    root: &Path,
    manifest: &PluginManifest,
    wasm: &[u8],
) -> MemResult<PathBuf> {
    let io = |what: &str, e: std::io::Error| MemError::io(what, &e);
    let pid = std::process::id();
    let tmp = root.join(format!(".install-{}-{pid}", manifest.name));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).map_err(|e| io("create the plugin folder", e))?;
    let json =
        serde_json::to_vec_pretty(manifest).map_err(|e| MemError::internal(e.to_string()))?;
    let written = std::fs::write(tmp.join(WASM_FILE), wasm)
        .and_then(|()| std::fs::write(tmp.join(MANIFEST_FILE), json))
        .map_err(|e| io("write the plugin files", e));
    if let Err(e) = written {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(e);
    }
    let target = root.join(&manifest.name);
    let old = root.join(format!(".old-{}-{pid}", manifest.name));
    if target.exists() {
        std::fs::rename(&target, &old).map_err(|e| io("move the previous plugin aside", e))?;
    }
    if let Err(e) = std::fs::rename(&tmp, &target) {
        if old.exists() {
            let _ = std::fs::rename(&old, &target);
        }
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(io("move the plugin into place", e));
    }
    if old.exists() {
        let _ = std::fs::remove_dir_all(&old);
    }
    Ok(target)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: a non-wasm file was reported as a WebAssembly-text
    /// parse error, a core module as "failed to parse".
    #[test]
    fn regression_what_is_not_a_component_is_called_so() {
        for (bytes, says) in [
            (&b"#!/bin/sh\necho hi\n"[..], "not WebAssembly at all"),
            (&b"(module)"[..], "not WebAssembly at all"),
            (&b"\0asm\x01\0\0\0"[..], "core WebAssembly module"),
        ] {
            let e = check_component_header("p", bytes).unwrap_err();
            assert_eq!(e.code, ErrorCode::PluginInvalid);
            assert!(
                e.message.contains("not a WebAssembly component"),
                "{}",
                e.message
            );
            assert!(e.message.contains(says), "{}", e.message);
        }
        assert!(check_component_header("p", b"\0asm\x0d\0\x01\0").is_ok());
    }

    #[test]
    fn wit_names_split() {
        assert_eq!(
            split_wit_name("mem:plugin/processor-api@0.1.0"),
            Some(("processor-api", "0.1.0"))
        );
        assert_eq!(split_wit_name("wasi:cli/run@0.2.0"), None);
    }

    #[test]
    fn version_error_names_both_versions() {
        let e = version_error("x", "0.9.0");
        assert!(e.message.contains("mem:plugin@0.9.0"), "{}", e.message);
        assert!(e.message.contains("mem:plugin@0.1.0"), "{}", e.message);
        assert_eq!(e.details["plugin_wit_version"], "0.9.0");
    }
}
