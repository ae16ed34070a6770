//! Checks on what a plugin returned, before the host trusts it: a
//! plugin's answer is input like any other.

use mem_core::plugin::{DetectItem, DetectedRelation, ProcessedFile, SelectCandidate};

/// Checks a selector's answer: a duplicate-free subset of the candidate
/// ids, at most `limit` long.
pub(crate) fn validate_selection(
    ids: &[String],
    candidates: &[SelectCandidate],
    limit: u32,
) -> Result<(), String> {
    if ids.len() > limit as usize {
        return Err(format!("{} ids for a limit of {limit}", ids.len()));
    }
    let known: std::collections::HashSet<&str> = candidates.iter().map(|c| c.id.as_str()).collect();
    let mut seen = std::collections::HashSet::new();
    for id in ids {
        if !known.contains(id.as_str()) {
            return Err(format!("id '{id}' is not one of the candidates"));
        }
        if !seen.insert(id.as_str()) {
            return Err(format!("id '{id}' appears twice"));
        }
    }
    Ok(())
}

/// Checks a processor's answer: every line range is `1 <= start <= end`.
pub(crate) fn validate_processed(p: &ProcessedFile) -> Result<(), String> {
    let bad = |r: &mem_core::plugin::LineRange| r.start == 0 || r.start > r.end;
    if let Some((i, c)) = p.chunks.iter().enumerate().find(|(_, c)| bad(&c.lines)) {
        return Err(format!(
            "chunk {i} has line range {}-{}",
            c.lines.start, c.lines.end
        ));
    }
    if let Some(e) = p
        .entities
        .iter()
        .find(|e| e.lines.as_ref().is_some_and(bad))
    {
        return Err(format!("entity '{}' has an invalid line range", e.value));
    }
    Ok(())
}

/// Checks a detector's answer: targets are candidate ids, scores in [0, 1].
/// Longest side of a relation's `difference`: it is stored on the memory
/// and shown in every pack, so a detector cannot copy whole texts into it.
const MAX_DIFFERENCE_CHARS: usize = 200;

pub(crate) fn validate_relations(
    rels: &[DetectedRelation],
    candidates: &[DetectItem],
) -> Result<(), String> {
    for r in rels {
        if !candidates.iter().any(|c| c.id == r.target) {
            return Err(format!(
                "relation target '{}' is not one of the candidates",
                r.target
            ));
        }
        if !(0.0..=1.0).contains(&r.score) {
            return Err(format!("relation score {} is outside [0, 1]", r.score));
        }
        if let Some(d) = &r.difference
            && (d.this.chars().count() > MAX_DIFFERENCE_CHARS
                || d.other.chars().count() > MAX_DIFFERENCE_CHARS)
        {
            return Err(format!(
                "a relation difference is longer than {MAX_DIFFERENCE_CHARS} characters"
            ));
        }
    }
    Ok(())
}
