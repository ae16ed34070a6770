//! The one door into the service. Every surface (CLI, REST, MCP, the web
//! page, the CLI's socket to a running server) builds an [`Operation`]
//! (one request type, one response type), and runs it through a
//! [`Caller`]: the authenticated access, checked here and in the
//! operation's `run`, never in a surface. The unchecked business methods
//! on [`Service`] are crate-private.
//!
//! Writes are made safe to retry here too: an operation either dedupes by
//! its own idempotency key (memories, proposals) or has its first answer
//! to a key kept and replayed ([`Replay::Kept`]), on every surface alike.

mod decode;
mod registry;
mod replay;

pub(crate) use decode::Shapes;
pub use decode::{decode_args, request_schema};
pub use registry::{OpEntry, entry, find, registry};
pub use replay::StoredReply;
pub(crate) use replay::conflict as replay_conflict;

use crate::Service;
use crate::access::{Access, Scope};
use crate::audit::Actor;
use mem_core::hash::sha256_hex;
use mem_core::{ErrorCode, MemError, MemResult, VPath};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// How a retried request is kept from acting twice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replay {
    /// Reads: nothing to keep.
    None,
    /// The operation dedupes by its own key (required): memories and proposals.
    Own,
    /// The first answer to an optional `idempotency_key` is kept; the same
    /// key and request answers it again, another request conflicts.
    Kept,
}

/// One business operation: this type is its request (the REST body, the
/// MCP tool's arguments, the CLI's JSON), `Output` its answer.
pub trait Operation: Serialize + DeserializeOwned + schemars::JsonSchema + Send + 'static {
    /// Stable name, e.g. `memory.feedback`: the socket route and the
    /// registry key.
    const NAME: &'static str;
    /// The scope a token needs: a caller without it is refused
    /// (`forbidden`) before its request is looked at. An object outside
    /// the caller's paths reads as `not_found`.
    const SCOPE: Scope;
    const REPLAY: Replay;
    type Output: Serialize + DeserializeOwned + schemars::JsonSchema + Send + 'static;

    /// The request's idempotency key, if it carries one.
    fn idempotency_key(&self) -> Option<&str> {
        None
    }

    /// True when `out` is itself a replay (operations with [`Replay::Own`],
    /// or a [`Replay::Kept`] one whose effect was already there).
    fn replayed(_out: &Self::Output) -> bool {
        false
    }

    /// Runs the operation as `c`: checks what the caller may do, then calls
    /// the service.
    fn run(self, c: &Caller<'_>) -> MemResult<Self::Output>;
}

/// An operation's answer, and whether it is the replay of an earlier one.
#[derive(Debug, Clone, PartialEq)]
pub struct Done<T> {
    pub value: T,
    pub replayed: bool,
}

/// Longest idempotency key a caller may send.
pub const MAX_IDEMPOTENCY_KEY_CHARS: usize = 256;

/// The service as seen by one caller.
#[derive(Clone, Copy)]
pub struct Caller<'a> {
    pub(crate) svc: &'a Service,
    pub(crate) access: &'a Access,
}

impl std::fmt::Debug for Caller<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Caller")
            .field("access", self.access)
            .finish()
    }
}

impl Service {
    /// The door for `access`.
    pub fn caller<'a>(&'a self, access: &'a Access) -> Caller<'a> {
        Caller { svc: self, access }
    }
}

/// A key, when given, is 1 to [`MAX_IDEMPOTENCY_KEY_CHARS`] characters
/// without control characters; it is opaque (compared as sent).
pub(crate) fn checked_key(raw: Option<&str>) -> MemResult<Option<&str>> {
    let Some(k) = raw else {
        return Ok(None);
    };
    let n = k.chars().count();
    if n == 0 || n > MAX_IDEMPOTENCY_KEY_CHARS || k.chars().any(char::is_control) {
        return Err(MemError::bad_request(format!(
            "idempotency_key must be 1 to {MAX_IDEMPOTENCY_KEY_CHARS} characters without control characters"
        ))
        .with_hint("use a short unique key per intended write, e.g. a UUID")
        .with_details(serde_json::json!({ "field": "idempotency_key" })));
    }
    Ok(Some(k))
}

impl<'a> Caller<'a> {
    pub fn access(&self) -> &Access {
        self.access
    }

    /// Runs `op` as this caller: the only way a surface reaches the service.
    pub fn run<O: Operation>(&self, op: O) -> MemResult<Done<O::Output>> {
        let _running = self.svc.foreground_call();
        self.require(O::SCOPE)?;
        let _reading = self.svc.reading_as(self.access.identity());
        if O::REPLAY == Replay::Kept
            && let Some(key) = checked_key(op.idempotency_key())?
        {
            let key = key.to_string();
            let _running = self.svc.claim_key(&self.access.replay_identity(), &key)?;
            return self.run_kept(op, &key);
        }
        let value = op.run(self)?;
        let replayed = O::replayed(&value);
        Ok(Done { value, replayed })
    }

    /// A write whose first answer to `key` is kept: a retry gets that
    /// answer, another request with the key is `idempotency_conflict`. The
    /// caller holds the key's claim, so a duplicate arriving while the
    /// first still runs is refused rather than run twice.
    pub(crate) fn run_kept<O: Operation>(&self, op: O, key: &str) -> MemResult<Done<O::Output>> {
        let who = self.access.replay_identity();
        let fingerprint = fingerprint(&op)?;
        if let Some(reply) = self.svc.stored_reply(&who, key)? {
            if reply.request_sha256 != fingerprint {
                return Err(replay::conflict());
            }
            let value = serde_json::from_slice(&reply.body).map_err(|e| {
                MemError::new(
                    ErrorCode::StoreCorrupt,
                    format!("the kept answer to this idempotency key cannot be read: {e}"),
                )
                .with_hint("retry with a new idempotency key")
            })?;
            return Ok(Done {
                value,
                replayed: true,
            });
        }
        let value = op.run(self)?;
        let body = serde_json::to_vec(&value)
            .map_err(|e| MemError::internal(format!("cannot keep the answer: {e}")))?;
        self.svc.store_reply(&who, key, fingerprint, body)?;
        // An operation may find its effect already there (a decision
        // made before under another key): that is a replay too.
        let replayed = O::replayed(&value);
        Ok(Done { value, replayed })
    }

    /// The actor recorded in provenance and audit: derived here only.
    pub(crate) fn actor(&self, agent_id: Option<String>, session_id: Option<String>) -> Actor {
        self.access.actor(agent_id, session_id)
    }

    pub(crate) fn require(&self, scope: Scope) -> MemResult<()> {
        self.access.require(scope)
    }

    /// The unchecked service once `admin` was required.
    pub(crate) fn admin(&self) -> MemResult<&'a Service> {
        self.access.require(Scope::Admin)?;
        Ok(self.svc)
    }

    /// `not_found` (never `forbidden`) for an object the caller may not see.
    pub(crate) fn object(&self, scope: Scope, what: &str, id: &str, path: &VPath) -> MemResult<()> {
        if self.access.has(scope) && self.access.sees(path) {
            Ok(())
        } else {
            Err(MemError::not_found(what, id))
        }
    }

    /// A `not_found` from the service keeps its shape but never says more
    /// than an invisible object would.
    pub(crate) fn hide(&self, e: MemError, what: &str, id: &str) -> MemError {
        if e.code == ErrorCode::NotFound {
            MemError::not_found(what, id)
        } else {
            e
        }
    }
}

/// What a kept answer is matched against: the operation and its request,
/// without the key itself.
fn fingerprint<O: Operation>(op: &O) -> MemResult<String> {
    let mut v = serde_json::to_value(op)
        .map_err(|e| MemError::internal(format!("cannot encode the request: {e}")))?;
    if let Some(o) = v.as_object_mut() {
        o.remove("idempotency_key");
    }
    Ok(sha256_hex(format!("{}\n{v}", O::NAME).as_bytes()))
}

#[cfg(test)]
mod tests;
