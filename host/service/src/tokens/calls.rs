//! Each token's calls of the day: counted for every call (the owner's token
//! list shows them), enforced for a token with a daily quota.
//!
//! A quota is enforced in the store, under compare-and-swap, so hosts
//! sharing one store grant no more than a day's quota between them. A
//! token without a quota only informs: a process with a worker holds its
//! counts and adds them to the store when it saves deferred state (see
//! [`crate::worker::WorkerState::running`]). Profiled under 8 clients of
//! lexical search at 100k memories, a store commit per call for the count
//! (with the recall log's, which is batched the same way) took about a fifth
//! of the server's CPU.

use super::{TokenRecord, seconds_to_midnight, today, usage_key};
use crate::Service;
use mem_core::store::{Batch, Durability, StoreError, Table};
use mem_core::{ErrorCode, MemError, MemResult};
use parking_lot::Mutex;
use std::collections::BTreeMap;

/// Calls this process counted and has not written yet.
#[derive(Debug, Default)]
pub(crate) struct CallCounts {
    /// Held while a count is written, so concurrent requests in this
    /// process count in turn instead of failing each other's
    /// compare-and-swap, and a reader sees a count either held or stored.
    in_turn: Mutex<()>,
    /// Calls held, by usage key (token and day).
    held: Mutex<BTreeMap<String, u64>>,
}

impl Service {
    /// Counts one call for today; refuses when a quota is set and spent.
    /// Written counts are flushed with the store's regular flush, not per
    /// call: a crash may forget a few calls, never grant more than a day's
    /// quota in normal operation.
    pub(super) fn count_call(&self, rec: &TokenRecord, quota: Option<u64>) -> MemResult<()> {
        let key = usage_key(&rec.id, &today());
        if quota.is_none() && self.worker_runs() {
            *self.calls.held.lock().entry(key).or_default() += 1;
            return Ok(());
        }
        let _in_turn = self.calls.in_turn.lock();
        let spent = |used: u64| {
            let quota = quota.filter(|q| used >= *q)?;
            let retry_after = seconds_to_midnight();
            Some(MemError::new(
                ErrorCode::QuotaExceeded,
                format!("token {:?} used its {quota} calls for today", rec.name),
            )
            .with_hint(format!("retry after {retry_after} s (midnight UTC), or ask the owner for a larger quota"))
            .with_details(serde_json::json!({
                "quota": quota, "used": used, "retry_after": retry_after,
            })))
        };
        // Without a quota the count only informs: a call is never refused
        // because its count lost a race.
        if self.add_to_count(&key, 1, spent)? || quota.is_none() {
            return Ok(());
        }
        Err(MemError::new(
            ErrorCode::VersionConflict,
            "too many concurrent calls on one token",
        )
        .with_hint("retry"))
    }

    /// Adds `calls` to the count at `key` under compare-and-swap, unless
    /// `refuse` says the count read is spent. False when the count kept
    /// changing under it (other hosts of a shared store counting).
    fn add_to_count(
        &self,
        key: &str,
        calls: u64,
        refuse: impl Fn(u64) -> Option<MemError>,
    ) -> MemResult<bool> {
        for _ in 0..16 {
            let raw = self.store().get(Table::Tokens, key)?;
            let used = raw.as_deref().map(parse_count).unwrap_or(0);
            if let Some(e) = refuse(used) {
                return Err(e);
            }
            let mut b = Batch::new();
            b.expect(Table::Tokens, key.to_string(), raw).put(
                Table::Tokens,
                key.to_string(),
                (used + calls).to_string().into_bytes(),
            );
            match self.store().commit(b, Durability::Deferred) {
                Ok(_) => return Ok(true),
                Err(StoreError::ConditionFailed { .. }) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Ok(false)
    }

    /// Adds the calls this process holds to the stored counts (when the
    /// workspace's deferred state is saved). A count that cannot be written
    /// is dropped with a warning: it only informs.
    pub(crate) fn write_call_counts(&self) {
        let _in_turn = self.calls.in_turn.lock();
        let held = std::mem::take(&mut *self.calls.held.lock());
        for (key, calls) in held {
            let written = self.add_to_count(&key, calls, |_| None).and_then(|done| {
                done.then_some(())
                    .ok_or_else(|| MemError::internal("the count kept changing"))
            });
            if let Err(e) = written {
                tracing::warn!(code = %e.code, error = %e.message, "a token's calls of the day were not counted");
            }
        }
    }

    /// Calls of token `id` on `day`: stored, and held by this process.
    pub(super) fn usage(&self, id: &str, day: &str) -> MemResult<u64> {
        let key = usage_key(id, day);
        let _in_turn = self.calls.in_turn.lock();
        let stored = self
            .store()
            .get(Table::Tokens, &key)?
            .as_deref()
            .map(parse_count)
            .unwrap_or(0);
        Ok(stored + self.calls.held.lock().get(&key).copied().unwrap_or(0))
    }
}

fn parse_count(raw: &[u8]) -> u64 {
    std::str::from_utf8(raw)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}
