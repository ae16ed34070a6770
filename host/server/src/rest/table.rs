//! Every `/v1` route: its method, path, the one service operation it
//! reaches, and how the request arrives. The axum router and the OpenAPI
//! document are both built from this table, so they cannot disagree.
//!
//! Path parameters are named after the operation's fields (`{id}`,
//! `{target}`); GET and DELETE take the other fields as query parameters,
//! POST takes them as a JSON body.

use mem_service::door::{OpEntry, entry};
use mem_service::ops::{admin, bundles, files, govern, memories, plugins, recall, related, tasks};
use mem_service::{check, recall as rc, tokens};

/// How a route's request and answer travel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Fields as query/path parameters or a JSON body; a JSON answer.
    Json,
    /// A file's bytes as the raw body, the other fields as query parameters.
    Upload,
    /// A file's bytes as the raw answer.
    Download,
    /// A document's bytes as the raw body (imports).
    DocumentIn,
    /// A document's text as the raw answer (exports).
    DocumentOut,
    /// A workspace bundle as the raw body (import, verify).
    BundleIn,
    /// A workspace bundle streamed as the raw answer (export).
    BundleOut,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Route {
    pub method: &'static str,
    pub path: &'static str,
    pub operation_id: &'static str,
    pub summary: &'static str,
    pub op: OpEntry,
    pub kind: Kind,
    /// Answers 201 when it made something (200 on a replay).
    pub created: bool,
}

impl Route {
    /// The path parameters' names, in order.
    pub fn path_params(&self) -> Vec<&'static str> {
        self.path
            .split('/')
            .filter_map(|seg| seg.strip_prefix('{')?.strip_suffix('}'))
            .collect()
    }

    /// Fields travel as query parameters (GET, DELETE, raw bodies).
    pub fn takes_query(&self) -> bool {
        matches!(self.method, "get" | "delete") || self.kind != Kind::Json
    }
}

fn route(
    method: &'static str,
    path: &'static str,
    operation_id: &'static str,
    summary: &'static str,
    op: OpEntry,
) -> Route {
    Route {
        method,
        path,
        operation_id,
        summary,
        op,
        kind: Kind::Json,
        created: false,
    }
}

impl Route {
    fn created(mut self) -> Self {
        self.created = true;
        self
    }
    fn kind(mut self, k: Kind) -> Self {
        self.kind = k;
        self
    }
}

/// The table.
pub(crate) fn routes() -> Vec<Route> {
    vec![
        route(
            "post",
            "/v1/files",
            "putFile",
            "Upload a file (the raw body) to a virtual path",
            entry::<files::PutFileRequest>(),
        )
        .kind(Kind::Upload)
        .created(),
        route(
            "get",
            "/v1/files",
            "listFolder",
            "List a folder",
            entry::<files::ListFolder>(),
        ),
        route(
            "get",
            "/v1/files/{target}",
            "fileInfo",
            "A file's record (by id or path) with its processed chunks (paged), metadata, entities and suggested tags",
            entry::<files::FileInfo>(),
        ),
        route(
            "get",
            "/v1/files/{target}/content",
            "fileContent",
            "A file's bytes",
            entry::<files::FileInfo>(),
        )
        .kind(Kind::Download),
        route(
            "delete",
            "/v1/files/{target}",
            "removeFile",
            "Remove a file",
            entry::<files::Remove>(),
        ),
        route(
            "post",
            "/v1/folders",
            "mkdir",
            "Create a folder",
            entry::<files::Mkdir>(),
        )
        .created(),
        route(
            "delete",
            "/v1/folders",
            "removeFolder",
            "Remove a folder (recursive for a non-empty one)",
            entry::<files::Remove>(),
        ),
        route(
            "post",
            "/v1/move",
            "move",
            "Move or rename a file or folder",
            entry::<files::Move>(),
        ),
        route(
            "post",
            "/v1/memories",
            "remember",
            "Remember one memory",
            entry::<mem_service::RememberRequest>(),
        )
        .created(),
        route(
            "post",
            "/v1/memories/batch",
            "rememberBatch",
            "Remember many memories, one result each",
            entry::<memories::RememberBatch>(),
        ),
        route(
            "get",
            "/v1/memories",
            "listMemories",
            "Memories, newest first, a page at a time",
            entry::<mem_service::ListMemories>(),
        ),
        route(
            "get",
            "/v1/memories/{id}",
            "getMemory",
            "One memory",
            entry::<memories::GetMemory>(),
        ),
        route(
            "post",
            "/v1/memories/{id}/feedback",
            "feedback",
            "Useful / not useful / pin / unpin",
            entry::<memories::Feedback>(),
        ),
        route(
            "post",
            "/v1/memories/{id}/archive",
            "archive",
            "Archive a memory",
            entry::<memories::Archive>(),
        ),
        route(
            "post",
            "/v1/memories/{id}/restore",
            "restore",
            "Restore an archived memory",
            entry::<memories::Restore>(),
        ),
        route(
            "post",
            "/v1/memories/{id}/forget",
            "forget",
            "Purge a memory's content (confirm: true)",
            entry::<memories::Forget>(),
        ),
        route(
            "post",
            "/v1/search",
            "search",
            "Hybrid lexical + semantic search",
            entry::<rc::SearchQuery>(),
        ),
        route(
            "post",
            "/v1/context",
            "context",
            "A cited, budgeted context pack",
            entry::<rc::ContextRequest>(),
        ),
        route(
            "post",
            "/v1/check",
            "check",
            "Check an intended action against constraints",
            entry::<check::CheckRequest>(),
        ),
        route(
            "get",
            "/v1/types",
            "types",
            "Memory types and their roles",
            entry::<recall::Types>(),
        ),
        route(
            "get",
            "/v1/status",
            "status",
            "Processing, index and plugin status",
            entry::<recall::Status>(),
        ),
        route(
            "get",
            "/v1/related",
            "related",
            "Items related to a memory or a file (same topic, event, person, sequel, duplicate, conflict)",
            entry::<related::GetRelated>(),
        ),
        route(
            "post",
            "/v1/related/refresh",
            "refreshRelated",
            "Recompute relations of new items, or of all (bounded, resumable)",
            entry::<related::RefreshRelated>(),
        ),
        route(
            "get",
            "/v1/timeline",
            "timeline",
            "Files and memories of a period by month: counts and samples",
            entry::<mem_service::ops::timeline::Timeline>(),
        ),
        route(
            "get",
            "/v1/catalog",
            "catalog",
            "What the workspace holds by folder, type and subject (paged)",
            entry::<mem_service::navigation::catalog::Catalog>(),
        ),
        route(
            "get",
            "/v1/trace/{id}",
            "trace",
            "Walk a memory's explicit relations breadth-first (paged)",
            entry::<mem_service::navigation::trace::Trace>(),
        ),
        route(
            "get",
            "/v1/recall-log",
            "recallLog",
            "Content-free records of searches and context builds (owner)",
            entry::<mem_service::recall_log::RecallLogQuery>(),
        ),
        route(
            "post",
            "/v1/proposals",
            "propose",
            "Propose a memory change through the write gate",
            entry::<mem_service::ProposalRequest>(),
        )
        .created(),
        route(
            "get",
            "/v1/proposals/{id}",
            "getProposal",
            "A proposal this token made",
            entry::<govern::GetProposal>(),
        ),
        route(
            "get",
            "/v1/review",
            "reviewList",
            "Queued proposals",
            entry::<govern::ReviewList>(),
        ),
        route(
            "get",
            "/v1/review/{id}",
            "reviewShow",
            "Old and new text, diff, evidence, findings",
            entry::<govern::ReviewShow>(),
        ),
        route(
            "post",
            "/v1/review/{id}/approve",
            "reviewApprove",
            "Approve a queued proposal",
            entry::<govern::ReviewApprove>(),
        ),
        route(
            "post",
            "/v1/review/{id}/reject",
            "reviewReject",
            "Reject a queued proposal with a reason",
            entry::<govern::ReviewReject>(),
        ),
        route(
            "get",
            "/v1/audit",
            "auditList",
            "Audit entries, newest first",
            entry::<mem_service::AuditQuery>(),
        ),
        route(
            "get",
            "/v1/audit/{seq}",
            "auditShow",
            "One audit entry",
            entry::<govern::AuditShow>(),
        ),
        route(
            "post",
            "/v1/audit/verify",
            "auditVerify",
            "Verify the audit hash chain",
            entry::<govern::AuditVerify>(),
        ),
        route(
            "get",
            "/v1/budgets",
            "budgets",
            "Character budgets and their usage",
            entry::<govern::Budgets>(),
        ),
        route(
            "get",
            "/v1/lint",
            "lint",
            "Consistency issues in memories and types",
            entry::<govern::Lint>(),
        ),
        route(
            "post",
            "/v1/rebuild",
            "rebuild",
            "Recompute memory records from the event log",
            entry::<govern::Rebuild>(),
        ),
        route(
            "post",
            "/v1/reindex",
            "reindex",
            "Re-process files and bring the search index up to date",
            entry::<admin::Reindex>(),
        ),
        route(
            "post",
            "/v1/files/{target}/reprocess",
            "reprocessFile",
            "Send one file back to the processors",
            entry::<admin::Reprocess>(),
        ),
        route(
            "get",
            "/v1/tasks",
            "listTasks",
            "Tasks this token may see, by key",
            entry::<tasks::ListTasks>(),
        ),
        route(
            "post",
            "/v1/tasks/{task}/checkpoints",
            "checkpoint",
            "Write a handoff checkpoint on the task's head (compare-and-swap)",
            entry::<tasks::CheckpointTask>(),
        )
        .created(),
        route(
            "get",
            "/v1/tasks/{task}/checkpoints",
            "listCheckpoints",
            "A task's checkpoints, newest first",
            entry::<tasks::ListCheckpoints>(),
        ),
        route(
            "get",
            "/v1/tasks/{task}/checkpoints/{id}",
            "getCheckpoint",
            "One checkpoint of a task",
            entry::<tasks::GetCheckpoint>(),
        ),
        route(
            "post",
            "/v1/tasks/{task}/resume",
            "resume",
            "Resume a task: its handoff, resolved references and a context pack",
            entry::<tasks::ResumeTask>(),
        ),
        route(
            "get",
            "/v1/plugins",
            "plugins",
            "Installed plugins",
            entry::<plugins::PluginList>(),
        ),
        route(
            "post",
            "/v1/plugins",
            "installPlugin",
            "Install a plugin (manifest and base64 component)",
            entry::<plugins::PluginInstall>(),
        )
        .created(),
        route(
            "get",
            "/v1/plugins/{name}",
            "plugin",
            "One plugin: capabilities, limits, failures",
            entry::<plugins::PluginInspect>(),
        ),
        route(
            "post",
            "/v1/plugins/{name}/grant",
            "grantPlugin",
            "Grant capabilities the plugin requests",
            entry::<plugins::PluginGrant>(),
        ),
        route(
            "post",
            "/v1/plugins/{name}/revoke",
            "revokePlugin",
            "Revoke granted capabilities",
            entry::<plugins::PluginRevoke>(),
        ),
        route(
            "delete",
            "/v1/plugins/{name}",
            "removePlugin",
            "Uninstall a plugin",
            entry::<plugins::PluginRemove>(),
        ),
        route(
            "get",
            "/v1/tokens",
            "tokens",
            "API tokens (never their secrets)",
            entry::<admin::TokenList>(),
        ),
        route(
            "post",
            "/v1/tokens",
            "createToken",
            "Create a token; the secret is shown once",
            entry::<tokens::TokenRequest>(),
        )
        .created(),
        route(
            "delete",
            "/v1/tokens/{id}",
            "revokeToken",
            "Revoke a token",
            entry::<admin::TokenRevoke>(),
        ),
        route(
            "post",
            "/v1/import",
            "import",
            "Import a document (the raw body: AGENTS.md...) as memories",
            entry::<admin::ImportDocument>(),
        )
        .kind(Kind::DocumentIn),
        route(
            "get",
            "/v1/export",
            "export",
            "Export the memories of a folder as a document",
            entry::<admin::ExportDocument>(),
        )
        .kind(Kind::DocumentOut),
        route(
            "get",
            "/v1/bundle",
            "exportBundle",
            "Export the workspace (or a scope) as a bundle archive, streamed",
            entry::<bundles::ExportBundle>(),
        )
        .kind(Kind::BundleOut),
        route(
            "post",
            "/v1/bundle/import",
            "importBundle",
            "Import a bundle (the raw body) into this empty workspace, all or nothing",
            entry::<bundles::ImportBundle>(),
        )
        .kind(Kind::BundleIn),
        route(
            "post",
            "/v1/bundle/verify",
            "verifyBundle",
            "Check a bundle (the raw body) without importing it",
            entry::<bundles::VerifyBundle>(),
        )
        .kind(Kind::BundleIn),
    ]
}
