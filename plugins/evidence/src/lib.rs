//! `evidence`: the evidence-required write gate. A proposed memory is
//! allowed only when it says where it comes from (`source`), where it
//! applies (`scope`) and carries at least one piece of supporting
//! evidence, with none contradicting it. Reasons (stable codes):
//! `missing_source`, `missing_scope` (deny), `missing_supporting_evidence`
//! (review by default), `contradicting_evidence` (review by default).
//!
//! Settings: `on_missing_evidence` and `on_contradiction` (`review` or
//! `deny`); `exempt_kinds` (comma separated memory kinds that need no
//! supporting evidence, e.g. `preference`); `require_scope` (default true);
//! `routes` (comma separated write paths it judges: `propose`, `remember`,
//! `batch`, `import`; default `propose`, so direct writes stay direct until
//! the owner asks for more). Reads are not judged (the trait's default
//! allows them).

use mem_plugin_sdk::types::*;
use mem_plugin_sdk::{Policy, config};

pub struct Evidence;

#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub on_missing_evidence: Decision,
    pub on_contradiction: Decision,
    pub exempt_kinds: Vec<String>,
    pub require_scope: bool,
    /// Write paths judged; a write on another path is allowed.
    pub routes: Vec<String>,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            on_missing_evidence: Decision::Review,
            on_contradiction: Decision::Review,
            exempt_kinds: Vec::new(),
            require_scope: true,
            routes: vec!["propose".into()],
        }
    }
}

/// Write paths the host names.
pub const ROUTES: &[&str] = &["propose", "remember", "batch", "import"];

fn list(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

fn parse_routes(value: Option<String>, default: Vec<String>) -> Result<Vec<String>, PluginError> {
    let Some(value) = value.filter(|v| !v.trim().is_empty()) else {
        return Ok(default);
    };
    let routes = list(&value);
    if let Some(bad) = routes.iter().find(|r| !ROUTES.contains(&r.as_str())) {
        return Err(PluginError::new(
            "invalid_config",
            format!("routes: '{bad}' is not one of {}", ROUTES.join(", ")),
        ));
    }
    Ok(routes)
}

fn parse_decision(
    key: &str,
    value: Option<String>,
    default: Decision,
) -> Result<Decision, PluginError> {
    match value.as_deref().map(str::trim) {
        None | Some("") => Ok(default),
        Some("review") => Ok(Decision::Review),
        Some("deny") => Ok(Decision::Deny),
        Some(other) => Err(PluginError::new(
            "invalid_config",
            format!("{key} must be 'review' or 'deny', not '{other}'"),
        )),
    }
}

impl Settings {
    pub fn from_config() -> Result<Self, PluginError> {
        let d = Self::default();
        Ok(Self {
            on_missing_evidence: parse_decision(
                "on_missing_evidence",
                config::get("on_missing_evidence").ok().flatten(),
                d.on_missing_evidence,
            )?,
            on_contradiction: parse_decision(
                "on_contradiction",
                config::get("on_contradiction").ok().flatten(),
                d.on_contradiction,
            )?,
            exempt_kinds: list(&config::get_or("exempt_kinds", String::new())),
            require_scope: config::get_or("require_scope", true),
            routes: parse_routes(config::get("routes").ok().flatten(), d.routes)?,
        })
    }
}

fn severity(d: Decision) -> u8 {
    match d {
        Decision::Allow => 0,
        Decision::Review => 1,
        Decision::Deny => 2,
    }
}

fn blank(s: &Option<String>) -> bool {
    s.as_deref().is_none_or(|s| s.trim().is_empty())
}

/// The verdict on one proposal.
pub fn judge(p: &Proposal, s: &Settings) -> Verdict {
    if !s.routes.contains(&p.route) {
        return Verdict::allow();
    }
    let mut findings: Vec<(Decision, Reason)> = Vec::new();
    if blank(&p.source) {
        findings.push((
            Decision::Deny,
            Reason::new(
                "missing_source",
                "the proposal does not say where the claim comes from (source)",
            ),
        ));
    }
    if s.require_scope && blank(&p.scope) {
        findings.push((
            Decision::Deny,
            Reason::new(
                "missing_scope",
                "the proposal does not say which folder it applies to (scope)",
            ),
        ));
    }
    let usable = |e: &&Evidence_| !e.reference.trim().is_empty();
    let supporting = p
        .evidence
        .iter()
        .filter(usable)
        .filter(|e| e.stance == Stance::Supports)
        .count();
    let contradicting: Vec<&Evidence_> = p
        .evidence
        .iter()
        .filter(usable)
        .filter(|e| e.stance == Stance::Contradicts)
        .collect();
    if supporting == 0 && !s.exempt_kinds.contains(&p.kind) {
        findings.push((
            s.on_missing_evidence,
            Reason::new(
                "missing_supporting_evidence",
                format!("a '{}' needs at least one piece of supporting evidence (a file locator, a memory, a message)", p.kind),
            ),
        ));
    }
    if !contradicting.is_empty() {
        let refs: Vec<&str> = contradicting.iter().map(|e| e.reference.as_str()).collect();
        findings.push((
            s.on_contradiction,
            Reason::new(
                "contradicting_evidence",
                format!("evidence contradicts the claim: {}", refs.join(", ")),
            ),
        ));
    }
    let decision = findings
        .iter()
        .map(|(d, _)| *d)
        .max_by_key(|d| severity(*d))
        .unwrap_or(Decision::Allow);
    Verdict::new(decision, findings.into_iter().map(|(_, r)| r).collect())
}

// The WIT record is named `evidence`, like this plugin.
use mem_plugin_sdk::types::Evidence as Evidence_;

impl Policy for Evidence {
    fn check_write(proposal: Proposal) -> Result<Verdict, PluginError> {
        Ok(judge(&proposal, &Settings::from_config()?))
    }
}

mem_plugin_sdk::export_plugin!(policy: Evidence);

#[cfg(test)]
mod tests {
    use super::*;

    fn proposal() -> Proposal {
        Proposal {
            id: "p1".into(),
            kind: "fact".into(),
            content: "The staging DB is postgres 16".into(),
            scope: Some("/projects/api".into()),
            source: Some("file:/projects/api/README.md".into()),
            agent: Some("claude".into()),
            confidence: 0.9,
            evidence: vec![Evidence_ {
                kind: "file".into(),
                reference: "f1#L3-9".into(),
                excerpt: None,
                stance: Stance::Supports,
            }],
            attributes: vec![],
            route: "propose".into(),
        }
    }

    #[test]
    fn only_the_configured_routes_are_judged() {
        let mut p = proposal();
        p.source = None;
        p.route = "remember".into();
        assert_eq!(judge(&p, &Settings::default()).decision, Decision::Allow);
        let s = Settings {
            routes: parse_routes(Some("propose, remember".into()), vec![]).unwrap(),
            ..Settings::default()
        };
        assert_eq!(judge(&p, &s).decision, Decision::Deny);
        p.route = "batch".into();
        assert_eq!(judge(&p, &s).decision, Decision::Allow);
        assert_eq!(
            parse_routes(Some("mail".into()), vec![]).unwrap_err().code,
            "invalid_config"
        );
    }

    fn codes(v: &Verdict) -> Vec<&str> {
        v.reasons.iter().map(|r| r.code.as_str()).collect()
    }

    #[test]
    fn complete_proposal_is_allowed() {
        let v = judge(&proposal(), &Settings::default());
        assert_eq!(v.decision, Decision::Allow);
        assert!(v.reasons.is_empty());
    }

    #[test]
    fn missing_source_and_scope_deny() {
        let mut p = proposal();
        p.source = None;
        p.scope = Some("  ".into());
        let v = judge(&p, &Settings::default());
        assert_eq!(v.decision, Decision::Deny);
        assert_eq!(codes(&v), vec!["missing_source", "missing_scope"]);
    }

    #[test]
    fn missing_or_contradicting_evidence_goes_to_review_unless_configured() {
        let mut p = proposal();
        p.evidence[0].stance = Stance::Neutral;
        let v = judge(&p, &Settings::default());
        assert_eq!(
            (v.decision, codes(&v)),
            (Decision::Review, vec!["missing_supporting_evidence"])
        );
        let strict = Settings {
            on_missing_evidence: Decision::Deny,
            ..Settings::default()
        };
        assert_eq!(judge(&p, &strict).decision, Decision::Deny);
        let exempt = Settings {
            exempt_kinds: vec!["fact".into()],
            ..Settings::default()
        };
        assert_eq!(judge(&p, &exempt).decision, Decision::Allow);

        let mut p = proposal();
        p.evidence.push(Evidence_ {
            kind: "memory".into(),
            reference: "m9".into(),
            excerpt: None,
            stance: Stance::Contradicts,
        });
        let v = judge(&p, &Settings::default());
        assert_eq!(
            (v.decision, codes(&v)),
            (Decision::Review, vec!["contradicting_evidence"])
        );
        assert!(v.reasons[0].message.contains("m9"));
    }

    #[test]
    fn evidence_without_reference_does_not_count() {
        let mut p = proposal();
        p.evidence[0].reference = " ".into();
        assert_eq!(
            codes(&judge(&p, &Settings::default())),
            vec!["missing_supporting_evidence"]
        );
    }
}
