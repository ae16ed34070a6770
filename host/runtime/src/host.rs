//! [`WasmPluginHost`]: the wasmtime implementation of
//! [`mem_core::plugin::PluginHost`].
//!
//! Phases (after Spin): *link* once at open (WASI p2 without network or
//! env, plus the `mem:plugin` host imports); *configure* at install and
//! first load (digest, WIT version, world, imports → a cached
//! `InstancePre`); *prepare* per call (a fresh `Store` with the call's
//! capabilities, limits and read-only preopens). A call never shares an
//! instance with another, so a trap poisons nothing.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use mem_core::index::Embedder;
use mem_core::plugin::{
    AdapterEntry, Capability, DetectItem, DetectedRelation, FailureReason, FileInput,
    InstallOptions, PluginHost, PluginInfo, PluginManifest, PluginsConfig, ProcessedFile,
    ProposalInput, ReadItem, ReadRequest, SelectCandidate, SelectQuery, Verdict, World,
    validate_plugin_name,
};
use mem_core::store::Store;
use mem_core::{ErrorCode, MemError, MemResult};
use parking_lot::{Mutex, RwLock};
use wasmtime::component::{HasSelf, InstancePre, Linker};
use wasmtime::{Trap, format_err};
use wasmtime_wasi::{FsPerms, WasiCtxBuilder};

use crate::bindings::v0_1_0 as v1;
use crate::bindings::v0_1_0::types as wit;
use crate::convert::{self, OutputSize};
use crate::engine::{EngineHandle, LoadStats};
use crate::failures::FailureLog;
use crate::install::{self, PluginDir};
use crate::state::{CallContext, CallState, CapturedOutput};

mod answers;
mod errors;
mod plugin_host;

use errors::{capability_denied, failed, internal};

/// A world's pre-instantiated component, ready for a fresh store per call.
enum WorldPre {
    Processor(v1::processor::ProcessorPre<CallState>),
    RelationDetector(v1::relation_detector::RelationDetectorPre<CallState>),
    Policy(v1::policy::PolicyPre<CallState>),
    Selector(v1::selector::SelectorPre<CallState>),
    Adapter(v1::adapter::AdapterPre<CallState>),
}

impl WorldPre {
    fn new(world: World, pre: InstancePre<CallState>) -> wasmtime::Result<Self> {
        Ok(match world {
            World::Processor => Self::Processor(v1::processor::ProcessorPre::new(pre)?),
            World::RelationDetector => {
                Self::RelationDetector(v1::relation_detector::RelationDetectorPre::new(pre)?)
            }
            World::Policy => Self::Policy(v1::policy::PolicyPre::new(pre)?),
            World::Selector => Self::Selector(v1::selector::SelectorPre::new(pre)?),
            World::Adapter => Self::Adapter(v1::adapter::AdapterPre::new(pre)?),
        })
    }
}

/// An installed plugin, verified and compiled.
struct Loaded {
    manifest: PluginManifest,
    pre: WorldPre,
    /// `accepts(mime)` answers (the WIT contract makes them cacheable).
    accepts: Mutex<HashMap<String, bool>>,
}

/// The wasmtime plugin runtime of one workspace.
///
/// Thread-safe: calls from any number of threads run concurrently, each in
/// its own store. Compilation happens once per plugin and process (or
/// never, when the on-disk cache is warm).
pub struct WasmPluginHost {
    root: PathBuf,
    cache_dir: PathBuf,
    engine: EngineHandle,
    linker: Linker<CallState>,
    store: Arc<dyn Store>,
    embedder: Option<Arc<dyn Embedder>>,
    config: RwLock<PluginsConfig>,
    /// Manifests of the installed plugins, by name.
    installed: RwLock<BTreeMap<String, PluginManifest>>,
    loaded: RwLock<HashMap<String, Arc<Loaded>>>,
    /// Serialises compiles and installs (no double work, no torn folders).
    load_lock: Mutex<()>,
    failures: FailureLog,
}

impl std::fmt::Debug for WasmPluginHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WasmPluginHost")
            .field("root", &self.root)
            .finish_non_exhaustive()
    }
}

impl WasmPluginHost {
    /// Opens the runtime over `plugins_dir` (`<workspace>/plugins`, created
    /// if missing). `store` holds the plugins' `kv` namespaces and failure
    /// counters; `embedder` backs the `embed` import when a model exists.
    pub fn open(
        plugins_dir: impl Into<PathBuf>,
        store: Arc<dyn Store>,
        config: PluginsConfig,
        embedder: Option<Arc<dyn Embedder>>,
    ) -> MemResult<Self> {
        config.validate()?;
        let root = plugins_dir.into();
        std::fs::create_dir_all(&root)
            .map_err(|e| MemError::io(&format!("create {}", root.display()), &e))?;
        let engine = EngineHandle::new().map_err(|e| internal("start the wasm engine", e))?;
        let mut linker = Linker::new(&engine.engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker).map_err(|e| internal("link WASI", e))?;
        v1::host::Host_::add_to_linker::<CallState, HasSelf<CallState>>(&mut linker, |s| s)
            .map_err(|e| internal("link the mem:plugin host imports", e))?;
        let host = Self {
            cache_dir: root.join(".cache"),
            root,
            engine,
            linker,
            failures: FailureLog::new(store.clone()),
            store,
            embedder,
            config: RwLock::new(config),
            installed: RwLock::new(BTreeMap::new()),
            loaded: RwLock::new(HashMap::new()),
            load_lock: Mutex::new(()),
        };
        host.rescan()?;
        host.prune_cache();
        Ok(host)
    }

    /// The folder holding the installed plugins.
    pub fn plugins_dir(&self) -> &Path {
        &self.root
    }

    /// How many components were compiled vs loaded from the disk cache.
    pub fn load_stats(&self) -> LoadStats {
        self.engine.stats()
    }

    /// Verifies and compiles (or loads from the disk cache) plugin `name`
    /// now rather than on its first call, e.g. at server start.
    pub fn preload(&self, name: &str) -> MemResult<()> {
        self.load(name).map(|_| ())
    }

    /// Re-reads the plugin folders (after another process changed them).
    pub fn rescan(&self) -> MemResult<()> {
        let mut found = BTreeMap::new();
        let entries = std::fs::read_dir(&self.root)
            .map_err(|e| MemError::io("list the plugins folder", &e))?;
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') || validate_plugin_name(&name).is_err() {
                continue;
            }
            let dir = PluginDir::new(&self.root, &name);
            if !dir.exists() {
                continue;
            }
            match dir.read_manifest() {
                Ok(m) if m.name == name => {
                    found.insert(name, m);
                }
                Ok(m) => {
                    tracing::warn!(folder = %name, manifest_name = %m.name, "plugin folder and manifest name differ; skipped")
                }
                Err(e) => {
                    tracing::warn!(plugin = %name, error = %e, "unreadable plugin manifest; skipped")
                }
            }
        }
        *self.installed.write() = found;
        self.loaded.write().clear();
        Ok(())
    }

    /// Deletes cache entries of other engine builds or of wasm no longer installed.
    fn prune_cache(&self) {
        let Ok(entries) = std::fs::read_dir(&self.cache_dir) else {
            return;
        };
        let digests: Vec<String> = self
            .installed
            .read()
            .values()
            .map(|m| m.sha256.clone())
            .collect();
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let keep = name
                .strip_suffix(".cwasm")
                .and_then(|stem| stem.split_once('-'))
                .is_some_and(|(digest, compat)| {
                    compat == self.engine.compat && digests.iter().any(|d| d == digest)
                });
            if !keep {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }

    fn manifest(&self, name: &str) -> MemResult<PluginManifest> {
        self.installed.read().get(name).cloned().ok_or_else(|| {
            MemError::new(ErrorCode::NotFound, format!("plugin '{name}' is not installed"))
                .with_hint("list installed plugins with `mem-host plugin list`; install one with `mem-host plugin install PATH`")
                .with_details(serde_json::json!({ "kind": "plugin", "id": name }))
        })
    }

    fn info(&self, manifest: PluginManifest) -> MemResult<PluginInfo> {
        let config = self.config.read();
        let name = manifest.name.clone();
        let granted = config.granted(&name);
        let requested = manifest.capabilities.clone();
        let effective: Vec<Capability> = requested
            .iter()
            .copied()
            .filter(|c| granted.contains(c))
            .collect();
        let missing: Vec<Capability> = requested
            .iter()
            .copied()
            .filter(|c| !granted.contains(c))
            .collect();
        let settings = config.settings(&name);
        Ok(PluginInfo {
            dir: self.root.join(&name).display().to_string(),
            enabled: settings.enabled,
            requested,
            granted,
            effective,
            missing,
            fs_paths: settings.fs,
            limits: config.limits_for(&name),
            failures: self.failures.get(&name)?,
            manifest,
        })
    }

    /// The verified, compiled plugin `name` (compiled or loaded from the
    /// cache on first use in this process).
    fn load(&self, name: &str) -> MemResult<Arc<Loaded>> {
        if let Some(l) = self.loaded.read().get(name) {
            return Ok(l.clone());
        }
        let _guard = self.load_lock.lock();
        if let Some(l) = self.loaded.read().get(name) {
            return Ok(l.clone());
        }
        let manifest = self.manifest(name)?;
        let wasm = PluginDir::new(&self.root, name).read_wasm()?;
        // Re-verified on every load: a plugin.wasm changed after install is refused.
        let digest = install::check_digest(&manifest, &wasm)?;
        install::check_wit_version(&manifest)?;
        let component = self
            .engine
            .load(&self.cache_dir, &digest, &wasm)
            .map_err(|e| {
                MemError::new(
                    ErrorCode::PluginInvalid,
                    format!("plugin '{name}' does not compile: {e}"),
                )
            })?;
        let loaded = Arc::new(self.prepare(&manifest, &component)?);
        self.loaded.write().insert(name.to_string(), loaded.clone());
        Ok(loaded)
    }

    /// Checks world and imports and pre-instantiates.
    fn prepare(
        &self,
        manifest: &PluginManifest,
        component: &wasmtime::component::Component,
    ) -> MemResult<Loaded> {
        install::check_component(&self.engine.engine, component, manifest)?;
        let name = &manifest.name;
        let pre = self.linker.instantiate_pre(component).map_err(|e| {
            MemError::new(
                ErrorCode::PluginInvalid,
                format!("plugin '{name}' imports something this host does not provide: {e:#}"),
            )
            .with_hint("plugins may import only mem:plugin host interfaces and WASI 0.2 (no network, no HTTP)")
            .with_details(serde_json::json!({ "plugin": name }))
        })?;
        let pre = WorldPre::new(manifest.world, pre).map_err(|e| {
            MemError::new(
                ErrorCode::PluginInvalid,
                format!(
                    "plugin '{name}' does not implement world '{}' correctly: {e:#}",
                    manifest.world
                ),
            )
            .with_details(serde_json::json!({ "plugin": name }))
        })?;
        Ok(Loaded {
            manifest: manifest.clone(),
            pre,
            accepts: Mutex::new(HashMap::new()),
        })
    }

    /// Runs one call of plugin `name` (which must be of `world`) in a fresh
    /// store, enforcing limits and classifying failures. `finish` validates
    /// and converts the result; its `Err` fails the call with reason `output`.
    fn call<R: OutputSize, O>(
        &self,
        name: &str,
        world: World,
        run: impl FnOnce(
            &WorldPre,
            &mut wasmtime::Store<CallState>,
        ) -> wasmtime::Result<Result<R, wit::PluginError>>,
        finish: impl FnOnce(R) -> Result<O, String>,
    ) -> MemResult<O> {
        let loaded = self.load(name)?;
        let manifest = &loaded.manifest;
        if manifest.world != world {
            return Err(MemError::new(
                ErrorCode::PluginInvalid,
                format!("plugin '{name}' is a {} plugin, not a {world}", manifest.world),
            )
            .with_hint(format!("configure a {world} plugin here; `mem-host plugin list` shows each plugin's world"))
            .with_details(serde_json::json!({ "plugin": name, "world": manifest.world, "expected_world": world })));
        }
        let (ctx, fs_paths) = {
            let config = self.config.read();
            let settings = config.settings(name);
            if !settings.enabled {
                return Err(MemError::new(
                    ErrorCode::InvalidState,
                    format!("plugin '{name}' is disabled"),
                )
                .with_hint(format!(
                    "set `enabled = true` in [plugins.{name}] of mem.toml"
                ))
                .with_details(serde_json::json!({ "plugin": name })));
            }
            let granted = config.granted(name);
            let effective: Vec<Capability> = manifest
                .capabilities
                .iter()
                .copied()
                .filter(|c| granted.contains(c))
                .collect();
            let fs_paths = if effective.contains(&Capability::Fs) {
                settings.fs.clone()
            } else {
                Vec::new()
            };
            let ctx = CallContext {
                name: name.to_string(),
                requested: manifest.capabilities.clone(),
                effective,
                config: settings
                    .config
                    .iter()
                    .map(|(k, v)| (k.clone(), v.to_string()))
                    .collect(),
                limits: config.limits_for(name),
                store: self.store.clone(),
                embedder: self.embedder.clone(),
            };
            (ctx, fs_paths)
        };
        let limits = ctx.limits;

        // No env, no args, no network (the default socket check denies
        // everything), stdin empty, stdout/stderr captured (first 8 KiB);
        // only the granted folders, read-only. Clocks and random stay at
        // WASI's defaults: Rust's std needs them and they expose nothing.
        let output = CapturedOutput::default();
        let mut wasi = WasiCtxBuilder::new();
        wasi.stdout(output.clone())
            .stderr(output.clone())
            .allow_blocking_current_thread(true);
        for path in &fs_paths {
            wasi.preopened_dir(path, path, FsPerms::ReadOnly).map_err(|e| {
                MemError::new(
                    ErrorCode::ConfigInvalid,
                    format!("plugin '{name}' is granted fs path '{path}', which cannot be opened: {e}"),
                )
                .with_hint(format!("fix or remove the path in [plugins.{name}] fs of mem.toml"))
                .with_details(serde_json::json!({ "plugin": name, "path": path }))
            })?;
        }
        let mut store = wasmtime::Store::new(
            &self.engine.engine,
            CallState::new(wasi.build(), Arc::new(ctx), output),
        );
        store.limiter(|s| &mut s.limiter);
        store.set_epoch_deadline(EngineHandle::deadline_ticks(limits.timeout_ms));
        store.epoch_deadline_trap();

        let started = Instant::now();
        let result = run(&loaded.pre, &mut store);
        let elapsed_ms = started.elapsed().as_millis();
        let state = store.data();
        let denial = state.denied.first().copied();

        let outcome: Result<O, (FailureReason, String)> = match result {
            Err(e) => {
                if state.limiter.exceeded {
                    Err((
                        FailureReason::Memory,
                        format!("exceeded its memory limit of {} bytes", limits.memory_bytes),
                    ))
                } else if e.downcast_ref::<Trap>() == Some(&Trap::Interrupt) {
                    Err((
                        FailureReason::Deadline,
                        format!("ran past its deadline of {} ms", limits.timeout_ms),
                    ))
                } else if let Some(d) = denial {
                    return Err(capability_denied(manifest, d));
                } else {
                    let stderr = state.stderr.text();
                    let mut message = format!("trapped: {}", e.root_cause());
                    if let Some(trap) = e.downcast_ref::<Trap>() {
                        message = format!("trapped: {trap}");
                    }
                    if !stderr.is_empty() {
                        message.push_str(&format!("; stderr: {stderr}"));
                    }
                    Err((FailureReason::Trap, message))
                }
            }
            Ok(Err(plugin_error)) => {
                if let Some(d) = denial {
                    return Err(capability_denied(manifest, d));
                }
                let err = failed(
                    manifest,
                    FailureReason::Error,
                    &format!("{}: {}", plugin_error.code, plugin_error.message),
                    &limits,
                );
                self.failures
                    .failed(name, FailureReason::Error, &err.message);
                let mut details = err.details.clone();
                details["plugin_error"] = serde_json::json!(plugin_error.code);
                return Err(err.with_details(details));
            }
            Ok(Ok(value)) => {
                let size = value.output_size();
                if size > limits.output_bytes {
                    Err((
                        FailureReason::Output,
                        format!(
                            "returned about {size} bytes, over its output limit of {} bytes",
                            limits.output_bytes
                        ),
                    ))
                } else {
                    finish(value).map_err(|m| {
                        (
                            FailureReason::Output,
                            format!("returned an invalid result: {m}"),
                        )
                    })
                }
            }
        };
        match outcome {
            Ok(v) => {
                tracing::debug!(plugin = name, elapsed_ms, "plugin call succeeded");
                self.failures.succeeded(name);
                Ok(v)
            }
            Err((reason, message)) => {
                let err = failed(manifest, reason, &message, &limits);
                tracing::warn!(
                    plugin = name,
                    reason = reason.as_str(),
                    elapsed_ms,
                    "{}",
                    err.message
                );
                self.failures.failed(name, reason, &message);
                Err(err)
            }
        }
    }

    fn accepts(&self, name: &str, mime: &str) -> MemResult<bool> {
        let loaded = self.load(name)?;
        if let Some(v) = loaded.accepts.lock().get(mime) {
            return Ok(*v);
        }
        let mime_owned = mime.to_string();
        let answer = self.call(
            name,
            World::Processor,
            |pre, store| match pre {
                WorldPre::Processor(p) => p
                    .instantiate(&mut *store)?
                    .mem_plugin_processor_api()
                    .call_accepts(&mut *store, &mime_owned)
                    .map(Ok),
                _ => Err(format_err!("not a processor")),
            },
            Ok,
        )?;
        loaded.accepts.lock().insert(mime.to_string(), answer);
        Ok(answer)
    }
}

fn not_world() -> wasmtime::Error {
    format_err!("the plugin's world changed under the call")
}
