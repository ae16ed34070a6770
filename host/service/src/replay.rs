//! Idempotent replays of surface writes that have no idempotency of their
//! own (file uploads, folder and lifecycle operations): the first answer
//! to an `Idempotency-Key` is kept, so a client retrying after a lost
//! response gets that answer instead of a second effect. Memories and
//! proposals have their own, stricter idempotency in the service.

use crate::Service;
use crate::records::{encode, load};
use mem_core::MemResult;
use mem_core::hash::sha256_hex;
use mem_core::store::{Batch, Durability, Table};
use mem_core::time::{Timestamp, now};
use serde::{Deserialize, Serialize};

/// A kept answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredReply {
    /// SHA-256 of the request it answered (method, target and body).
    pub request_sha256: String,
    pub status: u16,
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

impl Service {
    pub fn stored_reply(
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
    pub fn store_reply(
        &self,
        caller: &str,
        idempotency_key: &str,
        request_sha256: String,
        status: u16,
        body: Vec<u8>,
    ) -> MemResult<()> {
        let k = key(caller, idempotency_key);
        let reply = StoredReply {
            request_sha256,
            status,
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
    #[test]
    fn replies_are_per_caller_and_the_first_one_stays() {
        let (_d, s) = crate::tests::service();
        s.store_reply("tok_a", "k", "sha1".into(), 201, b"one".to_vec())
            .unwrap();
        s.store_reply("tok_a", "k", "sha2".into(), 201, b"two".to_vec())
            .unwrap();
        let r = s.stored_reply("tok_a", "k").unwrap().unwrap();
        assert_eq!(
            (r.request_sha256.as_str(), r.body.as_slice()),
            ("sha1", &b"one"[..])
        );
        assert!(s.stored_reply("tok_b", "k").unwrap().is_none());
    }
}
