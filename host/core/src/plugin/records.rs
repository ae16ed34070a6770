//! Records exchanged with plugins: the one mirror of the WIT records of
//! `wit/v0.1.0` (`types.wit`) as plain Rust types.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::MemError;

/// Lines of a source document, 1-based, inclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LineRange {
    pub start: u32,
    pub end: u32,
}

impl LineRange {
    pub fn new(start: u32, end: u32) -> Self {
        Self { start, end }
    }

    /// The citation form used by indexes and context packs: `L3-9`, or `L3`.
    pub fn locator(&self) -> String {
        if self.start == self.end {
            format!("L{}", self.start)
        } else {
            format!("L{}-{}", self.start, self.end)
        }
    }
}

/// A file handed to a processor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileInput {
    pub id: String,
    pub path: String,
    pub name: String,
    pub mime: String,
    pub bytes: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Chunk {
    pub text: String,
    pub lines: LineRange,
    /// Heading trail, outermost first.
    #[serde(default)]
    pub section: Vec<String>,
    pub kind: String,
}

impl Chunk {
    /// Where the chunk is cited: `L10-24`, or `p3:L10-24` for a chunk of
    /// kind `page` with section `["page 3"]` (the paged-document
    /// convention: lines count from the top of the page; no WIT change).
    pub fn locator(&self) -> String {
        let page = (self.kind == "page")
            .then(|| self.section.first())
            .flatten()
            .and_then(|s| s.strip_prefix("page "))
            .and_then(|n| n.parse::<u32>().ok());
        crate::locator::Locator {
            page,
            lines: self.lines,
        }
        .to_string()
    }
}

#[cfg(test)]
mod chunk_tests {
    use super::*;

    #[test]
    fn page_chunks_cite_their_page() {
        let mut c = Chunk {
            text: "x".into(),
            lines: LineRange { start: 10, end: 24 },
            section: vec!["page 3".into()],
            kind: "page".into(),
        };
        assert_eq!(c.locator(), "p3:L10-24");
        c.section = vec!["page three".into()];
        assert_eq!(c.locator(), "L10-24");
        c.kind = "section".into();
        c.section = vec!["page 3".into()];
        assert_eq!(c.locator(), "L10-24");
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Entity {
    pub kind: String,
    pub value: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lines: Option<LineRange>,
}

/// What a processor extracted from one file (stored per file by the service).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ProcessedFile {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    pub chunks: Vec<Chunk>,
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
    #[serde(default)]
    pub entities: Vec<Entity>,
    /// Suggestions, not accepted tags.
    #[serde(default)]
    pub tags: Vec<String>,
}

/// A record a relation detector compares.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DetectItem {
    pub id: String,
    pub kind: String,
    /// The runtime role of the memory's type; `None` for a file chunk.
    pub role: Option<String>,
    pub text: String,
    pub path: String,
    pub tags: Vec<String>,
}

/// A relation a detector found from the subject to `target`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DetectedRelation {
    /// `duplicate_of`, `conflicts_with`, `same_topic`, ...
    pub kind: String,
    pub target: String,
    /// In [0, 1].
    pub score: f32,
    pub reason: String,
    /// For `conflicts_with`: what the subject says (`this`) against what
    /// the target says (`other`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub difference: Option<crate::model::Difference>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Stance {
    Supports,
    /// Makes the claim less likely without refuting it.
    Weakens,
    Contradicts,
    Neutral,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EvidenceRef {
    pub kind: String,
    pub reference: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excerpt: Option<String>,
    pub stance: Stance,
}

/// A write the policy must judge.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProposalInput {
    pub id: String,
    pub kind: String,
    pub content: String,
    pub scope: Option<String>,
    pub source: Option<String>,
    pub agent: Option<String>,
    pub confidence: f64,
    pub evidence: Vec<EvidenceRef>,
    pub attributes: BTreeMap<String, String>,
    /// The write path: `propose`, `remember`, `batch` or `import`.
    pub route: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Allow,
    Deny,
    Review,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct VerdictReason {
    pub code: String,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Verdict {
    pub decision: Decision,
    pub reasons: Vec<VerdictReason>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReadItem {
    pub id: String,
    pub kind: String,
    /// Runtime role of its kind or type (none for a file).
    pub role: Option<String>,
    pub path: String,
    pub lifecycle: String,
    pub confidence: f64,
    pub created_at_ms: i64,
    pub event_at_ms: Option<i64>,
    pub tags: Vec<String>,
    pub source: Option<String>,
    /// The memory's attributes (typed fields such as `risk`).
    pub attributes: Vec<(String, String)>,
    pub pinned: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReadRequest {
    pub agent: Option<String>,
    pub path: Option<String>,
    pub query: String,
    pub now_ms: i64,
}

/// A recall candidate handed to a selection stage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SelectCandidate {
    pub id: String,
    pub kind: String,
    pub role: Option<String>,
    pub text: String,
    pub path: String,
    pub score: f32,
    pub created_at_ms: i64,
    pub event_at_ms: Option<i64>,
    pub pinned: bool,
    pub confidence: f64,
    pub tags: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SelectQuery {
    pub text: String,
    pub terms: Vec<String>,
    pub now_ms: i64,
    pub path: Option<String>,
}

/// One unit of an external document (adapter import/export).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AdapterEntry {
    pub kind: String,
    pub content: String,
    #[serde(default)]
    pub section: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lines: Option<LineRange>,
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default)]
    pub attributes: BTreeMap<String, String>,
}

/// How one stage of the selection chain went (for the context pack trace).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StageReport {
    pub plugin: String,
    pub limit: u32,
    pub input: usize,
    pub output: usize,
    /// Set when the stage failed; its input then passed through, cut to
    /// the stage limit, and the pack is partial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<MemError>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SelectionOutcome {
    /// Kept candidate ids, best first.
    pub ids: Vec<String>,
    pub stages: Vec<StageReport>,
}

impl SelectionOutcome {
    /// True when a stage failed and was bypassed.
    pub fn partial(&self) -> bool {
        self.stages.iter().any(|s| s.error.is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_range_locator() {
        assert_eq!(LineRange::new(3, 9).locator(), "L3-9");
        assert_eq!(LineRange::new(4, 4).locator(), "L4");
    }
}
