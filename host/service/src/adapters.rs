//! Import and export through `adapter` plugins: an external document
//! (CLAUDE.md, AGENTS.md, ...) becomes memories, each citing the lines it
//! came from; memories of a scope become such a document again.

use crate::Service;
use crate::audit::Actor;
use crate::memories::{ListMemories, RememberOutcome};
use crate::requests::RememberRequest;
use mem_core::hash::sha256_hex;
use mem_core::plugin::AdapterEntry;
use mem_core::{ErrorCode, MemError, MemResult};

/// Section trail attribute of imported memories (`Setup > Tools`).
const SECTION_ATTR: &str = "section";

impl Service {
    fn adapter_host(&self) -> MemResult<&std::sync::Arc<dyn mem_core::plugin::PluginHost>> {
        self.plugins().ok_or_else(|| {
            MemError::new(ErrorCode::PluginFailed, "no plugin runtime is attached")
                .with_hint("open the workspace with its plugins (mem-host does by default)")
        })
    }

    /// Parses `bytes` (the document `name`) with `adapter` and remembers
    /// each entry under `scope`. Idempotent: re-importing the same document
    /// replays instead of duplicating. One result per entry, in order.
    pub(crate) fn import_document(
        &self,
        adapter: &str,
        name: &str,
        bytes: &[u8],
        scope: &str,
        actor: &Actor,
    ) -> MemResult<Vec<MemResult<RememberOutcome>>> {
        let entries = self.adapter_host()?.import(adapter, name, bytes)?;
        let doc_sha = sha256_hex(bytes);
        let requests: Vec<(RememberRequest, Actor)> = entries
            .into_iter()
            .enumerate()
            .map(|(i, e)| {
                let mut attributes = e.attributes;
                if !e.section.is_empty() {
                    attributes.insert(SECTION_ATTR.into(), e.section.join(" > "));
                }
                let req = RememberRequest {
                    content: e.content,
                    kind: e.kind,
                    path: scope.to_string(),
                    idempotency_key: format!("import:{doc_sha}:{i}"),
                    source_type: Some(format!("import:{adapter}")),
                    source_ref: Some(match e.lines {
                        Some(l) => format!("{name}#{}", l.locator()),
                        None => name.to_string(),
                    }),
                    attributes,
                    ..Default::default()
                };
                (req, actor.clone())
            })
            .collect();
        let results = self.remember_many(&requests, crate::gate::WriteRoute::Import);
        self.catch_up_index();
        Ok(results)
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
        let mut entries = Vec::new();
        let mut cursor = None;
        loop {
            let page = self.list_memories(&ListMemories {
                path: Some(scope.to_string()),
                limit: Some(crate::MAX_LIST_LIMIT),
                cursor: cursor.clone(),
                ..Default::default()
            })?;
            for m in page.items {
                let Some(content) = m.content else { continue };
                let mut attributes = m.attributes;
                let section = attributes
                    .remove(SECTION_ATTR)
                    .map(|s| s.split(" > ").map(str::to_string).collect())
                    .unwrap_or_default();
                let role = self
                    .config()
                    .types
                    .registry
                    .resolve(&m.kind)
                    .ok()
                    .map(|d| d.role.clone());
                entries.push(AdapterEntry {
                    kind: m.kind,
                    content,
                    section,
                    role,
                    lines: None,
                    tags: Vec::new(),
                    attributes,
                });
            }
            match page.next_cursor {
                Some(c) => cursor = Some(c),
                None => break,
            }
        }
        entries.reverse();
        host.export(adapter, name, &entries)
    }
}
