//! Who a caller is and what it may do: scopes and path boundaries. The
//! checks run behind the one door ([`crate::door::Caller`]) that every
//! surface uses, so a scope or path boundary cannot be forgotten by one
//! surface: every operation states its scope, every object is checked
//! against the caller's paths, and every result list is filtered to what
//! the caller may see.
//!
//! Rules: a missing scope for an operation on the workspace (search, list,
//! create) is `forbidden`; an object outside the caller's scope or paths
//! reads as `not_found`, exactly like an object that does not exist, so a
//! token learns nothing about what it may not see.

use crate::Actor;
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

    pub fn token_name(&self) -> Option<&str> {
        self.token_name.as_deref()
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

    /// True when `path` is an ancestor of the boundary (a folder on the way
    /// to what the caller may see).
    pub(crate) fn leads_to(&self, path: &VPath) -> bool {
        self.paths.iter().any(|p| p.is_within(path))
    }

    /// `forbidden` for creating something outside the boundary: the caller
    /// chose the path, so saying so leaks nothing.
    pub(crate) fn may_write_at(&self, path: &VPath) -> MemResult<()> {
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
    pub(crate) fn within(&self) -> Vec<String> {
        self.paths.iter().map(|p| p.as_str().to_string()).collect()
    }

    /// The folders the caller is confined to (empty: everywhere).
    pub fn paths(&self) -> &[VPath] {
        &self.paths
    }

    /// Whose kept answers a request may replay: the token, or the owner.
    pub(crate) fn replay_identity(&self) -> String {
        self.identity().to_string()
    }

    /// Who the caller is: its token's id, or the owner.
    pub(crate) fn identity(&self) -> &str {
        self.token_id.as_deref().unwrap_or("owner")
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
