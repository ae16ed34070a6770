//! Importing an edited document again: which entries are unchanged
//! (replays), which replace what an earlier import stored, which are new.

use super::{IMPORT_SOURCE, NOTE_ATTR};
use crate::Service;
use crate::audit::Actor;
use crate::memories::RememberOutcome;
use crate::requests::{ProposalOp, ProposalRequest, RememberRequest};
use mem_core::MemResult;
use mem_core::hash::sha256_hex;
use mem_core::model::Memory;

/// Attributes adapters set that name an entry across edits of its
/// document (a mem0 id, an Obsidian note); entries without one are
/// matched by place.
const IDENTITY_ATTRS: &[&str] = &["mem0_id", NOTE_ATTR];

/// What importing one entry does (see [`Service::plan_reimport`]).
pub(super) enum Plan {
    Remember,
    Unchanged(Box<Memory>),
    Replace(String),
}

/// The name an imported entry has within its document, if its adapter
/// gave it one.
fn identity(attributes: &std::collections::BTreeMap<String, String>) -> Option<String> {
    IDENTITY_ATTRS
        .iter()
        .find_map(|a| attributes.get(*a).map(|v| format!("{a}={v}")))
}

/// The first line a `source_ref` cites (`AGENTS.md#L3-5` → 3), 0 for none.
fn first_line(source_ref: Option<&str>) -> u64 {
    source_ref
        .and_then(|s| s.rsplit_once("#L"))
        .and_then(|(_, l)| l.split('-').next()?.parse().ok())
        .unwrap_or(0)
}

/// The document a `source_ref` cites: `AGENTS.md#L3-5` → `AGENTS.md`.
fn document_of(source_ref: &str) -> &str {
    match source_ref.rsplit_once("#L") {
        Some((doc, lines))
            if !lines.is_empty() && lines.chars().all(|c| c.is_ascii_digit() || c == '-') =>
        {
            doc
        }
        _ => source_ref,
    }
}

impl Service {
    /// What importing each entry of an edited document does, against the
    /// active memories an earlier import of the same document (`name`,
    /// same adapter) left under `scope`, each answering one entry:
    /// - an entry whose content (and kind) one of them holds is unchanged
    ///   (a replay, wherever it moved);
    /// - an entry that names one of them by an [`IDENTITY_ATTRS`] value but
    ///   says something else replaces it;
    /// - an entry without such a name replaces an earlier one between the
    ///   same unchanged neighbours (the text around an edit stays put while
    ///   its lines shift), in order;
    /// - the rest are remembered (a replay of the same document finds its
    ///   keys).
    pub(super) fn plan_reimport(
        &self,
        adapter: &str,
        name: &str,
        scope: &str,
        requests: &[RememberRequest],
    ) -> MemResult<Vec<Plan>> {
        let source_type = format!("{IMPORT_SOURCE}{adapter}");
        let mut earlier: Vec<Memory> = self
            .scope_memories(scope)?
            .into_iter()
            .filter(|m| {
                m.provenance.source_type.as_deref() == Some(source_type.as_str())
                    && m.provenance.source_ref.as_deref().map(document_of) == Some(name)
            })
            .collect();
        if earlier.is_empty() {
            return Ok(requests.iter().map(|_| Plan::Remember).collect());
        }
        earlier.sort_by_key(|m| (first_line(m.provenance.source_ref.as_deref()), m.created_at));
        let mut claimed = vec![false; earlier.len()];
        // Per entry: the earlier memory it is (unchanged) or replaces.
        let mut same: Vec<Option<usize>> = vec![None; requests.len()];
        let mut replaces: Vec<Option<usize>> = vec![None; requests.len()];
        for (i, r) in requests.iter().enumerate() {
            let sha = sha256_hex(r.content.as_bytes());
            let j = (0..earlier.len()).find(|&j| {
                !claimed[j] && earlier[j].content_sha256 == sha && earlier[j].kind == r.kind
            });
            if let Some(j) = j {
                claimed[j] = true;
                same[i] = Some(j);
            }
        }
        for (i, r) in requests.iter().enumerate() {
            let Some(id) = identity(&r.attributes).filter(|_| same[i].is_none()) else {
                continue;
            };
            let j = (0..earlier.len())
                .find(|&j| !claimed[j] && identity(&earlier[j].attributes).as_ref() == Some(&id));
            if let Some(j) = j {
                claimed[j] = true;
                replaces[i] = Some(j);
            }
        }
        // The gap an unnamed earlier memory sits in: after the last unchanged one before it.
        let unchanged: Vec<bool> = {
            let mut u = vec![false; earlier.len()];
            same.iter().flatten().for_each(|&j| u[j] = true);
            u
        };
        let gap_of_earlier = |j: usize| (0..j).rev().find(|&k| unchanged[k]);
        let mut gap = None;
        for (i, r) in requests.iter().enumerate() {
            if let Some(j) = same[i] {
                gap = Some(j);
                continue;
            }
            if replaces[i].is_some() || identity(&r.attributes).is_some() {
                continue;
            }
            let j = (0..earlier.len()).find(|&j| {
                !claimed[j]
                    && identity(&earlier[j].attributes).is_none()
                    && gap_of_earlier(j) == gap
            });
            if let Some(j) = j {
                claimed[j] = true;
                replaces[i] = Some(j);
            }
        }
        Ok((0..requests.len())
            .map(|i| match (same[i], replaces[i]) {
                (Some(j), _) => Plan::Unchanged(Box::new(earlier[j].clone())),
                (None, Some(j)) => Plan::Replace(earlier[j].id.clone()),
                (None, None) => Plan::Remember,
            })
            .collect())
    }

    /// Supersedes the memory `target` with the edited entry `r`, through
    /// the write gate: applied at once, or a queued replace proposal when
    /// the policy asks for review. The entry's key makes it idempotent.
    pub(super) fn replace_imported(
        &self,
        r: &RememberRequest,
        target: String,
        actor: &Actor,
    ) -> MemResult<RememberOutcome> {
        let req = ProposalRequest {
            op: ProposalOp::Replace,
            targets: vec![target],
            memory: Some(r.draft()),
            evidence: Vec::new(),
            reason: Some(format!(
                "{} changed since it was imported",
                r.source_ref.as_deref().unwrap_or("the entry")
            )),
            idempotency_key: r.idempotency_key.clone(),
        };
        let outcome = self.propose_via(&req, actor, crate::gate::WriteRoute::Import)?;
        let memory = match outcome.proposal.result_ids.first() {
            Some(id) => Some(self.memory(id)?),
            None => None,
        };
        Ok(RememberOutcome {
            replayed: outcome.replayed,
            memory,
            proposal: Some(outcome.proposal),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_refs_name_their_document_and_first_line() {
        assert_eq!(document_of("AGENTS.md#L3-5"), "AGENTS.md");
        assert_eq!(document_of("notes#Lx.md"), "notes#Lx.md");
        assert_eq!(document_of("export.json"), "export.json");
        assert_eq!(first_line(Some("a.md#L12-20")), 12);
        assert_eq!(first_line(Some("a.md#L7")), 7);
        assert_eq!(first_line(None), 0);
    }
}
