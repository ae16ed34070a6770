//! The read gate (Mnemosyne ReadGate): what keeps a recalled item out of
//! a context pack. The host's rules run first, then each read policy
//! plugin of `[plugins] read_policies`; a failing policy fails closed.

use super::SearchHit;
use super::context::{ContextRequest, Rejected, content_terms, covers};
use crate::Service;
use crate::records::load;
use mem_core::MemResult;
use mem_core::index::SourceKind;
use mem_core::model::Memory;
use mem_core::plugin::{Decision, ReadItem, ReadRequest};
use mem_core::store::Table;
use mem_core::time::now;
use std::collections::BTreeMap;

/// A `task_state` older than this is stale (read gate).
const TASK_STATE_STALE_DAYS: i64 = 30;

/// What the lanes need to know of a hit beyond the recall record.
#[derive(Debug, Clone, Default)]
pub(super) struct Facts {
    pub role: Option<String>,
    pub tentative: bool,
    pub attributes: Vec<(String, String)>,
    pub source: Option<String>,
}

/// What the read gate let through, and what it did not.
#[derive(Default)]
pub(super) struct ReadGateOutcome<'h> {
    pub admitted: Vec<&'h SearchHit>,
    pub rejected: Vec<Rejected>,
    pub warnings: Vec<String>,
    pub partial: bool,
}

/// The record a read policy judges.
fn read_item(h: &SearchHit, f: &Facts) -> ReadItem {
    ReadItem {
        id: h.citation.clone(),
        kind: h.kind.clone(),
        role: f.role.clone(),
        path: h.path.clone(),
        lifecycle: h.lifecycle.clone(),
        confidence: h.confidence,
        created_at_ms: h.created_at.timestamp_millis(),
        event_at_ms: h.event_at.map(|t| t.timestamp_millis()),
        tags: h.tags.clone(),
        source: f.source.clone(),
        attributes: f.attributes.clone(),
        pinned: h.pinned,
    }
}

/// The subject a `symbol` item defines: its `name`/`subject` attribute,
/// else its first line.
fn subject_of<'a>(h: &'a SearchHit, f: &'a Facts) -> &'a str {
    f.attributes
        .iter()
        .find(|(k, _)| k == "name" || k == "subject")
        .map(|(_, v)| v.as_str())
        .unwrap_or_else(|| h.text.lines().next().unwrap_or_default())
}

/// Whether the query names a symbol's subject: every content word of the
/// subject is among the query's words.
fn names_subject(query_terms: &[String], subject: &str) -> bool {
    let words = content_terms(subject);
    !words.is_empty()
        && words
            .iter()
            .all(|w| query_terms.iter().any(|t| covers(w, t) || covers(t, w)))
}

impl Service {
    /// The host's read-gate rules: the one that keeps `h` out, if any.
    fn host_read_rule(
        &self,
        h: &SearchHit,
        f: &Facts,
        terms: &[String],
        min_confidence: f64,
    ) -> Option<(&'static str, String)> {
        if h.source == SourceKind::Memory && h.confidence < min_confidence {
            return Some((
                "low_confidence",
                format!("confidence {:.2} is below {min_confidence}", h.confidence),
            ));
        }
        if h.kind == "task_state" {
            let age = now()
                .signed_duration_since(h.event_at.unwrap_or(h.created_at))
                .num_days();
            if age > TASK_STATE_STALE_DAYS {
                return Some((
                    "stale",
                    format!("task state is {age} days old (limit {TASK_STATE_STALE_DAYS})"),
                ));
            }
        }
        if f.role.as_deref() == Some("symbol") && !names_subject(terms, subject_of(h, f)) {
            return Some((
                "no_task_match",
                format!(
                    "a symbol is served only when the query names its subject {:?}",
                    subject_of(h, f)
                ),
            ));
        }
        None
    }

    /// Lanes' and policies' view of each hit (one store read per memory).
    pub(super) fn facts_of(&self, hits: &[SearchHit]) -> MemResult<BTreeMap<String, Facts>> {
        let config = self.config();
        let mut out = BTreeMap::new();
        for h in hits {
            let facts = match h.source {
                SourceKind::Memory => match load::<Memory>(self.store(), Table::Memories, &h.id)? {
                    Some(m) => {
                        let m = m.value;
                        let p = &m.provenance;
                        Facts {
                            role: config.types.registry.role_of(&m.kind).map(str::to_string),
                            tentative: m.governance.as_ref().is_some_and(|g| g.tentative),
                            attributes: m.attributes.into_iter().collect(),
                            source: p.source_type.as_ref().map(|t| match &p.source_ref {
                                Some(r) => format!("{t}:{r}"),
                                None => t.clone(),
                            }),
                        }
                    }
                    None => Facts::default(),
                },
                SourceKind::File => Facts {
                    source: Some(format!("file:{}", h.path)),
                    ..Facts::default()
                },
            };
            out.insert(h.id.clone(), facts);
        }
        Ok(out)
    }

    /// Read gate (Mnemosyne ReadGate): the host's rules, then each of
    /// `[plugins] read_policies` in order. A policy that fails (trap,
    /// deadline, error) rejects the item it was asked about and every item
    /// it was still to judge: an incomplete check never admits.
    pub(super) fn read_gate<'h>(
        &self,
        selected: Vec<&'h SearchHit>,
        facts: &BTreeMap<String, Facts>,
        req: &ContextRequest,
        min_confidence: f64,
    ) -> ReadGateOutcome<'h> {
        let terms = content_terms(&req.query);
        let mut out = ReadGateOutcome::default();
        let none = Facts::default();
        let mut admitted: Vec<&SearchHit> = Vec::new();
        for h in selected {
            let f = facts.get(&h.id).unwrap_or(&none);
            match self.host_read_rule(h, f, &terms, min_confidence) {
                Some((rule, detail)) => out.rejected.push(Rejected {
                    id: h.id.clone(),
                    citation: h.citation.clone(),
                    rule: rule.into(),
                    policy: None,
                    detail,
                }),
                None => admitted.push(h),
            }
        }
        let policies = self
            .plugins()
            .map(|host| (host, host.config().read_policies))
            .filter(|(_, p)| !p.is_empty());
        let Some((host, policies)) = policies else {
            out.admitted = admitted;
            return out;
        };
        let request = ReadRequest {
            agent: req.agent.clone(),
            path: req.scope.clone(),
            query: req.query.clone(),
            now_ms: now().timestamp_millis(),
        };
        for policy in &policies {
            let mut failed: Option<String> = None;
            let mut kept = Vec::with_capacity(admitted.len());
            for h in admitted {
                let f = facts.get(&h.id).unwrap_or(&none);
                let reject = |rule: &str, detail: String| Rejected {
                    id: h.id.clone(),
                    citation: h.citation.clone(),
                    rule: rule.into(),
                    policy: Some(policy.clone()),
                    detail,
                };
                if let Some(why) = &failed {
                    out.rejected.push(reject(
                        "policy_failed",
                        format!("not checked: the policy failed earlier in this read ({why})"),
                    ));
                    continue;
                }
                match host.check_read(policy, &read_item(h, f), &request) {
                    Ok(v) if v.decision == Decision::Allow => kept.push(h),
                    Ok(v) => {
                        let (rule, detail) = v
                            .reasons
                            .first()
                            .map(|r| (r.code.clone(), r.message.clone()))
                            .unwrap_or_else(|| {
                                ("policy_denied".into(), "denied without a reason".into())
                            });
                        out.rejected.push(reject(&rule, detail));
                    }
                    Err(e) => {
                        out.rejected.push(reject(
                            "policy_failed",
                            format!("the policy failed: {}", e.message),
                        ));
                        out.warnings.push(format!(
                            "read policy '{policy}' failed ({}); the items it was to check were withheld",
                            e.message
                        ));
                        failed = Some(e.message);
                    }
                }
            }
            admitted = kept;
        }
        out.partial = !out.warnings.is_empty();
        out.admitted = admitted;
        out
    }
}
