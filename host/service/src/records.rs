//! Typed access to the store: JSON records, retries of optimistic
//! transactions, and the change-log entry every mutation appends.

use mem_core::model::Event;
use mem_core::store::{Batch, Durability, Log, Scan, Store, StoreError, Table};
use mem_core::time::now;
use mem_core::{ErrorCode, MemError, MemResult};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::ops::ControlFlow;

/// How often an optimistic transaction is recomputed when a concurrent
/// writer changed what it read, before giving up with `version_conflict`.
/// Every memory write counts in the shared tally counters, so a process's
/// concurrent writers collide often; with 8 attempts, four writers of one
/// folder on a loaded 2-core machine still lost one `remember` in about a
/// dozen runs of `concurrent_writers_of_one_folder_are_not_refused_over_
/// their_shared_counters`. Retries back off (at most 64 ms each).
const MAX_TX_ATTEMPTS: usize = 16;
/// The same on a shared store, where other hosts race too.
const MAX_SHARED_TX_ATTEMPTS: usize = 24;

/// One transaction at a time in this process on a shared store.
static SHARED_TX: parking_lot::ReentrantMutex<()> = parking_lot::const_reentrant_mutex(());

/// Sleeps up to 2^attempt ms (at most 64), at random, before a retry.
fn backoff(attempt: usize) {
    let cap_ms = 1u64 << attempt.min(6);
    let mut r = [0u8; 2];
    let jitter = match getrandom::fill(&mut r) {
        Ok(()) => u64::from(u16::from_le_bytes(r)) % (cap_ms * 1000),
        Err(_) => cap_ms * 500,
    };
    std::thread::sleep(std::time::Duration::from_micros(jitter));
}

/// A decoded record plus the exact bytes it was read from, so a commit can
/// be conditioned on nobody having changed it in between.
#[derive(Debug, Clone)]
pub(crate) struct Stored<T> {
    pub value: T,
    pub raw: Vec<u8>,
}

pub(crate) fn encode<T: Serialize>(value: &T) -> MemResult<Vec<u8>> {
    serde_json::to_vec(value).map_err(|e| MemError::internal(format!("cannot encode record: {e}")))
}

pub(crate) fn decode<T: DeserializeOwned>(table: Table, key: &str, bytes: &[u8]) -> MemResult<T> {
    serde_json::from_slice(bytes).map_err(|e| {
        MemError::new(
            ErrorCode::StoreCorrupt,
            format!("record {key:?} in {} cannot be read: {e}", table.name()),
        )
        .with_hint("restore the workspace from a backup or bundle; mem-host will not guess at damaged records")
        .with_details(serde_json::json!({ "table": table.name(), "key": key }))
    })
}

pub(crate) fn load<T: DeserializeOwned>(
    store: &dyn Store,
    table: Table,
    key: &str,
) -> MemResult<Option<Stored<T>>> {
    store
        .get(table, key)?
        .map(|raw| stored(table, key, raw))
        .transpose()
}

fn stored<T: DeserializeOwned>(table: Table, key: &str, raw: Vec<u8>) -> MemResult<Stored<T>> {
    Ok(Stored {
        value: decode(table, key, &raw)?,
        raw,
    })
}

/// The records of `keys` that exist, in the order asked: one read of the
/// store for them all.
pub(crate) fn load_many<T: DeserializeOwned>(
    store: &dyn Store,
    table: Table,
    keys: &[&str],
) -> MemResult<Vec<Stored<T>>> {
    let values = store.get_many(table, keys)?;
    keys.iter()
        .zip(values)
        .filter_map(|(key, raw)| raw.map(|raw| stored(table, key, raw)))
        .collect()
}

/// Every (key, value) of `table` under `prefix`, in key order.
pub(crate) fn scan_all(
    store: &dyn Store,
    table: Table,
    prefix: &str,
) -> MemResult<Vec<(String, Vec<u8>)>> {
    let mut out: Vec<(String, Vec<u8>)> = Vec::new();
    scan_each(store, table, prefix, |k, v| {
        out.push((k.to_string(), v.to_vec()));
        Ok(())
    })?;
    Ok(out)
}

/// Every record of `table` whose key starts with `prefix`, in key order,
/// one page in memory at a time (for passes that only count).
pub(crate) fn scan_each(
    store: &dyn Store,
    table: Table,
    prefix: &str,
    mut each: impl FnMut(&str, &[u8]) -> MemResult<()>,
) -> MemResult<()> {
    scan_until(store, table, prefix, None, |k, v| {
        each(k, v).map(|()| ControlFlow::Continue(()))
    })
}

/// Like [`scan_each`], from strictly after the key `after`, until `each`
/// breaks (a page that needs only the first few that match).
pub(crate) fn scan_until(
    store: &dyn Store,
    table: Table,
    prefix: &str,
    mut after: Option<String>,
    mut each: impl FnMut(&str, &[u8]) -> MemResult<ControlFlow<()>>,
) -> MemResult<()> {
    const PAGE: usize = 1024;
    loop {
        let page = store.scan(
            table,
            &Scan {
                prefix,
                after: after.as_deref(),
                limit: PAGE,
                reverse: false,
            },
        )?;
        let done = page.len() < PAGE;
        for (k, v) in &page {
            if each(k, v)?.is_break() {
                return Ok(());
            }
        }
        match page.into_iter().last() {
            Some((k, _)) if !done => after = Some(k),
            _ => return Ok(()),
        }
    }
}

/// True when some key of `table` starts with `prefix`.
pub(crate) fn any_with_prefix(store: &dyn Store, table: Table, prefix: &str) -> MemResult<bool> {
    Ok(!store
        .scan(
            table,
            &Scan {
                prefix,
                after: None,
                limit: 1,
                reverse: false,
            },
        )?
        .is_empty())
}

/// Appends a change-log entry to `batch`.
pub(crate) fn push_event(
    batch: &mut Batch,
    action: &str,
    target: &str,
    state_version: Option<u64>,
    data: Value,
) -> MemResult<()> {
    let event = Event {
        seq: 0,
        at: now(),
        action: action.to_string(),
        target: target.to_string(),
        state_version,
        actor: None,
        data,
    };
    batch.append(Log::Events, encode(&event)?);
    Ok(())
}

/// Runs `build` and commits its batch; when a concurrent writer invalidated
/// a condition, recomputes from fresh reads. `build` does every check
/// (including a caller's expected version) from what it reads, so a retry
/// re-validates rather than overwrites.
///
/// On a shared store a build takes milliseconds of database round trips,
/// and every governed write conditions on the audit chain's head: many
/// writers of one host would mostly invalidate each other. So a host runs
/// its transactions one at a time there (re-entrant: a build may run a
/// nested one), leaving races between hosts only. Any retry backs off
/// with jitter before it recomputes.
pub(crate) fn transact<T>(
    store: &dyn Store,
    durability: Durability,
    mut build: impl FnMut() -> MemResult<(Batch, T)>,
) -> MemResult<T> {
    let shared = store.is_shared();
    let _in_turn = shared.then(|| SHARED_TX.lock());
    let attempts = if shared {
        MAX_SHARED_TX_ATTEMPTS
    } else {
        MAX_TX_ATTEMPTS
    };
    for attempt in 0..attempts {
        let (mut batch, out) = build()?;
        if batch.is_empty() {
            return Ok(out);
        }
        crate::tally::stage(store, &mut batch)?;
        match store.commit(batch, durability) {
            Ok(_) => return Ok(out),
            Err(StoreError::ConditionFailed { .. }) => {
                // Jittered, so writers that collided do not collide again:
                // every memory and file write now also counts in the
                // shared tally counters, which made collisions between a
                // process's own writers common.
                backoff(attempt);
                continue;
            }
            Err(e) => return Err(e.into()),
        }
    }
    Err(MemError::new(
        ErrorCode::VersionConflict,
        "the record kept changing while being written",
    )
    .with_hint("another writer is busy with the same records; retry shortly"))
}
