//! The CONFLICT lane's evidence: which packed memory contradicts which,
//! and in what, so an agent can see both sides instead of a bare flag.

use super::SearchHit;
use crate::Service;
use crate::records::load;
use mem_core::MemResult;
use mem_core::index::SourceKind;
use mem_core::model::{Difference, Memory};
use mem_core::store::Table;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Relation types that say two memories contradict each other.
const CONTRADICTION_TYPES: &[&str] = &["conflicts_with", "contradicts"];

/// Another item of the pack that a CONFLICT item contradicts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PackConflict {
    /// The counterpart's memory id.
    pub id: String,
    pub citation: String,
    /// What this item says (`this`) where the counterpart says `other`,
    /// when the detector named the differing part.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub difference: Option<Difference>,
}

/// For each memory among `hits` that a contradiction relation links to
/// another of `hits`: its counterparts, seen from that memory (a relation
/// stored on one side is shown on both, its difference swapped).
pub(super) fn pack_conflicts(
    svc: &Service,
    hits: &[&SearchHit],
) -> MemResult<BTreeMap<String, Vec<PackConflict>>> {
    let citations: BTreeMap<&str, &str> = hits
        .iter()
        .filter(|h| h.source == SourceKind::Memory)
        .map(|h| (h.id.as_str(), h.citation.as_str()))
        .collect();
    let mut out: BTreeMap<String, Vec<PackConflict>> = BTreeMap::new();
    let mut add = |at: &str, with: &str, difference: Option<Difference>| {
        let Some(citation) = citations.get(with) else {
            return;
        };
        let list = out.entry(at.to_string()).or_default();
        match list.iter_mut().find(|c| c.id == with) {
            Some(known) => {
                if known.difference.is_none() {
                    known.difference = difference;
                }
            }
            None => list.push(PackConflict {
                id: with.to_string(),
                citation: (*citation).to_string(),
                difference,
            }),
        }
    };
    for id in citations.keys() {
        let Some(m) = load::<Memory>(svc.store(), Table::Memories, id)? else {
            continue;
        };
        for r in &m.value.relations {
            if !CONTRADICTION_TYPES.contains(&r.kind.as_str())
                || r.target == *id
                || !citations.contains_key(r.target.as_str())
            {
                continue;
            }
            add(id, &r.target, r.difference.clone());
            add(
                &r.target,
                id,
                r.difference.as_ref().map(Difference::swapped),
            );
        }
    }
    Ok(out)
}

/// The lane reason of a CONFLICT item: each counterpart and the difference.
pub(super) fn conflict_reason(conflicts: &[PackConflict]) -> String {
    let parts: Vec<String> = conflicts
        .iter()
        .map(|c| match &c.difference {
            Some(d) => format!(
                "contradicts {}: this says {:?} where it says {:?}",
                c.citation, d.this, d.other
            ),
            None => format!("contradicts {}", c.citation),
        })
        .collect();
    parts.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_name_counterpart_and_difference() {
        let c = vec![
            PackConflict {
                id: "m1".into(),
                citation: "mem://memory/m1".into(),
                difference: Some(Difference {
                    this: "17".into(),
                    other: "16".into(),
                }),
            },
            PackConflict {
                id: "m2".into(),
                citation: "mem://memory/m2".into(),
                difference: None,
            },
        ];
        assert_eq!(
            conflict_reason(&c),
            "contradicts mem://memory/m1: this says \"17\" where it says \"16\"; \
             contradicts mem://memory/m2"
        );
    }
}
