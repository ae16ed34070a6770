//! The plugin runtime as the service layer sees it.

use super::{
    AdapterEntry, DetectItem, DetectedRelation, FileInput, PluginInfo, PluginManifest,
    PluginsConfig, ProcessedFile, ProposalInput, ReadItem, ReadRequest, SelectCandidate,
    SelectQuery, Verdict,
};
use crate::error::MemResult;

/// Options of [`PluginHost::install`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct InstallOptions {
    /// Replace an installed plugin of the same name (otherwise `already_exists`).
    pub replace: bool,
}

/// The plugin runtime as the service layer sees it.
///
/// Invariants every implementation upholds:
/// - Every call runs in a fresh sandbox with the limits of [`PluginsConfig`]:
///   a plugin that traps, loops, over-allocates or returns too much fails
///   that call with `plugin_failed` (details `{plugin, version, reason}`),
///   the failure is counted, and the next call runs normally.
/// - A plugin uses a capability only if its manifest requests it and the
///   workspace grants it; otherwise the call fails with `capability_denied`
///   naming the plugin, the capability and the command that grants it.
/// - Calls by name fail with `not_found` for an unknown plugin and
///   `plugin_invalid` when the plugin exists but is of another world.
/// - Methods are safe to call from many threads at once; they block the
///   calling thread for at most the plugin's deadline (plus host work), so
///   async callers use `spawn_blocking`.
pub trait PluginHost: Send + Sync {
    /// Installed plugins, sorted by name.
    fn list(&self) -> MemResult<Vec<PluginInfo>>;

    /// Verifies (manifest fields, digest, WIT version, world, imports) and
    /// copies the plugin into the workspace. Nothing is written when any
    /// check fails.
    fn install(
        &self,
        wasm: &[u8],
        manifest: &PluginManifest,
        options: InstallOptions,
    ) -> MemResult<PluginInfo>;

    /// World, requested vs granted capabilities, limits, failure counters.
    fn inspect(&self, name: &str) -> MemResult<PluginInfo>;

    /// An installed plugin's manifest and component, as installed (what a
    /// workspace bundle carries). A host that keeps no components says so.
    fn package(&self, name: &str) -> MemResult<(PluginManifest, Vec<u8>)> {
        Err(crate::MemError::new(
            crate::ErrorCode::PluginFailed,
            format!("this plugin runtime cannot hand out plugin '{name}'"),
        ))
    }

    /// Deletes the plugin folder (its `kv` namespace stays until the owner purges it).
    fn remove(&self, name: &str) -> MemResult<()>;

    /// Replaces the workspace configuration (after `plugin grant`/`revoke`
    /// or an edit of `mem.toml`). Validates it first; on error nothing changes.
    fn set_config(&self, config: PluginsConfig) -> MemResult<()>;

    /// The configuration in force.
    fn config(&self) -> PluginsConfig;

    /// Enabled processor plugins whose `accepts(mime)` is true, by name.
    /// A processor that fails `accepts` is skipped (and its failure counted).
    fn processors_for(&self, mime: &str) -> MemResult<Vec<String>>;

    /// Runs one processor on a file. Chunk line ranges are validated
    /// (`1 <= start <= end`).
    fn process(&self, plugin: &str, file: &FileInput) -> MemResult<ProcessedFile>;

    /// One selection stage. The result is a duplicate-free subset of the
    /// candidates' ids, at most `limit` long (a plugin breaking this fails
    /// with reason `output`).
    fn select(
        &self,
        plugin: &str,
        candidates: &[SelectCandidate],
        query: &SelectQuery,
        limit: u32,
    ) -> MemResult<Vec<String>>;

    fn check_write(&self, plugin: &str, proposal: &ProposalInput) -> MemResult<Verdict>;

    fn check_read(
        &self,
        plugin: &str,
        item: &ReadItem,
        request: &ReadRequest,
    ) -> MemResult<Verdict>;

    /// Relations from `subject` to candidates; every target is a candidate id.
    fn detect(
        &self,
        plugin: &str,
        subject: &DetectItem,
        candidates: &[DetectItem],
    ) -> MemResult<Vec<DetectedRelation>>;

    /// Parses an external document (`name` such as `CLAUDE.md`) into entries.
    fn import(&self, plugin: &str, name: &str, bytes: &[u8]) -> MemResult<Vec<AdapterEntry>>;

    /// Renders entries as an external document.
    fn export(&self, plugin: &str, name: &str, entries: &[AdapterEntry]) -> MemResult<Vec<u8>>;
}
