//! The per-call sandbox state: WASI context, memory limiter, and the host
//! imports (`log`, `config`, `kv`, `embed`) with their capability checks.
//!
//! A fresh [`CallState`] is built for every call, so nothing a plugin does
//! survives the call except what it writes through `kv`. Every import
//! checks the capability first: usable only when the manifest requests it
//! and the workspace grants it. A refused import returns `denied` to the
//! guest and is remembered, so a call that then fails is reported as
//! `capability_denied` (with the command that grants it) rather than as an
//! opaque plugin error.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use mem_core::index::Embedder;
use mem_core::plugin::{Capability, ResolvedLimits};
use mem_core::store::Store;
use parking_lot::Mutex;
use wasmtime::ResourceLimiter;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use crate::bindings::v0_1_0::host::mem::plugin::{config, embed, log, types};
use crate::bindings::v0_1_0::types::{HostError, HostErrorCode};

/// Largest table a plugin may grow (elements). Defends against table
/// growth as a way around the linear-memory cap (8 bytes per element).
const MAX_TABLE_ELEMENTS: usize = 1 << 20;
/// Bytes of guest stderr kept for error reports (panic messages). Defends
/// against a chatty plugin growing host memory; the rest is discarded.
pub(crate) const STDERR_KEEP_BYTES: usize = 8 * 1024;

/// What one call may do: fixed before the call starts.
pub(crate) struct CallContext {
    pub name: String,
    /// Capabilities the manifest requests.
    pub requested: Vec<Capability>,
    /// Requested AND granted.
    pub effective: Vec<Capability>,
    /// The plugin's settings (`[plugins.NAME] config`), sorted by key.
    pub config: Vec<(String, String)>,
    pub limits: ResolvedLimits,
    pub store: Arc<dyn Store>,
    pub embedder: Option<Arc<dyn Embedder>>,
}

/// A capability the plugin tried to use without holding it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Denial {
    pub capability: Capability,
    /// Whether the manifest requests it (then only the grant is missing).
    pub requested: bool,
}

pub(crate) struct CallState {
    wasi: WasiCtx,
    table: ResourceTable,
    pub limiter: MemoryLimiter,
    pub ctx: Arc<CallContext>,
    pub log_used: u64,
    pub log_dropped: u64,
    pub denied: Vec<Denial>,
    pub stderr: CapturedOutput,
}

impl CallState {
    pub fn new(wasi: WasiCtx, ctx: Arc<CallContext>, stderr: CapturedOutput) -> Self {
        let cap = usize::try_from(ctx.limits.memory_bytes).unwrap_or(usize::MAX);
        Self {
            wasi,
            table: ResourceTable::new(),
            limiter: MemoryLimiter::new(cap),
            ctx,
            log_used: 0,
            log_dropped: 0,
            denied: Vec::new(),
            stderr,
        }
    }

    pub(crate) fn require(&mut self, capability: Capability) -> Result<(), HostError> {
        if self.ctx.effective.contains(&capability) {
            return Ok(());
        }
        let requested = self.ctx.requested.contains(&capability);
        let denial = Denial {
            capability,
            requested,
        };
        if !self.denied.contains(&denial) {
            self.denied.push(denial);
        }
        let name = &self.ctx.name;
        let message = if requested {
            format!(
                "capability '{capability}' is not granted to plugin '{name}'; run `mem-host plugin grant {name} {capability}`"
            )
        } else {
            format!("plugin '{name}' does not request capability '{capability}' in its manifest")
        };
        Err(HostError {
            code: HostErrorCode::Denied,
            message,
        })
    }
}

pub(crate) fn host_error(code: HostErrorCode, message: impl Into<String>) -> HostError {
    HostError {
        code,
        message: message.into(),
    }
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl types::Host for CallState {}

impl log::Host for CallState {
    fn log(&mut self, level: log::Level, message: String) {
        if !self.ctx.effective.contains(&Capability::Log) {
            // `log` never fails (WIT contract); an ungranted log is dropped.
            self.log_dropped += 1;
            return;
        }
        let len = message.len() as u64;
        if self.log_used + len > self.ctx.limits.log_bytes {
            if self.log_dropped == 0 {
                tracing::warn!(plugin = %self.ctx.name, budget = self.ctx.limits.log_bytes, "plugin log budget exhausted; dropping further messages of this call");
            }
            self.log_dropped += 1;
            return;
        }
        self.log_used += len;
        let plugin = self.ctx.name.as_str();
        match level {
            log::Level::Trace => tracing::trace!(target: "mem_plugin", plugin, "{message}"),
            log::Level::Debug => tracing::debug!(target: "mem_plugin", plugin, "{message}"),
            log::Level::Info => tracing::info!(target: "mem_plugin", plugin, "{message}"),
            log::Level::Warn => tracing::warn!(target: "mem_plugin", plugin, "{message}"),
            log::Level::Error => tracing::error!(target: "mem_plugin", plugin, "{message}"),
        }
    }
}

impl config::Host for CallState {
    fn get(&mut self, key: String) -> Result<Option<String>, HostError> {
        self.require(Capability::Config)?;
        Ok(self
            .ctx
            .config
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.clone()))
    }

    fn entries(&mut self) -> Result<Vec<(String, String)>, HostError> {
        self.require(Capability::Config)?;
        Ok(self.ctx.config.clone())
    }
}

impl embed::Host for CallState {
    fn model(&mut self) -> Result<(String, u32), HostError> {
        self.require(Capability::Embed)?;
        let embedder = self.ctx.embedder.as_ref().ok_or_else(no_embedder)?;
        Ok((
            embedder.model_id().to_string(),
            u32::try_from(embedder.dimensions()).unwrap_or(u32::MAX),
        ))
    }

    fn embed(&mut self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, HostError> {
        self.require(Capability::Embed)?;
        let embedder = self.ctx.embedder.clone().ok_or_else(no_embedder)?;
        let batch = self.ctx.limits.embed_batch as usize;
        if texts.len() > batch {
            return Err(host_error(
                HostErrorCode::TooLarge,
                format!("at most {batch} texts per embed call (got {})", texts.len()),
            ));
        }
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        embedder
            .embed(&refs)
            .map_err(|e| host_error(HostErrorCode::Internal, e.to_string()))
    }
}

fn no_embedder() -> HostError {
    host_error(
        HostErrorCode::Unavailable,
        "no embedding model is installed; run `mem-host model install`",
    )
}

/// Caps the total linear memory of one call's instance. Growth past the
/// cap traps (rather than returning -1 to the guest, which Rust turns into
/// an opaque abort), and sets `exceeded` so the failure reads `memory`.
pub(crate) struct MemoryLimiter {
    cap: usize,
    used: usize,
    pub exceeded: bool,
}

impl MemoryLimiter {
    fn new(cap: usize) -> Self {
        Self {
            cap,
            used: 0,
            exceeded: false,
        }
    }
}

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let next = self.used.saturating_sub(current).saturating_add(desired);
        if next > self.cap {
            self.exceeded = true;
            wasmtime::bail!(
                "plugin memory limit of {} bytes exceeded (the call asked for {next})",
                self.cap
            );
        }
        self.used = next;
        Ok(true)
    }

    fn memory_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        Err(error)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= MAX_TABLE_ELEMENTS)
    }
}

/// Guest stdout/stderr: keeps the first [`STDERR_KEEP_BYTES`] (so a panic
/// message can be reported) and silently discards the rest, so writing
/// never fails or traps the guest.
#[derive(Clone, Default)]
pub(crate) struct CapturedOutput {
    buf: Arc<Mutex<Vec<u8>>>,
}

impl CapturedOutput {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.buf.lock()).trim().to_string()
    }
}

impl IsTerminal for CapturedOutput {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for CapturedOutput {
    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

impl tokio::io::AsyncWrite for CapturedOutput {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let mut buf = self.buf.lock();
        let room = STDERR_KEEP_BYTES.saturating_sub(buf.len());
        buf.extend_from_slice(&data[..data.len().min(room)]);
        Poll::Ready(Ok(data.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bindings::v0_1_0::host::mem::plugin::{kv, kv::Host as _, log::Host as _};
    use mem_core::store::{Batch, Durability, Table};

    fn state(
        dir: &std::path::Path,
        effective: Vec<Capability>,
        limits: ResolvedLimits,
    ) -> CallState {
        let store: Arc<dyn Store> = Arc::new(mem_store::SledStore::open(dir).unwrap());
        let ctx = CallContext {
            name: "demo".into(),
            requested: vec![Capability::Log, Capability::Config, Capability::Kv],
            effective,
            config: vec![("mode".into(), "fast".into())],
            limits,
            store,
            embedder: None,
        };
        CallState::new(
            wasmtime_wasi::WasiCtxBuilder::new().build(),
            Arc::new(ctx),
            CapturedOutput::default(),
        )
    }

    #[test]
    fn imports_check_capabilities_and_record_denials() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = state(
            dir.path(),
            vec![Capability::Config],
            ResolvedLimits::default(),
        );
        assert_eq!(
            config::Host::get(&mut s, "mode".into()).unwrap(),
            Some("fast".into())
        );
        let e = kv::Host::get(&mut s, "k".into()).unwrap_err();
        assert_eq!(e.code, HostErrorCode::Denied);
        assert!(
            e.message.contains("mem-host plugin grant demo kv"),
            "{}",
            e.message
        );
        assert_eq!(
            s.denied,
            vec![Denial {
                capability: Capability::Kv,
                requested: true
            }]
        );
        let e = embed::Host::model(&mut s).unwrap_err();
        assert!(e.message.contains("does not request"), "{}", e.message);
        // An ungranted log is dropped, never an error and never a denial.
        s.log(log::Level::Info, "hi".into());
        assert_eq!((s.log_used, s.log_dropped, s.denied.len()), (0, 1, 2));
    }

    #[test]
    fn log_budget_and_kv_limits_are_enforced() {
        let dir = tempfile::tempdir().unwrap();
        let limits = ResolvedLimits {
            log_bytes: 10,
            kv_value_bytes: 8,
            kv_quota_bytes: 20,
            ..ResolvedLimits::default()
        };
        let mut s = state(dir.path(), vec![Capability::Log, Capability::Kv], limits);
        s.log(log::Level::Info, "12345678".into());
        s.log(log::Level::Info, "too much".into());
        assert_eq!((s.log_used, s.log_dropped), (8, 1));

        assert_eq!(
            s.set("".into(), b"x".to_vec()).unwrap_err().code,
            HostErrorCode::Invalid
        );
        assert_eq!(
            s.set("a".into(), vec![0; 9]).unwrap_err().code,
            HostErrorCode::TooLarge
        );
        s.set("a".into(), vec![1; 8]).unwrap();
        s.set("b".into(), vec![2; 8]).unwrap();
        // 9 + 9 used; another 9 would pass the 20-byte quota, replacing "a" would not.
        assert_eq!(
            s.set("c".into(), vec![3; 8]).unwrap_err().code,
            HostErrorCode::TooLarge
        );
        s.set("a".into(), vec![4; 8]).unwrap();
        assert_eq!(kv::Host::get(&mut s, "a".into()).unwrap(), Some(vec![4; 8]));
        assert_eq!(
            s.list_keys("".into(), 10).unwrap(),
            vec!["a".to_string(), "b".to_string()]
        );
        s.delete("a".into()).unwrap();
        assert_eq!(s.list_keys("".into(), 10).unwrap(), vec!["b".to_string()]);
    }

    /// The usage record `kv` keeps for the quota.
    fn kv_usage(s: &CallState) -> Option<u64> {
        let raw = s
            .ctx
            .store
            .get(Table::PluginKv, &crate::kv::usage_key("demo"))
            .unwrap()?;
        Some(u64::from_le_bytes(raw.try_into().unwrap()))
    }

    #[test]
    fn kv_usage_is_kept_with_every_change_instead_of_summed_per_set() {
        let dir = tempfile::tempdir().unwrap();
        let limits = ResolvedLimits {
            kv_value_bytes: 8,
            kv_quota_bytes: 30,
            ..ResolvedLimits::default()
        };
        let mut s = state(dir.path(), vec![Capability::Kv], limits);
        // A namespace written before usage records existed: summed once,
        // and the sum kept even when the set that asked is refused.
        let mut batch = Batch::new();
        for (key, len) in [("old", 7), ("big", 27)] {
            let key = crate::kv::kv_store_key("demo", key);
            batch.put(Table::PluginKv, key, vec![0; len]);
        }
        s.ctx.store.commit(batch, Durability::Immediate).unwrap();
        assert_eq!(kv_usage(&s), None);
        assert_eq!(
            s.set("a".into(), vec![1; 8]).unwrap_err().code,
            HostErrorCode::TooLarge
        );
        assert_eq!(kv_usage(&s), Some(10 + 30));
        s.delete("big".into()).unwrap();
        assert_eq!(kv_usage(&s), Some(10));
        s.set("a".into(), vec![1; 8]).unwrap();
        assert_eq!(kv_usage(&s), Some(10 + 9));
        // From now on the record is what counts: the summed key is in it.
        s.set("a".into(), vec![2; 4]).unwrap();
        assert_eq!(kv_usage(&s), Some(10 + 5));
        s.set("b".into(), vec![3; 8]).unwrap();
        assert_eq!(kv_usage(&s), Some(10 + 5 + 9));
        assert_eq!(
            s.set("c".into(), vec![4; 8]).unwrap_err().code,
            HostErrorCode::TooLarge
        );
        s.delete("old".into()).unwrap();
        s.delete("old".into()).unwrap();
        assert_eq!(kv_usage(&s), Some(5 + 9));
        s.set("c".into(), vec![4; 8]).unwrap();
        assert_eq!(kv_usage(&s), Some(5 + 9 + 9));
        // The record is not in the plugin's namespace.
        assert_eq!(
            s.list_keys("".into(), 10).unwrap(),
            vec!["a".to_string(), "b".to_string(), "c".to_string()]
        );
    }

    #[test]
    fn limiter_caps_the_sum_of_memories() {
        let mut l = MemoryLimiter::new(100);
        assert!(l.memory_growing(0, 60, None).unwrap());
        assert!(l.memory_growing(60, 80, None).unwrap());
        assert!(
            l.memory_growing(0, 20, None).unwrap(),
            "a second memory shares the cap"
        );
        assert!(l.memory_growing(20, 21, None).is_err());
        assert!(l.exceeded);
    }

    #[test]
    fn captured_output_keeps_a_prefix_and_never_fails() {
        let out = CapturedOutput::default();
        let mut w = out.clone();
        let big = vec![b'x'; STDERR_KEEP_BYTES * 2];
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        let r = tokio::io::AsyncWrite::poll_write(Pin::new(&mut w), &mut cx, &big);
        assert!(matches!(r, Poll::Ready(Ok(n)) if n == big.len()));
        assert_eq!(out.text().len(), STDERR_KEEP_BYTES);
    }
}
