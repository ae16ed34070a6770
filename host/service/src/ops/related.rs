//! Related items: `related.get` answers from the stored relations,
//! `related.refresh` recomputes them.

use crate::access::Scope;
use crate::door::{Caller, Operation, Replay};
use crate::related::{
    DEFAULT_REFRESH_ITEMS, DEFAULT_RELATED_LIMIT, RefreshReport, RelatedResult, RelationType,
};
use mem_core::MemResult;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `related.get`: the items related to a memory or a file, best first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetRelated {
    /// A memory id (`mem_...`), a file id (`file_...`) or a file's path.
    #[schemars(length(min = 1, max = 4096))]
    pub id: String,
    /// Only relations of this type.
    #[serde(default, skip_serializing_if = "Option::is_none", rename = "type")]
    pub kind: Option<RelationType>,
    /// Most relations returned (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 100))]
    pub limit: Option<usize>,
}

impl Operation for GetRelated {
    const NAME: &'static str = "related.get";
    const SCOPE: Scope = Scope::Read;
    const REPLAY: Replay = Replay::None;
    type Output = RelatedResult;

    fn run(self, c: &Caller<'_>) -> MemResult<RelatedResult> {
        c.require(Scope::Read)?;
        // Writes waiting for their relations get one bounded step first.
        c.svc.catch_up_related();
        let limit = self.limit.unwrap_or(DEFAULT_RELATED_LIMIT);
        c.svc
            .related(&self.id, self.kind, limit, &|p| c.access.sees(p))
    }
}

/// `related.refresh`: recompute relations of the items written since the
/// last computation, or of every item (`all`); bounded by `max_items`,
/// resumable (call again while `pending`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RefreshRelated {
    /// Start again from the first item (after changing detectors).
    #[serde(default)]
    pub all: bool,
    /// Most items recomputed by this call (default 256).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 100000))]
    pub max_items: Option<usize>,
}

impl Operation for RefreshRelated {
    const NAME: &'static str = "related.refresh";
    const SCOPE: Scope = Scope::Admin;
    const REPLAY: Replay = Replay::None;
    type Output = RefreshReport;

    fn run(self, c: &Caller<'_>) -> MemResult<RefreshReport> {
        let svc = c.admin()?;
        let report =
            svc.refresh_related(self.all, self.max_items.unwrap_or(DEFAULT_REFRESH_ITEMS))?;
        svc.flush()?;
        svc.audit_admin(
            &c.actor(None, None),
            "related-refresh",
            if self.all { "all" } else { "new" },
            vec![format!("{} items recomputed", report.items)],
        )?;
        Ok(report)
    }
}
