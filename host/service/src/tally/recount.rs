//! Counting a workspace's tallies from its records: once for a workspace
//! from before tallies, and again after an import or a damaged record.

use super::{CONSOLIDATED, Facts, PENDING, PREFIX, READY, VERSION};
use crate::records::{encode, scan_each};
use mem_core::MemResult;
use mem_core::store::{Batch, Durability, Store, StoreError, Table};
use std::collections::BTreeSet;

/// Counts given up on while writes keep changing the workspace (see
/// [`crate::Service::ensure_tallies`]).
const ATTEMPTS: usize = 3;
/// Catalog-order keys written per batch ahead of the final one.
const CHUNK: usize = 5_000;

impl crate::Service {
    /// True when the tallies are there to read, counting them first when
    /// they are not; false when writes kept changing the workspace during
    /// every attempt to count (then the reads that need them answer the
    /// slow way and the worker counts again when writes pause).
    pub fn ensure_tallies(&self) -> MemResult<bool> {
        self.count_tallies(ATTEMPTS)
    }

    /// [`Self::ensure_tallies`] for a read, which has the slow way to
    /// answer: one attempt, so writes arriving during a count cost a read
    /// one pass over the records more, not three.
    pub(crate) fn tallies_for_read(&self) -> MemResult<bool> {
        self.count_tallies(1)
    }

    fn count_tallies(&self, attempts: usize) -> MemResult<bool> {
        let store = self.store();
        for _ in 0..attempts {
            let ready = store.get(Table::Meta, READY)?;
            if ready.as_deref() == Some(VERSION) {
                return Ok(true);
            }
            // Read before the records: a write after this bumps it.
            let pending = store.get(Table::Meta, PENDING)?;
            let (order, totals) = counted(store)?.into_records()?;
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
            for (key, value) in order {
                stale.remove(&key);
                chunk.put(Table::Meta, key, value);
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
            for (key, value) in totals {
                stale.remove(&key);
                last.put(Table::Meta, key, value);
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

/// What every record adds to the tallies (damaged ones left out).
fn counted(store: &dyn Store) -> MemResult<Facts> {
    let mut facts = Facts::default();
    for table in [Table::Memories, Table::Files, Table::Proposals] {
        scan_each(store, table, "", |key, raw| {
            facts.record(table, key, raw, 1);
            Ok(())
        })?;
    }
    Ok(facts)
}

/// Records counted from scratch, as stored: the catalog order, then the
/// counts and consolidations.
type Records = Vec<(String, Vec<u8>)>;

impl Facts {
    fn into_records(self) -> MemResult<(Records, Records)> {
        let order = self
            .order
            .into_iter()
            .filter_map(|(k, v)| v.map(|v| (k, v)))
            .collect();
        let mut totals: Records = self
            .counts
            .into_iter()
            .filter(|(_, c)| c.n > 0)
            .map(|(k, c)| (k, c.encode()))
            .collect();
        for (scope, last) in self.consolidated {
            totals.push((format!("{CONSOLIDATED}{scope}"), encode(&last)?));
        }
        Ok((order, totals))
    }
}

/// Every tally as a count from scratch would store it, sorted (what the
/// tests hold the kept tallies to).
#[cfg(test)]
pub(crate) fn counted_fresh(store: &dyn Store) -> Records {
    let (mut out, totals) = counted(store).unwrap().into_records().unwrap();
    out.extend(totals);
    out.sort();
    out
}
