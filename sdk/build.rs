//! Bakes the absolute path of the WIT contract into the SDK's export macro.
//!
//! `wit_bindgen::generate!` resolves relative paths against the crate that
//! *invokes* it — the plugin author's crate — so the export macro, which
//! expands there, must carry an absolute path to the WIT files the SDK was
//! built with.

use std::env;
use std::fs;
use std::path::PathBuf;

fn main() {
    let manifest_dir =
        PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    // In the repository the contract sits beside the SDK; a packaged SDK carries its own copy.
    let candidates = [
        manifest_dir.join("../wit/v0.1.0"),
        manifest_dir.join("wit/v0.1.0"),
    ];
    let wit = candidates
        .iter()
        .find(|p| p.join("worlds.wit").is_file())
        .unwrap_or_else(|| panic!("mem-plugin-sdk: WIT contract not found in {candidates:?}"));
    let wit = fs::canonicalize(wit).expect("canonicalize the WIT folder");
    println!("cargo:rerun-if-changed={}", wit.display());
    println!("cargo:rerun-if-changed=src/export_macro.rs.in");

    let template = fs::read_to_string(manifest_dir.join("src/export_macro.rs.in"))
        .expect("read export_macro.rs.in");
    let wit_str = wit.to_str().expect("the WIT path is UTF-8");
    let out = template.replace(
        "@WIT_DIR@",
        &wit_str.replace('\\', "\\\\").replace('"', "\\\""),
    );
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    fs::write(out_dir.join("export_macro.rs"), out).expect("write export_macro.rs");
    println!("cargo:rustc-env=MEM_PLUGIN_SDK_WIT_DIR={wit_str}");
}
