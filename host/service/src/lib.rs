//! mem-service: the one business logic of mem-host.
//!
//! The CLI, REST, MCP and web surfaces parse and authenticate, then call a
//! [`Service`]; none of them holds rules of its own. The service sees the
//! storage, index and plugin seams of `mem-core` as traits only, so no
//! backend type reaches the rules here, and a second backend (PostgreSQL,
//! S3) needs no change in this crate.

pub mod access;
mod adapters;
pub mod annotations;
pub mod audit;
mod budget;
pub mod bundle;
pub mod check;
pub mod config;
pub mod consolidation;
mod content;
pub mod deployment;
pub mod door;
mod excerpts;
mod files;
pub mod follow;
pub mod gate;
pub mod handoff;
pub mod lint;
mod listing;
mod memories;
mod mime;
pub mod navigation;
pub mod ops;
pub mod processing;
pub mod recall;
pub mod recall_log;
mod records;
pub mod related;
pub mod requests;
pub mod schemas;
mod settings;
mod tally;
pub mod timeline;
pub mod tokens;
pub mod types;
pub mod web;
pub mod worker;

pub use audit::{Actor, AuditEntry, AuditQuery, AuditVerification};
pub use budget::BudgetUsage;
pub use config::WorkspaceConfig;
pub use door::{Caller, Done, Operation};
pub use files::{MkdirResult, MoveResult, PutFileResult, RemoveResult};
pub use gate::{
    Evidence, EvidenceStance, Proposal, ProposalOutcome, ProposalRequest, ProposalStatus,
    ReviewItem, WriteRoute,
};
pub use listing::{Entry, Listing};
pub use memories::{ListMemories, MAX_LIST_LIMIT, MAX_LIST_SCAN, Page, RememberOutcome};
/// File types (`type` filters) as families of MIME types.
pub use mime::{FILE_TYPES, file_type_of, type_prefixes};
pub use requests::{MemoryDraft, RememberRequest};

use mem_core::plugin::PluginHost;
use mem_core::store::Store;
use std::collections::HashSet;
use std::sync::Arc;

/// One open workspace's business logic.
pub struct Service {
    store: Arc<dyn Store>,
    /// `mem.toml`, owned here: read by every rule, edited only by the
    /// owner's administrative operations.
    settings: settings::Settings,
    /// The workspace's plugins (policies, detectors, selectors, processors);
    /// `None` runs the host's own checks only.
    plugins: Option<Arc<dyn PluginHost>>,
    /// The search index and its sync state (see `recall`).
    recall: recall::RecallState,
    /// Files waiting for the processors.
    processing: processing::ProcessingQueue,
    /// The background worker's view of the load (see `worker`).
    worker: worker::WorkerState,
    /// Idempotency keys whose request is running now (see `door`).
    in_flight: parking_lot::Mutex<HashSet<String>>,
    /// Token calls counted (see `tokens::calls`).
    calls: tokens::CallCounts,
    /// Compiled request schemas (see `door`).
    shapes: door::Shapes,
}

impl std::fmt::Debug for Service {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Service")
            .field("workspace", &self.config().workspace.name)
            .finish()
    }
}

impl Service {
    pub fn new(store: Arc<dyn Store>, config: WorkspaceConfig) -> Self {
        Self {
            store,
            settings: settings::Settings::new(config),
            plugins: None,
            recall: Default::default(),
            processing: Default::default(),
            worker: Default::default(),
            in_flight: Default::default(),
            calls: Default::default(),
            shapes: Default::default(),
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

    /// Runs after every committed memory or file write, before it is
    /// acknowledged: the event log is the index's durable queue, so the
    /// write returns without waiting for its embedding. The worker replays
    /// it (with whatever else arrived meanwhile, in one batch) and computes
    /// relations; a CLI command does both as it settles, and any read of
    /// the index replays it first.
    pub(crate) fn after_write(&self) {
        self.index_behind();
    }

    pub(crate) fn store(&self) -> &dyn Store {
        self.store.as_ref()
    }

    /// Whether the store is shared with other hosts (a database round trip
    /// per read) rather than embedded in this process.
    pub fn store_is_shared(&self) -> bool {
        self.store.is_shared()
    }

    /// Makes every deferred write durable (bulk commands call this before
    /// acknowledging).
    pub fn flush(&self) -> mem_core::MemResult<()> {
        self.write_recall_log();
        self.write_call_counts();
        self.store.flush()?;
        // Derived state too (an index not opened yet has nothing to save).
        if let Some(index) = self.recall.index.get() {
            index.flush()?;
        }
        Ok(())
    }

    /// The running configuration (a snapshot: an owner's edit swaps it).
    pub fn config(&self) -> Arc<WorkspaceConfig> {
        self.settings.current()
    }
}

/// A file written by a unit test (bytes at hand, no surface).
#[cfg(test)]
pub(crate) struct TestPut {
    pub path: mem_core::VPath,
    pub bytes: Vec<u8>,
    pub tags: Vec<String>,
    pub replace: bool,
}

/// Unit tests of the business rules call them without a surface, as the
/// owner (an agent when the request names one), as the door would.
#[cfg(test)]
impl Service {
    pub(crate) fn put_test(&self, p: TestPut) -> mem_core::MemResult<PutFileResult> {
        let content = self.stage_content(&mut &p.bytes[..], p.path.name(), None)?;
        self.put_file(files::PutFile {
            path: p.path,
            content,
            tags: p.tags,
            replace: p.replace,
            source: None,
        })
    }

    pub(crate) fn remember(&self, req: &RememberRequest) -> mem_core::MemResult<RememberOutcome> {
        let actor = access::Access::owner().actor(req.agent_id.clone(), req.session_id.clone());
        self.remember_as(req, &actor)
    }

    pub(crate) fn remember_all(
        &self,
        reqs: &[RememberRequest],
    ) -> Vec<mem_core::MemResult<RememberOutcome>> {
        let with_actors: Vec<_> = reqs
            .iter()
            .map(|r| {
                let actor = access::Access::owner().actor(r.agent_id.clone(), r.session_id.clone());
                (r.clone(), actor)
            })
            .collect();
        let out = self.remember_many(&with_actors, gate::WriteRoute::Batch);
        self.catch_up_index();
        out
    }
}

#[cfg(test)]
mod fake_host;
#[cfg(test)]
mod governance_tests;
#[cfg(test)]
mod shared_tests;
#[cfg(test)]
mod tests;
