//! Context packs: recall → the workspace's selection chain → read gate →
//! lanes → a hard character budget, with a trace that explains the result.
//!
//! Nothing is cut mid-item: an item that does not fit the budget is listed
//! in `omitted` with its size. The lane is a function of the item's role
//! (the workspace's one role table, [`crate::types::TypeRegistry::role_of`])
//! and its lifecycle only: `conflict` (a declared conflict with another
//! item of the pack), `provisional` (not active, or tentative), then by
//! role: `constraint` → `must`, `guidance` → `should`, `assertion`,
//! `occurrence` (and files) → `context`, `question` → `missing` (a known gap, not a fact).
//! `symbol` items define subjects: packed (in `context`) only when the
//! query names them. A pin is the owner's emphasis, not a rule: a pinned
//! item leads its lane (and the role stage keeps it first), but keeps its
//! role's lane. `missing` also names query terms nothing packed answers.

use super::conflict::{PackConflict, conflict_reason, pack_conflicts};
use super::read_gate::Facts;
use super::{SearchHit, SearchQuery, filters_of};
use crate::Service;
use crate::records::load;
use mem_core::index::{LaneReport, LaneStatus, Period, SourceKind};
use mem_core::model::Memory;
use mem_core::plugin::{SelectCandidate, SelectQuery, StageReport};
use mem_core::store::Table;
use mem_core::time::{Timestamp, now};
use mem_core::{ErrorCode, MemError, MemResult};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::BTreeSet;

pub const DEFAULT_MAX_CHARS: usize = 8000;
pub const DEFAULT_CONTEXT_LIMIT: usize = 20;
/// Memories below this confidence are not served (read gate).
pub const DEFAULT_MIN_CONFIDENCE: f64 = 0.2;
/// A tentative memory serves as `provisional` until feedback lifts its
/// confidence to this.
pub const TENTATIVE_UNTIL: f64 = 0.5;
/// Candidates recalled per requested item (room for the chain and gate).
const POOL_FACTOR: usize = 3;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContextRequest {
    /// The question or task, in plain words.
    #[schemars(length(max = 4096))]
    pub query: String,
    /// Only items under this folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::ops::fields::opt_path")]
    pub scope: Option<String>,
    /// `all` (default), `file` or `memory`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::ops::fields::opt_source")]
    pub source: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kinds: Vec<String>,
    /// Hard budget of the packed texts, in characters (default 8000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_chars: Option<usize>,
    /// Most items packed, 1 to 200 (default 20).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 200))]
    pub limit: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Memories below this confidence are not served (default 0.2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub min_confidence: Option<f64>,
    /// The caller's path boundary (see [`SearchQuery::within`]).
    #[serde(skip)]
    #[schemars(skip)]
    pub within: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PackLane {
    Must,
    Should,
    Context,
    Provisional,
    Conflict,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Provenance {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_ref: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_at: Option<Timestamp>,
    pub created_at: Timestamp,
    pub path: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ContextItem {
    pub citation: String,
    pub source: SourceKind,
    pub id: String,
    pub kind: String,
    pub content_sha256: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locator: Option<String>,
    /// The whole item (never cut).
    pub text: String,
    pub chars: usize,
    pub score: f32,
    /// Why it was selected and placed in its lane.
    pub reason: String,
    pub provenance: Provenance,
    /// In the CONFLICT lane: the items of this pack it contradicts, and in what.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conflicts: Vec<PackConflict>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct OmittedItem {
    pub id: String,
    pub citation: String,
    pub lane: PackLane,
    pub chars: usize,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MissingItem {
    /// A query term nothing packed answers, or an open question's text.
    pub term: String,
    pub reason: String,
    /// The question-role memory that records this gap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub citation: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Hidden {
    pub id: String,
    pub citation: String,
    /// The filter that hid it (`scope`, `source`, `kind`, `agent`, `lifecycle`).
    pub filter: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Rejected {
    pub id: String,
    pub citation: String,
    /// The read-gate rule: `low_confidence`, `stale`, `status_blocked`,
    /// `risk_blocked`, `scope_mismatch`, `no_task_match`, or
    /// `policy_failed` (the read policy trapped or timed out: an
    /// incomplete check never admits).
    pub rule: String,
    /// The read policy plugin that rejected it; none for the host's rules.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
    pub detail: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SelectionTrace {
    /// `ran` or `skipped`.
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub input: usize,
    pub output: usize,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<StageReport>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct QueryTrace {
    pub text: String,
    /// Content words of the query (what `missing` is checked against).
    pub terms: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kinds: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The period the query names: items from then ranked higher.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub period: Option<Period>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PackTrace {
    pub query: QueryTrace,
    /// Recall lanes after filters.
    pub lanes: Vec<LaneReport>,
    /// Candidates recalled without the request's filters (active or not).
    pub candidates_before_filters: usize,
    /// Candidates recalled with them.
    pub candidates_after_filters: usize,
    pub hidden_by_filter: Vec<Hidden>,
    pub selection: SelectionTrace,
    pub rejected_by_gate: Vec<Rejected>,
    pub packed: usize,
    pub omitted: usize,
}

/// memdsl EvidencePack / mem SPEC F5.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ContextPack {
    pub query: String,
    pub max_chars: usize,
    /// Characters of packed item texts (≤ `max_chars`).
    pub used_chars: usize,
    pub must: Vec<ContextItem>,
    pub should: Vec<ContextItem>,
    pub context: Vec<ContextItem>,
    pub provisional: Vec<ContextItem>,
    pub conflict: Vec<ContextItem>,
    pub missing: Vec<MissingItem>,
    pub omitted: Vec<OmittedItem>,
    pub partial: bool,
    pub warnings: Vec<String>,
    /// When the pack is empty: what to try next.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub suggestions: Vec<String>,
    /// The answer to a counting question ("how many photos from 2012"):
    /// the count on the timeline with cited samples (see `recall::count`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeline: Option<super::count::TimelineSummary>,
    pub trace: PackTrace,
}

/// Query words worth checking coverage of (lower case, no function words).
pub(super) fn content_terms(q: &str) -> Vec<String> {
    const STOP: &[&str] = &[
        "a", "an", "the", "of", "to", "in", "on", "at", "for", "and", "or", "is", "are", "was",
        "were", "be", "it", "this", "that", "with", "as", "by", "from", "what", "when", "where",
        "who", "how", "why", "which", "did", "do", "does", "we", "i", "you", "our", "my", "about",
        "should", "can", "there", "any", "many",
    ];
    let mut out: Vec<String> = Vec::new();
    for w in q
        .split(|c: char| !c.is_alphanumeric())
        .map(str::to_lowercase)
    {
        if w.chars().count() > 1 && !STOP.contains(&w.as_str()) && !out.contains(&w) {
            out.push(w);
        }
    }
    out
}

pub(super) fn covers(text_lower: &str, term: &str) -> bool {
    // A prefix match tolerates inflections (deploy → deployed, deploys).
    let n = term.chars().count();
    let stem: String = term
        .chars()
        .take(if n > 5 { 5.max(n - 3) } else { n })
        .collect();
    text_lower
        .split(|c: char| !c.is_alphanumeric())
        .any(|w| w.starts_with(&stem) || w == term)
}

/// The lane of an admitted hit, or `None` for a question (a known gap).
fn lane_of(h: &SearchHit, f: &Facts, conflicting: &BTreeSet<String>) -> Option<(PackLane, String)> {
    let pin = if h.pinned {
        "; pinned by the workspace owner"
    } else {
        ""
    };
    if conflicting.contains(&h.id) {
        return Some((
            PackLane::Conflict,
            "contradicts another item of this pack".into(),
        ));
    }
    if h.lifecycle != "active" {
        return Some((
            PackLane::Provisional,
            format!("its lifecycle is {}{pin}", h.lifecycle),
        ));
    }
    if f.tentative && h.confidence < TENTATIVE_UNTIL {
        return Some((
            PackLane::Provisional,
            format!(
                "tentative (confidence {:.2}) until feedback raises it to {TENTATIVE_UNTIL}{pin}",
                h.confidence
            ),
        ));
    }
    let (lane, why) = match f.role.as_deref() {
        Some("constraint") => (PackLane::Must, "role constraint: it binds the work"),
        Some("guidance") => (PackLane::Should, "role guidance: it guides the work"),
        Some("occurrence") => (PackLane::Context, "role occurrence: a recorded event"),
        Some("question") => return None,
        Some("symbol") => (
            PackLane::Context,
            "role symbol: defines a subject the query names",
        ),
        _ => (PackLane::Context, "relevant background"),
    };
    Some((lane, format!("{why}{pin}")))
}

fn recall_reason(h: &SearchHit) -> String {
    let mut parts = Vec::new();
    if let Some(r) = h.lexical_rank {
        if h.matched_terms.is_empty() {
            parts.push(format!("lexical rank {r}"));
        } else {
            parts.push(format!(
                "lexical rank {r} (matched {})",
                h.matched_terms.join(", ")
            ));
        }
    }
    if let Some(r) = h.semantic_rank {
        parts.push(format!("semantic rank {r}"));
    }
    if h.in_period {
        parts.push("from the period the query names".into());
    }
    parts.join("; ")
}

impl Service {
    /// Which request filter hides `h` (found without filters), if any.
    fn hiding_filter(
        &self,
        h: &SearchHit,
        req: &ContextRequest,
        q: &SearchQuery,
    ) -> MemResult<Option<String>> {
        let f = filters_of(q)?;
        Ok(if h.lifecycle != "active" {
            Some("lifecycle".into())
        } else if f
            .path
            .as_deref()
            .is_some_and(|p| !(p == "/" || h.path == p || h.path.starts_with(&format!("{p}/"))))
        {
            Some("scope".into())
        } else if f.source.is_some_and(|s| s != h.source) {
            Some("source".into())
        } else if !f.kinds.is_empty() && !f.kinds.contains(&h.kind) {
            Some("kind".into())
        } else if req.agent.is_some() && h.agent_id != f.agent_id {
            Some("agent".into())
        } else {
            None
        })
    }

    /// Builds a cited, budgeted context pack.
    pub(crate) fn context(&self, req: &ContextRequest) -> MemResult<ContextPack> {
        let max_chars = req.max_chars.unwrap_or(DEFAULT_MAX_CHARS);
        let limit = req.limit.unwrap_or(DEFAULT_CONTEXT_LIMIT);
        if max_chars == 0 || limit == 0 || limit > super::MAX_SEARCH_LIMIT {
            return Err(MemError::bad_request(format!(
                "max_chars must be positive and limit 1..={}",
                super::MAX_SEARCH_LIMIT
            ))
            .with_hint("send a positive max_chars and a limit in range"));
        }
        let min_confidence = req.min_confidence.unwrap_or(DEFAULT_MIN_CONFIDENCE);
        if !(0.0..=1.0).contains(&min_confidence) {
            return Err(MemError::bad_request(format!(
                "min_confidence {min_confidence} is outside 0..1"
            ))
            .with_hint("give a confidence between 0 and 1")
            .with_details(json!({ "field": "min_confidence" })));
        }
        let pool = (limit * POOL_FACTOR).min(super::MAX_SEARCH_LIMIT);
        let q = SearchQuery {
            query: req.query.clone(),
            kinds: req.kinds.clone(),
            path: req.scope.clone(),
            agent: req.agent.clone(),
            source: req.source.clone(),
            limit: Some(pool),
            within: req.within.clone(),
            ..Default::default()
        };
        let found = self.search(&q)?;
        // The same recall without the request's filters: what they hid
        // (never what lies outside the caller's boundary).
        let unfiltered = self.search(&SearchQuery {
            query: req.query.clone(),
            lifecycle: vec!["all".into()],
            limit: Some(pool),
            within: req.within.clone(),
            ..Default::default()
        })?;
        let kept_ids: BTreeSet<&str> = found.hits.iter().map(|h| h.id.as_str()).collect();
        let mut hidden = Vec::new();
        for h in unfiltered
            .hits
            .iter()
            .filter(|h| !kept_ids.contains(h.id.as_str()))
        {
            if let Some(filter) = self.hiding_filter(h, req, &q)? {
                hidden.push(Hidden {
                    id: h.id.clone(),
                    citation: h.citation.clone(),
                    filter,
                });
            }
        }
        let mut warnings = found.warnings.clone();
        let mut partial = found.partial;

        let facts = self.facts_of(&found.hits)?;
        // Selection chain (the workspace's `selector` plugins).
        let selection_input = found.hits.len();
        let (selected, selection): (Vec<&SearchHit>, SelectionTrace) = match self.plugins() {
            Some(host) => {
                let candidates: Vec<SelectCandidate> = found
                    .hits
                    .iter()
                    .map(|h| SelectCandidate {
                        id: h.citation.clone(),
                        kind: h.kind.clone(),
                        role: facts.get(&h.id).and_then(|f| f.role.clone()),
                        text: h.text.clone(),
                        path: h.path.clone(),
                        score: h.score,
                        created_at_ms: h.created_at.timestamp_millis(),
                        event_at_ms: h.event_at.map(|t| t.timestamp_millis()),
                        pinned: h.pinned,
                        confidence: h.confidence,
                        tags: h.tags.clone(),
                    })
                    .collect();
                let sq = SelectQuery {
                    text: req.query.clone(),
                    terms: content_terms(&req.query),
                    now_ms: now().timestamp_millis(),
                    path: req.scope.clone(),
                };
                let outcome =
                    super::selection::run_chain(host.as_ref(), &candidates, &sq, pool as u32);
                if outcome.partial() {
                    partial = true;
                    warnings.push("a selection stage failed and was bypassed".into());
                }
                let kept: Vec<&SearchHit> = outcome
                    .ids
                    .iter()
                    .filter_map(|id| found.hits.iter().find(|h| &h.citation == id))
                    .collect();
                let trace = SelectionTrace {
                    status: "ran".into(),
                    reason: None,
                    input: selection_input,
                    output: kept.len(),
                    stages: outcome.stages,
                };
                (kept, trace)
            }
            None => (
                found.hits.iter().collect(),
                SelectionTrace {
                    status: "skipped".into(),
                    reason: Some(
                        "no plugin runtime is attached to this workspace; recall order kept".into(),
                    ),
                    input: selection_input,
                    output: selection_input,
                    stages: Vec::new(),
                },
            ),
        };

        let gate = self.read_gate(selected, &facts, req, min_confidence);
        if gate.partial {
            partial = true;
        }
        warnings.extend(gate.warnings);
        let rejected = gate.rejected;
        let mut admitted = gate.admitted;
        admitted.truncate(limit);

        // Lanes and the budget, binding lanes first; questions are gaps.
        let conflicts = pack_conflicts(self, &admitted)?;
        let conflicting: BTreeSet<String> = conflicts.keys().cloned().collect();
        let none = Facts::default();
        let mut questions: Vec<&SearchHit> = Vec::new();
        let mut placed: Vec<(PackLane, &SearchHit, String)> = Vec::new();
        for h in &admitted {
            match lane_of(h, facts.get(&h.id).unwrap_or(&none), &conflicting) {
                Some((lane, why)) => placed.push((lane, *h, why)),
                None => questions.push(h),
            }
        }
        let priority = |l: PackLane| match l {
            PackLane::Must => 0,
            PackLane::Should => 1,
            PackLane::Conflict => 2,
            PackLane::Context => 3,
            PackLane::Provisional => 4,
        };
        // Stable: within a lane, pinned items first, then selection order.
        placed.sort_by_key(|(l, h, _)| (priority(*l), !h.pinned));
        let mut pack = ContextPack {
            query: req.query.clone(),
            max_chars,
            used_chars: 0,
            must: Vec::new(),
            should: Vec::new(),
            context: Vec::new(),
            provisional: Vec::new(),
            conflict: Vec::new(),
            missing: Vec::new(),
            omitted: Vec::new(),
            partial,
            warnings,
            suggestions: Vec::new(),
            timeline: None,
            trace: PackTrace {
                query: QueryTrace {
                    text: req.query.clone(),
                    terms: content_terms(&req.query),
                    scope: req.scope.clone(),
                    source: req.source.clone(),
                    kinds: req.kinds.clone(),
                    agent: req.agent.clone(),
                    period: found.period.clone(),
                },
                lanes: found.lanes.clone(),
                candidates_before_filters: unfiltered.hits.len(),
                candidates_after_filters: found.hits.len(),
                hidden_by_filter: hidden,
                selection,
                rejected_by_gate: rejected,
                packed: 0,
                omitted: 0,
            },
        };
        // A counting question's answer comes first: the lanes get what
        // its text leaves of the budget.
        if let Some(mut summary) = self.count_summary(req)? {
            if summary.fit(max_chars) {
                pack.used_chars += summary.chars;
                pack.timeline = Some(summary);
            } else {
                pack.warnings.push(format!(
                    "the timeline count ({}) does not fit max_chars {max_chars}",
                    summary.count
                ));
            }
        }
        for (lane, h, why) in placed {
            let chars = h.text.chars().count();
            if pack.used_chars + chars > max_chars {
                pack.omitted.push(OmittedItem {
                    id: h.id.clone(),
                    citation: h.citation.clone(),
                    lane,
                    chars,
                    reason: format!(
                        "needs {chars} characters; {} of {max_chars} left",
                        max_chars - pack.used_chars
                    ),
                });
                continue;
            }
            pack.used_chars += chars;
            let item_conflicts = match lane {
                PackLane::Conflict => conflicts.get(&h.id).cloned().unwrap_or_default(),
                _ => Vec::new(),
            };
            let why = if item_conflicts.is_empty() {
                why
            } else {
                conflict_reason(&item_conflicts)
            };
            let item = ContextItem {
                citation: h.citation.clone(),
                source: h.source,
                id: h.id.clone(),
                kind: h.kind.clone(),
                content_sha256: h.content_sha256.clone(),
                locator: h.locator.clone(),
                text: h.text.clone(),
                chars,
                score: h.score,
                reason: format!("{}; {why}", recall_reason(h)),
                provenance: self.provenance_of(h)?,
                conflicts: item_conflicts,
            };
            match lane {
                PackLane::Must => pack.must.push(item),
                PackLane::Should => pack.should.push(item),
                PackLane::Context => pack.context.push(item),
                PackLane::Provisional => pack.provisional.push(item),
                PackLane::Conflict => pack.conflict.push(item),
            }
        }
        let packed: Vec<&ContextItem> = pack
            .must
            .iter()
            .chain(&pack.should)
            .chain(&pack.context)
            .chain(&pack.provisional)
            .chain(&pack.conflict)
            .collect();
        pack.trace.packed = packed.len();
        pack.trace.omitted = pack.omitted.len();
        if packed.is_empty() && pack.timeline.is_none() {
            // A pack that found nothing is still an answer: empty lanes,
            // what is missing, and how to retry. Only lanes that failed
            // outright, with nothing surviving, make it unavailable.
            let lanes_failed = !found.lanes.is_empty()
                && found.lanes.iter().all(|l| l.status == LaneStatus::Failed);
            pack.suggestions = self.retry_suggestions(&pack, &found);
            if lanes_failed {
                return Err(MemError::new(
                    ErrorCode::ContextUnavailable,
                    format!("every recall lane failed for {:?}", req.query),
                )
                .with_hint("retry shortly; `mem-host status` shows the index state")
                .with_details(json!({ "lanes": found.lanes, "warnings": found.warnings })));
            }
        }
        for q in &questions {
            pack.missing.push(MissingItem {
                term: q.text.clone(),
                reason: "an open question recorded in the workspace: a known gap, not an answer"
                    .into(),
                citation: Some(q.citation.clone()),
            });
        }
        // A term is answered when a packed item mentions it, or when it
        // names the kind, type or role of a packed item ("storage decision").
        let texts: Vec<String> = packed
            .iter()
            .map(|i| i.text.to_lowercase())
            .chain(pack.timeline.iter().map(|t| t.text.to_lowercase()))
            .collect();
        let labels: Vec<String> = packed
            .iter()
            .map(|i| {
                let role = facts
                    .get(&i.id)
                    .and_then(|f| f.role.as_deref())
                    .unwrap_or_default();
                format!("{} {role}", i.kind).to_lowercase()
            })
            .collect();
        for term in &pack.trace.query.terms {
            if !texts.iter().chain(&labels).any(|t| covers(t, term)) {
                pack.missing.push(MissingItem {
                    term: term.clone(),
                    reason: "no packed item mentions it; the workspace may not know this yet"
                        .into(),
                    citation: None,
                });
            }
        }
        Ok(pack)
    }

    /// What to try when a pack comes back empty.
    fn retry_suggestions(&self, pack: &ContextPack, found: &super::SearchResult) -> Vec<String> {
        let mut suggestions = Vec::new();
        if !pack.omitted.is_empty() {
            suggestions.push(format!(
                "raise max_chars: the smallest candidate needs {} characters",
                pack.omitted.iter().map(|o| o.chars).min().unwrap_or(0)
            ));
        }
        if !pack.trace.hidden_by_filter.is_empty() {
            suggestions.push(
                "widen the filters: matching items were hidden (see hidden_by_filter)".into(),
            );
        }
        if !pack.trace.rejected_by_gate.is_empty() {
            suggestions.push("lower min_confidence, or review the rejected items".into());
        }
        if found
            .lanes
            .iter()
            .any(|l| l.lane == mem_core::index::Lane::Semantic && l.status != LaneStatus::Ok)
        {
            suggestions.push(
                "install an embedding model (`mem-host model install`) to match by meaning".into(),
            );
        }
        suggestions.push("rephrase the query with words the memories would use".into());
        suggestions
    }

    fn provenance_of(&self, h: &SearchHit) -> MemResult<Provenance> {
        let (source_type, source_ref) = match h.source {
            SourceKind::Memory => {
                let m = load::<Memory>(self.store(), Table::Memories, &h.id)?;
                let p = m.map(|m| m.value.provenance).unwrap_or_default();
                (p.source_type, p.source_ref)
            }
            SourceKind::File => (Some("file".into()), Some(h.path.clone())),
        };
        Ok(Provenance {
            source_type,
            source_ref,
            agent_id: h.agent_id.clone(),
            event_at: h.event_at,
            created_at: h.created_at,
            path: h.path.clone(),
        })
    }
}
