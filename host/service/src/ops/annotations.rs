//! `files.annotation.decide`: a person accepts or rejects what a
//! processor suggested about a file (see [`crate::annotations`]).

use super::fields;
use crate::access::Scope;
use crate::annotations::AnnotationDecided;
use crate::door::{Caller, Operation, Replay};
use mem_core::MemResult;
use mem_core::model::AnnotationDecision;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `files.annotation.decide`: accept or reject one pending annotation of
/// a file. Accepted tags join the file's tags, an accepted description
/// becomes its description; the file's `state_version` moves on. The
/// same decision again answers as before (`replayed`), the opposite one
/// is `annotation_decision_conflict`, a stale `expected_version`
/// `annotation_version_conflict`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DecideAnnotation {
    /// A file id (`file_...`) or a file's full path.
    #[schemars(length(min = 1))]
    pub target: String,
    /// The annotation's id (`ann_...`), as `info` lists it.
    #[schemars(length(min = 1, max = 64))]
    pub annotation_id: String,
    /// `accept` or `reject`.
    pub decision: AnnotationDecision,
    /// The file's state_version the caller last saw.
    #[schemars(schema_with = "fields::version")]
    pub expected_version: u64,
    /// Why, kept with the decision and in the audit log (at most 2000
    /// characters, `annotations::MAX_REASON_CHARS`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 2000))]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "fields::opt_key")]
    pub idempotency_key: Option<String>,
}

impl Operation for DecideAnnotation {
    const NAME: &'static str = "files.annotation.decide";
    const SCOPE: Scope = Scope::Write;
    const REPLAY: Replay = Replay::Kept;
    type Output = AnnotationDecided;

    fn idempotency_key(&self) -> Option<&str> {
        self.idempotency_key.as_deref()
    }

    fn replayed(out: &AnnotationDecided) -> bool {
        out.replayed
    }

    fn run(self, c: &Caller<'_>) -> MemResult<AnnotationDecided> {
        let f = c.visible_file(&self.target)?;
        c.object(Scope::Write, "file", &self.target, &f.path)?;
        c.access.may_write_at(&f.path)?;
        let actor = c.actor(None, None);
        c.svc.decide_annotation(
            &f.id,
            &self.annotation_id,
            self.decision,
            self.expected_version,
            self.reason.as_deref(),
            &actor,
        )
    }
}
