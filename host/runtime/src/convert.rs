//! Conversions between the seam's plain records (`mem_core::plugin`) and
//! the WIT records of `mem:plugin@0.1.0`, plus the output-size measure
//! that enforces the per-call output cap.
//!
//! Keeping these in one place is what lets a future WIT version change
//! only this module and its bindings, never the service layer.

use mem_core::plugin as core;

use crate::bindings::v0_1_0::types as wit;

fn lines_in(r: core::LineRange) -> wit::LineRange {
    wit::LineRange {
        start: r.start,
        end: r.end,
    }
}

fn lines_out(r: wit::LineRange) -> core::LineRange {
    core::LineRange {
        start: r.start,
        end: r.end,
    }
}

fn pairs_in(map: &std::collections::BTreeMap<String, String>) -> Vec<(String, String)> {
    map.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

fn pairs_out(list: Vec<(String, String)>) -> std::collections::BTreeMap<String, String> {
    list.into_iter().collect()
}

pub(crate) fn file_in(f: &core::FileInput) -> wit::FileInput {
    wit::FileInput {
        id: f.id.clone(),
        path: f.path.clone(),
        name: f.name.clone(),
        mime: f.mime.clone(),
        bytes: f.bytes.clone(),
    }
}

pub(crate) fn processed_out(p: wit::Processed) -> core::ProcessedFile {
    core::ProcessedFile {
        title: p.title,
        chunks: p
            .chunks
            .into_iter()
            .map(|c| core::Chunk {
                text: c.text,
                lines: lines_out(c.lines),
                section: c.section,
                kind: c.kind,
            })
            .collect(),
        metadata: pairs_out(p.metadata),
        entities: p
            .entities
            .into_iter()
            .map(|e| core::Entity {
                kind: e.kind,
                value: e.value,
                lines: e.lines.map(lines_out),
            })
            .collect(),
        tags: p.tags,
    }
}

pub(crate) fn item_in(i: &core::DetectItem) -> wit::Item {
    wit::Item {
        id: i.id.clone(),
        kind: i.kind.clone(),
        role: i.role.clone(),
        text: i.text.clone(),
        path: i.path.clone(),
        tags: i.tags.clone(),
    }
}

pub(crate) fn relation_out(r: wit::Relation) -> core::DetectedRelation {
    core::DetectedRelation {
        kind: r.kind,
        target: r.target,
        score: r.score,
        reason: r.reason,
        difference: r.difference.map(|d| mem_core::model::Difference {
            this: d.subject,
            other: d.target,
        }),
    }
}

fn stance_in(s: core::Stance) -> wit::Stance {
    match s {
        core::Stance::Supports => wit::Stance::Supports,
        core::Stance::Weakens => wit::Stance::Weakens,
        core::Stance::Contradicts => wit::Stance::Contradicts,
        core::Stance::Neutral => wit::Stance::Neutral,
    }
}

pub(crate) fn proposal_in(p: &core::ProposalInput) -> wit::Proposal {
    wit::Proposal {
        id: p.id.clone(),
        kind: p.kind.clone(),
        content: p.content.clone(),
        scope: p.scope.clone(),
        source: p.source.clone(),
        agent: p.agent.clone(),
        confidence: p.confidence,
        evidence: p
            .evidence
            .iter()
            .map(|e| wit::Evidence {
                kind: e.kind.clone(),
                reference: e.reference.clone(),
                excerpt: e.excerpt.clone(),
                stance: stance_in(e.stance),
            })
            .collect(),
        attributes: pairs_in(&p.attributes),
        route: p.route.clone(),
    }
}

pub(crate) fn verdict_out(v: wit::Verdict) -> core::Verdict {
    core::Verdict {
        decision: match v.decision {
            wit::Decision::Allow => core::Decision::Allow,
            wit::Decision::Deny => core::Decision::Deny,
            wit::Decision::Review => core::Decision::Review,
        },
        reasons: v
            .reasons
            .into_iter()
            .map(|r| core::VerdictReason {
                code: r.code,
                message: r.message,
            })
            .collect(),
    }
}

pub(crate) fn read_item_in(i: &core::ReadItem) -> wit::ReadItem {
    wit::ReadItem {
        id: i.id.clone(),
        kind: i.kind.clone(),
        role: i.role.clone(),
        path: i.path.clone(),
        lifecycle: i.lifecycle.clone(),
        confidence: i.confidence,
        created_at_ms: i.created_at_ms,
        event_at_ms: i.event_at_ms,
        tags: i.tags.clone(),
        source: i.source.clone(),
        attributes: i.attributes.clone(),
        pinned: i.pinned,
    }
}

pub(crate) fn read_request_in(r: &core::ReadRequest) -> wit::ReadRequest {
    wit::ReadRequest {
        agent: r.agent.clone(),
        path: r.path.clone(),
        query: r.query.clone(),
        now_ms: r.now_ms,
    }
}

pub(crate) fn candidate_in(c: &core::SelectCandidate) -> wit::Candidate {
    wit::Candidate {
        id: c.id.clone(),
        kind: c.kind.clone(),
        role: c.role.clone(),
        text: c.text.clone(),
        path: c.path.clone(),
        score: c.score,
        created_at_ms: c.created_at_ms,
        event_at_ms: c.event_at_ms,
        pinned: c.pinned,
        confidence: c.confidence,
        tags: c.tags.clone(),
    }
}

pub(crate) fn query_in(q: &core::SelectQuery) -> wit::Query {
    wit::Query {
        text: q.text.clone(),
        terms: q.terms.clone(),
        now_ms: q.now_ms,
        path: q.path.clone(),
    }
}

pub(crate) fn entry_in(e: &core::AdapterEntry) -> wit::Entry {
    wit::Entry {
        kind: e.kind.clone(),
        content: e.content.clone(),
        section: e.section.clone(),
        role: e.role.clone(),
        lines: e.lines.map(lines_in),
        tags: e.tags.clone(),
        attributes: pairs_in(&e.attributes),
    }
}

pub(crate) fn entry_out(e: wit::Entry) -> core::AdapterEntry {
    core::AdapterEntry {
        kind: e.kind,
        content: e.content,
        section: e.section,
        role: e.role,
        lines: e.lines.map(lines_out),
        tags: e.tags,
        attributes: pairs_out(e.attributes),
    }
}

/// Approximate bytes a plugin result occupies once lifted into the host:
/// every string and byte list by length, every list element and record
/// at a small fixed overhead. Compared against `ResolvedLimits::output_bytes`.
pub(crate) trait OutputSize {
    fn output_size(&self) -> u64;
}

/// Per list element / record overhead counted by [`OutputSize`]; it makes a
/// flood of empty strings count too.
const ELEMENT_OVERHEAD: u64 = 16;

impl OutputSize for String {
    fn output_size(&self) -> u64 {
        self.len() as u64 + ELEMENT_OVERHEAD
    }
}

impl OutputSize for u8 {
    fn output_size(&self) -> u64 {
        1
    }
}

impl OutputSize for bool {
    fn output_size(&self) -> u64 {
        1
    }
}

impl<T: OutputSize> OutputSize for Vec<T> {
    fn output_size(&self) -> u64 {
        self.iter().map(OutputSize::output_size).sum::<u64>() + ELEMENT_OVERHEAD
    }
}

impl<T: OutputSize> OutputSize for Option<T> {
    fn output_size(&self) -> u64 {
        self.as_ref().map_or(0, OutputSize::output_size)
    }
}

impl<A: OutputSize, B: OutputSize> OutputSize for (A, B) {
    fn output_size(&self) -> u64 {
        self.0.output_size() + self.1.output_size()
    }
}

impl OutputSize for wit::LineRange {
    fn output_size(&self) -> u64 {
        8
    }
}

impl OutputSize for wit::Chunk {
    fn output_size(&self) -> u64 {
        self.text.output_size() + self.section.output_size() + self.kind.output_size() + 8
    }
}

impl OutputSize for wit::Entity {
    fn output_size(&self) -> u64 {
        self.kind.output_size() + self.value.output_size() + 8
    }
}

impl OutputSize for wit::Processed {
    fn output_size(&self) -> u64 {
        self.title.output_size()
            + self.chunks.output_size()
            + self.metadata.output_size()
            + self.entities.output_size()
            + self.tags.output_size()
    }
}

impl OutputSize for wit::Relation {
    fn output_size(&self) -> u64 {
        self.kind.output_size()
            + self.target.output_size()
            + self.reason.output_size()
            + self
                .difference
                .as_ref()
                .map_or(0, |d| d.subject.output_size() + d.target.output_size())
            + 4
    }
}

impl OutputSize for wit::Reason {
    fn output_size(&self) -> u64 {
        self.code.output_size() + self.message.output_size()
    }
}

impl OutputSize for wit::Verdict {
    fn output_size(&self) -> u64 {
        self.reasons.output_size() + 1
    }
}

impl OutputSize for wit::Entry {
    fn output_size(&self) -> u64 {
        self.kind.output_size()
            + self.content.output_size()
            + self.section.output_size()
            + self.role.output_size()
            + self.tags.output_size()
            + self.attributes.output_size()
            + 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_size_counts_text_and_elements() {
        let p = wit::Processed {
            title: Some("t".into()),
            chunks: vec![wit::Chunk {
                text: "x".repeat(1000),
                lines: wit::LineRange { start: 1, end: 2 },
                section: vec![],
                kind: "text".into(),
            }],
            metadata: vec![],
            entities: vec![],
            tags: vec![],
        };
        let size = p.output_size();
        assert!((1000..1200).contains(&size), "{size}");
        let many_empty: Vec<String> = vec![String::new(); 1000];
        assert!(many_empty.output_size() >= 16_000);
    }

    #[test]
    fn entries_round_trip() {
        let e = core::AdapterEntry {
            kind: "note".into(),
            content: "c".into(),
            section: vec!["A".into()],
            role: Some("guidance".into()),
            lines: Some(core::LineRange::new(2, 3)),
            tags: vec!["t".into()],
            attributes: [("k".to_string(), "v".to_string())].into_iter().collect(),
        };
        assert_eq!(entry_out(entry_in(&e)), e);
    }
}
