//! Per-plugin failure counters, persisted in the store so that
//! `plugin inspect` shows repeated failures across processes.
//!
//! They live in `Table::PluginKv` under the reserved prefix
//! `~runtime/failures/`: plugin namespaces are `"{plugin}\0…"` and plugin
//! names start with a lower-case letter, so no plugin can read or forge
//! them through the `kv` import.

use std::collections::HashMap;
use std::sync::Arc;

use mem_core::MemResult;
use mem_core::plugin::{FailureReason, FailureStats, LastFailure};
use mem_core::store::{Batch, Durability, Store, Table};
use parking_lot::Mutex;

const PREFIX: &str = "~runtime/failures/";

/// Longest failure message kept in the counters.
const MAX_MESSAGE_CHARS: usize = 500;

pub(crate) struct FailureLog {
    store: Arc<dyn Store>,
    cache: Mutex<HashMap<String, FailureStats>>,
}

fn key(plugin: &str) -> String {
    format!("{PREFIX}{plugin}")
}

impl FailureLog {
    pub fn new(store: Arc<dyn Store>) -> Self {
        Self {
            store,
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// The counters of `plugin` (zero when it never failed).
    pub fn get(&self, plugin: &str) -> MemResult<FailureStats> {
        let mut cache = self.cache.lock();
        if let Some(s) = cache.get(plugin) {
            return Ok(s.clone());
        }
        let stats = self.read(plugin)?;
        cache.insert(plugin.to_string(), stats.clone());
        Ok(stats)
    }

    fn read(&self, plugin: &str) -> MemResult<FailureStats> {
        Ok(match self.store.get(Table::PluginKv, &key(plugin))? {
            Some(bytes) => serde_json::from_slice(&bytes).unwrap_or_else(|e| {
                tracing::warn!(plugin, error = %e, "unreadable plugin failure counters; starting over");
                FailureStats::default()
            }),
            None => FailureStats::default(),
        })
    }

    fn write(&self, plugin: &str, stats: &FailureStats) -> MemResult<()> {
        let mut batch = Batch::new();
        let value =
            serde_json::to_vec(stats).map_err(|e| mem_core::MemError::internal(e.to_string()))?;
        batch.put(Table::PluginKv, key(plugin), value);
        self.store.commit(batch, Durability::Immediate)?;
        Ok(())
    }

    /// Counts a failed call.
    pub fn failed(&self, plugin: &str, reason: FailureReason, message: &str) {
        let mut cache = self.cache.lock();
        let mut stats = match cache.get(plugin) {
            Some(s) => s.clone(),
            None => self.read(plugin).unwrap_or_default(),
        };
        stats.calls += 1;
        *stats.by_reason.entry(reason).or_insert(0) += 1;
        stats.total += 1;
        stats.consecutive += 1;
        stats.last = Some(LastFailure {
            reason,
            message: message.chars().take(MAX_MESSAGE_CHARS).collect(),
            at: mem_core::time::now(),
        });
        if let Err(e) = self.write(plugin, &stats) {
            tracing::warn!(plugin, error = %e, "cannot persist plugin failure counters");
        }
        cache.insert(plugin.to_string(), stats);
    }

    /// Records a successful call: resets the consecutive-failure count
    /// (writing only when it was not already zero).
    pub fn succeeded(&self, plugin: &str) {
        let mut cache = self.cache.lock();
        let mut stats = match cache.get(plugin) {
            Some(s) => s.clone(),
            None => self.read(plugin).unwrap_or_default(),
        };
        stats.calls += 1;
        if stats.consecutive != 0 {
            stats.consecutive = 0;
            if let Err(e) = self.write(plugin, &stats) {
                tracing::warn!(plugin, error = %e, "cannot persist plugin failure counters");
            }
        }
        cache.insert(plugin.to_string(), stats);
    }

    /// Forgets the counters (plugin removed or replaced by another build).
    pub fn reset(&self, plugin: &str) -> MemResult<()> {
        self.cache.lock().remove(plugin);
        let mut batch = Batch::new();
        batch.delete(Table::PluginKv, key(plugin));
        self.store.commit(batch, Durability::Immediate)?;
        Ok(())
    }
}
