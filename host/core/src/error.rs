//! The one error type every surface renders as `{code, message, hint, details}`.
//!
//! Codes are stable strings (documented in `schemas/error.schema.json`);
//! surfaces derive their CLI exit code and HTTP status from the code, so a
//! new failure only needs a code, never per-surface mapping code.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;

/// Stable, machine-readable error codes. The spelling is part of the public
/// contract: store-level failures are upper case (as operators grep logs for
/// them), request-level failures are snake case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
pub enum ErrorCode {
    #[serde(rename = "not_found")]
    NotFound,
    #[serde(rename = "bad_request")]
    BadRequest,
    #[serde(rename = "bad_path")]
    BadPath,
    /// Text input that is not valid UTF-8.
    #[serde(rename = "bad_encoding")]
    BadEncoding,
    #[serde(rename = "already_exists")]
    AlreadyExists,
    #[serde(rename = "folder_not_empty")]
    FolderNotEmpty,
    #[serde(rename = "folder_has_memories")]
    FolderHasMemories,
    #[serde(rename = "move_into_self")]
    MoveIntoSelf,
    #[serde(rename = "idempotency_conflict")]
    IdempotencyConflict,
    #[serde(rename = "version_conflict")]
    VersionConflict,
    /// A handoff document breaks its schema (the field is named).
    #[serde(rename = "bad_handoff")]
    BadHandoff,
    /// A checkpoint's base is not the task's current head.
    #[serde(rename = "checkpoint_conflict")]
    CheckpointConflict,
    /// An annotation was already decided the other way (decisions are final).
    #[serde(rename = "annotation_decision_conflict")]
    AnnotationDecisionConflict,
    /// A file's annotation was decided on a stale `state_version` of the file.
    #[serde(rename = "annotation_version_conflict")]
    AnnotationVersionConflict,
    /// A page cursor was issued for an older revision of the workspace.
    #[serde(rename = "cursor_stale")]
    CursorStale,
    #[serde(rename = "confirmation_required")]
    ConfirmationRequired,
    #[serde(rename = "invalid_state")]
    InvalidState,
    #[serde(rename = "unknown_memory_type")]
    UnknownMemoryType,
    /// The write gate refused a write (policy, evidence, `never` rule).
    #[serde(rename = "write_rejected")]
    WriteRejected,
    /// A well-formed request refused by a rule no schema can state (a time
    /// in the past, a grant the plugin does not request).
    #[serde(rename = "unprocessable")]
    Unprocessable,
    /// A file's source metadata (capture time, position, place, source) is
    /// not what the strict format allows.
    #[serde(rename = "bad_source_metadata")]
    BadSourceMetadata,
    #[serde(rename = "payload_too_large")]
    PayloadTooLarge,
    /// The route exists but not with this HTTP method.
    #[serde(rename = "method_not_allowed")]
    MethodNotAllowed,
    #[serde(rename = "unauthorized")]
    Unauthorized,
    #[serde(rename = "forbidden")]
    Forbidden,
    #[serde(rename = "quota_exceeded")]
    QuotaExceeded,
    #[serde(rename = "BUDGET_EXCEEDED")]
    BudgetExceeded,
    #[serde(rename = "plugin_failed")]
    PluginFailed,
    /// A plugin refused this input on purpose (its typed error result).
    #[serde(rename = "plugin_rejected")]
    PluginRejected,
    #[serde(rename = "plugin_invalid")]
    PluginInvalid,
    #[serde(rename = "capability_denied")]
    CapabilityDenied,
    #[serde(rename = "provider_unavailable")]
    ProviderUnavailable,
    /// Content to be fetched from a URL (`put --url`) could not be: the
    /// host was unreachable, answered with a non-2xx status, redirected
    /// too often, or timed out (`details.reason` says which).
    #[serde(rename = "fetch_failed")]
    FetchFailed,
    #[serde(rename = "context_unavailable")]
    ContextUnavailable,
    #[serde(rename = "config_invalid")]
    ConfigInvalid,
    #[serde(rename = "workspace_not_found")]
    WorkspaceNotFound,
    /// A bundle import into a workspace that already holds data.
    #[serde(rename = "workspace_not_empty")]
    WorkspaceNotEmpty,
    /// A bundle is malformed, truncated or hostile (bad entry names, links,
    /// duplicates, sizes past the caps).
    #[serde(rename = "bundle_invalid")]
    BundleInvalid,
    /// A bundle written by a newer format version.
    #[serde(rename = "bundle_unsupported_version")]
    BundleUnsupportedVersion,
    /// A bundle's record names a blob the bundle does not hold.
    #[serde(rename = "bundle_missing_blob")]
    BundleMissingBlob,
    /// A bundle entry's SHA-256 or size is not the manifest's.
    #[serde(rename = "bundle_hash_mismatch")]
    BundleHashMismatch,
    /// The server has more requests waiting than it can start in time; the
    /// answer says when to retry.
    #[serde(rename = "overloaded")]
    Overloaded,
    #[serde(rename = "STORE_LOCKED")]
    StoreLocked,
    #[serde(rename = "STORE_CORRUPT")]
    StoreCorrupt,
    #[serde(rename = "STORE_UNSUPPORTED_VERSION")]
    StoreUnsupportedVersion,
    /// A shared store (its database or object store) cannot be reached.
    #[serde(rename = "STORE_UNAVAILABLE")]
    StoreUnavailable,
    #[serde(rename = "io_error")]
    Io,
    #[serde(rename = "internal")]
    Internal,
}

impl ErrorCode {
    /// Every code, for schema generation and documentation tests.
    pub const ALL: &'static [ErrorCode] = &[
        Self::NotFound,
        Self::BadRequest,
        Self::BadPath,
        Self::BadEncoding,
        Self::AlreadyExists,
        Self::FolderNotEmpty,
        Self::FolderHasMemories,
        Self::MoveIntoSelf,
        Self::IdempotencyConflict,
        Self::VersionConflict,
        Self::BadHandoff,
        Self::CheckpointConflict,
        Self::AnnotationDecisionConflict,
        Self::AnnotationVersionConflict,
        Self::CursorStale,
        Self::ConfirmationRequired,
        Self::InvalidState,
        Self::UnknownMemoryType,
        Self::WriteRejected,
        Self::Unprocessable,
        Self::BadSourceMetadata,
        Self::PayloadTooLarge,
        Self::MethodNotAllowed,
        Self::Unauthorized,
        Self::Forbidden,
        Self::QuotaExceeded,
        Self::BudgetExceeded,
        Self::PluginFailed,
        Self::PluginRejected,
        Self::PluginInvalid,
        Self::CapabilityDenied,
        Self::ProviderUnavailable,
        Self::FetchFailed,
        Self::ContextUnavailable,
        Self::ConfigInvalid,
        Self::WorkspaceNotFound,
        Self::WorkspaceNotEmpty,
        Self::BundleInvalid,
        Self::BundleUnsupportedVersion,
        Self::BundleMissingBlob,
        Self::BundleHashMismatch,
        Self::Overloaded,
        Self::StoreLocked,
        Self::StoreCorrupt,
        Self::StoreUnsupportedVersion,
        Self::StoreUnavailable,
        Self::Io,
        Self::Internal,
    ];

    pub fn as_str(self) -> &'static str {
        CODE_NAMES
            .iter()
            .find(|(c, _)| *c == self)
            .map_or("internal", |(_, name)| *name)
    }

    /// What to do about an error of this code, when its raiser has nothing
    /// more precise to say.
    pub fn default_hint(self) -> &'static str {
        match self {
            Self::NotFound => "check the id or path; list what exists with `ls` or `memory list`",
            Self::BadRequest => "correct the request as the message says and send it again",
            Self::BadPath => {
                "use an absolute path such as /projects/notes, without trailing slash, '.' or '..'"
            }
            Self::BadEncoding => "send text as UTF-8; store other bytes as a file",
            Self::AlreadyExists => "choose another name, or replace the existing one explicitly",
            Self::FolderNotEmpty => "remove its contents first, or remove it recursively",
            Self::FolderHasMemories => {
                "archive or move the memories first; a memory's folder is part of it"
            }
            Self::MoveIntoSelf => "move the folder somewhere outside itself",
            Self::IdempotencyConflict => {
                "use a new idempotency key for a new request; reuse a key only to retry the same request"
            }
            Self::VersionConflict => {
                "read the record again and retry with its current state_version"
            }
            Self::BadHandoff => {
                "correct the named field of the handoff document (schemas/handoff.v1.json)"
            }
            Self::AnnotationDecisionConflict => {
                "the annotation was already decided the other way and decisions are final; read the file's annotations (`info`) to see who decided and why"
            }
            Self::AnnotationVersionConflict => {
                "the file changed since you read it: read it again (`info`) and retry with its current state_version (details.current_version)"
            }
            Self::CursorStale => {
                "the workspace changed since the cursor was issued; request again without the cursor"
            }
            Self::CheckpointConflict => {
                "another checkpoint was written first: resume the task, merge its handoff into yours, and checkpoint again on the head it names"
            }
            Self::ConfirmationRequired => {
                "repeat the request with confirm set to true if you mean it"
            }
            Self::InvalidState => {
                "read the record's current state; the action does not apply to it"
            }
            Self::UnknownMemoryType => {
                "list the workspace's types with `mem-host types` (or mem_types)"
            }
            Self::WriteRejected => "address the reasons given, or ask the workspace owner",
            Self::Unprocessable => {
                "the request is well-formed but the rule in the message refuses it; change what it names"
            }
            Self::BadSourceMetadata => {
                "send source metadata as one JSON object of known fields (captured_at with a zone, lat/lon in range, no nulls, at most 4 KiB)"
            }
            Self::PayloadTooLarge => "send less, split it, or ask the owner to raise the limit",
            Self::MethodNotAllowed => "use a method the route takes (see /v1/openapi.json)",
            Self::Unauthorized => {
                "send a valid token: `Authorization: Bearer <secret>` (the owner creates one with `mem-host token create`)"
            }
            Self::Forbidden => "ask the workspace owner for a token with the needed scope",
            Self::QuotaExceeded => {
                "wait until the quota resets (retry_after), or ask for a larger quota"
            }
            Self::BudgetExceeded => {
                "archive or forget memories in that scope, or ask the owner to raise the budget"
            }
            Self::PluginFailed => {
                "see `mem-host plugin inspect NAME` for the plugin's failures; the host kept running"
            }
            Self::PluginRejected => {
                "the plugin says what is wrong with the input; correct it, or use another plugin"
            }
            Self::PluginInvalid => {
                "check the plugin's manifest and component against the WIT it targets"
            }
            Self::CapabilityDenied => {
                "the owner grants capabilities with `mem-host plugin grant NAME CAP`"
            }
            Self::ProviderUnavailable => {
                "install the embedding model with `mem-host model install`, or retry later"
            }
            Self::FetchFailed => {
                "check the URL in a browser or with curl; retry later, or download it and put the local file"
            }
            Self::ContextUnavailable => {
                "retry; if it persists, see `mem-host status` for the failing lanes"
            }
            Self::ConfigInvalid => "fix mem.toml as the message says",
            Self::WorkspaceNotFound => {
                "create one with `mem-host init`, or point MEM_HOME / --workspace at one"
            }
            Self::WorkspaceNotEmpty => {
                "import into a new folder with `import FILE --into DIR`, or into an empty workspace"
            }
            Self::BundleInvalid => {
                "the archive is damaged or not a mem-host bundle; export it again from the source workspace"
            }
            Self::BundleUnsupportedVersion => {
                "upgrade mem-host to a version that reads this bundle format"
            }
            Self::BundleMissingBlob | Self::BundleHashMismatch => {
                "the bundle was altered or damaged in transit; export it again from the source workspace"
            }
            Self::Overloaded => {
                "the server is busy: retry after the seconds its retry-after header (or details.retry_after) says"
            }
            Self::StoreLocked => {
                "another mem-host process holds this workspace; wait for it or stop it"
            }
            Self::StoreCorrupt => {
                "restore the workspace from a backup or a bundle export; mem-host will not guess at damaged data"
            }
            Self::StoreUnsupportedVersion => {
                "upgrade mem-host to a version that supports this store"
            }
            Self::StoreUnavailable => {
                "check that the database and object store named in mem.toml are running and reachable, then retry"
            }
            Self::Io => "check free disk space and the permissions of the workspace folder",
            Self::Internal => "this is a bug in mem-host; please report it with the message",
        }
    }

    /// CLI exit code: 0 ok · 2 not found · 3 auth · 4 budget/quota ·
    /// 5 plugin/provider · 1 other.
    pub fn exit_code(self) -> i32 {
        match self {
            Self::NotFound | Self::WorkspaceNotFound => 2,
            Self::Unauthorized | Self::Forbidden => 3,
            Self::BudgetExceeded | Self::QuotaExceeded => 4,
            Self::PluginFailed
            | Self::PluginRejected
            | Self::PluginInvalid
            | Self::CapabilityDenied
            | Self::ProviderUnavailable => 5,
            _ => 1,
        }
    }

    /// HTTP status for the REST surface.
    pub fn http_status(self) -> u16 {
        match self {
            Self::NotFound | Self::WorkspaceNotFound => 404,
            Self::BadRequest
            | Self::BadPath
            | Self::BadEncoding
            | Self::BadHandoff
            | Self::ConfirmationRequired => 400,
            Self::Unauthorized => 401,
            Self::Forbidden | Self::CapabilityDenied => 403,
            Self::AlreadyExists
            | Self::FolderNotEmpty
            | Self::FolderHasMemories
            | Self::MoveIntoSelf
            | Self::IdempotencyConflict
            | Self::VersionConflict
            | Self::CheckpointConflict
            | Self::AnnotationDecisionConflict
            | Self::AnnotationVersionConflict
            | Self::CursorStale
            | Self::InvalidState
            | Self::WorkspaceNotEmpty => 409,
            Self::PayloadTooLarge => 413,
            Self::MethodNotAllowed => 405,
            Self::UnknownMemoryType
            | Self::WriteRejected
            | Self::Unprocessable
            | Self::BadSourceMetadata
            | Self::PluginRejected
            | Self::ConfigInvalid
            | Self::PluginInvalid
            | Self::BundleInvalid
            | Self::BundleUnsupportedVersion
            | Self::BundleMissingBlob
            | Self::BundleHashMismatch => 422,
            Self::BudgetExceeded => 422,
            Self::QuotaExceeded => 429,
            Self::ProviderUnavailable
            | Self::StoreLocked
            | Self::StoreUnavailable
            | Self::Overloaded => 503,
            Self::ContextUnavailable | Self::FetchFailed => 502,
            Self::PluginFailed
            | Self::StoreCorrupt
            | Self::StoreUnsupportedVersion
            | Self::Io
            | Self::Internal => 500,
        }
    }
}

const CODE_NAMES: &[(ErrorCode, &str)] = &[
    (ErrorCode::NotFound, "not_found"),
    (ErrorCode::BadRequest, "bad_request"),
    (ErrorCode::BadPath, "bad_path"),
    (ErrorCode::BadEncoding, "bad_encoding"),
    (ErrorCode::AlreadyExists, "already_exists"),
    (ErrorCode::FolderNotEmpty, "folder_not_empty"),
    (ErrorCode::FolderHasMemories, "folder_has_memories"),
    (ErrorCode::MoveIntoSelf, "move_into_self"),
    (ErrorCode::IdempotencyConflict, "idempotency_conflict"),
    (ErrorCode::VersionConflict, "version_conflict"),
    (ErrorCode::BadHandoff, "bad_handoff"),
    (ErrorCode::CheckpointConflict, "checkpoint_conflict"),
    (
        ErrorCode::AnnotationDecisionConflict,
        "annotation_decision_conflict",
    ),
    (
        ErrorCode::AnnotationVersionConflict,
        "annotation_version_conflict",
    ),
    (ErrorCode::CursorStale, "cursor_stale"),
    (ErrorCode::ConfirmationRequired, "confirmation_required"),
    (ErrorCode::InvalidState, "invalid_state"),
    (ErrorCode::UnknownMemoryType, "unknown_memory_type"),
    (ErrorCode::WriteRejected, "write_rejected"),
    (ErrorCode::Unprocessable, "unprocessable"),
    (ErrorCode::BadSourceMetadata, "bad_source_metadata"),
    (ErrorCode::PayloadTooLarge, "payload_too_large"),
    (ErrorCode::MethodNotAllowed, "method_not_allowed"),
    (ErrorCode::Unauthorized, "unauthorized"),
    (ErrorCode::Forbidden, "forbidden"),
    (ErrorCode::QuotaExceeded, "quota_exceeded"),
    (ErrorCode::BudgetExceeded, "BUDGET_EXCEEDED"),
    (ErrorCode::PluginFailed, "plugin_failed"),
    (ErrorCode::PluginRejected, "plugin_rejected"),
    (ErrorCode::PluginInvalid, "plugin_invalid"),
    (ErrorCode::CapabilityDenied, "capability_denied"),
    (ErrorCode::ProviderUnavailable, "provider_unavailable"),
    (ErrorCode::FetchFailed, "fetch_failed"),
    (ErrorCode::ContextUnavailable, "context_unavailable"),
    (ErrorCode::ConfigInvalid, "config_invalid"),
    (ErrorCode::WorkspaceNotFound, "workspace_not_found"),
    (ErrorCode::WorkspaceNotEmpty, "workspace_not_empty"),
    (ErrorCode::BundleInvalid, "bundle_invalid"),
    (
        ErrorCode::BundleUnsupportedVersion,
        "bundle_unsupported_version",
    ),
    (ErrorCode::BundleMissingBlob, "bundle_missing_blob"),
    (ErrorCode::BundleHashMismatch, "bundle_hash_mismatch"),
    (ErrorCode::Overloaded, "overloaded"),
    (ErrorCode::StoreLocked, "STORE_LOCKED"),
    (ErrorCode::StoreCorrupt, "STORE_CORRUPT"),
    (
        ErrorCode::StoreUnsupportedVersion,
        "STORE_UNSUPPORTED_VERSION",
    ),
    (ErrorCode::StoreUnavailable, "STORE_UNAVAILABLE"),
    (ErrorCode::Io, "io_error"),
    (ErrorCode::Internal, "internal"),
];

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failure a person or an agent can act on: what happened (`message`),
/// what to do next (`hint`), and the facts behind it (`details`, e.g.
/// `{usage, limit, needed}` for a budget).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MemError {
    pub code: ErrorCode,
    pub message: String,
    #[serde(default)]
    pub hint: String,
    #[serde(default, skip_serializing_if = "Value::is_null")]
    #[schemars(with = "Option<serde_json::Map<String, Value>>")]
    pub details: Value,
}

pub type MemResult<T> = Result<T, MemError>;

impl MemError {
    /// An error with its code's default hint; `with_hint` says more
    /// precisely what to do. A hint is never empty.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            hint: code.default_hint().to_string(),
            details: Value::Null,
        }
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        let hint = hint.into();
        if !hint.trim().is_empty() {
            self.hint = hint;
        }
        self
    }

    pub fn with_details(mut self, details: Value) -> Self {
        self.details = details;
        self
    }

    pub fn not_found(what: &str, id: &str) -> Self {
        Self::new(ErrorCode::NotFound, format!("{what} '{id}' not found"))
            .with_hint(format!(
                "check the {what} id or path; list what exists with `ls` or `memory list`"
            ))
            .with_details(serde_json::json!({ "kind": what, "id": id }))
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::BadRequest, message)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Internal, message)
            .with_hint("this is a bug in mem-host; please report it with the message")
    }

    pub fn io(context: &str, err: &std::io::Error) -> Self {
        Self::new(ErrorCode::Io, format!("{context}: {err}"))
            .with_hint("check that the path exists and is readable/writable")
    }
}

impl fmt::Display for MemError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for MemError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_names_match_serde_spelling() {
        for code in ErrorCode::ALL {
            let via_serde = serde_json::to_value(code).unwrap();
            assert_eq!(via_serde, Value::String(code.as_str().to_string()));
        }
        assert_eq!(ErrorCode::ALL.len(), CODE_NAMES.len());
    }

    #[test]
    fn exit_codes_follow_the_contract() {
        assert_eq!(ErrorCode::NotFound.exit_code(), 2);
        assert_eq!(ErrorCode::Unauthorized.exit_code(), 3);
        assert_eq!(ErrorCode::BudgetExceeded.exit_code(), 4);
        assert_eq!(ErrorCode::PluginFailed.exit_code(), 5);
        assert_eq!(ErrorCode::VersionConflict.exit_code(), 1);
    }

    #[test]
    fn every_code_has_a_hint_and_an_explicit_empty_one_keeps_it() {
        for code in ErrorCode::ALL {
            assert!(!code.default_hint().is_empty(), "{code}");
            let e = MemError::new(*code, "x").with_hint("  ");
            assert!(!e.hint.trim().is_empty(), "{code}");
        }
    }

    #[test]
    fn error_serializes_without_null_details() {
        let e = MemError::new(ErrorCode::BadPath, "x").with_hint("y");
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(v["code"], "bad_path");
        assert!(v.get("details").is_none());
    }
}
