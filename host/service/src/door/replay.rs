//! Kept answers of writes without idempotency of their own (file, folder,
//! lifecycle and admin operations): the first answer to an idempotency key
//! is kept, so a client retrying after a lost response gets that answer
//! instead of a second effect. Memories and proposals have their own,
//! stricter idempotency in the service.

use crate::Service;
use crate::records::{encode, load};
use mem_core::hash::sha256_hex;
use mem_core::store::{Batch, Durability, Table};
use mem_core::time::{Timestamp, now};
use mem_core::{ErrorCode, MemError, MemResult};
use serde::{Deserialize, Serialize};

/// A kept answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredReply {
    /// SHA-256 of the request it answered (operation and arguments).
    pub request_sha256: String,
    /// The answer, as JSON.
    pub body: Vec<u8>,
    pub at: Timestamp,
}

/// Keys are per caller (a token cannot replay another's answers) and
/// stored only as SHA-256, like memory idempotency keys.
fn key(caller: &str, idempotency_key: &str) -> String {
    format!(
        "reply:{}",
        sha256_hex(format!("{caller}\0{idempotency_key}").as_bytes())
    )
}

pub(crate) fn conflict() -> MemError {
    MemError::new(
        ErrorCode::IdempotencyConflict,
        "this idempotency key was used for a different request",
    )
    .with_hint("use a new key for a new write; reuse a key only to retry the same request")
}

/// A key claimed by a running request, released when dropped (also when
/// the request fails or panics).
pub(crate) struct Claim<'a> {
    svc: &'a Service,
    slot: String,
    /// Also claimed in a shared store (other hosts see it).
    shared: bool,
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        if self.shared {
            // Best effort: a claim left behind expires after its lease.
            let mut b = Batch::new();
            b.delete(Table::Idempotency, claim_key(&self.slot));
            let _ = self.svc.store().commit(b, Durability::Immediate);
        }
        self.svc.in_flight.lock().remove(&self.slot);
    }
}

/// How long the claim of a host that died mid-request keeps its key busy.
const CLAIM_LEASE_SECS: i64 = 300;

fn claim_key(slot: &str) -> String {
    format!("claim:{slot}")
}

fn in_progress() -> MemError {
    MemError::new(
        ErrorCode::IdempotencyConflict,
        "a request with this idempotency key is still in progress",
    )
    .with_hint("retry once it has finished: the retry gets its answer")
}

impl Service {
    /// One request per (caller, key) at a time: a duplicate arriving while
    /// the first runs is refused, so it cannot run twice, and finds the
    /// kept answer once the first is done.
    ///
    /// On a shared store the claim is also a record, taken under a
    /// condition, so a duplicate sent to another host is refused the same
    /// way (the process-local set alone serializes nothing across hosts).
    pub(crate) fn claim_key(&self, caller: &str, idempotency_key: &str) -> MemResult<Claim<'_>> {
        let slot = key(caller, idempotency_key);
        if !self.in_flight.lock().insert(slot.clone()) {
            return Err(in_progress());
        }
        let mut claim = Claim {
            svc: self,
            slot,
            shared: false,
        };
        if self.store().is_shared() {
            self.claim_in_store(&claim.slot)?;
            claim.shared = true;
        }
        Ok(claim)
    }

    /// Takes the store's claim on `slot`: absent, or left by a host that
    /// died (older than the lease).
    fn claim_in_store(&self, slot: &str) -> MemResult<()> {
        let k = claim_key(slot);
        for _ in 0..4 {
            let current = self.store().get(Table::Idempotency, &k)?;
            if let Some(raw) = &current {
                let fresh = std::str::from_utf8(raw)
                    .ok()
                    .and_then(|t| mem_core::time::parse_rfc3339(t).ok())
                    .is_some_and(|at| (now() - at).num_seconds() < CLAIM_LEASE_SECS);
                if fresh {
                    return Err(in_progress());
                }
            }
            let mut b = Batch::new();
            b.expect(Table::Idempotency, k.clone(), current).put(
                Table::Idempotency,
                k.clone(),
                mem_core::time::to_rfc3339(&now()).into_bytes(),
            );
            match self.store().commit(b, Durability::Immediate) {
                Ok(_) => return Ok(()),
                Err(mem_core::store::StoreError::ConditionFailed { .. }) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(in_progress())
    }

    pub(crate) fn stored_reply(
        &self,
        caller: &str,
        idempotency_key: &str,
    ) -> MemResult<Option<StoredReply>> {
        Ok(load::<StoredReply>(
            self.store(),
            Table::Idempotency,
            &key(caller, idempotency_key),
        )?
        .map(|s| s.value))
    }

    /// Keeps the first answer; a concurrent duplicate that lost the race
    /// leaves the first one in place.
    pub(crate) fn store_reply(
        &self,
        caller: &str,
        idempotency_key: &str,
        request_sha256: String,
        body: Vec<u8>,
    ) -> MemResult<()> {
        let k = key(caller, idempotency_key);
        let reply = StoredReply {
            request_sha256,
            body,
            at: now(),
        };
        let mut b = Batch::new();
        b.expect(Table::Idempotency, k.clone(), None)
            .put(Table::Idempotency, k, encode(&reply)?);
        match self.store().commit(b, Durability::Immediate) {
            Ok(_) | Err(mem_core::store::StoreError::ConditionFailed { .. }) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use mem_core::ErrorCode;

    #[test]
    fn replies_are_per_caller_and_the_first_one_stays() {
        let (_d, s) = crate::tests::service();
        s.store_reply("tok_a", "k", "sha1".into(), b"one".to_vec())
            .unwrap();
        s.store_reply("tok_a", "k", "sha2".into(), b"two".to_vec())
            .unwrap();
        let r = s.stored_reply("tok_a", "k").unwrap().unwrap();
        assert_eq!(
            (r.request_sha256.as_str(), r.body.as_slice()),
            ("sha1", &b"one"[..])
        );
        assert!(s.stored_reply("tok_b", "k").unwrap().is_none());
    }

    #[test]
    fn a_key_runs_once_at_a_time() {
        let (_d, s) = crate::tests::service();
        let first = s.claim_key("owner", "k").unwrap();
        let Err(e) = s.claim_key("owner", "k") else {
            panic!("a second claim must be refused")
        };
        assert_eq!(e.code, ErrorCode::IdempotencyConflict);
        assert!(s.claim_key("tok_b", "k").is_ok(), "keys are per caller");
        drop(first);
        assert!(s.claim_key("owner", "k").is_ok());
    }
}
