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
    ProposalInput, ReadItem, ReadRequest, ResolvedLimits, SelectCandidate, SelectQuery, Verdict,
    World, validate_plugin_name,
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
use crate::state::{CallContext, CallState, CapturedOutput, Denial};

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

fn internal(context: &str, e: impl std::fmt::Display) -> MemError {
    MemError::internal(format!("{context}: {e}"))
}

/// `plugin_failed`, with the reason and the limit that applied.
fn failed(
    manifest: &PluginManifest,
    reason: FailureReason,
    message: &str,
    limits: &ResolvedLimits,
) -> MemError {
    let name = &manifest.name;
    let hint = match reason {
        FailureReason::Deadline => format!(
            "the call ran past {} ms; if the input is legitimately large raise [plugins.{name}.limits] timeout_ms in mem.toml, otherwise report the plugin to its author",
            limits.timeout_ms
        ),
        FailureReason::Memory => format!(
            "the call needed more than {} MiB; raise [plugins.{name}.limits] memory_mib in mem.toml if that is expected",
            limits.memory_bytes / (1024 * 1024)
        ),
        FailureReason::Output => format!(
            "the plugin returned more than {} KiB or an invalid result; raise [plugins.{name}.limits] output_kib if its output is legitimate, otherwise report it to its author",
            limits.output_bytes / 1024
        ),
        FailureReason::Trap => format!(
            "the plugin crashed; `mem-host plugin inspect {name}` shows repeated failures; report it to its author"
        ),
        FailureReason::Error => "the plugin rejected this input; see the message".to_string(),
    };
    let code = if reason == FailureReason::Error {
        ErrorCode::PluginRejected
    } else {
        ErrorCode::PluginFailed
    };
    MemError::new(
        code,
        format!(
            "plugin '{name}' {} failed ({}): {message}",
            manifest.version,
            reason.as_str()
        ),
    )
    .with_hint(hint)
    .with_details(serde_json::json!({
        "plugin": name,
        "version": manifest.version,
        "reason": reason.as_str(),
    }))
}

fn capability_denied(manifest: &PluginManifest, denial: Denial) -> MemError {
    let name = &manifest.name;
    let cap = denial.capability;
    let (message, hint) = if denial.requested {
        (
            format!(
                "plugin '{name}' {} needs capability '{cap}', which this workspace has not granted",
                manifest.version
            ),
            if cap == Capability::Fs {
                format!("run `mem-host plugin grant {name} fs --path /folder/to/expose`")
            } else {
                format!("run `mem-host plugin grant {name} {cap}`")
            },
        )
    } else {
        (
            format!(
                "plugin '{name}' {} used capability '{cap}' without requesting it in its manifest",
                manifest.version
            ),
            format!(
                "the plugin's author must add \"{cap}\" to capabilities in manifest.json; after reinstalling, run `mem-host plugin grant {name} {cap}`"
            ),
        )
    };
    MemError::new(ErrorCode::CapabilityDenied, message)
        .with_hint(hint)
        .with_details(serde_json::json!({
            "plugin": name,
            "version": manifest.version,
            "capability": cap.as_str(),
            "requested": denial.requested,
        }))
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

/// Checks a selector's answer: a duplicate-free subset of the candidate
/// ids, at most `limit` long.
pub(crate) fn validate_selection(
    ids: &[String],
    candidates: &[SelectCandidate],
    limit: u32,
) -> Result<(), String> {
    if ids.len() > limit as usize {
        return Err(format!("{} ids for a limit of {limit}", ids.len()));
    }
    let known: std::collections::HashSet<&str> = candidates.iter().map(|c| c.id.as_str()).collect();
    let mut seen = std::collections::HashSet::new();
    for id in ids {
        if !known.contains(id.as_str()) {
            return Err(format!("id '{id}' is not one of the candidates"));
        }
        if !seen.insert(id.as_str()) {
            return Err(format!("id '{id}' appears twice"));
        }
    }
    Ok(())
}

/// Checks a processor's answer: every line range is `1 <= start <= end`.
pub(crate) fn validate_processed(p: &ProcessedFile) -> Result<(), String> {
    let bad = |r: &mem_core::plugin::LineRange| r.start == 0 || r.start > r.end;
    if let Some((i, c)) = p.chunks.iter().enumerate().find(|(_, c)| bad(&c.lines)) {
        return Err(format!(
            "chunk {i} has line range {}-{}",
            c.lines.start, c.lines.end
        ));
    }
    if let Some(e) = p
        .entities
        .iter()
        .find(|e| e.lines.as_ref().is_some_and(bad))
    {
        return Err(format!("entity '{}' has an invalid line range", e.value));
    }
    Ok(())
}

/// Checks a detector's answer: targets are candidate ids, scores in [0, 1].
/// Longest side of a relation's `difference`: it is stored on the memory
/// and shown in every pack, so a detector cannot copy whole texts into it.
const MAX_DIFFERENCE_CHARS: usize = 200;

pub(crate) fn validate_relations(
    rels: &[DetectedRelation],
    candidates: &[DetectItem],
) -> Result<(), String> {
    for r in rels {
        if !candidates.iter().any(|c| c.id == r.target) {
            return Err(format!(
                "relation target '{}' is not one of the candidates",
                r.target
            ));
        }
        if !(0.0..=1.0).contains(&r.score) {
            return Err(format!("relation score {} is outside [0, 1]", r.score));
        }
        if let Some(d) = &r.difference
            && (d.this.chars().count() > MAX_DIFFERENCE_CHARS
                || d.other.chars().count() > MAX_DIFFERENCE_CHARS)
        {
            return Err(format!(
                "a relation difference is longer than {MAX_DIFFERENCE_CHARS} characters"
            ));
        }
    }
    Ok(())
}

impl PluginHost for WasmPluginHost {
    fn list(&self) -> MemResult<Vec<PluginInfo>> {
        let manifests: Vec<PluginManifest> = self.installed.read().values().cloned().collect();
        manifests.into_iter().map(|m| self.info(m)).collect()
    }

    fn install(
        &self,
        wasm: &[u8],
        manifest: &PluginManifest,
        options: InstallOptions,
    ) -> MemResult<PluginInfo> {
        manifest.validate()?;
        install::check_component_header(&manifest.name, wasm)?;
        let digest = install::check_digest(manifest, wasm)?;
        install::check_wit_version(manifest)?;
        let name = &manifest.name;
        let _guard = self.load_lock.lock();
        if !options.replace && self.installed.read().contains_key(name) {
            return Err(MemError::new(
                ErrorCode::AlreadyExists,
                format!("plugin '{name}' is already installed"),
            )
            .with_hint(format!(
                "remove it first with `mem-host plugin remove {name}`, or install with --replace"
            ))
            .with_details(serde_json::json!({ "plugin": name })));
        }
        let compiled = self.engine.precompile(wasm).map_err(|e| {
            MemError::new(ErrorCode::PluginInvalid, format!("plugin '{name}' is not a valid WebAssembly component: {e}"))
                .with_hint("build it with `cargo build --release --target wasm32-wasip2` against mem-plugin-sdk")
                .with_details(serde_json::json!({ "plugin": name }))
        })?;
        let component = self
            .engine
            .load_precompiled(&compiled)
            .map_err(|e| internal("load the compiled plugin", e))?;
        let loaded = self.prepare(manifest, &component)?;
        // Every check passed: now write.
        install::write_plugin(&self.root, manifest, wasm)?;
        if let Err(e) = self.engine.store_cache(&self.cache_dir, &digest, &compiled) {
            tracing::warn!(plugin = %name, error = %e, "cannot write the compiled-plugin cache");
        }
        let previous = self
            .installed
            .write()
            .insert(name.clone(), manifest.clone());
        if previous.is_some_and(|p| p.sha256 != manifest.sha256) {
            self.failures.reset(name)?;
        }
        self.loaded.write().insert(name.clone(), Arc::new(loaded));
        self.info(manifest.clone())
    }

    fn inspect(&self, name: &str) -> MemResult<PluginInfo> {
        self.info(self.manifest(name)?)
    }

    fn package(&self, name: &str) -> MemResult<(PluginManifest, Vec<u8>)> {
        let manifest = self.manifest(name)?;
        let wasm = PluginDir::new(&self.root, name).read_wasm()?;
        // What leaves the workspace is what was verified at install.
        install::check_digest(&manifest, &wasm)?;
        Ok((manifest, wasm))
    }

    fn remove(&self, name: &str) -> MemResult<()> {
        self.manifest(name)?;
        let _guard = self.load_lock.lock();
        let dir = self.root.join(name);
        std::fs::remove_dir_all(&dir)
            .map_err(|e| MemError::io(&format!("remove {}", dir.display()), &e))?;
        self.installed.write().remove(name);
        self.loaded.write().remove(name);
        self.failures.reset(name)?;
        self.prune_cache();
        Ok(())
    }

    fn set_config(&self, config: PluginsConfig) -> MemResult<()> {
        config.validate()?;
        *self.config.write() = config;
        Ok(())
    }

    fn config(&self) -> PluginsConfig {
        self.config.read().clone()
    }

    fn processors_for(&self, mime: &str) -> MemResult<Vec<String>> {
        let candidates: Vec<String> = {
            let config = self.config.read();
            self.installed
                .read()
                .values()
                .filter(|m| m.world == World::Processor && config.settings(&m.name).enabled)
                .map(|m| m.name.clone())
                .collect()
        };
        let mut out = Vec::new();
        for name in candidates {
            match self.accepts(&name, mime) {
                Ok(true) => out.push(name),
                Ok(false) => {}
                Err(e) => {
                    tracing::warn!(plugin = %name, error = %e, "processor skipped: accepts() failed")
                }
            }
        }
        Ok(out)
    }

    fn process(&self, plugin: &str, file: &FileInput) -> MemResult<ProcessedFile> {
        let input = convert::file_in(file);
        self.call(
            plugin,
            World::Processor,
            |pre, store| match pre {
                WorldPre::Processor(p) => p
                    .instantiate(&mut *store)?
                    .mem_plugin_processor_api()
                    .call_process(&mut *store, &input),
                _ => Err(not_world()),
            },
            |p| {
                let p = convert::processed_out(p);
                validate_processed(&p).map(|()| p)
            },
        )
    }

    fn select(
        &self,
        plugin: &str,
        candidates: &[SelectCandidate],
        query: &SelectQuery,
        limit: u32,
    ) -> MemResult<Vec<String>> {
        let input: Vec<wit::Candidate> = candidates.iter().map(convert::candidate_in).collect();
        let q = convert::query_in(query);
        self.call(
            plugin,
            World::Selector,
            |pre, store| match pre {
                WorldPre::Selector(p) => p
                    .instantiate(&mut *store)?
                    .mem_plugin_selector_api()
                    .call_select(&mut *store, &input, &q, limit),
                _ => Err(not_world()),
            },
            |ids| validate_selection(&ids, candidates, limit).map(|()| ids),
        )
    }

    fn check_write(&self, plugin: &str, proposal: &ProposalInput) -> MemResult<Verdict> {
        let input = convert::proposal_in(proposal);
        self.call(
            plugin,
            World::Policy,
            |pre, store| match pre {
                WorldPre::Policy(p) => p
                    .instantiate(&mut *store)?
                    .mem_plugin_policy_api()
                    .call_check_write(&mut *store, &input),
                _ => Err(not_world()),
            },
            |v| Ok(convert::verdict_out(v)),
        )
    }

    fn check_read(
        &self,
        plugin: &str,
        item: &ReadItem,
        request: &ReadRequest,
    ) -> MemResult<Verdict> {
        let item = convert::read_item_in(item);
        let request = convert::read_request_in(request);
        self.call(
            plugin,
            World::Policy,
            |pre, store| match pre {
                WorldPre::Policy(p) => p
                    .instantiate(&mut *store)?
                    .mem_plugin_policy_api()
                    .call_check_read(&mut *store, &item, &request),
                _ => Err(not_world()),
            },
            |v| Ok(convert::verdict_out(v)),
        )
    }

    fn detect(
        &self,
        plugin: &str,
        subject: &DetectItem,
        candidates: &[DetectItem],
    ) -> MemResult<Vec<DetectedRelation>> {
        let s = convert::item_in(subject);
        let cs: Vec<wit::Item> = candidates.iter().map(convert::item_in).collect();
        self.call(
            plugin,
            World::RelationDetector,
            |pre, store| match pre {
                WorldPre::RelationDetector(p) => p
                    .instantiate(&mut *store)?
                    .mem_plugin_relation_detector_api()
                    .call_detect(&mut *store, &s, &cs),
                _ => Err(not_world()),
            },
            |rels| {
                let rels: Vec<DetectedRelation> =
                    rels.into_iter().map(convert::relation_out).collect();
                validate_relations(&rels, candidates).map(|()| rels)
            },
        )
    }

    fn import(&self, plugin: &str, name: &str, bytes: &[u8]) -> MemResult<Vec<AdapterEntry>> {
        self.call(
            plugin,
            World::Adapter,
            |pre, store| match pre {
                WorldPre::Adapter(p) => p
                    .instantiate(&mut *store)?
                    .mem_plugin_adapter_api()
                    .call_import(&mut *store, name, bytes),
                _ => Err(not_world()),
            },
            |entries| Ok(entries.into_iter().map(convert::entry_out).collect()),
        )
    }

    fn export(&self, plugin: &str, name: &str, entries: &[AdapterEntry]) -> MemResult<Vec<u8>> {
        let input: Vec<wit::Entry> = entries.iter().map(convert::entry_in).collect();
        self.call(
            plugin,
            World::Adapter,
            |pre, store| match pre {
                WorldPre::Adapter(p) => p
                    .instantiate(&mut *store)?
                    .mem_plugin_adapter_api()
                    .call_export(&mut *store, name, &input),
                _ => Err(not_world()),
            },
            Ok,
        )
    }
}
