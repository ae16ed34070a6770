//! `check`: does a planned text (a command, a diff, a message) break a
//! constraint the workspace remembers? Constraints carry guards —
//! `when_any` (when the constraint applies) and `deny_any` (what it
//! forbids), as newline-separated phrases or `re:` regexes. A constraint
//! that cannot be evaluated deterministically (no `deny_any`, a broken
//! regex) yields `NEEDS_REVIEW`: an incomplete evaluation never allows.

use crate::Service;
use crate::records::{decode, scan_all};
use crate::types::{GUARD_DENY_ANY, GUARD_WHEN_ANY};
use mem_core::model::Memory;
use mem_core::store::Table;
use mem_core::{MemError, MemResult, VPath};
use serde::{Deserialize, Serialize};

/// Longest text `check` evaluates.
const MAX_CHECK_CHARS: usize = 256 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum CheckStatus {
    Allow,
    Block,
    NeedsReview,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckRequest {
    /// The planned action or text.
    #[schemars(schema_with = "crate::ops::fields::text", length(max = 262144))]
    pub text: String,
    /// Where the action happens (what `when_any` guards also look at).
    #[serde(default)]
    pub context: Option<String>,
    /// Only constraints scoped at this path or above it.
    #[serde(default)]
    #[schemars(schema_with = "crate::ops::fields::opt_path")]
    pub path: Option<String>,
}

/// A constraint that decided (or could not decide) the check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ConstraintHit {
    pub id: String,
    pub citation: String,
    pub kind: String,
    pub content: String,
    /// The guard that matched, or why the constraint could not be evaluated.
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CheckResult {
    pub status: CheckStatus,
    pub blocked_by: Vec<ConstraintHit>,
    pub needs_review: Vec<ConstraintHit>,
    /// Constraints considered (in scope and in force).
    pub constraints: usize,
}

enum Guard {
    Phrase(String),
    Regex(regex::Regex),
}

impl Guard {
    fn matches(&self, text: &str) -> bool {
        match self {
            Self::Phrase(p) => text.to_lowercase().contains(&p.to_lowercase()),
            Self::Regex(r) => r.is_match(text),
        }
    }

    fn label(&self) -> String {
        match self {
            Self::Phrase(p) => format!("{p:?}"),
            Self::Regex(r) => format!("re:{}", r.as_str().trim_start_matches("(?i)")),
        }
    }
}

/// Parses a guard attribute; `Err` names the entry that cannot be compiled.
fn guards(raw: &str) -> Result<Vec<Guard>, String> {
    raw.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|l| match l.strip_prefix("re:") {
            Some(re) => regex::RegexBuilder::new(re)
                .case_insensitive(true)
                .size_limit(1 << 20)
                .build()
                .map(Guard::Regex)
                .map_err(|e| format!("guard {l:?} is not a valid regex: {e}")),
            None => Ok(Guard::Phrase(l.to_string())),
        })
        .collect()
}

impl Service {
    pub(crate) fn check(&self, req: &CheckRequest) -> MemResult<CheckResult> {
        if req.text.trim().is_empty() {
            return Err(MemError::bad_request("text is empty")
                .with_hint("pass the text to check with --text"));
        }
        if req.text.chars().count() > MAX_CHECK_CHARS {
            return Err(MemError::bad_request(format!(
                "text is longer than {MAX_CHECK_CHARS} characters"
            )));
        }
        let scope = req.path.as_deref().map(VPath::parse).transpose()?;
        let context = req.context.clone().unwrap_or_default();
        let mut blocked_by = Vec::new();
        let mut needs_review = Vec::new();
        let mut considered = 0;
        let config = self.config();
        for m in self.memories_in_force()? {
            let Ok(def) = config.types.registry.resolve(&m.kind) else {
                continue;
            };
            if def.role != "constraint" || scope.as_ref().is_some_and(|s| !s.is_within(&m.path)) {
                continue;
            }
            considered += 1;
            let hit = |reason: String| ConstraintHit {
                id: m.id.clone(),
                citation: format!("mem://memory/{}", m.id),
                kind: m.kind.clone(),
                content: m.content.clone().unwrap_or_default(),
                reason,
            };
            let when = match m
                .attributes
                .get(GUARD_WHEN_ANY)
                .map(|r| guards(r))
                .transpose()
            {
                Ok(w) => w,
                Err(e) => {
                    needs_review.push(hit(e));
                    continue;
                }
            };
            if let Some(when) = &when {
                let applies = when
                    .iter()
                    .any(|g| g.matches(&req.text) || g.matches(&context));
                if !applies {
                    continue;
                }
            }
            match m.attributes.get(GUARD_DENY_ANY).map(|r| guards(r)) {
                None => needs_review.push(hit(
                    "the constraint has no deny_any guard: a person must judge it".into(),
                )),
                Some(Err(e)) => needs_review.push(hit(e)),
                Some(Ok(deny)) if deny.is_empty() => {
                    needs_review.push(hit("the deny_any guard is empty".into()))
                }
                Some(Ok(deny)) => {
                    if let Some(g) = deny.iter().find(|g| g.matches(&req.text)) {
                        blocked_by.push(hit(format!("the text matches deny_any {}", g.label())));
                    }
                }
            }
        }
        let status = if !blocked_by.is_empty() {
            CheckStatus::Block
        } else if !needs_review.is_empty() {
            CheckStatus::NeedsReview
        } else {
            CheckStatus::Allow
        };
        Ok(CheckResult {
            status,
            blocked_by,
            needs_review,
            constraints: considered,
        })
    }

    /// Every memory currently in force: active ones, plus superseded ones
    /// whose superseder is no longer active (supersede authority lapses
    /// with its superseder; a mere proposal never hides anything).
    pub(crate) fn memories_in_force(&self) -> MemResult<Vec<Memory>> {
        let all: Vec<Memory> = scan_all(self.store(), Table::Memories, "")?
            .into_iter()
            .map(|(k, raw)| decode(Table::Memories, &k, &raw))
            .collect::<MemResult<_>>()?;
        let active: std::collections::BTreeSet<&str> = all
            .iter()
            .filter(|m| m.lifecycle == mem_core::model::Lifecycle::Active)
            .map(|m| m.id.as_str())
            .collect();
        let in_force: Vec<Memory> = all
            .iter()
            .filter(|m| match m.lifecycle {
                mem_core::model::Lifecycle::Active => true,
                mem_core::model::Lifecycle::Superseded => !m
                    .relations
                    .iter()
                    .any(|r| r.kind == "superseded_by" && active.contains(r.target.as_str())),
                _ => false,
            })
            .cloned()
            .collect();
        Ok(in_force)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guards_parse_phrases_and_regexes() {
        let g = guards("rm -rf\nre:git push .*--force\n\n").unwrap();
        assert_eq!(g.len(), 2);
        assert!(g[0].matches("sudo RM -RF /"));
        assert!(g[1].matches("git push origin --force"));
        assert!(guards("re:(unclosed").is_err());
    }
}
