//! Counting a workspace's tallies from its records: once for a workspace
//! from before tallies, and again after an import or a damaged record.

use super::{CONSOLIDATED, Facts, PENDING, PREFIX, READY, VERSION};
use crate::records::{encode, scan_each};
use mem_core::MemResult;
use mem_core::store::{Batch, Durability, StoreError, Table};
use std::collections::BTreeSet;

/// Counts given up on while writes keep changing the workspace; the reads
/// that need tallies then count the slow way, and the next call tries again.
const ATTEMPTS: usize = 3;
/// Catalog-order keys written per batch ahead of the final one.
const CHUNK: usize = 5_000;

impl crate::Service {
    /// True when the tallies are there to read, counting them first when
    /// they are not; false when writes kept changing the workspace during
    /// every attempt to count.
    pub fn ensure_tallies(&self) -> MemResult<bool> {
        let store = self.store();
        for _ in 0..ATTEMPTS {
            let ready = store.get(Table::Meta, READY)?;
            if ready.as_deref() == Some(VERSION) {
                return Ok(true);
            }
            // Read before the records: a write after this bumps it.
            let pending = store.get(Table::Meta, PENDING)?;
            let mut facts = Facts::default();
            for table in [Table::Memories, Table::Files, Table::Proposals] {
                scan_each(store, table, "", |key, raw| {
                    facts.record(table, key, raw, 1);
                    Ok(())
                })?;
            }
            // Damaged records are left out: `lint` names them, and its
            // repair has them counted again.
            let mut stale: BTreeSet<String> = BTreeSet::new();
            scan_each(store, Table::Meta, PREFIX, |key, _| {
                if key != READY && key != PENDING {
                    stale.insert(key.to_string());
                }
                Ok(())
            })?;
            // The catalog order is one key per memory: written ahead in
            // chunks. Nothing reads them before `ready`, and a count that
            // starts over writes them again.
            let mut chunk = Batch::new();
            for (key, value) in facts.order {
                stale.remove(&key);
                if let Some(v) = value {
                    chunk.put(Table::Meta, key, v);
                }
                if chunk.ops.len() == CHUNK {
                    store.commit(std::mem::take(&mut chunk), Durability::Deferred)?;
                }
            }
            if !chunk.is_empty() {
                store.commit(chunk, Durability::Deferred)?;
            }
            let mut last = Batch::new();
            last.expect(Table::Meta, READY, ready);
            last.expect(Table::Meta, PENDING, pending.clone());
            for (key, count) in facts.counts {
                if count.n > 0 {
                    stale.remove(&key);
                    last.put(Table::Meta, key, count.encode());
                }
            }
            for (scope, l) in facts.consolidated {
                let key = format!("{CONSOLIDATED}{scope}");
                stale.remove(&key);
                last.put(Table::Meta, key, encode(&l)?);
            }
            for key in stale {
                last.delete(Table::Meta, key);
            }
            last.put(Table::Meta, READY, VERSION.to_vec());
            if pending.is_some() {
                last.delete(Table::Meta, PENDING);
            }
            match store.commit(last, Durability::Immediate) {
                Ok(_) => return Ok(true),
                Err(StoreError::ConditionFailed { .. }) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Ok(false)
    }
}

/// Tallies are counted again from the records at the next read: an import
/// wrote records behind the seam.
pub(crate) fn invalidate(batch: &mut Batch) {
    batch.delete(Table::Meta, READY);
}

#[cfg(test)]
pub(crate) fn counted_fresh(store: &dyn mem_core::store::Store) -> Vec<(String, Vec<u8>)> {
    let mut facts = Facts::default();
    for table in [Table::Memories, Table::Files, Table::Proposals] {
        scan_each(store, table, "", |key, raw| {
            facts.record(table, key, raw, 1);
            Ok(())
        })
        .unwrap();
    }
    let mut out: Vec<(String, Vec<u8>)> = Vec::new();
    out.extend(
        facts
            .counts
            .into_iter()
            .filter(|(_, c)| c.n > 0)
            .map(|(k, c)| (k, c.encode())),
    );
    out.extend(
        facts
            .order
            .into_iter()
            .filter_map(|(k, v)| v.map(|v| (k, v))),
    );
    out.extend(
        facts
            .consolidated
            .into_iter()
            .map(|(s, l)| (format!("{CONSOLIDATED}{s}"), encode(&l).unwrap())),
    );
    out.sort();
    out
}
