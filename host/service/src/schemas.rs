//! JSON Schemas of the public documents, generated from the Rust types
//! that produce them. `schemas/*.json` in the repository are these, checked
//! by a test (and regenerated with `MEM_HOST_BLESS=1`).

use crate::{Listing, Page, PutFileResult, RememberOutcome, RememberRequest};
use mem_core::MemError;
use mem_core::model::{FileRecord, Memory};
use schemars::{JsonSchema, generate::SchemaSettings};
use serde_json::Value;

/// The file a schema is committed as: a versioned document format
/// (`handoff.v1`) is `schemas/{stem}.json`, the rest `{stem}.schema.json`.
pub fn file_name(stem: &str) -> String {
    if stem.contains(".v") {
        format!("{stem}.json")
    } else {
        format!("{stem}.schema.json")
    }
}

fn schema_of<T: JsonSchema>(id: &str, title: &str) -> Value {
    let generator = SchemaSettings::draft2020_12().into_generator();
    let mut schema = generator.into_root_schema_for::<T>().to_value();
    if let Value::Object(map) = &mut schema {
        map.insert(
            "$id".into(),
            Value::String(format!("https://mem-host.dev/schemas/{}", file_name(id))),
        );
        map.insert("title".into(), Value::String(title.into()));
    }
    schema
}

/// `(file stem, schema)` for every public document.
pub fn public_schemas() -> Vec<(&'static str, Value)> {
    vec![
        ("error", schema_of::<MemError>("error", "mem-host error")),
        ("file", schema_of::<FileRecord>("file", "mem-host file")),
        (
            "file-details",
            schema_of::<crate::ops::file_details::FileDetails>(
                "file-details",
                "mem-host file with what processing made of it",
            ),
        ),
        (
            "annotation-decided",
            schema_of::<crate::annotations::AnnotationDecided>(
                "annotation-decided",
                "mem-host annotation decision",
            ),
        ),
        (
            "put-result",
            schema_of::<PutFileResult>("put-result", "mem-host put result"),
        ),
        (
            "folder-listing",
            schema_of::<Listing>("folder-listing", "mem-host folder listing"),
        ),
        ("memory", schema_of::<Memory>("memory", "mem-host memory")),
        (
            "memory-page",
            schema_of::<Page<Memory>>("memory-page", "mem-host memory list page"),
        ),
        (
            "remember-request",
            schema_of::<RememberRequest>("remember-request", "mem-host remember request"),
        ),
        (
            "remember-result",
            schema_of::<RememberOutcome>("remember-result", "mem-host remember result"),
        ),
        (
            "proposal-request",
            schema_of::<crate::ProposalRequest>("proposal-request", "mem-host proposal request"),
        ),
        (
            "proposal",
            schema_of::<crate::Proposal>("proposal", "mem-host proposal"),
        ),
        (
            "proposal-result",
            schema_of::<crate::ProposalOutcome>("proposal-result", "mem-host proposal result"),
        ),
        (
            "review-item",
            schema_of::<crate::ReviewItem>("review-item", "mem-host review item"),
        ),
        (
            "audit-entry",
            schema_of::<crate::AuditEntry>("audit-entry", "mem-host audit entry"),
        ),
        (
            "audit-verification",
            schema_of::<crate::AuditVerification>(
                "audit-verification",
                "mem-host audit verification",
            ),
        ),
        (
            "check-result",
            schema_of::<crate::check::CheckResult>("check-result", "mem-host check result"),
        ),
        (
            "lint-report",
            schema_of::<crate::lint::LintReport>("lint-report", "mem-host lint report"),
        ),
        (
            "memory-type",
            schema_of::<crate::types::TypeDef>("memory-type", "mem-host memory type"),
        ),
        (
            "search-request",
            schema_of::<crate::recall::SearchQuery>("search-request", "mem-host search request"),
        ),
        (
            "search-result",
            schema_of::<crate::recall::SearchResult>("search-result", "mem-host search result"),
        ),
        (
            "related-result",
            schema_of::<crate::related::RelatedResult>("related-result", "mem-host related items"),
        ),
        (
            "related-refresh",
            schema_of::<crate::related::RefreshReport>(
                "related-refresh",
                "mem-host relation refresh report",
            ),
        ),
        (
            "context-request",
            schema_of::<crate::recall::ContextRequest>(
                "context-request",
                "mem-host context request",
            ),
        ),
        (
            "context-pack",
            schema_of::<crate::recall::ContextPack>("context-pack", "mem-host context pack"),
        ),
        (
            "web-signin",
            schema_of::<crate::web::SignInLink>("web-signin", "mem-host web sign-in link"),
        ),
        (
            "handoff.v1",
            schema_of::<crate::handoff::Handoff>("handoff.v1", "mem-host handoff v1"),
        ),
        (
            "checkpoint",
            schema_of::<crate::handoff::Checkpoint>("checkpoint", "mem-host checkpoint"),
        ),
        (
            "checkpoint-result",
            schema_of::<crate::handoff::CheckpointOutcome>(
                "checkpoint-result",
                "mem-host checkpoint result",
            ),
        ),
        (
            "checkpoint-page",
            schema_of::<crate::ops::tasks::CheckpointPage>(
                "checkpoint-page",
                "mem-host checkpoint page",
            ),
        ),
        (
            "catalog-page",
            schema_of::<crate::navigation::catalog::CatalogPage>(
                "catalog-page",
                "mem-host catalog page",
            ),
        ),
        (
            "timeline",
            schema_of::<crate::timeline::TimelineAnswer>("timeline", "mem-host timeline"),
        ),
        (
            "workspace-status",
            schema_of::<crate::processing::WorkspaceStatus>(
                "workspace-status",
                "mem-host workspace status",
            ),
        ),
        (
            "trace-result",
            schema_of::<crate::navigation::trace::TraceResult>(
                "trace-result",
                "mem-host trace result",
            ),
        ),
        (
            "recall-log",
            schema_of::<crate::recall_log::RecallLogReport>("recall-log", "mem-host recall log"),
        ),
        (
            "task-list",
            schema_of::<crate::ops::tasks::TaskPage>("task-list", "mem-host task list"),
        ),
        (
            "resume-result",
            schema_of::<crate::handoff::ResumeResult>("resume-result", "mem-host resume result"),
        ),
        (
            "bundle-manifest",
            schema_of::<crate::bundle::Manifest>("bundle-manifest", "mem-host bundle manifest"),
        ),
        (
            "bundle-import-result",
            schema_of::<crate::bundle::ImportReport>(
                "bundle-import-result",
                "mem-host bundle import result",
            ),
        ),
        (
            "bundle-verify-result",
            schema_of::<crate::bundle::VerifyReport>(
                "bundle-verify-result",
                "mem-host bundle verify result",
            ),
        ),
    ]
}
