//! The read side: tallies of the folders under a path, and memories in
//! catalog order.

use super::{CONSOLIDATED, Count, FILES, Last, MEMORIES, ORDER, SUBJECTS};
use crate::records::{decode, scan_each, scan_until};
use mem_core::store::{Store, Table};
use mem_core::{MemResult, VPath};
use std::collections::BTreeMap;
use std::ops::ControlFlow;

/// Memories of one kind and lifecycle in one folder.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct MemoryTally {
    pub folder: VPath,
    pub kind: String,
    pub lifecycle: String,
    pub count: Count,
}

/// Memories of one kind and lifecycle in one folder naming one subject.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SubjectTally {
    pub folder: VPath,
    pub kind: String,
    pub lifecycle: String,
    pub subject: String,
    pub n: i64,
}

/// Files of one MIME type directly in one folder.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FileTally {
    pub folder: VPath,
    pub mime: String,
    pub count: Count,
}

/// A memory in catalog order (by path, then id).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct OrderEntry {
    pub path: String,
    pub id: String,
    pub lifecycle: String,
    pub kind: String,
}

/// The key prefixes of `base` holding `under` and what lies below it, in
/// key order (`\0` sorts before `/`): siblings such as `/ab` for `/a` are
/// never read.
fn prefixes(base: &str, under: &VPath) -> Vec<String> {
    if under.is_root() {
        vec![base.to_string()]
    } else {
        vec![
            format!("{base}{}\0", under.as_str()),
            format!("{base}{}", under.child_prefix()),
        ]
    }
}

/// Each key under `base` for folders at or below `under`, split at `\0`
/// into at most `parts` fields (the first a folder path); keys that do not
/// parse are skipped.
fn each_tally(
    store: &dyn Store,
    base: &str,
    under: &VPath,
    parts: usize,
    mut each: impl FnMut(VPath, Vec<&str>, &[u8]),
) -> MemResult<()> {
    for prefix in prefixes(base, under) {
        scan_each(store, Table::Meta, &prefix, |key, raw| {
            let fields: Vec<&str> = key[base.len()..].splitn(parts, '\0').collect();
            if fields.len() == parts
                && let Ok(folder) = VPath::parse(fields[0])
            {
                each(folder, fields, raw);
            }
            Ok(())
        })?;
    }
    Ok(())
}

pub(crate) fn memories(store: &dyn Store, under: &VPath) -> MemResult<Vec<MemoryTally>> {
    let mut out = Vec::new();
    each_tally(store, MEMORIES, under, 3, |folder, f, raw| {
        out.push(MemoryTally {
            folder,
            kind: f[1].to_string(),
            lifecycle: f[2].to_string(),
            count: Count::decode(raw),
        });
    })?;
    Ok(out)
}

pub(crate) fn subjects(store: &dyn Store, under: &VPath) -> MemResult<Vec<SubjectTally>> {
    let mut out = Vec::new();
    each_tally(store, SUBJECTS, under, 4, |folder, f, raw| {
        out.push(SubjectTally {
            folder,
            kind: f[1].to_string(),
            lifecycle: f[2].to_string(),
            subject: f[3].to_string(),
            n: Count::decode(raw).n,
        });
    })?;
    Ok(out)
}

/// Files of folders at or below `under`, and of `under`'s own folder (it
/// may name a file).
pub(crate) fn files(store: &dyn Store, under: &VPath) -> MemResult<Vec<FileTally>> {
    let mut out = Vec::new();
    let mut push = |folder, f: Vec<&str>, raw: &[u8]| {
        out.push(FileTally {
            folder,
            mime: f[1].to_string(),
            count: Count::decode(raw),
        })
    };
    if let Some(parent) = under.parent() {
        let prefix = format!("{FILES}{}\0", parent.as_str());
        scan_each(store, Table::Meta, &prefix, |key, raw| {
            push(parent.clone(), vec!["", &key[prefix.len()..]], raw);
            Ok(())
        })?;
    }
    each_tally(store, FILES, under, 2, push)?;
    Ok(out)
}

/// Each scope's last consolidation.
pub(crate) fn consolidations(store: &dyn Store) -> MemResult<BTreeMap<String, Last>> {
    let mut out = BTreeMap::new();
    scan_each(store, Table::Meta, CONSOLIDATED, |key, raw| {
        out.insert(
            key[CONSOLIDATED.len()..].to_string(),
            decode::<Last>(Table::Meta, key, raw)?,
        );
        Ok(())
    })?;
    Ok(out)
}

/// Memories at or below `under` in catalog order, strictly after the
/// memory `(path, id)` of `after`, until `each` breaks.
pub(crate) fn walk(
    store: &dyn Store,
    under: &VPath,
    after: Option<(&str, &str)>,
    mut each: impl FnMut(OrderEntry) -> MemResult<ControlFlow<()>>,
) -> MemResult<()> {
    let after = after.map(|(path, id)| super::order_key(path, id));
    let mut stopped = false;
    for prefix in prefixes(ORDER, under) {
        if stopped {
            break;
        }
        scan_until(store, Table::Meta, &prefix, after.clone(), |key, raw| {
            let Some((path, id)) = key[ORDER.len()..].split_once('\0') else {
                return Ok(ControlFlow::Continue(()));
            };
            let value = std::str::from_utf8(raw).unwrap_or("");
            let (lifecycle, kind) = value.split_once('\0').unwrap_or((value, ""));
            let flow = each(OrderEntry {
                path: path.to_string(),
                id: id.to_string(),
                lifecycle: lifecycle.to_string(),
                kind: kind.to_string(),
            })?;
            stopped = flow.is_break();
            Ok(flow)
        })?;
    }
    Ok(())
}

/// Memories of `folder` itself (not below it) written after the memory
/// `after_id`, not counting `skip_lifecycle`.
pub(crate) fn count_after(
    store: &dyn Store,
    folder: &VPath,
    after_id: &str,
    skip_lifecycle: &str,
) -> MemResult<u64> {
    let prefix = format!("{ORDER}{}\0", folder.as_str());
    let after = format!("{prefix}{after_id}");
    let mut n = 0;
    scan_until(store, Table::Meta, &prefix, Some(after), |_, raw| {
        let lifecycle = raw.split(|b| *b == 0).next().unwrap_or(b"");
        if lifecycle != skip_lifecycle.as_bytes() {
            n += 1;
        }
        Ok(ControlFlow::Continue(()))
    })?;
    Ok(n)
}
