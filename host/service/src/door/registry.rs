//! Every operation by name, for the surfaces that dispatch dynamically
//! (the CLI's socket to a running server, MCP tools) and for the tests
//! that check each surface reaches each operation.

use super::{Caller, Done, Operation, Replay};
use crate::access::Scope;
use crate::ops::{
    admin, bundles, files, govern, memories, plugins, recall, related, tasks, timeline,
};
use mem_core::{MemError, MemResult};
use schemars::{Schema, SchemaGenerator};
use serde_json::Value;
use std::sync::LazyLock;

type RunJson = fn(&Caller<'_>, Value) -> MemResult<Done<Value>>;
type SchemaFn = fn(&mut SchemaGenerator) -> Schema;

/// One operation, typed away: its name, scope and JSON entry point.
#[derive(Debug, Clone, Copy)]
pub struct OpEntry {
    pub name: &'static str,
    pub scope: Scope,
    pub replay: Replay,
    run: RunJson,
    request: fn(&crate::WorkspaceConfig) -> Value,
    output: SchemaFn,
}

impl OpEntry {
    /// Decodes `args` as the operation's request and runs it.
    pub fn run_json(&self, c: &Caller<'_>, args: Value) -> MemResult<Done<Value>> {
        (self.run)(c, args)
    }

    /// The request's schema as the door enforces it: inlined, tailored to
    /// the workspace (what every surface publishes).
    pub fn request_schema(&self, config: &crate::WorkspaceConfig) -> Value {
        (self.request)(config)
    }

    pub fn output_schema(&self, g: &mut SchemaGenerator) -> Schema {
        (self.output)(g)
    }
}

fn run_json<O: Operation>(c: &Caller<'_>, args: Value) -> MemResult<Done<Value>> {
    let op: O = c.decode(args)?;
    let done = c.run(op)?;
    let value = serde_json::to_value(&done.value)
        .map_err(|e| MemError::internal(format!("cannot encode the answer: {e}")))?;
    Ok(Done {
        value,
        replayed: done.replayed,
    })
}

fn schema_of<T: schemars::JsonSchema>(g: &mut SchemaGenerator) -> Schema {
    g.subschema_for::<T>()
}

/// The entry of operation `O` (surfaces build their tables from these).
pub fn entry<O: Operation>() -> OpEntry {
    OpEntry {
        name: O::NAME,
        scope: O::SCOPE,
        replay: O::REPLAY,
        run: run_json::<O>,
        request: super::request_schema::<O>,
        output: schema_of::<O::Output>,
    }
}

static REGISTRY: LazyLock<Vec<OpEntry>> = LazyLock::new(|| {
    vec![
        entry::<files::PutFileRequest>(),
        entry::<files::FileInfo>(),
        entry::<files::ReadFile>(),
        entry::<files::ListFolder>(),
        entry::<files::Mkdir>(),
        entry::<files::Move>(),
        entry::<files::Remove>(),
        entry::<crate::RememberRequest>(),
        entry::<memories::RememberBatch>(),
        entry::<memories::GetMemory>(),
        entry::<crate::ListMemories>(),
        entry::<memories::Feedback>(),
        entry::<memories::Archive>(),
        entry::<memories::Restore>(),
        entry::<memories::Forget>(),
        entry::<crate::ProposalRequest>(),
        entry::<govern::GetProposal>(),
        entry::<govern::ReviewList>(),
        entry::<govern::ReviewShow>(),
        entry::<govern::ReviewApprove>(),
        entry::<govern::ReviewReject>(),
        entry::<crate::AuditQuery>(),
        entry::<govern::AuditShow>(),
        entry::<govern::AuditVerify>(),
        entry::<govern::Budgets>(),
        entry::<govern::Lint>(),
        entry::<govern::Rebuild>(),
        entry::<crate::recall::SearchQuery>(),
        entry::<crate::recall::ContextRequest>(),
        entry::<crate::check::CheckRequest>(),
        entry::<timeline::Timeline>(),
        entry::<recall::Types>(),
        entry::<recall::Status>(),
        entry::<related::GetRelated>(),
        entry::<related::RefreshRelated>(),
        entry::<crate::navigation::catalog::Catalog>(),
        entry::<crate::navigation::trace::Trace>(),
        entry::<crate::recall_log::RecallLogQuery>(),
        entry::<tasks::CheckpointTask>(),
        entry::<tasks::ListTasks>(),
        entry::<tasks::ListCheckpoints>(),
        entry::<tasks::GetCheckpoint>(),
        entry::<tasks::ResumeTask>(),
        entry::<plugins::PluginList>(),
        entry::<plugins::PluginInspect>(),
        entry::<plugins::PluginInstall>(),
        entry::<plugins::PluginGrant>(),
        entry::<plugins::PluginRevoke>(),
        entry::<plugins::PluginRemove>(),
        entry::<admin::TokenList>(),
        entry::<crate::tokens::TokenRequest>(),
        entry::<admin::TokenRevoke>(),
        entry::<admin::Reindex>(),
        entry::<admin::Reprocess>(),
        entry::<admin::ImportDocument>(),
        entry::<admin::ExportDocument>(),
        entry::<bundles::ExportBundle>(),
        entry::<bundles::ImportBundle>(),
        entry::<bundles::VerifyBundle>(),
        entry::<crate::ops::web::WebSignIn>(),
    ]
});

/// Every operation.
pub fn registry() -> &'static [OpEntry] {
    &REGISTRY
}

/// The operation called `name`.
pub fn find(name: &str) -> MemResult<&'static OpEntry> {
    registry().iter().find(|e| e.name == name).ok_or_else(|| {
        MemError::new(
            mem_core::ErrorCode::NotFound,
            format!("no operation {name:?}"),
        )
        .with_hint(
            "the client and the server are different versions of mem-host; use the same binary",
        )
    })
}
