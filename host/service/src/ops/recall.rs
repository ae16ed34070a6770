//! Recall and workspace views: search, context packs, constraint checks,
//! the type table, status.

use crate::access::Scope;
use crate::check::{CheckRequest, CheckResult};
use crate::door::{Caller, Operation, Replay};
use crate::processing::WorkspaceStatus;
use crate::recall::{ContextPack, ContextRequest, SearchQuery, SearchResult};
use crate::recall_log::{Observed, RecallOp, RecallRecord};
use crate::types::TypeDef;
use mem_core::MemResult;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::time::Instant;

impl Operation for SearchQuery {
    const NAME: &'static str = "recall.search";
    const SCOPE: Scope = Scope::Search;
    const REPLAY: Replay = Replay::None;
    type Output = SearchResult;

    fn run(mut self, c: &Caller<'_>) -> MemResult<SearchResult> {
        c.require(Scope::Search)?;
        // Search filters by the boundary inside the index, so limits count
        // only what the caller may see.
        self.within = c.access.within();
        let started = Instant::now();
        let mut result = c.svc.search(&self)?;
        let o = c.observed(RecallOp::Search, &self.query, started);
        if let Some(w) = c
            .svc
            .observe(&o, |fp| RecallRecord::of_search(&o, fp, &result))
        {
            result.warnings.push(w);
        }
        Ok(result)
    }
}

impl Operation for ContextRequest {
    const NAME: &'static str = "recall.context";
    const SCOPE: Scope = Scope::Search;
    const REPLAY: Replay = Replay::None;
    type Output = ContextPack;

    fn run(mut self, c: &Caller<'_>) -> MemResult<ContextPack> {
        c.require(Scope::Search)?;
        self.within = c.access.within();
        let started = Instant::now();
        let mut pack = c.svc.context(&self)?;
        let o = c.observed(RecallOp::Context, &self.query, started);
        if let Some(w) = c
            .svc
            .observe(&o, |fp| RecallRecord::of_context(&o, fp, &pack))
        {
            pack.warnings.push(w);
        }
        Ok(pack)
    }
}

impl Caller<'_> {
    /// What the recall log needs of a recall this caller made.
    fn observed(&self, op: RecallOp, query: &str, started: Instant) -> Observed {
        Observed {
            op,
            query: query.to_string(),
            caller: self.access.token_id().unwrap_or("owner").to_string(),
            took_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        }
    }
}

impl Operation for CheckRequest {
    const NAME: &'static str = "recall.check";
    const SCOPE: Scope = Scope::Search;
    const REPLAY: Replay = Replay::None;
    type Output = CheckResult;

    fn run(self, c: &Caller<'_>) -> MemResult<CheckResult> {
        c.require(Scope::Search)?;
        c.svc.check(&self)
    }
}

/// `workspace.types`: every memory type with its role and fields.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Types {}

/// The workspace's memory types.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TypeList {
    pub types: Vec<TypeDef>,
}

impl Operation for Types {
    const NAME: &'static str = "workspace.types";
    const SCOPE: Scope = Scope::Read;
    const REPLAY: Replay = Replay::None;
    type Output = TypeList;

    fn run(self, c: &Caller<'_>) -> MemResult<TypeList> {
        c.require(Scope::Read)?;
        Ok(TypeList {
            types: c.svc.config().types.registry.all().cloned().collect(),
        })
    }
}

/// `workspace.status`: files by processing state, memories, index,
/// budgets, plugin health.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Status {}

impl Operation for Status {
    const NAME: &'static str = "workspace.status";
    const SCOPE: Scope = Scope::Read;
    const REPLAY: Replay = Replay::None;
    type Output = WorkspaceStatus;

    /// A caller confined to folders sees the counts of those folders only,
    /// and nothing of the rest of the workspace.
    fn run(self, c: &Caller<'_>) -> MemResult<WorkspaceStatus> {
        c.require(Scope::Read)?;
        c.svc.status(c.access.paths())
    }
}
