//! Tallies: what the catalog and the consolidation counts need to know about
//! every memory and file, kept as they change instead of counted again on
//! every read (a catalog page at a million memories was a pass over all of
//! them).
//!
//! One seam keeps them: [`stage`] runs on every batch the service commits
//! through `transact`. It reads each memory, file and proposal the batch
//! writes as it was before (the batch's own condition on the record, or a
//! read it then adds as a condition) and as it will be, and adds the
//! difference to the tallies in the same atomic batch, under
//! compare-and-swap like the budget counters. A write path added later is
//! counted without knowing about tallies.
//!
//! Layout (`Table::Meta`, all under `tally/`):
//! - `tally/m/{folder}\0{kind}\0{lifecycle}` → `"{count} {bytes}"`
//! - `tally/s/{folder}\0{kind}\0{lifecycle}\0{subject}` → `"{count} 0"`
//! - `tally/f/{folder}\0{mime}` → `"{count} {bytes}"` (files)
//! - `tally/o/{path}\0{memory id}` → `"{lifecycle}\0{kind}"`: every memory in
//!   catalog order, forgotten ones included (the path index drops those)
//! - `tally/c/{scope}` → the last consolidation of a top-level folder
//! - `tally/ready` → the layout version: tallies are read only when it is
//!   there. A workspace from before tallies, or whose tallies an import
//!   invalidated, is counted once by [`Service::ensure_tallies`]; until then
//!   writes bump `tally/pending`, which that count is conditioned on, so a
//!   write during the count makes it start over rather than miss it.

mod read;
mod recount;
mod stage;
#[cfg(test)]
pub(crate) mod tests;

pub(crate) use read::{consolidations, count_after, files, memories, subjects, walk};
pub(crate) use recount::invalidate;
pub(crate) use stage::stage;

use crate::consolidation::scope_of;
use crate::gate::{Proposal, ProposalOp, ProposalStatus};
use mem_core::VPath;
use mem_core::model::{FileRecord, Memory};
use mem_core::store::Table;
use mem_core::time::Timestamp;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Every key of the tallies starts with this (bundles never carry them).
pub(crate) const PREFIX: &str = "tally/";
const READY: &str = "tally/ready";
const PENDING: &str = "tally/pending";
/// The layout's version, the value of `tally/ready`.
const VERSION: &[u8] = b"1";
const MEMORIES: &str = "tally/m/";
const SUBJECTS: &str = "tally/s/";
const FILES: &str = "tally/f/";
const ORDER: &str = "tally/o/";
const CONSOLIDATED: &str = "tally/c/";

/// The subject a memory names (the attribute read-gate symbols use).
pub(crate) fn subject_of(m: &Memory) -> Option<String> {
    ["subject", "name"]
        .iter()
        .find_map(|k| m.attributes.get(*k))
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// A count and the bytes it holds.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Count {
    pub n: i64,
    pub bytes: i64,
}

impl Count {
    fn encode(self) -> Vec<u8> {
        format!("{} {}", self.n, self.bytes).into_bytes()
    }

    /// A stored count; anything else reads as zero (and a recount fixes it).
    fn decode(raw: &[u8]) -> Count {
        let text = std::str::from_utf8(raw).unwrap_or("");
        let mut parts = text.split(' ').map(|p| p.parse::<i64>().unwrap_or(0));
        Count {
            n: parts.next().unwrap_or(0),
            bytes: parts.next().unwrap_or(0),
        }
    }
}

/// A scope's last consolidation: the memory it wrote, and when.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Last {
    pub memory_id: String,
    pub at: Timestamp,
}

/// What a set of record versions adds to (or takes from) the tallies.
#[derive(Debug, Default)]
pub(crate) struct Facts {
    counts: BTreeMap<String, Count>,
    /// Catalog-order keys to set (`Some`) or remove (`None`).
    order: BTreeMap<String, Option<Vec<u8>>>,
    consolidated: BTreeMap<String, Last>,
    /// A record could not be read: the tallies cannot follow it.
    undecodable: bool,
}

impl Facts {
    fn add(&mut self, key: String, n: i64, bytes: i64) {
        let c = self.counts.entry(key).or_default();
        c.n += n;
        c.bytes += bytes;
    }

    /// One version of a record of `table`: `sign` 1 as it will be, -1 as
    /// it was. Old versions are taken before new ones.
    fn record(&mut self, table: Table, key: &str, raw: &[u8], sign: i64) {
        let ok = match table {
            Table::Memories => crate::records::decode::<Memory>(table, key, raw)
                .map(|m| self.memory(&m, sign))
                .is_ok(),
            Table::Files => crate::records::decode::<FileRecord>(table, key, raw)
                .map(|f| self.file(&f, sign))
                .is_ok(),
            // A consolidation only ever moves a scope's mark forward.
            Table::Proposals if sign > 0 => crate::records::decode::<Proposal>(table, key, raw)
                .map(|p| self.proposal(&p))
                .is_ok(),
            _ => true,
        };
        self.undecodable |= !ok;
    }

    fn memory(&mut self, m: &Memory, sign: i64) {
        let bytes = m.content.as_ref().map_or(0, |c| c.len() as i64);
        let group = format!("{}\0{}\0{}", m.path.as_str(), m.kind, m.lifecycle.as_str());
        if let Some(subject) = subject_of(m) {
            self.add(format!("{SUBJECTS}{group}\0{subject}"), sign, 0);
        }
        self.add(format!("{MEMORIES}{group}"), sign, sign * bytes);
        let key = order_key(m.path.as_str(), &m.id);
        if sign > 0 {
            let value = format!("{}\0{}", m.lifecycle.as_str(), m.kind);
            self.order.insert(key, Some(value.into_bytes()));
        } else {
            self.order.entry(key).or_insert(None);
        }
    }

    fn file(&mut self, f: &FileRecord, sign: i64) {
        let folder = f.path.parent().unwrap_or_else(VPath::root);
        self.add(
            format!("{FILES}{}\0{}", folder.as_str(), f.mime),
            sign,
            sign * f.size as i64,
        );
    }

    fn proposal(&mut self, p: &Proposal) {
        let applied = matches!(
            p.status,
            ProposalStatus::Approved | ProposalStatus::AutoApproved
        );
        let (Some(m), Some(id), Some(at)) = (&p.memory, p.result_ids.first(), p.decided_at) else {
            return;
        };
        if p.op != ProposalOp::Consolidate || !applied {
            return;
        }
        let scope = scope_of(m.path.as_str()).to_string();
        let later = self
            .consolidated
            .get(&scope)
            .is_none_or(|l| *id > l.memory_id);
        if later {
            self.consolidated.insert(
                scope,
                Last {
                    memory_id: id.clone(),
                    at,
                },
            );
        }
    }
}

/// Each scope's last consolidation, from every proposal (what
/// `tally/c/` holds once the tallies are counted).
pub(crate) fn consolidations_by_pass(
    store: &dyn mem_core::store::Store,
) -> mem_core::MemResult<BTreeMap<String, Last>> {
    let mut facts = Facts::default();
    crate::records::scan_each(store, Table::Proposals, "", |key, raw| {
        facts.record(Table::Proposals, key, raw, 1);
        Ok(())
    })?;
    Ok(facts.consolidated)
}

/// The catalog-order key of a memory.
pub(crate) fn order_key(path: &str, id: &str) -> String {
    format!("{ORDER}{path}\0{id}")
}
