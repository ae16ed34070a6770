//! Navigation and observability: the catalog, relation traces and the
//! recall log.

use crate::access::Scope;
use crate::door::{Caller, Operation, Replay};
use crate::navigation::catalog::{Catalog, CatalogPage};
use crate::navigation::trace::{Trace, TraceResult};
use crate::recall_log::{RecallLogQuery, RecallLogReport};
use mem_core::MemResult;

impl Operation for Catalog {
    const NAME: &'static str = "navigation.catalog";
    const SCOPE: Scope = Scope::Read;
    const REPLAY: Replay = Replay::None;
    type Output = CatalogPage;

    /// Out of the caller's paths nothing shows, counts included.
    fn run(self, c: &Caller<'_>) -> MemResult<CatalogPage> {
        c.require(Scope::Read)?;
        c.svc.catalog(&self, c.access)
    }
}

impl Operation for Trace {
    const NAME: &'static str = "navigation.trace";
    const SCOPE: Scope = Scope::Read;
    const REPLAY: Replay = Replay::None;
    type Output = TraceResult;

    /// Nodes out of the caller's paths read as missing and are not
    /// walked through; a start out of them is `not_found`.
    fn run(self, c: &Caller<'_>) -> MemResult<TraceResult> {
        c.require(Scope::Read)?;
        c.svc.trace(&self, &|p| c.access.sees(p))
    }
}

impl Operation for RecallLogQuery {
    const NAME: &'static str = "recall.log";
    const SCOPE: Scope = Scope::Admin;
    const REPLAY: Replay = Replay::None;
    type Output = RecallLogReport;

    /// The owner's view: it covers every caller's recalls.
    fn run(self, c: &Caller<'_>) -> MemResult<RecallLogReport> {
        c.admin()?.recall_log(&self)
    }
}
