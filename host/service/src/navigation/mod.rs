//! Navigation (memdsl's Catalog and Trace): what the workspace holds, by
//! folder, type and subject, and where the explicit relations between
//! memories lead. Both answer in bounded pages whose cursors are bound to
//! the workspace revision, so a page never mixes two states of the store.

pub mod catalog;
mod cursor;
#[cfg(test)]
mod tests;
pub mod trace;

use mem_core::MemResult;
use mem_core::store::Log;

impl crate::Service {
    /// The workspace revision: the sequence number of the newest change
    /// event (every record write appends one). 0 for an empty workspace.
    pub(crate) fn revision(&self) -> MemResult<u64> {
        Ok(self
            .store()
            .last_log_entry(Log::Events)?
            .map_or(0, |(seq, _)| seq))
    }
}

/// A short keyed digest of a request's filters: a cursor carries it so a
/// cursor cannot be replayed against another question.
pub(crate) fn filters_digest(parts: &[&str]) -> String {
    let joined = parts.join("\u{1f}");
    mem_core::hash::sha256_hex(joined.as_bytes())[..8].to_string()
}

/// The first `max` characters of `text` on one line (what a listing shows
/// of a memory: enough to recognise it, never the whole content).
pub(crate) fn title(text: &str, max: usize) -> String {
    let one_line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= max {
        return one_line;
    }
    let mut t: String = one_line.chars().take(max.saturating_sub(1)).collect();
    t.push('…');
    t
}
