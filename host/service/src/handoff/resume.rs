//! Resuming a task: the handoff, every reference it makes resolved as the
//! resuming caller may see it, and a context pack for what comes next.
//!
//! A reference the caller may not see reads exactly like one that does not
//! exist (`not_found`), so a resume leaks nothing across a token's paths.
//! Only a forgotten memory the caller could see says `forgotten`.

use super::doc::{Reference, Target, parse_reference};
use super::{Checkpoint, Task};
use crate::access::Scope;
use crate::door::{Caller, Operation};
use crate::excerpts::lines_of;
use crate::recall::{ContextPack, ContextRequest};
use mem_core::model::Lifecycle;
use mem_core::{ErrorCode, MemResult, VPath};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Longest excerpt of a referenced memory or file.
pub const MAX_EXCERPT_CHARS: usize = 600;
/// Most bytes of a file read to find a referenced line range.
const MAX_LINE_SCAN_BYTES: u64 = 4 << 20;

/// A reference the caller may see, with what it holds now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ResolvedReference {
    pub uri: String,
    /// `memory` or `file`.
    pub kind: String,
    pub id: String,
    pub path: VPath,
    /// SHA-256 of the memory's content or the file's bytes, now.
    pub content_sha256: String,
    /// The start of the memory's content or of the referenced lines (a file
    /// that is not text has none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excerpt: Option<String>,
    /// The excerpt stops before the end of what was referenced.
    pub truncated: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifecycle: Option<Lifecycle>,
    /// The referenced line range, 1-based and inclusive (of `page`, when
    /// the reference names a page of a paged document).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lines: Option<[usize; 2]>,
    /// The referenced page of a paged document (a PDF), from 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page: Option<u32>,
    /// The handoff's note on it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// A reference that did not resolve, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MissingReference {
    pub uri: String,
    /// `forgotten` (the memory's content was purged) or `not_found` (absent,
    /// or outside what the caller may see: the two read alike).
    pub reason: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// What `task.resume` answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ResumeResult {
    pub task: Task,
    /// The head checkpoint, or the one asked for.
    pub checkpoint: Checkpoint,
    /// True when `checkpoint` is the task's head.
    pub is_head: bool,
    pub references: Vec<ResolvedReference>,
    pub missing: Vec<MissingReference>,
    /// External URLs, listed as written (mem-host does not fetch them).
    pub external: Vec<Reference>,
    /// A context pack for the focus (or, without one, the goal) within the
    /// task's scope; absent when the caller may not search, or recall failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<ContextPack>,
    /// Why there is no context pack.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_note: Option<String>,
}

/// The first `max` characters of `text`, and whether that cut anything.
fn excerpt(text: &str, max: usize) -> (String, bool) {
    match text.char_indices().nth(max) {
        Some((at, _)) => (text[..at].to_string(), true),
        None => (text.to_string(), false),
    }
}

enum Resolved {
    Found(ResolvedReference),
    Missing(&'static str),
}

impl Caller<'_> {
    /// `reference` as this caller sees it.
    fn resolve(&self, reference: &Reference) -> MemResult<Option<Resolved>> {
        let hidden = |e: mem_core::MemError| {
            if e.code == ErrorCode::NotFound {
                Ok(Some(Resolved::Missing("not_found")))
            } else {
                Err(e)
            }
        };
        let found = |kind: &str, id: &str, path: VPath, sha: String| ResolvedReference {
            uri: reference.uri.clone(),
            kind: kind.into(),
            id: id.into(),
            path,
            content_sha256: sha,
            excerpt: None,
            truncated: false,
            lifecycle: None,
            lines: None,
            page: None,
            note: reference.note.clone(),
        };
        match parse_reference(&reference.uri) {
            None | Some(Target::External(_)) => Ok(None),
            Some(Target::Memory(id)) => match self.memory_for(Scope::Read, id) {
                Err(e) => hidden(e),
                Ok(m) if m.lifecycle == Lifecycle::Forgotten => {
                    Ok(Some(Resolved::Missing("forgotten")))
                }
                Ok(m) => {
                    let mut r = found("memory", id, m.path.clone(), m.content_sha256.clone());
                    if let Some(content) = &m.content {
                        let (text, cut) = excerpt(content, MAX_EXCERPT_CHARS);
                        r.excerpt = Some(text);
                        r.truncated = cut;
                    }
                    r.lifecycle = Some(m.lifecycle);
                    Ok(Some(Resolved::Found(r)))
                }
            },
            Some(Target::File { id, at }) => {
                let file = match self.visible_file(id) {
                    Err(e) => return hidden(e),
                    Ok(f) => f,
                };
                let mut r = found("file", id, file.path.clone(), file.sha256.clone());
                r.lines = at.map(|l| [l.lines.start as usize, l.lines.end as usize]);
                r.page = at.and_then(|l| l.page);
                // A page's lines are the processed page text's.
                if let Some(at) = at.filter(|l| l.page.is_some()) {
                    if let Some(body) = self.svc.page_lines(id, &at)? {
                        let (cut, truncated) = excerpt(&body, MAX_EXCERPT_CHARS);
                        r.excerpt = Some(cut);
                        r.truncated = truncated;
                    }
                    return Ok(Some(Resolved::Found(r)));
                }
                let limit = match at {
                    Some(_) => MAX_LINE_SCAN_BYTES,
                    None => (MAX_EXCERPT_CHARS as u64 + 1) * 4,
                };
                let (_, bytes) = self.svc.read_file(id, limit)?;
                let complete = bytes.len() as u64 == file.size;
                let text = match std::str::from_utf8(&bytes) {
                    Ok(t) => Some(t),
                    Err(e) if !complete && e.error_len().is_none() => {
                        std::str::from_utf8(&bytes[..e.valid_up_to()]).ok()
                    }
                    Err(_) => None,
                };
                if let Some(text) = text {
                    let (body, more) = match at {
                        Some(l) => {
                            let reached = text.lines().count() >= l.lines.end as usize || complete;
                            (lines_of(text, Some(&l)), !reached)
                        }
                        None => (text.to_string(), !complete),
                    };
                    let (cut, truncated) = excerpt(&body, MAX_EXCERPT_CHARS);
                    r.excerpt = Some(cut);
                    r.truncated = truncated || more;
                }
                Ok(Some(Resolved::Found(r)))
            }
        }
    }

    /// Resumes `task` at `checkpoint`: references resolved for this caller,
    /// and the context pack of the recall operation itself.
    pub(crate) fn resume(
        &self,
        task: Task,
        checkpoint: Checkpoint,
        focus: Option<String>,
        max_chars: Option<usize>,
    ) -> MemResult<ResumeResult> {
        let mut references = Vec::new();
        let mut missing = Vec::new();
        let mut external = Vec::new();
        for r in &checkpoint.handoff.references {
            match self.resolve(r)? {
                None => external.push(r.clone()),
                Some(Resolved::Found(found)) => references.push(found),
                Some(Resolved::Missing(reason)) => missing.push(MissingReference {
                    uri: r.uri.clone(),
                    reason: reason.into(),
                    note: r.note.clone(),
                }),
            }
        }
        let (context, context_note) = if self.access.has(Scope::Search) {
            let request = ContextRequest {
                query: focus.unwrap_or_else(|| checkpoint.handoff.goal.clone()),
                scope: Some(task.scope.as_str().to_string()),
                max_chars,
                ..Default::default()
            };
            match request.run(self) {
                Ok(pack) => (Some(pack), None),
                Err(e)
                    if matches!(
                        e.code,
                        ErrorCode::ContextUnavailable
                            | ErrorCode::ProviderUnavailable
                            | ErrorCode::PluginFailed
                    ) =>
                {
                    (None, Some(format!("{}: {}", e.code.as_str(), e.message)))
                }
                Err(e) => return Err(e),
            }
        } else {
            (
                None,
                Some("this token has no search scope, so no context pack was built".into()),
            )
        };
        Ok(ResumeResult {
            is_head: checkpoint.id == task.head_checkpoint_id,
            task,
            checkpoint,
            references,
            missing,
            external,
            context,
            context_note,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::excerpt;

    #[test]
    fn excerpts_cut_on_characters_and_say_so() {
        assert_eq!(excerpt("héllo", 2), ("hé".to_string(), true));
        assert_eq!(excerpt("hé", 2), ("hé".to_string(), false));
    }
}
