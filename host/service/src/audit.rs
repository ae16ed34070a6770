//! The audit log: an append-only, hash-chained record of every governed
//! action — who did what to which record, the content hashes before and
//! after, and the verdict with its real source (which policy, which human).
//!
//! Each entry's `hash` covers its body and the previous entry's hash; the
//! chain head (count and last hash) is kept beside the log and updated in
//! the same atomic commit, so an edited entry, a deleted entry and a
//! truncated tail are all detected by [`Service::audit_verify`].

use crate::Service;
use crate::records::{decode, encode, load};
use mem_core::hash::sha256_hex;
use mem_core::store::{Batch, Durability, Log, Table};
use mem_core::time::{Timestamp, now};
use mem_core::{MemError, MemResult};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// The chain head in `Table::Meta` (derived from the log: bundles leave it out).
pub(crate) const HEAD_KEY: &str = "audit_head";
const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// Who acted. The local CLI owner is `human = "owner"`; agents name
/// themselves (and, over HTTP/MCP, their token).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Actor {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub human: Option<String>,
}

impl Actor {
    /// The workspace owner at the local CLI.
    pub fn owner() -> Self {
        Self {
            human: Some("owner".into()),
            ..Default::default()
        }
    }

    pub fn agent(agent_id: Option<String>, session_id: Option<String>) -> Self {
        Self {
            agent_id,
            session_id,
            ..Default::default()
        }
    }

    /// One-line description for audits and provenance.
    pub fn label(&self) -> String {
        if let Some(h) = &self.human {
            return format!("human:{h}");
        }
        if let Some(a) = &self.agent_id {
            // An agent's name is its own claim; the token is who vouched.
            return match &self.token_id {
                Some(t) => format!("agent:{a} token:{t}"),
                None => format!("agent:{a}"),
            };
        }
        if let Some(t) = &self.token_id {
            return format!("token:{t}");
        }
        "unknown".into()
    }
}

/// What an audit entry records before it is chained.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditDraft {
    pub actor: Actor,
    /// e.g. `remember`, `propose`, `approve`, `archive`, `remember-denied`.
    pub action: String,
    pub target: String,
    pub before_sha256: Option<String>,
    pub after_sha256: Option<String>,
    /// `applied`, `auto_approved`, `queued`, `approved`, `rejected`, `denied`.
    pub verdict: String,
    /// Which rule, policy plugin or human decided.
    pub verdict_source: String,
    pub reasons: Vec<String>,
}

/// One entry of the audit log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AuditEntry {
    /// Position in the log (1-based; not covered by the hash, which chains
    /// entries by content instead).
    #[serde(default)]
    pub seq: u64,
    pub at: Timestamp,
    pub actor: Actor,
    pub action: String,
    pub target: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before_sha256: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_sha256: Option<String>,
    pub verdict: String,
    pub verdict_source: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<String>,
    pub prev_hash: String,
    pub hash: String,
}

impl AuditEntry {
    /// The hash this entry must carry: over every field but `seq` and `hash`.
    fn compute_hash(&self) -> MemResult<String> {
        let mut body = self.clone();
        body.seq = 0;
        body.hash = String::new();
        Ok(sha256_hex(&encode(&body)?))
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct ChainHead {
    count: u64,
    hash: String,
}

/// Filters of `audit list`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AuditQuery {
    /// Only entries about this target (a memory, proposal, plugin, token...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// RFC 3339; entries at or after.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::ops::fields::opt_time")]
    pub since: Option<String>,
    /// Only entries of this action, as listed (`remember`, `forgotten`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 128))]
    pub action: Option<String>,
    /// Only entries older than this sequence number: the `seq` of the last
    /// entry of a page gives the next one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub before: Option<u64>,
    /// At most this many, 1 to 10000 (default 100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 10000))]
    pub limit: Option<usize>,
}

/// Outcome of `audit verify`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AuditVerification {
    pub ok: bool,
    pub entries: u64,
    /// The first entry that does not check out (or where one is missing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_bad_seq: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

impl Service {
    /// The chain's head (genesis for an empty log) and its stored bytes,
    /// for the compare-and-swap that appends after it.
    fn chain_head(&self) -> MemResult<(ChainHead, Option<Vec<u8>>)> {
        Ok(
            match load::<ChainHead>(self.store(), Table::Meta, HEAD_KEY)? {
                Some(s) => (s.value, Some(s.raw)),
                None => (
                    ChainHead {
                        count: 0,
                        hash: GENESIS.into(),
                    },
                    None,
                ),
            },
        )
    }

    /// Chains `drafts` after the current head and adds them to `batch`,
    /// with a compare-and-swap on the head so concurrent writers retry.
    pub(crate) fn seal_audit(&self, batch: &mut Batch, drafts: Vec<AuditDraft>) -> MemResult<()> {
        if drafts.is_empty() {
            return Ok(());
        }
        let (mut head, raw) = self.chain_head()?;
        for d in drafts {
            let mut entry = AuditEntry {
                seq: 0,
                at: now(),
                actor: d.actor,
                action: d.action,
                target: d.target,
                before_sha256: d.before_sha256,
                after_sha256: d.after_sha256,
                verdict: d.verdict,
                verdict_source: d.verdict_source,
                reasons: d.reasons,
                prev_hash: head.hash.clone(),
                hash: String::new(),
            };
            entry.hash = entry.compute_hash()?;
            head = ChainHead {
                count: head.count + 1,
                hash: entry.hash.clone(),
            };
            batch.append(Log::Audit, encode(&entry)?);
        }
        batch.expect(Table::Meta, HEAD_KEY, raw);
        batch.put(Table::Meta, HEAD_KEY, encode(&head)?);
        Ok(())
    }

    /// Appends the audit entries of a bundle after this log's head. Each
    /// keeps its content; it keeps its hashes too unless this log already
    /// has entries (tokens created before the import), when it is linked
    /// anew after them, so the chain verifies either way.
    pub(crate) fn stage_imported_audit(
        &self,
        batch: &mut Batch,
        entries: &[Vec<u8>],
    ) -> MemResult<()> {
        if entries.is_empty() {
            return Ok(());
        }
        let (mut head, raw) = self.chain_head()?;
        let relink = head.count > 0;
        for bytes in entries {
            let mut e: AuditEntry = decode(Table::Meta, "audit entry of the bundle", bytes)?;
            if relink {
                e.seq = 0;
                e.prev_hash = head.hash.clone();
                e.hash = e.compute_hash()?;
                batch.append(Log::Audit, encode(&e)?);
            } else {
                batch.append(Log::Audit, bytes.clone());
            }
            head = ChainHead {
                count: head.count + 1,
                hash: e.hash,
            };
        }
        batch.expect(Table::Meta, HEAD_KEY, raw);
        batch.put(Table::Meta, HEAD_KEY, encode(&head)?);
        Ok(())
    }

    /// Records an owner's administrative action (plugins, tokens, index,
    /// rebuilds) in a commit of its own.
    pub(crate) fn audit_admin(
        &self,
        actor: &Actor,
        action: &str,
        target: &str,
        reasons: Vec<String>,
    ) -> MemResult<()> {
        self.audit_denied(AuditDraft {
            actor: actor.clone(),
            action: action.into(),
            target: target.into(),
            before_sha256: None,
            after_sha256: None,
            verdict: "applied".into(),
            verdict_source: actor.label(),
            reasons,
        })
    }

    /// Records a denial on its own (before the caller returns its error).
    pub(crate) fn audit_denied(&self, draft: AuditDraft) -> MemResult<()> {
        crate::records::transact(self.store(), Durability::Immediate, || {
            let mut batch = Batch::new();
            self.seal_audit(&mut batch, vec![draft.clone()])?;
            Ok((batch, ()))
        })
    }

    pub(crate) fn audit_entries(&self) -> MemResult<Vec<AuditEntry>> {
        const PAGE: usize = 1024;
        let mut out = Vec::new();
        let mut after = 0;
        loop {
            let page = self.store().read_log(Log::Audit, after, PAGE)?;
            let done = page.len() < PAGE;
            for (seq, raw) in page {
                let mut e: AuditEntry = decode(Table::Meta, &format!("audit/{seq}"), &raw)?;
                e.seq = seq;
                after = seq;
                out.push(e);
            }
            if done {
                return Ok(out);
            }
        }
    }

    /// Newest first.
    pub(crate) fn audit_list(&self, q: &AuditQuery) -> MemResult<Vec<AuditEntry>> {
        let since = q
            .since
            .as_deref()
            .map(mem_core::time::parse_rfc3339)
            .transpose()?;
        let limit = q.limit.unwrap_or(100);
        if limit == 0 || limit > 10_000 {
            return Err(MemError::bad_request("limit must be 1..=10000"));
        }
        if q.before == Some(0) {
            return Err(MemError::bad_request("before must be 1 or more")
                .with_hint("pass the seq of the last entry of the previous page"));
        }
        if q.action.as_ref().is_some_and(|a| a.chars().count() > 128) {
            return Err(MemError::bad_request(
                "action is longer than 128 characters",
            ));
        }
        let action = q.action.as_deref().map(str::trim).filter(|a| !a.is_empty());
        let mut entries: Vec<AuditEntry> = self
            .audit_entries()?
            .into_iter()
            .filter(|e| q.before.is_none_or(|b| e.seq < b))
            .filter(|e| action.is_none_or(|a| e.action == a))
            .filter(|e| q.target.as_ref().is_none_or(|t| &e.target == t))
            .filter(|e| since.is_none_or(|s| e.at >= s))
            .collect();
        entries.reverse();
        entries.truncate(limit);
        Ok(entries)
    }

    pub(crate) fn audit_show(&self, seq: u64) -> MemResult<AuditEntry> {
        let page = self
            .store()
            .read_log(Log::Audit, seq.saturating_sub(1), 1)?;
        match page.into_iter().next() {
            Some((s, raw)) if s == seq => {
                let mut e: AuditEntry = decode(Table::Meta, &format!("audit/{seq}"), &raw)?;
                e.seq = s;
                Ok(e)
            }
            _ => Err(MemError::not_found("audit entry", &seq.to_string())
                .with_hint("`mem-host audit list` shows entries")),
        }
    }

    /// Walks the chain: recomputes every hash, checks every link and the
    /// head. Names the first entry that fails.
    pub(crate) fn audit_verify(&self) -> MemResult<AuditVerification> {
        let entries = self.audit_entries()?;
        let head = load::<ChainHead>(self.store(), Table::Meta, HEAD_KEY)?.map(|s| s.value);
        let bad = |seq: u64, problem: String, n: u64| AuditVerification {
            ok: false,
            entries: n,
            first_bad_seq: Some(seq),
            problem: Some(problem),
        };
        let n = entries.len() as u64;
        let mut prev = GENESIS.to_string();
        for (expected_seq, e) in (1u64..).zip(entries.iter()) {
            if e.seq != expected_seq {
                return Ok(bad(
                    expected_seq,
                    format!("entry {expected_seq} is missing (next is {})", e.seq),
                    n,
                ));
            }
            if e.prev_hash != prev {
                return Ok(bad(
                    e.seq,
                    "does not link to the entry before it (an entry was removed or replaced)"
                        .into(),
                    n,
                ));
            }
            if e.compute_hash()? != e.hash {
                return Ok(bad(
                    e.seq,
                    "content does not match its hash (the entry was edited)".into(),
                    n,
                ));
            }
            prev = e.hash.clone();
        }
        match head {
            Some(h) if h.count != n || h.hash != prev => Ok(bad(
                n + 1,
                format!(
                    "the log ends after {n} entries but {} were written (entries were truncated)",
                    h.count
                ),
                n,
            )),
            None if n > 0 => Ok(bad(1, "the chain head is missing".into(), n)),
            _ => Ok(AuditVerification {
                ok: true,
                entries: n,
                first_bad_seq: None,
                problem: None,
            }),
        }
    }
}

/// A short JSON form of a draft's verdict for error details.
pub(crate) fn verdict_details(
    verdict: &str,
    source: &str,
    reasons: &[String],
) -> serde_json::Value {
    json!({ "verdict": verdict, "verdict_source": source, "reasons": reasons })
}
