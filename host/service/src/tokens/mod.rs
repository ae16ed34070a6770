//! API tokens (mem SPEC F7): who may call over HTTP and MCP, for which
//! operations, on which paths, how often. The secret is shown once at
//! creation; only its SHA-256 is stored, so a copy of the store grants
//! nothing.

use crate::Service;
use crate::access::{Access, Scope};
use crate::records::{encode, load, scan_all};
use chrono::{Duration, NaiveTime, Utc};
use mem_core::hash::sha256_hex;
use mem_core::id::new_id;
use mem_core::path::VPath;
use mem_core::store::{Batch, Durability, Table};
use mem_core::time::{Timestamp, now, parse_rfc3339};
use mem_core::{ErrorCode, MemError, MemResult};
use serde::{Deserialize, Serialize};

mod calls;
pub(crate) use calls::CallCounts;

/// Secrets look like `memtok_<64 hex>`; the prefix lets secret scanners
/// and people recognise a leaked one.
const SECRET_PREFIX: &str = "memtok_";
const ID_PREFIX: &str = "tok";

/// What `token create` asks for.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TokenRequest {
    /// A name to recognise the token by (unique among live tokens).
    #[schemars(length(min = 1, max = 64), regex(pattern = r"\S"))]
    pub name: String,
    /// `search`, `read`, `write`, `delete`, `admin` (admin implies all).
    #[schemars(schema_with = "crate::ops::fields::scopes")]
    pub scopes: Vec<String>,
    /// Folders the token is confined to (empty: the whole workspace).
    #[serde(default)]
    #[schemars(schema_with = "crate::ops::fields::paths")]
    pub paths: Vec<String>,
    /// `30d`, `12h`, `45m`, `60s` from now, or a future RFC 3339 instant.
    #[serde(default)]
    #[schemars(schema_with = "crate::ops::fields::opt_expiry")]
    pub expires: Option<String>,
    /// Calls per UTC day (`1000` or `1000/day`).
    #[serde(default)]
    #[schemars(extend("pattern" = "^[1-9][0-9]{0,17}(/day)?$"))]
    pub quota: Option<String>,
}

/// A token as listed: everything but the secret.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TokenInfo {
    pub id: String,
    pub name: String,
    pub scopes: Vec<Scope>,
    pub paths: Vec<String>,
    pub created_at: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quota_per_day: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoked_at: Option<Timestamp>,
    /// Calls made today (UTC); they count against the quota when one is set.
    #[serde(default)]
    pub calls_today: u64,
}

/// The answer to `token create`: the only time the secret is visible.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CreatedToken {
    pub token: TokenInfo,
    pub secret: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct TokenRecord {
    id: String,
    name: String,
    scopes: Vec<Scope>,
    paths: Vec<String>,
    created_at: Timestamp,
    expires_at: Option<Timestamp>,
    quota_per_day: Option<u64>,
    revoked_at: Option<Timestamp>,
    secret_sha256: String,
}

fn record_key(id: &str) -> String {
    format!("id:{id}")
}
fn secret_key(sha: &str) -> String {
    format!("sha:{sha}")
}
fn usage_key(id: &str, day: &str) -> String {
    format!("use:{id}:{day}")
}
fn today() -> String {
    Utc::now().format("%Y-%m-%d").to_string()
}

/// Seconds until the next UTC midnight, when daily quotas reset.
fn seconds_to_midnight() -> u64 {
    let now = Utc::now();
    let midnight = (now.date_naive() + Duration::days(1)).and_time(NaiveTime::MIN);
    let secs = (midnight.and_utc() - now).num_seconds();
    u64::try_from(secs.max(1)).unwrap_or(1)
}

/// `30d` / `12h` / `45m` / `60s` from now, or an RFC 3339 instant.
fn parse_expiry(s: &str) -> MemResult<Timestamp> {
    let s = s.trim();
    let bad = || {
        MemError::bad_request(format!("bad expiry {s:?}"))
            .with_hint("use a duration such as 30d, 12h or 45m, or an RFC 3339 time")
    };
    if let Some(unit) = s.chars().last().filter(|c| c.is_ascii_alphabetic())
        && s.len() > 1
        && !s.contains('T')
    {
        let n: i64 = s[..s.len() - 1].parse().map_err(|_| bad())?;
        let d = match unit {
            'd' => Duration::try_days(n),
            'h' => Duration::try_hours(n),
            'm' => Duration::try_minutes(n),
            's' => Duration::try_seconds(n),
            _ => None,
        }
        .filter(|d| *d > Duration::zero())
        .ok_or_else(bad)?;
        return now().checked_add_signed(d).ok_or_else(bad);
    }
    let t = parse_rfc3339(s).map_err(|_| bad())?;
    if t <= now() {
        return Err(MemError::new(
            ErrorCode::Unprocessable,
            format!("expiry {s:?} is in the past"),
        )
        .with_hint("give a future time, or a lifetime such as 30d"));
    }
    Ok(t)
}

/// `1000` or `1000/day`.
fn parse_quota(s: &str) -> MemResult<u64> {
    let n = s.strip_suffix("/day").unwrap_or(s);
    match n.trim().parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(MemError::bad_request(format!("bad quota {s:?}"))
            .with_hint("give calls per day as a positive number, e.g. 1000 or 1000/day")),
    }
}

fn new_secret() -> MemResult<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)
        .map_err(|e| MemError::internal(format!("no randomness for a token secret: {e}")))?;
    Ok(format!(
        "{SECRET_PREFIX}{}",
        bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()
    ))
}

fn unauthorized(message: impl Into<String>) -> MemError {
    MemError::new(ErrorCode::Unauthorized, message)
        .with_hint("send `Authorization: Bearer <secret>` with a live token; the owner creates one with `mem-host token create`")
}

impl Service {
    /// Creates a token. Admin only (the local CLI owner, or an admin token).
    pub(crate) fn create_token(&self, req: &TokenRequest) -> MemResult<CreatedToken> {
        let name = req.name.trim();
        if name.is_empty() || name.chars().count() > 64 {
            return Err(MemError::bad_request(
                "a token needs a name of 1..=64 characters",
            ));
        }
        if req.scopes.is_empty() {
            return Err(MemError::bad_request("a token needs at least one scope")
                .with_hint("scopes: search, read, write, delete, admin"));
        }
        let mut scopes = req
            .scopes
            .iter()
            .map(|s| Scope::parse(s))
            .collect::<MemResult<Vec<_>>>()?;
        scopes.sort();
        scopes.dedup();
        let mut paths = req
            .paths
            .iter()
            .map(|p| VPath::parse(p.trim()).map(|p| p.as_str().to_string()))
            .collect::<MemResult<Vec<_>>>()?;
        paths.sort();
        paths.dedup();
        let expires_at = req.expires.as_deref().map(parse_expiry).transpose()?;
        let quota_per_day = req.quota.as_deref().map(parse_quota).transpose()?;
        if self
            .tokens()?
            .iter()
            .any(|t| t.name == name && t.revoked_at.is_none())
        {
            return Err(MemError::new(
                ErrorCode::AlreadyExists,
                format!("a live token named {name:?} exists"),
            )
            .with_hint("revoke it first, or choose another name"));
        }
        let secret = new_secret()?;
        let rec = TokenRecord {
            id: new_id(ID_PREFIX),
            name: name.to_string(),
            scopes,
            paths,
            created_at: now(),
            expires_at,
            quota_per_day,
            revoked_at: None,
            secret_sha256: sha256_hex(secret.as_bytes()),
        };
        let mut b = Batch::new();
        b.expect(Table::Tokens, secret_key(&rec.secret_sha256), None)
            .put(
                Table::Tokens,
                secret_key(&rec.secret_sha256),
                rec.id.clone().into_bytes(),
            )
            .put(Table::Tokens, record_key(&rec.id), encode(&rec)?);
        self.store().commit(b, Durability::Immediate)?;
        Ok(CreatedToken {
            token: self.info(rec, 0),
            secret,
        })
    }

    /// Every token, newest first, revoked ones included.
    pub(crate) fn list_tokens(&self) -> MemResult<Vec<TokenInfo>> {
        let day = today();
        let mut out = Vec::new();
        for rec in self.tokens()? {
            let used = self.usage(&rec.id, &day)?;
            out.push(self.info(rec, used));
        }
        out.sort_by(|a, b| b.id.cmp(&a.id));
        Ok(out)
    }

    /// A token by id, or the newest live token of that name.
    pub(crate) fn find_token(&self, id_or_name: &str) -> MemResult<TokenInfo> {
        let rec = self.find_token_record(id_or_name)?;
        let used = self.usage(&rec.id, &today())?;
        Ok(self.info(rec, used))
    }

    fn find_token_record(&self, id_or_name: &str) -> MemResult<TokenRecord> {
        self.tokens()?
            .into_iter()
            .filter(|t| t.id == id_or_name || (t.name == id_or_name && t.revoked_at.is_none()))
            .max_by(|a, b| a.id.cmp(&b.id))
            .ok_or_else(|| {
                MemError::not_found("token", id_or_name)
                    .with_hint("`mem-host token list` shows token ids and names")
            })
    }

    /// Revokes a token by id or by (live) name. Takes effect on its next call.
    pub(crate) fn revoke_token(&self, id_or_name: &str) -> MemResult<TokenInfo> {
        let rec = self.find_token_record(id_or_name)?;
        if rec.revoked_at.is_some() {
            return Err(MemError::new(
                ErrorCode::InvalidState,
                format!("token {} is already revoked", rec.id),
            ));
        }
        let mut rec = rec;
        rec.revoked_at = Some(now());
        let mut b = Batch::new();
        b.put(Table::Tokens, record_key(&rec.id), encode(&rec)?);
        self.store().commit(b, Durability::Immediate)?;
        let used = self.usage(&rec.id, &today())?;
        Ok(self.info(rec, used))
    }

    /// Resolves a bearer secret to what it may do, counting the call
    /// against the token's daily quota. Unknown, revoked or expired →
    /// `unauthorized`; quota spent → `quota_exceeded` with `retry_after`.
    pub fn authenticate(&self, secret: &str) -> MemResult<Access> {
        let sha = sha256_hex(secret.trim().as_bytes());
        let id = match self.store().get(Table::Tokens, &secret_key(&sha))? {
            Some(id) => String::from_utf8_lossy(&id).to_string(),
            None => return Err(unauthorized("unknown token")),
        };
        self.token_access(&id)
    }

    /// What the live token `id` may do, counting the call against its
    /// quota: the bearer path above and the web page's sessions, which
    /// keep only the token's id, share every check.
    pub(crate) fn token_access(&self, id: &str) -> MemResult<Access> {
        let rec = load::<TokenRecord>(self.store(), Table::Tokens, &record_key(id))?
            .ok_or_else(|| unauthorized("unknown token"))?
            .value;
        if let Some(at) = rec.revoked_at {
            return Err(unauthorized(format!(
                "token {:?} was revoked at {}",
                rec.name,
                mem_core::time::to_rfc3339(&at)
            )));
        }
        if let Some(at) = rec.expires_at.filter(|at| *at <= now()) {
            return Err(unauthorized(format!(
                "token {:?} expired at {}",
                rec.name,
                mem_core::time::to_rfc3339(&at)
            )));
        }
        self.count_call(&rec, rec.quota_per_day)?;
        Access::token(rec.id, rec.name, rec.scopes, rec.paths)
    }

    fn tokens(&self) -> MemResult<Vec<TokenRecord>> {
        scan_all(self.store(), Table::Tokens, "id:")?
            .into_iter()
            .map(|(k, v)| crate::records::decode(Table::Tokens, &k, &v))
            .collect()
    }

    fn info(&self, r: TokenRecord, calls_today: u64) -> TokenInfo {
        TokenInfo {
            id: r.id,
            name: r.name,
            scopes: r.scopes,
            paths: r.paths,
            created_at: r.created_at,
            expires_at: r.expires_at,
            quota_per_day: r.quota_per_day,
            revoked_at: r.revoked_at,
            calls_today,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn svc() -> (tempfile::TempDir, Service) {
        crate::tests::service()
    }

    fn req(name: &str, scopes: &[&str]) -> TokenRequest {
        TokenRequest {
            name: name.into(),
            scopes: scopes.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn only_the_hash_is_stored_and_the_secret_authenticates() {
        let (_d, s) = svc();
        let t = s.create_token(&req("ci", &["search", "read"])).unwrap();
        assert!(t.secret.starts_with(SECRET_PREFIX));
        let all = crate::records::scan_all(s.store(), Table::Tokens, "").unwrap();
        assert!(all.iter().all(
            |(k, v)| !k.contains(&t.secret) && !String::from_utf8_lossy(v).contains(&t.secret)
        ));
        let a = s.authenticate(&t.secret).unwrap();
        assert!(a.has(Scope::Read) && !a.has(Scope::Write));
        let e = s.authenticate("memtok_wrong").unwrap_err();
        assert_eq!(e.code, ErrorCode::Unauthorized);
    }

    #[test]
    fn revoked_and_expired_tokens_are_unauthorized() {
        let (_d, s) = svc();
        let t = s.create_token(&req("a", &["read"])).unwrap();
        s.revoke_token("a").unwrap();
        assert_eq!(
            s.authenticate(&t.secret).unwrap_err().code,
            ErrorCode::Unauthorized
        );
        assert_eq!(
            s.revoke_token(&t.token.id).unwrap_err().code,
            ErrorCode::InvalidState
        );
        // A past expiry is refused at creation; an expired record is refused at use.
        let mut r = req("b", &["read"]);
        r.expires = Some("2000-01-01T00:00:00Z".into());
        assert_eq!(
            s.create_token(&r).unwrap_err().code,
            ErrorCode::Unprocessable
        );
        r.expires = Some("1s".into());
        let t = s.create_token(&r).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(1100));
        let e = s.authenticate(&t.secret).unwrap_err();
        assert_eq!(e.code, ErrorCode::Unauthorized);
        assert!(e.message.contains("expired"), "{e:?}");
    }

    #[test]
    fn a_damaged_path_boundary_is_refused_not_dropped() {
        let (_d, s) = svc();
        let mut r = req("scoped", &["read"]);
        r.paths = vec!["/a".into()];
        let t = s.create_token(&r).unwrap();
        let key = record_key(&t.token.id);
        let mut rec: TokenRecord =
            serde_json::from_slice(&s.store().get(Table::Tokens, &key).unwrap().unwrap()).unwrap();
        rec.paths = vec!["not/absolute".into()];
        let mut b = Batch::new();
        b.put(Table::Tokens, key, encode(&rec).unwrap());
        s.store().commit(b, Durability::Immediate).unwrap();
        let e = s.authenticate(&t.secret).unwrap_err();
        assert_eq!(e.code, ErrorCode::StoreCorrupt, "{e:?}");
    }

    #[test]
    fn quota_counts_calls_and_says_when_to_retry() {
        let (_d, s) = svc();
        let mut r = req("q", &["search"]);
        r.quota = Some("2/day".into());
        let t = s.create_token(&r).unwrap();
        s.authenticate(&t.secret).unwrap();
        s.authenticate(&t.secret).unwrap();
        let e = s.authenticate(&t.secret).unwrap_err();
        assert_eq!(e.code, ErrorCode::QuotaExceeded);
        assert!(e.details["retry_after"].as_u64().unwrap() > 0);
        assert_eq!(s.list_tokens().unwrap()[0].calls_today, 2);
    }

    #[test]
    fn calls_are_counted_for_a_token_without_a_quota() {
        let (_d, s) = svc();
        let t = s.create_token(&req("free", &["search"])).unwrap();
        for _ in 0..3 {
            s.authenticate(&t.secret).unwrap();
        }
        assert_eq!(s.list_tokens().unwrap()[0].calls_today, 3);
    }

    #[test]
    fn a_worker_process_holds_free_calls_until_it_saves_and_enforces_quotas_at_once() {
        let (_d, s) = svc();
        s.worker
            .running
            .store(true, std::sync::atomic::Ordering::Relaxed);
        let free = s.create_token(&req("free", &["search"])).unwrap();
        let mut r = req("metered", &["search"]);
        r.quota = Some("2/day".into());
        let metered = s.create_token(&r).unwrap();
        let stored = |id: &str| {
            s.store()
                .get(Table::Tokens, &usage_key(id, &today()))
                .unwrap()
        };
        for _ in 0..5 {
            s.authenticate(&free.secret).unwrap();
        }
        assert_eq!(stored(&free.token.id), None, "held, not a commit per call");
        assert_eq!(s.find_token("free").unwrap().calls_today, 5);
        s.flush().unwrap();
        assert_eq!(stored(&free.token.id).as_deref(), Some(&b"5"[..]));
        s.authenticate(&free.secret).unwrap();
        assert_eq!(s.find_token("free").unwrap().calls_today, 6);
        // A quota is counted in the store as each call is made (hosts
        // sharing it grant no more than the quota between them).
        s.authenticate(&metered.secret).unwrap();
        assert_eq!(stored(&metered.token.id).as_deref(), Some(&b"1"[..]));
        s.authenticate(&metered.secret).unwrap();
        let e = s.authenticate(&metered.secret).unwrap_err();
        assert_eq!(e.code, ErrorCode::QuotaExceeded);
    }

    #[test]
    fn bad_requests_name_the_problem() {
        let (_d, s) = svc();
        for (r, what) in [
            (req("x", &["fly"]), "scope"),
            (req("", &["read"]), "name"),
            (req("x", &[]), "scope"),
        ] {
            let e = s.create_token(&r).unwrap_err();
            assert_eq!(e.code, ErrorCode::BadRequest);
            assert!(e.message.contains(what) || e.hint.contains(what), "{e:?}");
        }
        let mut r = req("x", &["read"]);
        r.paths = vec!["relative".into()];
        assert_eq!(s.create_token(&r).unwrap_err().code, ErrorCode::BadPath);
        let mut r = req("x", &["read"]);
        r.quota = Some("0".into());
        assert_eq!(s.create_token(&r).unwrap_err().code, ErrorCode::BadRequest);
        s.create_token(&req("dup", &["read"])).unwrap();
        assert_eq!(
            s.create_token(&req("dup", &["read"])).unwrap_err().code,
            ErrorCode::AlreadyExists
        );
    }
}
