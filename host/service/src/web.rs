//! Sign-in and sessions of the web page. The owner's CLI (`mem-host web`)
//! asks for a one-time sign-in link bound to a token (the owner's access,
//! or a named token); visiting it trades the nonce for a session whose
//! cookie the browser keeps. Both live in the workspace (the tokens table,
//! which bundles never carry) and only as SHA-256 of their secrets, so a
//! copy of the store signs nobody in. A session resolves to the same
//! [`Access`] its token has on every other surface, checked again on each
//! request: revoking the token ends its sessions.

use crate::Service;
use crate::access::Access;
use crate::records::{decode, encode, load};
use chrono::Duration;
use mem_core::hash::sha256_hex;
use mem_core::store::{Batch, Durability, StoreError, Table};
use mem_core::time::{Timestamp, now};
use mem_core::{ErrorCode, MemError, MemResult};
use serde::{Deserialize, Serialize};

/// How long a sign-in link stays usable: long enough to click it.
pub const SIGNIN_TTL_SECS: i64 = 5 * 60;
/// How long a session lasts without a new sign-in.
pub const SESSION_TTL_SECS: i64 = 12 * 60 * 60;

fn nonce_key(sha: &str) -> String {
    format!("web:signin:{sha}")
}
fn session_key(sha: &str) -> String {
    format!("web:session:{sha}")
}

/// A fresh 256-bit secret as hex.
fn random_hex() -> MemResult<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)
        .map_err(|e| MemError::internal(format!("no randomness for a web secret: {e}")))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Whose access a link or session carries: the owner's (`None`) or a token's.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Binding {
    token_id: Option<String>,
    expires_at: Timestamp,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct SessionRecord {
    #[serde(flatten)]
    binding: Binding,
    /// The per-session token every form must send back.
    csrf: String,
}

/// A one-time sign-in link's nonce (shown once, stored hashed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SignIn {
    pub nonce: String,
    pub expires_at: Timestamp,
    /// The token the session will act as; absent for the owner.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
}

/// What `mem-host web` prints: the sign-in link itself, until when it
/// works, and the token it signs in as (absent: the owner).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SignInLink {
    /// `{server}/signin/{nonce}`: open it once.
    pub url: String,
    pub expires_at: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
}

/// An open session: the cookie's value and the CSRF token of its forms.
#[derive(Debug, Clone, PartialEq)]
pub struct WebSession {
    pub id: String,
    pub csrf: String,
    pub expires_at: Timestamp,
}

/// What a live session may do.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionAccess {
    pub access: Access,
    pub csrf: String,
}

fn signed_out(message: &str) -> MemError {
    MemError::new(ErrorCode::Unauthorized, message.to_string())
        .with_hint("ask the owner for a new sign-in link: `mem-host web` prints one")
}

fn expiry(secs: i64) -> MemResult<Timestamp> {
    now()
        .checked_add_signed(Duration::seconds(secs))
        .ok_or_else(|| MemError::internal("the clock is out of range"))
}

impl Service {
    /// A sign-in link for the owner (`token: None`) or the live token
    /// `token` (id or name). Admin only, through its operation.
    pub(crate) fn create_signin(&self, token: Option<&str>) -> MemResult<SignIn> {
        let bound = token.map(|t| self.find_token(t)).transpose()?;
        if let Some(t) = &bound {
            // A dead token would sign nobody in; say so now, not at the click.
            self.token_access(&t.id)?;
        }
        let nonce = random_hex()?;
        let binding = Binding {
            token_id: bound.as_ref().map(|t| t.id.clone()),
            expires_at: expiry(SIGNIN_TTL_SECS)?,
        };
        let mut b = Batch::new();
        b.put(
            Table::Tokens,
            nonce_key(&sha256_hex(nonce.as_bytes())),
            encode(&binding)?,
        );
        self.store().commit(b, Durability::Immediate)?;
        Ok(SignIn {
            nonce,
            expires_at: binding.expires_at,
            token: bound.map(|t| t.name),
        })
    }

    /// Trades a sign-in nonce for a session. The nonce is consumed under
    /// compare-and-swap, so of two racing visits only one signs in; an
    /// expired, used or unknown nonce is `unauthorized`.
    pub fn open_web_session(&self, nonce: &str) -> MemResult<WebSession> {
        let key = nonce_key(&sha256_hex(nonce.trim().as_bytes()));
        let Some(stored) = load::<Binding>(self.store(), Table::Tokens, &key)? else {
            return Err(signed_out(
                "this sign-in link is unknown or was already used",
            ));
        };
        let mut b = Batch::new();
        b.expect(Table::Tokens, key.clone(), Some(stored.raw))
            .delete(Table::Tokens, key);
        if stored.value.expires_at <= now() {
            // Expired links are removed too; the refusal stands.
            let _ = self.store().commit(b, Durability::Immediate);
            return Err(signed_out("this sign-in link has expired"));
        }
        if let Some(id) = &stored.value.token_id {
            self.token_access(id)?;
        }
        let id = random_hex()?;
        let record = SessionRecord {
            binding: Binding {
                token_id: stored.value.token_id,
                expires_at: expiry(SESSION_TTL_SECS)?,
            },
            csrf: random_hex()?,
        };
        b.put(
            Table::Tokens,
            session_key(&sha256_hex(id.as_bytes())),
            encode(&record)?,
        );
        match self.store().commit(b, Durability::Immediate) {
            Ok(_) => {}
            Err(StoreError::ConditionFailed { .. }) => {
                return Err(signed_out("this sign-in link was already used"));
            }
            Err(e) => return Err(e.into()),
        }
        Ok(WebSession {
            id,
            csrf: record.csrf,
            expires_at: record.binding.expires_at,
        })
    }

    /// The access of session `id`, checked now: an ended, expired or
    /// unknown session, or one whose token was revoked, is `unauthorized`.
    pub fn web_session(&self, id: &str) -> MemResult<SessionAccess> {
        let key = session_key(&sha256_hex(id.as_bytes()));
        let raw = self
            .store()
            .get(Table::Tokens, &key)?
            .ok_or_else(|| signed_out("not signed in"))?;
        let rec: SessionRecord = decode(Table::Tokens, &key, &raw)?;
        if rec.binding.expires_at <= now() {
            self.end_web_session(id)?;
            return Err(signed_out("the session has expired"));
        }
        let access = match &rec.binding.token_id {
            None => Access::owner(),
            Some(token) => self.token_access(token)?,
        };
        Ok(SessionAccess {
            access,
            csrf: rec.csrf,
        })
    }

    /// Signs out: the session is gone from the store.
    pub fn end_web_session(&self, id: &str) -> MemResult<()> {
        let mut b = Batch::new();
        b.delete(Table::Tokens, session_key(&sha256_hex(id.as_bytes())));
        self.store().commit(b, Durability::Immediate)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::Scope;
    use crate::tokens::TokenRequest;

    fn svc() -> (tempfile::TempDir, Service) {
        crate::tests::service()
    }

    #[test]
    fn a_signin_link_opens_one_session_only() {
        let (_d, s) = svc();
        let link = s.create_signin(None).unwrap();
        let session = s.open_web_session(&link.nonce).unwrap();
        let a = s.web_session(&session.id).unwrap();
        assert_eq!(a.access, Access::owner());
        assert_eq!(a.csrf, session.csrf);
        let again = s.open_web_session(&link.nonce).unwrap_err();
        assert_eq!(again.code, ErrorCode::Unauthorized);
        assert!(again.message.contains("already used"), "{again:?}");
    }

    #[test]
    fn secrets_are_stored_only_as_hashes() {
        let (_d, s) = svc();
        let link = s.create_signin(None).unwrap();
        let session = s.open_web_session(&link.nonce).unwrap();
        let all = crate::records::scan_all(s.store(), Table::Tokens, "web:").unwrap();
        assert!(!all.is_empty());
        for (k, v) in all {
            let v = String::from_utf8_lossy(&v).to_string();
            for secret in [&link.nonce, &session.id] {
                assert!(!k.contains(secret.as_str()) && !v.contains(secret.as_str()));
            }
        }
    }

    /// Rewrites the expiry of the record under `key` to the past.
    fn expire(s: &Service, key: &str) {
        let raw = s.store().get(Table::Tokens, key).unwrap().unwrap();
        let mut v: serde_json::Value = serde_json::from_slice(&raw).unwrap();
        v["expires_at"] = serde_json::json!("2000-01-01T00:00:00Z");
        let mut b = Batch::new();
        b.put(Table::Tokens, key, serde_json::to_vec(&v).unwrap());
        s.store().commit(b, Durability::Immediate).unwrap();
    }

    #[test]
    fn expired_links_and_sessions_are_refused() {
        let (_d, s) = svc();
        let link = s.create_signin(None).unwrap();
        expire(&s, &nonce_key(&sha256_hex(link.nonce.as_bytes())));
        let e = s.open_web_session(&link.nonce).unwrap_err();
        assert!(e.message.contains("expired"), "{e:?}");
        // The expired link is gone, not left to be tried again.
        assert!(
            s.open_web_session(&link.nonce)
                .unwrap_err()
                .message
                .contains("unknown")
        );

        let link = s.create_signin(None).unwrap();
        let session = s.open_web_session(&link.nonce).unwrap();
        expire(&s, &session_key(&sha256_hex(session.id.as_bytes())));
        let e = s.web_session(&session.id).unwrap_err();
        assert_eq!(e.code, ErrorCode::Unauthorized);
        assert!(e.message.contains("expired"), "{e:?}");
        assert!(
            s.web_session(&session.id)
                .unwrap_err()
                .message
                .contains("not signed in")
        );
    }

    #[test]
    fn a_token_session_has_the_tokens_access_and_ends_with_it() {
        let (_d, s) = svc();
        let t = s
            .create_token(&TokenRequest {
                name: "viewer".into(),
                scopes: vec!["read".into(), "search".into()],
                ..Default::default()
            })
            .unwrap();
        let link = s.create_signin(Some("viewer")).unwrap();
        assert_eq!(link.token.as_deref(), Some("viewer"));
        let session = s.open_web_session(&link.nonce).unwrap();
        let a = s.web_session(&session.id).unwrap().access;
        assert!(a.has(Scope::Read) && !a.has(Scope::Write));
        s.revoke_token(&t.token.id).unwrap();
        assert_eq!(
            s.web_session(&session.id).unwrap_err().code,
            ErrorCode::Unauthorized
        );
        assert_eq!(
            s.create_signin(Some("viewer")).unwrap_err().code,
            ErrorCode::NotFound
        );
    }

    #[test]
    fn signing_out_ends_the_session() {
        let (_d, s) = svc();
        let link = s.create_signin(None).unwrap();
        let session = s.open_web_session(&link.nonce).unwrap();
        s.end_web_session(&session.id).unwrap();
        assert_eq!(
            s.web_session(&session.id).unwrap_err().code,
            ErrorCode::Unauthorized
        );
        assert_eq!(
            s.web_session("forged").unwrap_err().code,
            ErrorCode::Unauthorized
        );
    }
}
