//! Annotations: what processors suggest about a file (a description from
//! their `description` metadata entry, their tags) becomes pending
//! annotations beside the file, until a person accepts or rejects each.
//!
//! A plugin is not trusted with what it suggests: at most one description
//! of [`MAX_DESCRIPTION_CHARS`] (cut, control characters removed) and
//! [`MAX_TAG_ANNOTATIONS`] tags valid as `put`'s tags (the rest dropped);
//! what was cut or dropped is kept as notes the file's details show.
//! Re-processing merges: a suggestion already decided (or already a tag
//! of the file) is not suggested again, a pending one still suggested
//! keeps its id, a pending one no longer suggested goes.

use crate::Service;
use crate::audit::{Actor, AuditDraft};
use crate::records::{encode, load, push_event, transact};
use mem_core::hash::sha256_hex;
use mem_core::id::{self, new_id};
use mem_core::model::{
    Annotation, AnnotationDecision, AnnotationKind, AnnotationStatus, FileAnnotations, FileRecord,
    MAX_DESCRIPTION_CHARS, MAX_DESCRIPTIONS, MAX_KEPT_ANNOTATIONS, MAX_TAG_ANNOTATION_CHARS,
    MAX_TAG_ANNOTATIONS,
};
use mem_core::plugin::ProcessedFile;
use mem_core::store::{Batch, Durability, Table};
use mem_core::time::now;
use mem_core::{ErrorCode, MemError, MemResult};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// The processor metadata entry whose value is suggested as the file's
/// description (a convention, like `index.partial`; no WIT change).
pub const DESCRIPTION_KEY: &str = "description";

/// Longest reason kept with a decision (characters).
pub const MAX_REASON_CHARS: usize = 2_000;

/// What the processors of one run suggest, checked and bounded.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Suggestions {
    /// `(kind, value, producer)` in the order suggested.
    items: Vec<(AnnotationKind, String, String)>,
    notes: Vec<String>,
}

impl Suggestions {
    /// Keeps and logs what was cut or dropped.
    fn note(&mut self, text: String) {
        tracing::warn!("{text}");
        self.notes.push(text);
    }

    fn count(&self, kind: AnnotationKind) -> usize {
        self.items.iter().filter(|(k, _, _)| *k == kind).count()
    }

    fn has(&self, kind: AnnotationKind, value: &str) -> bool {
        self.items.iter().any(|(k, v, _)| *k == kind && v == value)
    }

    /// Adds what `producer` suggested in `p`.
    pub(crate) fn add(&mut self, producer: &str, p: &ProcessedFile) {
        if let Some(raw) = p.metadata.get(DESCRIPTION_KEY) {
            self.add_description(producer, raw);
        }
        let (mut invalid, mut over) = (0usize, 0usize);
        for raw in &p.tags {
            let t = raw.trim();
            if !crate::files::tag_ok(t) || t.chars().count() > MAX_TAG_ANNOTATION_CHARS {
                invalid += 1;
            } else if self.has(AnnotationKind::Tag, t) {
            } else if self.count(AnnotationKind::Tag) >= MAX_TAG_ANNOTATIONS {
                over += 1;
            } else {
                self.items
                    .push((AnnotationKind::Tag, t.to_string(), producer.to_string()));
            }
        }
        if invalid > 0 {
            self.note(format!(
                "{producer}: {invalid} suggested tag(s) dropped: a tag is 1-{MAX_TAG_ANNOTATION_CHARS} characters without spaces, commas, control or invisible characters"
            ));
        }
        if over > 0 {
            self.note(format!(
                "{producer}: {over} suggested tag(s) dropped: a file is suggested at most {MAX_TAG_ANNOTATIONS} tags"
            ));
        }
    }

    fn add_description(&mut self, producer: &str, raw: &str) {
        let cleaned: String = raw
            .chars()
            .filter(|c| {
                (!c.is_control() || *c == '\n' || *c == '\t') && !mem_core::path::is_invisible(*c)
            })
            .collect();
        if cleaned.len() != raw.len() {
            self.note(format!(
                "{producer}: control or invisible characters removed from the suggested description"
            ));
        }
        let text = cleaned.trim();
        if text.is_empty() {
            return;
        }
        if self.count(AnnotationKind::Description) >= MAX_DESCRIPTIONS {
            self.note(format!(
                "{producer}: suggested description dropped: a file is suggested at most {MAX_DESCRIPTIONS}"
            ));
            return;
        }
        let value = match text.char_indices().nth(MAX_DESCRIPTION_CHARS) {
            Some((cut, _)) => {
                self.note(format!(
                    "{producer}: suggested description cut to {MAX_DESCRIPTION_CHARS} characters"
                ));
                text[..cut].trim_end().to_string()
            }
            None => text.to_string(),
        };
        self.items
            .push((AnnotationKind::Description, value, producer.to_string()));
    }
}

/// The annotations of `file` after a processing run that suggested `s`.
pub(crate) fn merge(
    existing: Option<FileAnnotations>,
    file: &FileRecord,
    s: Suggestions,
) -> FileAnnotations {
    let existing = existing.unwrap_or_default();
    let mut items: Vec<Annotation> = Vec::new();
    for a in existing.items {
        let keep = a.status != AnnotationStatus::Pending || s.has(a.kind, &a.value);
        if keep {
            items.push(a);
        }
    }
    let at = now();
    for (kind, value, producer) in s.items {
        let known = items.iter().any(|a| a.kind == kind && a.value == value);
        let already = match kind {
            AnnotationKind::Tag => file.tags.contains(&value),
            AnnotationKind::Description => file.description.as_deref() == Some(value.as_str()),
        };
        if known || already {
            continue;
        }
        items.push(Annotation {
            id: new_id(id::ANNOTATION),
            kind,
            value,
            producer,
            status: AnnotationStatus::Pending,
            created_at: at,
            decided_at: None,
            decided_by: None,
            reason: None,
        });
    }
    // Bounded: the oldest decided annotations go first.
    while items.len() > MAX_KEPT_ANNOTATIONS {
        match items
            .iter()
            .position(|a| a.status != AnnotationStatus::Pending)
        {
            Some(i) => {
                items.remove(i);
            }
            None => break,
        }
    }
    FileAnnotations {
        items,
        notes: s.notes,
    }
}

/// What `files.annotation.decide` answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AnnotationDecided {
    /// The file as it is now (its tags, description and state_version).
    pub file: FileRecord,
    pub annotation: Annotation,
    /// True when the annotation already had this decision: nothing changed.
    #[serde(default)]
    pub replayed: bool,
}

fn decision_conflict(a: &Annotation, decision: AnnotationDecision) -> MemError {
    MemError::new(
        ErrorCode::AnnotationDecisionConflict,
        format!(
            "annotation {} was already {}; it cannot be {}ed",
            a.id,
            a.status.as_str(),
            decision.as_str()
        ),
    )
    .with_details(json!({
        "annotation_id": a.id,
        "status": a.status,
        "decided_at": a.decided_at,
        "decided_by": a.decided_by,
    }))
}

fn version_conflict(file: &FileRecord, expected: u64) -> MemError {
    MemError::new(
        ErrorCode::AnnotationVersionConflict,
        format!(
            "file {} is at state_version {}, not {expected}",
            file.id, file.state_version
        ),
    )
    .with_details(json!({
        "file_id": file.id,
        "expected_version": expected,
        "current_version": file.state_version,
    }))
}

/// A decision's reason as kept: control characters (but newlines and
/// tabs) removed, trimmed; `None` when nothing is left. Its length is
/// bounded by the request's schema (at most [`MAX_REASON_CHARS`]).
fn checked_reason(reason: Option<&str>) -> Option<String> {
    let r: String = reason?
        .chars()
        .filter(|c| !c.is_control() || *c == '\n' || *c == '\t')
        .take(MAX_REASON_CHARS)
        .collect();
    Some(r.trim().to_string()).filter(|r| !r.is_empty())
}

impl Service {
    /// A file's annotations (none until a processor suggested something).
    pub(crate) fn annotations(&self, file_id: &str) -> MemResult<FileAnnotations> {
        Ok(
            load::<FileAnnotations>(self.store(), Table::Annotations, file_id)?
                .map(|s| s.value)
                .unwrap_or_default(),
        )
    }

    /// Accepts or rejects a pending annotation of file `file_id` (already
    /// checked visible and writable). The same decision again answers
    /// the annotation as decided (`replayed`); the opposite one is
    /// `annotation_decision_conflict`; a pending annotation decided on a
    /// stale `expected_version` is `annotation_version_conflict`.
    pub(crate) fn decide_annotation(
        &self,
        file_id: &str,
        annotation_id: &str,
        decision: AnnotationDecision,
        expected_version: u64,
        reason: Option<&str>,
        actor: &Actor,
    ) -> MemResult<AnnotationDecided> {
        let reason = checked_reason(reason);
        let out = transact(self.store(), Durability::Immediate, || {
            let stored = load::<FileRecord>(self.store(), Table::Files, file_id)?
                .ok_or_else(|| MemError::not_found("file", file_id))?;
            let stored_ann = load::<FileAnnotations>(self.store(), Table::Annotations, file_id)?;
            let mut anns = stored_ann
                .as_ref()
                .map(|s| s.value.clone())
                .unwrap_or_default();
            let Some(pos) = anns.items.iter().position(|a| a.id == annotation_id) else {
                return Err(MemError::not_found("annotation", annotation_id)
                    .with_hint("list the file's annotations with `info FILE`"));
            };
            let current = &anns.items[pos];
            if current.status == decision.status() {
                let out = AnnotationDecided {
                    file: stored.value.clone(),
                    annotation: current.clone(),
                    replayed: true,
                };
                return Ok((Batch::new(), out));
            }
            if current.status != AnnotationStatus::Pending {
                return Err(decision_conflict(current, decision));
            }
            if stored.value.state_version != expected_version {
                return Err(version_conflict(&stored.value, expected_version));
            }
            let mut file = stored.value.clone();
            let before = sha256_hex(&stored.raw);
            let a = &mut anns.items[pos];
            a.status = decision.status();
            a.decided_at = Some(now());
            a.decided_by = Some(actor.label());
            a.reason = reason.clone();
            if decision == AnnotationDecision::Accept {
                match a.kind {
                    AnnotationKind::Tag => {
                        let mut tags = file.tags.clone();
                        tags.push(a.value.clone());
                        file.tags = crate::files::validate_tags(&tags)?;
                    }
                    AnnotationKind::Description => file.description = Some(a.value.clone()),
                }
            }
            let annotation = a.clone();
            file.state_version += 1;
            file.updated_at = now();
            let raw = encode(&file)?;
            let mut batch = Batch::new();
            batch.expect(Table::Files, file_id, Some(stored.raw.clone()));
            batch.expect(
                Table::Annotations,
                file_id,
                stored_ann.as_ref().map(|s| s.raw.clone()),
            );
            batch.put(Table::Files, file_id, raw.clone());
            batch.put(Table::Annotations, file_id, encode(&anns)?);
            push_event(
                &mut batch,
                "file.annotation_decided",
                file_id,
                Some(file.state_version),
                json!({
                    "annotation_id": annotation.id,
                    "kind": annotation.kind,
                    "decision": decision,
                }),
            )?;
            let verdict = annotation.status.as_str().to_string();
            self.seal_audit(
                &mut batch,
                vec![AuditDraft {
                    actor: actor.clone(),
                    action: format!("annotation-{}", decision.as_str()),
                    target: file_id.to_string(),
                    before_sha256: Some(before),
                    after_sha256: Some(sha256_hex(&raw)),
                    verdict,
                    verdict_source: actor.label(),
                    reasons: std::iter::once(format!(
                        "annotation {} ({} {:?}, by {})",
                        annotation.id,
                        annotation.kind.as_str(),
                        annotation.value.chars().take(80).collect::<String>(),
                        annotation.producer
                    ))
                    .chain(annotation.reason.iter().map(|r| format!("reason: {r}")))
                    .collect(),
                }],
            )?;
            Ok((
                batch,
                AnnotationDecided {
                    file,
                    annotation,
                    replayed: false,
                },
            ))
        })?;
        if !out.replayed {
            self.after_write();
        }
        Ok(out)
    }
}

#[cfg(test)]
#[path = "annotations_tests.rs"]
mod tests;
