//! The write side: a batch's changes to memories, files and proposals,
//! added to the tallies in the same batch.

use super::{Count, Facts, Last, PENDING, READY, VERSION};
use crate::records::{decode, encode};
use mem_core::MemResult;
use mem_core::store::{Batch, Condition, Op, Store, Table};
use std::collections::HashMap;

/// The tables whose records the tallies follow.
fn followed(table: Table) -> bool {
    matches!(table, Table::Memories | Table::Files | Table::Proposals)
}

/// Adds to `batch` what its writes change in the tallies (see the module
/// doc). A batch that writes no followed record is left as it is.
pub(crate) fn stage(store: &dyn Store, batch: &mut Batch) -> MemResult<()> {
    // The last write of each followed record: what it will be.
    let mut slot: HashMap<(Table, &str), usize> = HashMap::new();
    let mut writes: Vec<(Table, String, Option<Vec<u8>>)> = Vec::new();
    for op in &batch.ops {
        let (table, key, value) = match op {
            Op::Put { table, key, value } => (*table, key, Some(value.clone())),
            Op::Delete { table, key } => (*table, key, None),
            _ => continue,
        };
        if !followed(table) {
            continue;
        }
        match slot.get(&(table, key.as_str())) {
            Some(&i) => writes[i].2 = value,
            None => {
                slot.insert((table, key.as_str()), writes.len());
                writes.push((table, key.clone(), value));
            }
        }
    }
    drop(slot);
    if writes.is_empty() {
        return Ok(());
    }
    let ready = store.get(Table::Meta, READY)?;
    batch.expect(Table::Meta, READY, ready.clone());
    if ready.as_deref() != Some(VERSION) {
        // Not counted yet: a count running now must see that this write
        // happened (it starts over), and one that starts later reads it.
        let pending = store.get(Table::Meta, PENDING)?;
        let n = pending.as_deref().map_or(0, |raw| Count::decode(raw).n) + 1;
        batch.expect(Table::Meta, PENDING, pending);
        batch.put(Table::Meta, PENDING, n.to_string().into_bytes());
        return Ok(());
    }
    let mut facts = Facts::default();
    for (table, key, new) in writes {
        if table != Table::Proposals {
            let old = match expected(batch, table, &key) {
                Some(old) => old,
                None => {
                    let old = store.get(table, &key)?;
                    batch.expect(table, key.clone(), old.clone());
                    old
                }
            };
            if let Some(old) = old {
                facts.record(table, &key, &old, -1);
            }
        }
        if let Some(new) = new {
            facts.record(table, &key, &new, 1);
        }
    }
    if facts.undecodable {
        // A damaged record (or a repair of one): count everything again.
        batch.delete(Table::Meta, READY);
        return Ok(());
    }
    apply(store, batch, facts)
}

/// The value the batch's own condition says `key` holds now.
fn expected(batch: &Batch, table: Table, key: &str) -> Option<Option<Vec<u8>>> {
    batch.conditions.iter().find_map(|c| match c {
        Condition::Equals {
            table: t,
            key: k,
            value,
        } if *t == table && k == key => Some(value.clone()),
        _ => None,
    })
}

/// Adds the counters' new values (each conditioned on the value read) and
/// the catalog-order and consolidation keys to `batch`.
fn apply(store: &dyn Store, batch: &mut Batch, facts: Facts) -> MemResult<()> {
    for (key, delta) in facts.counts {
        if delta == Count::default() {
            continue;
        }
        let current = store.get(Table::Meta, &key)?;
        let now = current.as_deref().map(Count::decode).unwrap_or_default();
        batch.expect(Table::Meta, key.clone(), current);
        let next = Count {
            n: now.n + delta.n,
            bytes: now.bytes + delta.bytes,
        };
        if next.n > 0 {
            batch.put(Table::Meta, key, next.encode());
        } else {
            batch.delete(Table::Meta, key);
        }
    }
    for (key, value) in facts.order {
        match value {
            Some(v) => batch.put(Table::Meta, key, v),
            None => batch.delete(Table::Meta, key),
        };
    }
    for (key, last) in facts.consolidated {
        let key = format!("{}{key}", super::CONSOLIDATED);
        let current = store.get(Table::Meta, &key)?;
        let newer = match &current {
            Some(raw) => decode::<Last>(Table::Meta, &key, raw)
                .map_or(true, |l| last.memory_id > l.memory_id),
            None => true,
        };
        if newer {
            batch.expect(Table::Meta, key.clone(), current);
            batch.put(Table::Meta, key, encode(&last)?);
        }
    }
    Ok(())
}
