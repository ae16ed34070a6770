//! The wasmtime engine, its epoch ticker, and the on-disk cache of
//! compiled components.
//!
//! Deadlines use epoch interruption rather than fuel: it costs a counter
//! check per loop back-edge instead of per instruction, and a wall-clock
//! deadline is what protects a worker thread. The ticker runs on its own
//! OS thread so a runaway guest cannot starve it.
//!
//! Compiled components are cached as `<cache>/<wasm sha256>-<engine
//! hash>.cwasm`, where the engine hash is `precompile_compatibility_hash()`
//! (wasmtime version + `Config`), so a cache written by another build is
//! never loaded, only recompiled.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use sha2::{Digest, Sha256};
use wasmtime::component::Component;
use wasmtime::{Config, Engine};

/// Epoch tick. A deadline fires within one tick of its time; 5 ms keeps
/// the overshoot small at negligible cost (one atomic add per tick).
pub(crate) const EPOCH_TICK: Duration = Duration::from_millis(5);

/// How the compiled form of a component was obtained (for the cache test
/// and the bench).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LoadStats {
    /// Components compiled from `.wasm` (cold).
    pub compiled: u64,
    /// Components loaded from the on-disk cache (warm).
    pub cache_hits: u64,
}

pub(crate) struct EngineHandle {
    pub engine: Engine,
    /// Hex prefix of the engine's compatibility hash: part of cache keys.
    pub compat: String,
    stop: Arc<AtomicBool>,
    ticker: Option<JoinHandle<()>>,
    compiled: AtomicU64,
    cache_hits: AtomicU64,
}

/// Feeds `Hash` output into SHA-256, giving a hash that is stable across
/// processes (unlike `DefaultHasher`'s contract).
struct Sha256Hasher(Sha256);

impl Hasher for Sha256Hasher {
    fn finish(&self) -> u64 {
        let digest = self.0.clone().finalize();
        let mut first = [0u8; 8];
        first.copy_from_slice(&digest[..8]);
        u64::from_le_bytes(first)
    }

    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
}

impl EngineHandle {
    pub fn new() -> wasmtime::Result<Self> {
        let mut config = Config::new();
        config.wasm_component_model(true);
        config.epoch_interruption(true);
        let engine = Engine::new(&config)?;

        let mut hasher = Sha256Hasher(Sha256::new());
        engine.precompile_compatibility_hash().hash(&mut hasher);
        let compat = hex::encode(&hasher.0.finalize()[..8]);

        let stop = Arc::new(AtomicBool::new(false));
        let ticker = {
            let engine = engine.clone();
            let stop = stop.clone();
            std::thread::Builder::new()
                .name("mem-plugin-epoch".into())
                .spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        std::thread::sleep(EPOCH_TICK);
                        engine.increment_epoch();
                    }
                })
                .map_err(|e| wasmtime::format_err!("cannot start the epoch ticker thread: {e}"))?
        };
        Ok(Self {
            engine,
            compat,
            stop,
            ticker: Some(ticker),
            compiled: AtomicU64::new(0),
            cache_hits: AtomicU64::new(0),
        })
    }

    /// Epoch ticks covering `timeout_ms` (at least one).
    pub fn deadline_ticks(timeout_ms: u64) -> u64 {
        let tick = EPOCH_TICK.as_millis() as u64;
        timeout_ms.div_ceil(tick).max(1)
    }

    pub fn stats(&self) -> LoadStats {
        LoadStats {
            compiled: self.compiled.load(Ordering::Relaxed),
            cache_hits: self.cache_hits.load(Ordering::Relaxed),
        }
    }

    pub fn cache_path(&self, cache_dir: &Path, digest: &str) -> PathBuf {
        cache_dir.join(format!("{digest}-{}.cwasm", self.compat))
    }

    /// Compiles `wasm` to its serialized form (validating it as a component).
    pub fn precompile(&self, wasm: &[u8]) -> wasmtime::Result<Vec<u8>> {
        let bytes = self.engine.precompile_component(wasm)?;
        self.compiled.fetch_add(1, Ordering::Relaxed);
        Ok(bytes)
    }

    /// Loads a component this process just precompiled.
    #[allow(unsafe_code)]
    pub fn load_precompiled(&self, bytes: &[u8]) -> wasmtime::Result<Component> {
        // SAFETY: `bytes` come from `Engine::precompile_component` of this
        // very engine in this process, never from outside.
        unsafe { Component::deserialize(&self.engine, bytes) }
    }

    /// The component of `wasm` (whose sha256 is `digest`): from the cache
    /// when present and loadable, else compiled and written to the cache.
    pub fn load(&self, cache_dir: &Path, digest: &str, wasm: &[u8]) -> wasmtime::Result<Component> {
        let path = self.cache_path(cache_dir, digest);
        if path.is_file() {
            match self.load_cached(&path) {
                Ok(component) => {
                    self.cache_hits.fetch_add(1, Ordering::Relaxed);
                    return Ok(component);
                }
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "discarding unusable compiled-plugin cache entry");
                    let _ = std::fs::remove_file(&path);
                }
            }
        }
        let bytes = self.precompile(wasm)?;
        if let Err(e) = write_atomically(&path, &bytes) {
            tracing::warn!(path = %path.display(), error = %e, "cannot write the compiled-plugin cache; continuing without it");
        }
        self.load_precompiled(&bytes)
    }

    #[allow(unsafe_code)]
    fn load_cached(&self, path: &Path) -> wasmtime::Result<Component> {
        // SAFETY: cache files are written only by `load`/`store_cache` of
        // this runtime (atomically: temp file + rename) into the
        // workspace's private `plugins/.cache` folder, under a name that
        // includes the engine's compatibility hash; wasmtime additionally
        // checks the header and engine compatibility before mapping it.
        unsafe { Component::deserialize_file(&self.engine, path) }
    }

    /// Writes an already-precompiled component to the cache.
    pub fn store_cache(&self, cache_dir: &Path, digest: &str, bytes: &[u8]) -> std::io::Result<()> {
        write_atomically(&self.cache_path(cache_dir, digest), bytes)
    }
}

impl Drop for EngineHandle {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.ticker.take() {
            let _ = t.join();
        }
    }
}

/// Writes `bytes` to `path` through a temporary file in the same folder and
/// a rename, so readers see either nothing or the whole file.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path
        .parent()
        .ok_or_else(|| std::io::Error::other("path has no parent folder"))?;
    std::fs::create_dir_all(dir)?;
    let file_name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let tmp = dir.join(format!(".{file_name}.{}.tmp", std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadline_ticks_round_up() {
        assert_eq!(EngineHandle::deadline_ticks(1), 1);
        assert_eq!(EngineHandle::deadline_ticks(5), 1);
        assert_eq!(EngineHandle::deadline_ticks(6), 2);
        assert_eq!(EngineHandle::deadline_ticks(2000), 400);
    }

    #[test]
    fn compat_hash_is_stable_per_engine_config() {
        let a = EngineHandle::new().unwrap();
        let b = EngineHandle::new().unwrap();
        assert_eq!(a.compat, b.compat);
        assert_eq!(a.compat.len(), 16);
    }
}
