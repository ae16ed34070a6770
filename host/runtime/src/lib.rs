//! mem-runtime: the WebAssembly plugin runtime of mem-host.
//!
//! It implements [`mem_core::plugin::PluginHost`] with wasmtime's component
//! model, so the service layer never sees a wasmtime type. The key
//! decision: every call gets a fresh `Store` from a cached `InstancePre`
//! (microseconds), with an epoch deadline, a memory cap, an output cap and
//! exactly the capabilities that the plugin's manifest requests AND the
//! workspace grants; a plugin that misbehaves fails that one call with a
//! structured `plugin_failed` error and cannot affect the next.
//!
//! ```no_run
//! # use std::sync::Arc;
//! # fn demo(store: Arc<dyn mem_core::store::Store>) -> mem_core::MemResult<()> {
//! use mem_core::plugin::{PluginHost, PluginsConfig};
//! let host = mem_runtime::WasmPluginHost::open("/ws/plugins", store, PluginsConfig::recommended(), None)?;
//! for p in host.list()? { println!("{} ({})", p.manifest.name, p.manifest.world); }
//! # Ok(()) }
//! ```

mod bindings;
mod convert;
mod engine;
mod failures;
mod host;
mod install;
mod kv;
mod state;

pub use bindings::{CURRENT_WIT_VERSION, SUPPORTED_WIT_VERSIONS};
pub use engine::LoadStats;
pub use host::WasmPluginHost;
