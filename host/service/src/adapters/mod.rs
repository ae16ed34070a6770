//! Import and export through `adapter` plugins: an external document
//! (CLAUDE.md, AGENTS.md, ...) becomes memories, each citing the lines it
//! came from; memories of a scope become such a document again.

use crate::Service;
use crate::audit::Actor;
use crate::memories::{ListMemories, RememberOutcome};
use crate::requests::RememberRequest;
use crate::types::TypeRegistry;
use mem_core::hash::sha256_hex;
use mem_core::model::{Memory, Relation};
use mem_core::plugin::AdapterEntry;
use mem_core::{ErrorCode, MemError, MemResult};
use serde_json::json;

mod reimport;
use reimport::Plan;

/// Section trail attribute of imported memories (`Setup > Tools`).
const SECTION_ATTR: &str = "section";
const SECTION_SEP: &str = " > ";
/// The entry's tags, comma-separated (memories have attributes, not tags).
const TAGS_ATTR: &str = "tags";

/// The kind an imported entry gets: its own when that kind plays the role
/// the format assigned (or no role was assigned), else the kind the role
/// table names for the role, so an AGENTS.md "never ..." stays a
/// constraint whatever kind the adapter guessed.
fn kind_for(registry: &TypeRegistry, kind: String, role: Option<&str>) -> String {
    match role {
        Some(role) if registry.role_of(&kind) != Some(role) => registry
            .kind_with_role(role)
            .map(str::to_string)
            .unwrap_or(kind),
        _ => kind,
    }
}

/// Source type prefix of imported memories (`import:obsidian`).
const IMPORT_SOURCE: &str = "import:";
/// Most entries one document may hold.
const MAX_ENTRIES: usize = 10_000;
/// A note's name and the notes it links to (one per line), as adapters of
/// linked notes (Obsidian) set them.
const NOTE_ATTR: &str = "note";
const LINKS_ATTR: &str = "links";
/// Relation kinds of a wiki link, on the later-stored note of the two.
const LINKS_TO: &str = "links_to";
const LINKED_FROM: &str = "linked_from";

fn link(kind: &str, target: &str) -> Relation {
    Relation {
        kind: kind.into(),
        target: target.into(),
        score: None,
        difference: None,
    }
}

/// A stored note: its id, lower-cased name and link targets.
type StoredNote = (String, String, Vec<String>);

/// The relations of the note `attributes` describe to the `stored` notes.
fn links_of(
    attributes: &std::collections::BTreeMap<String, String>,
    stored: &[StoredNote],
) -> Vec<Relation> {
    let Some(note) = attributes.get(NOTE_ATTR).map(|n| n.to_lowercase()) else {
        return Vec::new();
    };
    let targets = link_targets(attributes);
    let mut out = Vec::new();
    for (id, other, their_links) in stored {
        if *other == note {
            continue;
        }
        if targets.contains(other) {
            out.push(link(LINKS_TO, id));
        }
        if their_links.contains(&note) {
            out.push(link(LINKED_FROM, id));
        }
    }
    out
}

fn link_targets(attributes: &std::collections::BTreeMap<String, String>) -> Vec<String> {
    attributes
        .get(LINKS_ATTR)
        .map(|l| {
            l.lines()
                .map(|t| t.trim().to_lowercase())
                .filter(|t| !t.is_empty())
                .collect()
        })
        .unwrap_or_default()
}

/// The `remember` of entry `i` of the document `name`: its kind by role,
/// its section and tags as attributes, provenance citing the document and
/// lines, and an idempotency key from the document's hash, the entry's
/// place and its content (a replay of the same document finds the same
/// keys; an edited document new ones).
fn request_of(
    e: AdapterEntry,
    i: usize,
    registry: &TypeRegistry,
    adapter: &str,
    name: &str,
    scope: &str,
    doc_sha: &str,
) -> RememberRequest {
    let kind = kind_for(registry, e.kind, e.role.as_deref());
    let locator = e.lines.map(|l| l.locator());
    let mut attributes = e.attributes;
    if !e.section.is_empty() {
        attributes.insert(SECTION_ATTR.into(), e.section.join(SECTION_SEP));
    }
    if !e.tags.is_empty() {
        attributes.insert(TAGS_ATTR.into(), e.tags.join(","));
    }
    let at = locator.clone().unwrap_or_else(|| format!("#{i}"));
    let content_sha = sha256_hex(e.content.as_bytes());
    RememberRequest {
        content: e.content,
        kind,
        path: scope.to_string(),
        idempotency_key: format!("import:{}:{at}:{}", &doc_sha[..32], &content_sha[..16]),
        source_type: Some(format!("{IMPORT_SOURCE}{adapter}")),
        source_ref: Some(match locator {
            Some(l) => format!("{name}#{l}"),
            None => name.to_string(),
        }),
        attributes,
        ..Default::default()
    }
}

impl Service {
    fn adapter_host(&self) -> MemResult<&std::sync::Arc<dyn mem_core::plugin::PluginHost>> {
        self.plugins().ok_or_else(|| {
            MemError::new(ErrorCode::PluginFailed, "no plugin runtime is attached")
                .with_hint("open the workspace with its plugins (mem-host does by default)")
        })
    }

    /// Parses `bytes` (the document `name`) with `adapter` and remembers
    /// each entry under `scope`, through the write gate (route `import`).
    /// Entries are checked before any is stored: one the ledger would
    /// refuse (empty, too large, unknown kind) fails the whole document.
    /// Idempotent: re-importing the same document replays instead of
    /// duplicating. One result per entry, in order.
    pub(crate) fn import_document(
        &self,
        adapter: &str,
        name: &str,
        bytes: &[u8],
        scope: &str,
        actor: &Actor,
    ) -> MemResult<Vec<MemResult<RememberOutcome>>> {
        let entries = self.adapter_host()?.import(adapter, name, bytes)?;
        if entries.len() > MAX_ENTRIES {
            return Err(MemError::new(
                ErrorCode::PayloadTooLarge,
                format!(
                    "{name} holds {} entries; an import takes at most {MAX_ENTRIES}",
                    entries.len()
                ),
            )
            .with_hint("split the document and import the parts")
            .with_details(json!({ "entries": entries.len(), "limit": MAX_ENTRIES })));
        }
        let doc_sha = sha256_hex(bytes);
        let requests: Vec<RememberRequest> = {
            let registry = &self.config().types.registry;
            entries
                .into_iter()
                .enumerate()
                .map(|(i, e)| request_of(e, i, registry, adapter, name, scope, &doc_sha))
                .collect()
        };
        let refused: Vec<serde_json::Value> = requests
            .iter()
            .enumerate()
            .filter_map(|(i, r)| {
                self.prepare_memory(&r.draft()).err().map(|e| {
                    json!({ "entry": i + 1, "source_ref": r.source_ref, "code": e.code.as_str(), "message": e.message })
                })
            })
            .collect();
        if !refused.is_empty() {
            return Err(MemError::new(
                ErrorCode::Unprocessable,
                format!(
                    "{} of the {} entries of {name} cannot be stored; nothing was imported",
                    refused.len(),
                    requests.len()
                ),
            )
            .with_hint(
                "fix the entries named in details (or the adapter's settings) and import again",
            )
            .with_details(json!({ "document": name, "refused": refused })));
        }
        let links = self.note_links(scope, &requests)?;
        let plans = self.plan_reimport(adapter, name, scope, &requests)?;
        let fresh: Vec<usize> = (0..requests.len())
            .filter(|i| matches!(plans[*i], Plan::Remember))
            .collect();
        let mut remembered = self
            .remember_related(
                fresh
                    .iter()
                    .map(|&i| (&requests[i], actor, links[i].as_slice())),
                crate::gate::WriteRoute::Import,
            )
            .into_iter();
        let results = plans
            .into_iter()
            .zip(&requests)
            .map(|(plan, r)| match plan {
                Plan::Remember => remembered
                    .next()
                    .unwrap_or_else(|| Err(MemError::internal("an import entry lost its result"))),
                Plan::Unchanged(m) => Ok(RememberOutcome {
                    replayed: true,
                    memory: Some(*m),
                    proposal: None,
                }),
                Plan::Replace(target) => self.replace_imported(r, target, actor),
            })
            .collect();
        self.catch_up_index();
        Ok(results)
    }

    /// The active memories under `scope`, newest first.
    fn scope_memories(&self, scope: &str) -> MemResult<Vec<Memory>> {
        let mut out = Vec::new();
        let mut cursor = None;
        loop {
            let page = self.list_memories(&ListMemories {
                path: Some(scope.to_string()),
                limit: Some(crate::MAX_LIST_LIMIT),
                cursor: cursor.clone(),
                ..Default::default()
            })?;
            out.extend(page.items);
            match page.next_cursor {
                Some(c) => cursor = Some(c),
                None => return Ok(out),
            }
        }
    }

    /// The relations each imported note gets from wiki links (`note` and
    /// `links` attributes): `links_to` each stored note it links to,
    /// `linked_from` each stored note linking to it. A link is recorded on
    /// whichever of the two notes is stored later, so the order notes are
    /// imported in does not matter; a note the gate queues gets its links
    /// when it is approved ([`Service::approved_note_links`]).
    fn note_links(
        &self,
        scope: &str,
        requests: &[RememberRequest],
    ) -> MemResult<Vec<Vec<Relation>>> {
        if !requests
            .iter()
            .any(|r| r.attributes.contains_key(NOTE_ATTR))
        {
            return Ok(vec![Vec::new(); requests.len()]);
        }
        let stored = self.stored_notes(scope)?;
        Ok(requests
            .iter()
            .map(|r| links_of(&r.attributes, &stored))
            .collect())
    }

    /// The wiki-link relations of an imported note being stored now, on
    /// approval of the proposal that queued it: against the notes stored
    /// under its path by then. None for a memory that is not an imported
    /// note.
    pub(crate) fn approved_note_links(&self, m: &Memory) -> MemResult<Vec<Relation>> {
        let imported = m
            .provenance
            .source_type
            .as_deref()
            .is_some_and(|t| t.starts_with(IMPORT_SOURCE));
        if !imported || !m.attributes.contains_key(NOTE_ATTR) {
            return Ok(Vec::new());
        }
        let stored = self.stored_notes(m.path.as_str())?;
        Ok(links_of(&m.attributes, &stored))
    }

    /// (id, lower-cased note name, link targets) of the active notes under `scope`.
    fn stored_notes(&self, scope: &str) -> MemResult<Vec<StoredNote>> {
        Ok(self
            .scope_memories(scope)?
            .into_iter()
            .filter_map(|m| {
                let note = m.attributes.get(NOTE_ATTR)?.to_lowercase();
                Some((m.id, note, link_targets(&m.attributes)))
            })
            .collect())
    }

    /// The active memories under `scope` as adapter entries, oldest first.
    fn scope_entries(&self, scope: &str) -> MemResult<Vec<(String, AdapterEntry)>> {
        let mut entries = Vec::new();
        for m in self.scope_memories(scope)? {
            let Some(content) = m.content else { continue };
            let mut attributes = m.attributes;
            let section = attributes
                .remove(SECTION_ATTR)
                .map(|s| s.split(SECTION_SEP).map(str::to_string).collect())
                .unwrap_or_default();
            let tags = attributes
                .remove(TAGS_ATTR)
                .map(|s| s.split(',').map(str::to_string).collect())
                .unwrap_or_default();
            let role = self.role_of(&m.kind);
            let entry = AdapterEntry {
                kind: m.kind,
                content,
                section,
                role,
                lines: None,
                tags,
                attributes,
            };
            entries.push((m.id, entry));
        }
        entries.reverse();
        Ok(entries)
    }

    /// Renders the active memories under `scope` (oldest first) as the
    /// document `name` with `adapter`.
    pub(crate) fn export_document(
        &self,
        adapter: &str,
        name: &str,
        scope: &str,
    ) -> MemResult<Vec<u8>> {
        let host = self.adapter_host()?;
        let entries: Vec<AdapterEntry> = self
            .scope_entries(scope)?
            .into_iter()
            .map(|(_, e)| e)
            .collect();
        host.export(adapter, name, &entries)
    }

    /// Renders the memories under `scope` as one document per note (a
    /// folder of notes: an Obsidian vault): `NOTE.md` for the memories of
    /// each `note` attribute, `ID.md` for a memory without one. Sorted by
    /// name.
    pub(crate) fn export_notes(
        &self,
        adapter: &str,
        scope: &str,
    ) -> MemResult<Vec<(String, Vec<u8>)>> {
        let host = self.adapter_host()?;
        let mut notes: std::collections::BTreeMap<String, Vec<AdapterEntry>> = Default::default();
        for (id, mut e) in self.scope_entries(scope)? {
            let note = match e.attributes.get(NOTE_ATTR) {
                Some(n) if safe_note_name(n) => n.clone(),
                _ => {
                    e.attributes.insert(NOTE_ATTR.into(), id.clone());
                    id
                }
            };
            notes.entry(format!("{note}.md")).or_default().push(e);
        }
        notes
            .into_iter()
            .map(|(name, entries)| Ok((name.clone(), host.export(adapter, &name, &entries)?)))
            .collect()
    }
}

/// A note name that is safe as a file name: no separators, no `..`, no
/// control characters, not hidden.
fn safe_note_name(n: &str) -> bool {
    !n.is_empty()
        && n.chars().count() <= 200
        && !n.starts_with('.')
        && !n
            .chars()
            .any(|c| c.is_control() || matches!(c, '/' | '\\' | ':'))
}
