//! What a caller may do, enforced in one place. REST and MCP reach the
//! service only through a [`Caller`], so a scope or path boundary cannot be
//! forgotten by one surface: every operation states its scope here, every
//! object is checked against the caller's paths, and every result list is
//! filtered to what the caller may see.
//!
//! Rules: a missing scope for an operation on the workspace (search, list,
//! create) is `forbidden`; an object outside the caller's scope or paths
//! reads as `not_found`, exactly like an object that does not exist, so a
//! token learns nothing about what it may not see.

use crate::memories::{ListMemories, Page, RememberOutcome, RememberRequest};
use crate::recall::{ContextPack, ContextRequest, SearchQuery, SearchResult};
use crate::{
    Actor, Listing, MkdirResult, MoveResult, PutFile, PutFileResult, RemoveResult, Service,
};
use mem_core::model::{FeedbackAction, FileRecord, Memory};
use mem_core::{ErrorCode, MemError, MemResult, VPath};
use serde::{Deserialize, Serialize};

/// Token scopes (mem SPEC F7). `admin` implies every other scope.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    Search,
    Read,
    Write,
    Delete,
    Admin,
}

impl Scope {
    pub const ALL: [Scope; 5] = [
        Scope::Search,
        Scope::Read,
        Scope::Write,
        Scope::Delete,
        Scope::Admin,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Search => "search",
            Scope::Read => "read",
            Scope::Write => "write",
            Scope::Delete => "delete",
            Scope::Admin => "admin",
        }
    }

    pub fn parse(s: &str) -> MemResult<Self> {
        Self::ALL
            .into_iter()
            .find(|x| x.as_str() == s.trim().to_ascii_lowercase())
            .ok_or_else(|| {
                MemError::bad_request(format!("unknown scope {s:?}"))
                    .with_hint("scopes: search, read, write, delete, admin")
            })
    }
}

/// The authenticated caller: the local owner, or a token.
#[derive(Debug, Clone, PartialEq)]
pub struct Access {
    token_id: Option<String>,
    token_name: Option<String>,
    scopes: Vec<Scope>,
    /// Folders the caller is confined to; empty means the whole workspace.
    paths: Vec<VPath>,
}

impl Access {
    /// The workspace owner (local CLI, stdio MCP without `MEM_TOKEN`).
    pub fn owner() -> Self {
        Self {
            token_id: None,
            token_name: None,
            scopes: Scope::ALL.to_vec(),
            paths: Vec::new(),
        }
    }

    /// A token's access. A stored path that no longer parses is damage,
    /// and is refused: dropping it would widen the token to everything.
    pub(crate) fn token(
        id: String,
        name: String,
        scopes: Vec<Scope>,
        paths: Vec<String>,
    ) -> MemResult<Self> {
        let paths = paths
            .iter()
            .map(|p| {
                VPath::parse(p).map_err(|e| {
                    MemError::new(
                        ErrorCode::StoreCorrupt,
                        format!(
                            "token {id} has an unreadable path boundary {p:?}: {}",
                            e.message
                        ),
                    )
                    .with_hint("revoke the token and create a new one")
                })
            })
            .collect::<MemResult<Vec<_>>>()?;
        Ok(Self {
            token_id: Some(id),
            token_name: Some(name),
            scopes,
            paths,
        })
    }

    pub fn token_id(&self) -> Option<&str> {
        self.token_id.as_deref()
    }

    pub fn has(&self, s: Scope) -> bool {
        self.scopes.contains(&s) || self.scopes.contains(&Scope::Admin)
    }

    /// `forbidden` unless the caller holds `s`.
    pub fn require(&self, s: Scope) -> MemResult<()> {
        if self.has(s) {
            return Ok(());
        }
        Err(MemError::new(
            ErrorCode::Forbidden,
            format!(
                "this operation needs the {:?} scope; token {:?} has {}",
                s.as_str(),
                self.token_name.as_deref().unwrap_or("?"),
                self.scopes
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(",")
            ),
        )
        .with_hint(format!(
            "ask the workspace owner for a token with `--scope {}`",
            s.as_str()
        ))
        .with_details(serde_json::json!({ "needed_scope": s.as_str() })))
    }

    /// True when `path` lies inside the caller's boundary.
    pub fn sees(&self, path: &VPath) -> bool {
        self.paths.is_empty() || self.paths.iter().any(|p| path.is_within(p))
    }

    fn sees_str(&self, path: &str) -> bool {
        VPath::parse(path).is_ok_and(|p| self.sees(&p))
    }

    /// True when `path` is an ancestor of the boundary (a folder on the way
    /// to what the caller may see).
    fn leads_to(&self, path: &VPath) -> bool {
        self.paths.iter().any(|p| p.is_within(path))
    }

    /// `forbidden` for creating something outside the boundary: the caller
    /// chose the path, so saying so leaks nothing.
    fn may_write_at(&self, path: &VPath) -> MemResult<()> {
        if self.sees(path) {
            return Ok(());
        }
        Err(MemError::new(
            ErrorCode::Forbidden,
            format!("{} is outside this token's paths", path.as_str()),
        )
        .with_hint(format!(
            "this token may write under {}",
            self.paths
                .iter()
                .map(VPath::as_str)
                .collect::<Vec<_>>()
                .join(", ")
        )))
    }

    /// The boundary as index filter folders.
    fn within(&self) -> Vec<String> {
        self.paths.iter().map(|p| p.as_str().to_string()).collect()
    }

    /// The actor recorded in provenance and audit for this caller.
    pub fn actor(&self, agent_id: Option<String>, session_id: Option<String>) -> Actor {
        match &self.token_id {
            None if agent_id.is_none() => Actor::owner(),
            None => Actor::agent(agent_id, session_id),
            Some(id) => Actor {
                agent_id,
                session_id,
                token_id: Some(id.clone()),
                human: None,
            },
        }
    }
}

/// The service as seen by one caller. Surfaces call these, never the
/// unchecked [`Service`] methods.
#[derive(Clone, Copy)]
pub struct Caller<'a> {
    svc: &'a Service,
    access: &'a Access,
}

impl std::fmt::Debug for Caller<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Caller")
            .field("access", self.access)
            .finish()
    }
}

impl Service {
    pub fn caller<'a>(&'a self, access: &'a Access) -> Caller<'a> {
        Caller { svc: self, access }
    }
}

impl<'a> Caller<'a> {
    pub fn access(&self) -> &Access {
        self.access
    }

    /// The unchecked service, for admin-only operations once `admin` was
    /// required.
    pub fn admin(&self) -> MemResult<&'a Service> {
        self.access.require(Scope::Admin)?;
        Ok(self.svc)
    }

    /// `not_found` (never `forbidden`) for an object the caller may not see.
    fn object(&self, scope: Scope, what: &str, id: &str, path: &str) -> MemResult<()> {
        if self.access.has(scope) && self.access.sees_str(path) {
            Ok(())
        } else {
            Err(MemError::not_found(what, id))
        }
    }

    // ---- files ----

    pub fn put_file(&self, req: PutFile) -> MemResult<PutFileResult> {
        self.access.require(Scope::Write)?;
        self.access.may_write_at(&req.path)?;
        self.svc.put_file(req)
    }

    pub fn file_info(&self, target: &str) -> MemResult<FileRecord> {
        let f = self
            .svc
            .file_info(target)
            .map_err(|e| self.hide(e, "file", target))?;
        self.object(Scope::Read, "file", target, f.path.as_str())?;
        Ok(f)
    }

    pub fn read_file(&self, target: &str) -> MemResult<(FileRecord, Vec<u8>)> {
        self.file_info(target)?;
        self.svc.read_file(target)
    }

    pub fn list_folder(&self, path: &VPath) -> MemResult<Listing> {
        self.access.require(Scope::Read)?;
        if self.access.sees(path) {
            return self.svc.list_folder(path);
        }
        if !self.access.leads_to(path) {
            return Err(MemError::not_found("folder", path.as_str()));
        }
        // A folder above the boundary shows only the way down to it.
        let mut listing = self.svc.list_folder(path)?;
        listing.entries.retain(|e| {
            let p = match e {
                crate::Entry::Folder { path, .. } => path,
                crate::Entry::File(f) => &f.path,
            };
            self.access.sees(p) || self.access.leads_to(p)
        });
        Ok(listing)
    }

    pub fn mkdir(&self, path: &VPath, parents: bool) -> MemResult<MkdirResult> {
        self.access.require(Scope::Write)?;
        self.access.may_write_at(path)?;
        self.svc.mkdir(path, parents)
    }

    pub fn move_path(&self, src: &str, dst: &VPath) -> MemResult<MoveResult> {
        self.access.require(Scope::Write)?;
        self.visible_target(Scope::Write, src)?;
        self.access.may_write_at(dst)?;
        self.svc.move_path(src, dst)
    }

    pub fn remove_path(&self, target: &str, recursive: bool) -> MemResult<RemoveResult> {
        self.visible_target(Scope::Delete, target)?;
        self.svc.remove_path(target, recursive)
    }

    /// A file id or path, or a folder path, that the caller may act on.
    fn visible_target(&self, scope: Scope, target: &str) -> MemResult<()> {
        if let Ok(info) = self.svc.file_info(target) {
            return self.object(scope, "path", target, info.path.as_str());
        }
        match VPath::parse(target) {
            Ok(p) if self.access.has(scope) && self.access.sees(&p) && !p.is_root() => Ok(()),
            _ => Err(MemError::not_found("path", target)),
        }
    }

    // ---- memories ----

    pub fn remember(&self, req: &RememberRequest) -> MemResult<RememberOutcome> {
        self.access.require(Scope::Write)?;
        self.access.may_write_at(&VPath::parse(req.path.trim())?)?;
        let actor = self
            .access
            .actor(req.agent_id.clone(), req.session_id.clone());
        self.svc.remember_as(req, &actor)
    }

    pub fn memory(&self, id: &str) -> MemResult<Memory> {
        self.memory_for(Scope::Read, id)
    }

    /// Lists memories the caller may see. Over a multi-folder boundary a
    /// page can hold fewer than `limit` items; follow `next_cursor`.
    pub fn list_memories(&self, q: &ListMemories) -> MemResult<Page<Memory>> {
        self.access.require(Scope::Read)?;
        let mut q = q.clone();
        if q.path.is_none() && self.access.paths.len() == 1 {
            q.path = Some(self.access.paths[0].as_str().to_string());
        }
        let mut page = self.svc.list_memories(&q)?;
        page.items.retain(|m| self.access.sees(&m.path));
        Ok(page)
    }

    pub fn feedback(
        &self,
        id: &str,
        action: FeedbackAction,
        expected_version: u64,
        agent_id: Option<String>,
    ) -> MemResult<Memory> {
        self.memory_for(Scope::Write, id)?;
        self.svc.feedback(
            id,
            action,
            expected_version,
            &self.access.actor(agent_id, None),
        )
    }

    pub fn archive(&self, id: &str, expected_version: u64) -> MemResult<Memory> {
        self.memory_for(Scope::Write, id)?;
        self.svc
            .archive(id, expected_version, &self.access.actor(None, None))
    }

    pub fn restore(&self, id: &str, expected_version: u64) -> MemResult<Memory> {
        self.memory_for(Scope::Write, id)?;
        self.svc
            .restore(id, expected_version, &self.access.actor(None, None))
    }

    pub fn forget(
        &self,
        id: &str,
        expected_version: u64,
        reason: &str,
        confirm: bool,
    ) -> MemResult<Memory> {
        self.memory_for(Scope::Delete, id)?;
        self.svc.forget(
            id,
            expected_version,
            reason,
            confirm,
            &self.access.actor(None, None),
        )
    }

    fn memory_for(&self, scope: Scope, id: &str) -> MemResult<Memory> {
        let m = self
            .svc
            .memory(id)
            .map_err(|e| self.hide(e, "memory", id))?;
        self.object(scope, "memory", id, m.path.as_str())?;
        Ok(m)
    }

    pub fn propose(
        &self,
        req: &crate::gate::ProposalRequest,
    ) -> MemResult<crate::gate::ProposalOutcome> {
        self.access.require(Scope::Write)?;
        for t in &req.targets {
            self.memory_for(Scope::Write, t)?;
        }
        if let Some(m) = &req.memory {
            self.access.may_write_at(&VPath::parse(m.path.trim())?)?;
        }
        let (agent, session) = req
            .memory
            .as_ref()
            .map(|m| (m.agent_id.clone(), m.session_id.clone()))
            .unwrap_or_default();
        self.svc.propose(req, &self.access.actor(agent, session))
    }

    /// A proposal the caller made (or any, for admin).
    pub fn proposal(&self, id: &str) -> MemResult<crate::gate::Proposal> {
        let p = self.svc.proposal(id)?;
        let mine = self.access.token_id.is_some()
            && p.proposer.token_id.as_deref() == self.access.token_id();
        if self.access.has(Scope::Admin) || mine {
            Ok(p)
        } else {
            Err(MemError::not_found("proposal", id))
        }
    }

    // ---- documents through adapter plugins ----

    pub fn import_document(
        &self,
        adapter: &str,
        name: &str,
        bytes: &[u8],
        scope: &str,
    ) -> MemResult<Vec<MemResult<RememberOutcome>>> {
        self.access.require(Scope::Write)?;
        self.access.may_write_at(&VPath::parse(scope.trim())?)?;
        self.svc.import_document(adapter, name, bytes, scope)
    }

    pub fn export_document(&self, adapter: &str, name: &str, scope: &str) -> MemResult<Vec<u8>> {
        let path = VPath::parse(scope.trim())?;
        if !(self.access.has(Scope::Read) && self.access.sees(&path)) {
            return Err(MemError::not_found("folder", scope));
        }
        self.svc.export_document(adapter, name, scope)
    }

    // ---- recall ----

    pub fn search(&self, q: &SearchQuery) -> MemResult<SearchResult> {
        self.access.require(Scope::Search)?;
        let mut q = q.clone();
        q.within = self.access.within();
        self.svc.search(&q)
    }

    pub fn context(&self, req: &ContextRequest) -> MemResult<ContextPack> {
        self.access.require(Scope::Search)?;
        let mut req = req.clone();
        req.within = self.access.within();
        self.svc.context(&req)
    }

    pub fn check(&self, req: &crate::check::CheckRequest) -> MemResult<crate::check::CheckResult> {
        self.access.require(Scope::Search)?;
        self.svc.check(req)
    }

    pub fn types(&self) -> MemResult<Vec<crate::types::TypeDef>> {
        self.access.require(Scope::Read)?;
        Ok(self.svc.config().types.registry.all().cloned().collect())
    }

    pub fn status(&self) -> MemResult<crate::processing::WorkspaceStatus> {
        self.access.require(Scope::Read)?;
        self.svc.status()
    }

    /// A `not_found` from the service keeps its shape but never says more
    /// than an invisible object would.
    fn hide(&self, e: MemError, what: &str, id: &str) -> MemError {
        if e.code == ErrorCode::NotFound {
            MemError::not_found(what, id)
        } else {
            e
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::TokenRequest;

    fn token(s: &Service, scopes: &[&str], paths: &[&str]) -> Access {
        let t = s
            .create_token(&TokenRequest {
                name: format!("t{}", mem_core::id::new_id("x")),
                scopes: scopes.iter().map(|s| s.to_string()).collect(),
                paths: paths.iter().map(|s| s.to_string()).collect(),
                ..Default::default()
            })
            .unwrap();
        s.authenticate(&t.secret).unwrap()
    }

    fn remember(s: &Service, path: &str, content: &str) -> Memory {
        s.remember(&RememberRequest {
            content: content.into(),
            kind: "fact".into(),
            path: path.into(),
            idempotency_key: Some(format!("k-{path}-{content}")),
            ..Default::default()
        })
        .unwrap()
        .memory
        .unwrap()
    }

    #[test]
    fn objects_outside_paths_or_scope_read_as_not_found() {
        let (_d, s) = crate::tests::service();
        let inside = remember(&s, "/a", "inside");
        let outside = remember(&s, "/b", "outside");
        let a = token(&s, &["read", "write"], &["/a"]);
        let c = s.caller(&a);
        assert_eq!(c.memory(&inside.id).unwrap().id, inside.id);
        let e = c.memory(&outside.id).unwrap_err();
        let missing = c.memory("mem_01jdzzzzzzzzzzzzzzzzzzzzzz").unwrap_err();
        assert_eq!(e.code, ErrorCode::NotFound);
        assert_eq!(e.hint, missing.hint);
        // Scope missing on an object: not found too.
        let search_only = token(&s, &["search"], &[]);
        assert_eq!(
            s.caller(&search_only).memory(&inside.id).unwrap_err().code,
            ErrorCode::NotFound
        );
        // Workspace-level ops without the scope: forbidden.
        assert_eq!(
            s.caller(&search_only)
                .list_memories(&ListMemories::default())
                .unwrap_err()
                .code,
            ErrorCode::Forbidden
        );
        let listed = c.list_memories(&ListMemories::default()).unwrap();
        assert!(listed.items.iter().all(|m| m.path.as_str() == "/a"));
        assert_eq!(
            c.archive(&outside.id, outside.state_version)
                .unwrap_err()
                .code,
            ErrorCode::NotFound
        );
        assert_eq!(
            c.forget(&inside.id, inside.state_version, "x", true)
                .unwrap_err()
                .code,
            ErrorCode::NotFound,
            "no delete scope"
        );
    }

    #[test]
    fn writes_outside_paths_are_forbidden_and_actor_names_the_token() {
        let (_d, s) = crate::tests::service();
        let a = token(&s, &["write", "read"], &["/a"]);
        let c = s.caller(&a);
        let e = c
            .remember(&RememberRequest {
                content: "x".into(),
                kind: "fact".into(),
                path: "/b".into(),
                idempotency_key: Some("k".into()),
                ..Default::default()
            })
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::Forbidden);
        let m = c
            .remember(&RememberRequest {
                content: "x".into(),
                kind: "fact".into(),
                path: "/a/sub".into(),
                idempotency_key: Some("k".into()),
                ..Default::default()
            })
            .unwrap()
            .memory
            .unwrap();
        let by = m.governance.unwrap().proposed_by;
        assert!(by.contains(a.token_id().unwrap()), "{by}");
        assert_eq!(c.admin().unwrap_err().code, ErrorCode::Forbidden);
    }
}
