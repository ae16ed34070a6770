//! Hard character budgets (dsh-memory-protocol): the owner caps how much
//! active memory content a path scope or a kind may hold. Usage counters are
//! updated in the same atomic commit as the memories they count, under
//! compare-and-swap, so they never drift from the records.

use crate::Service;
use crate::records::scan_all;
use mem_core::model::{Lifecycle, Memory};
use mem_core::store::{Batch, Table};
use mem_core::{ErrorCode, MemError, MemResult, VPath};
use serde_json::json;
use std::collections::BTreeMap;

const PATH_PREFIX: &str = "usage/path/";
const KIND_PREFIX: &str = "usage/kind/";

/// Net changes of active content, accumulated over one commit.
#[derive(Debug, Default)]
pub(crate) struct UsageChange {
    /// (memory path, kind, characters: positive when content becomes active).
    entries: Vec<(VPath, String, i64)>,
}

impl UsageChange {
    pub fn new() -> Self {
        Self::default()
    }

    /// `m` becomes active (+1) or stops being active (-1).
    pub fn add(&mut self, m: &Memory, sign: i64) {
        let chars = m.content.as_deref().map_or(0, |c| c.chars().count()) as i64;
        if chars > 0 {
            self.entries
                .push((m.path.clone(), m.kind.clone(), sign * chars));
        }
    }

    /// The change from `before` to `after` of one memory's active content.
    pub fn transition(&mut self, before: &Memory, after: &Memory) {
        match (
            before.lifecycle == Lifecycle::Active,
            after.lifecycle == Lifecycle::Active,
        ) {
            (true, false) => self.add(before, -1),
            (false, true) => self.add(after, 1),
            _ => {}
        }
    }

    fn counters(&self) -> BTreeMap<String, i64> {
        let mut out: BTreeMap<String, i64> = BTreeMap::new();
        for (path, kind, delta) in &self.entries {
            *out.entry(format!("{PATH_PREFIX}{}", path.as_str()))
                .or_default() += delta;
            *out.entry(format!("{KIND_PREFIX}{kind}")).or_default() += delta;
        }
        out
    }
}

/// A budget's current state, as `status` shows it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct BudgetUsage {
    /// `path:/team` or `kind:note`.
    pub budget: String,
    pub usage: u64,
    pub limit: u64,
}

fn read_counter(raw: &[u8]) -> i64 {
    std::str::from_utf8(raw)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

impl Service {
    fn path_usage(&self, scope: &VPath) -> MemResult<u64> {
        let prefix = if scope.is_root() {
            PATH_PREFIX.to_string()
        } else {
            format!("{PATH_PREFIX}{}", scope.as_str())
        };
        let mut total = 0i64;
        for (key, raw) in scan_all(self.store(), Table::Meta, &prefix)? {
            let within = VPath::parse(&key[PATH_PREFIX.len()..]).is_ok_and(|p| p.is_within(scope));
            if within {
                total += read_counter(&raw);
            }
        }
        Ok(total.max(0) as u64)
    }

    fn kind_usage(&self, kind: &str) -> MemResult<u64> {
        Ok(self
            .store()
            .get(Table::Meta, &format!("{KIND_PREFIX}{kind}"))?
            .map_or(0, |raw| read_counter(&raw).max(0) as u64))
    }

    /// Every configured budget with its usage.
    pub(crate) fn budgets(&self) -> MemResult<Vec<BudgetUsage>> {
        let mut out = Vec::new();
        for (scope, limit) in &self.config().budgets.paths {
            let usage = self.path_usage(&VPath::parse(scope)?)?;
            out.push(BudgetUsage {
                budget: format!("path:{scope}"),
                usage,
                limit: *limit,
            });
        }
        for (kind, limit) in &self.config().budgets.kinds {
            out.push(BudgetUsage {
                budget: format!("kind:{kind}"),
                usage: self.kind_usage(kind)?,
                limit: *limit,
            });
        }
        Ok(out)
    }

    /// Fails with `BUDGET_EXCEEDED` when `change` would push any budget
    /// past its limit; then adds the counter updates to `batch`.
    pub(crate) fn apply_usage(&self, batch: &mut Batch, change: &UsageChange) -> MemResult<()> {
        let cfg = &self.config().budgets;
        for (scope, limit) in &cfg.paths {
            let scope_path = VPath::parse(scope)?;
            let needed: i64 = change
                .entries
                .iter()
                .filter(|(p, _, _)| p.is_within(&scope_path))
                .map(|(_, _, d)| d)
                .sum();
            if needed > 0 {
                let usage = self.path_usage(&scope_path)?;
                check(&format!("path:{scope}"), usage, *limit, needed as u64)?;
            }
        }
        for (kind, limit) in &cfg.kinds {
            let needed: i64 = change
                .entries
                .iter()
                .filter(|(_, k, _)| k == kind)
                .map(|(_, _, d)| d)
                .sum();
            if needed > 0 {
                check(
                    &format!("kind:{kind}"),
                    self.kind_usage(kind)?,
                    *limit,
                    needed as u64,
                )?;
            }
        }
        for (key, delta) in change.counters() {
            if delta == 0 {
                continue;
            }
            let stored = self.store().get(Table::Meta, &key)?;
            let current = stored.as_deref().map_or(0, read_counter);
            batch.expect(Table::Meta, key.clone(), stored);
            batch.put(
                Table::Meta,
                key,
                (current + delta).max(0).to_string().into_bytes(),
            );
        }
        Ok(())
    }
}

fn check(budget: &str, usage: u64, limit: u64, needed: u64) -> MemResult<()> {
    if usage + needed <= limit {
        return Ok(());
    }
    Err(MemError::new(
        ErrorCode::BudgetExceeded,
        format!("budget {budget} would be exceeded: {usage} of {limit} characters used, this write needs {needed}"),
    )
    .with_hint("consolidate or archive memories in this budget (`mem-host propose consolidate`), then retry; nothing was stored")
    .with_details(json!({ "budget": budget, "usage": usage, "limit": limit, "needed": needed })))
}
