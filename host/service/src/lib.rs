//! mem-service: the one business logic of mem-host.
//!
//! The CLI, REST, MCP and web surfaces parse and authenticate, then call a
//! [`Service`]; none of them holds rules of its own. The service sees the
//! storage, index and plugin seams of `mem-core` as traits only, so no
//! backend type reaches the rules here, and a second backend (PostgreSQL,
//! S3) needs no change in this crate.

pub mod access;
mod adapters;
pub mod audit;
mod budget;
pub mod check;
pub mod config;
mod files;
pub mod gate;
pub mod lint;
mod memories;
mod mime;
pub mod processing;
pub mod recall;
mod records;
pub mod replay;
pub mod schemas;
pub mod tokens;
pub mod types;

pub use audit::{Actor, AuditEntry, AuditQuery, AuditVerification};
pub use budget::BudgetUsage;
pub use config::WorkspaceConfig;
pub use files::{Entry, Listing, MkdirResult, MoveResult, PutFile, PutFileResult, RemoveResult};
pub use gate::{
    Evidence, EvidenceStance, Proposal, ProposalOutcome, ProposalRequest, ProposalStatus,
    ReviewItem,
};
pub use memories::{ListMemories, MAX_LIST_LIMIT, Page, RememberOutcome, RememberRequest};

use mem_core::plugin::PluginHost;
use mem_core::store::Store;
use std::sync::Arc;

/// One open workspace's business logic.
pub struct Service {
    store: Arc<dyn Store>,
    config: WorkspaceConfig,
    /// The workspace's plugins (policies, detectors, selectors, processors);
    /// `None` runs the host's own checks only.
    plugins: Option<Arc<dyn PluginHost>>,
    /// The search index and its sync state (see `recall`).
    recall: recall::RecallState,
}

impl std::fmt::Debug for Service {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Service")
            .field("workspace", &self.config.workspace.name)
            .finish()
    }
}

impl Service {
    pub fn new(store: Arc<dyn Store>, config: WorkspaceConfig) -> Self {
        Self {
            store,
            config,
            plugins: None,
            recall: Default::default(),
        }
    }

    /// Attaches the plugin runtime.
    pub fn with_plugins(mut self, plugins: Arc<dyn PluginHost>) -> Self {
        self.plugins = Some(plugins);
        self
    }

    pub fn plugins(&self) -> Option<&Arc<dyn PluginHost>> {
        self.plugins.as_ref()
    }

    /// Runs after every committed memory or file write: brings derived
    /// state (the search index) up to the event log.
    pub(crate) fn after_memory_write(&self) -> mem_core::MemResult<()> {
        self.sync_index_after_write();
        Ok(())
    }

    pub(crate) fn store(&self) -> &dyn Store {
        self.store.as_ref()
    }

    /// Makes every deferred write durable (bulk commands call this before
    /// acknowledging).
    pub fn flush(&self) -> mem_core::MemResult<()> {
        self.store.flush()?;
        // Derived state too (an index not opened yet has nothing to save).
        if let Some(index) = self.recall.index.get() {
            index.flush()?;
        }
        Ok(())
    }

    pub fn config(&self) -> &WorkspaceConfig {
        &self.config
    }
}

#[cfg(test)]
mod governance_tests;
#[cfg(test)]
mod tests;
