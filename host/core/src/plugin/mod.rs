//! The plugin seam: what the service layer needs from the WebAssembly
//! plugin runtime. Implemented by `mem-runtime`.
//!
//! - `manifest`: worlds, capabilities, manifests, failure counters;
//! - `records`: the records exchanged with plugins, the one hand-written
//!   mirror of the WIT records of `wit/v0.1.0` (the runtime and the SDK use
//!   generated bindings and convert at their edge), so business logic never
//!   sees a wasmtime type and a new WIT version only changes the runtime;
//! - `host`: the [`PluginHost`] trait, the one door to plugins;
//! - `config`: the `[plugins]` table of `mem.toml` ([`PluginsConfig`]).

mod config;
mod host;
mod manifest;
mod records;

pub use config::*;
pub use host::*;
pub use manifest::*;
pub use records::*;

/// The newest WIT package version this build of the contract describes.
pub const WIT_PACKAGE: &str = "mem:plugin";
