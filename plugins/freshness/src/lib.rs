//! `freshness`: a read policy (Mnemosyne's ReadGate). An item is withheld
//! from a read when it is older than its kind allows (`stale`), not active
//! (`status_blocked`), or carries a risk level above the allowed one
//! (`risk_blocked`). Writes are not judged (the trait's default allows).
//!
//! Settings (`[plugins.freshness] config`):
//! - `max_age_days`: comma-separated `kind=days` (e.g.
//!   `task_state=30,observation=365`); the age is taken from the event time,
//!   else the write time. Kinds not listed never go stale.
//! - `risk_attribute` (default `risk`): the attribute holding the level.
//! - `max_risk` (default `high`): the highest level served, one of
//!   `low`, `medium`, `high`, `critical`. An unknown level is withheld.
//! - `serve_inactive` (default false): serve archived/superseded items.

use mem_plugin_sdk::types::*;
use mem_plugin_sdk::{Policy, config};

pub struct Freshness;

/// Risk levels, lowest first.
pub const RISK_LEVELS: &[&str] = &["low", "medium", "high", "critical"];

const DAY_MS: i64 = 24 * 60 * 60 * 1000;

#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub max_age_days: Vec<(String, i64)>,
    pub risk_attribute: String,
    pub max_risk: usize,
    pub serve_inactive: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            max_age_days: Vec::new(),
            risk_attribute: "risk".into(),
            max_risk: 2,
            serve_inactive: false,
        }
    }
}

fn invalid(message: String) -> PluginError {
    PluginError::new("invalid_config", message)
}

impl Settings {
    /// Parses the settings from their text values (unset keys default).
    pub fn parse(
        max_age_days: &str,
        risk_attribute: Option<&str>,
        max_risk: Option<&str>,
        serve_inactive: bool,
    ) -> Result<Self, PluginError> {
        let d = Self::default();
        let mut ages = Vec::new();
        for pair in max_age_days
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
        {
            let (kind, days) = pair
                .split_once('=')
                .ok_or_else(|| invalid(format!("max_age_days entry '{pair}' is not kind=days")))?;
            let days: i64 = days
                .trim()
                .parse()
                .ok()
                .filter(|d| *d >= 0)
                .ok_or_else(|| {
                    invalid(format!(
                        "max_age_days for '{kind}' is not a whole number of days"
                    ))
                })?;
            ages.push((kind.trim().to_string(), days));
        }
        let max_risk = match max_risk.map(str::trim) {
            None | Some("") => d.max_risk,
            Some(level) => RISK_LEVELS
                .iter()
                .position(|l| *l == level)
                .ok_or_else(|| {
                    invalid(format!(
                        "max_risk '{level}' is not one of {}",
                        RISK_LEVELS.join(", ")
                    ))
                })?,
        };
        Ok(Self {
            max_age_days: ages,
            risk_attribute: risk_attribute
                .map(str::trim)
                .filter(|a| !a.is_empty())
                .map_or(d.risk_attribute, str::to_string),
            max_risk,
            serve_inactive,
        })
    }

    fn from_config() -> Result<Self, PluginError> {
        Self::parse(
            &config::get_or("max_age_days", String::new()),
            config::get("risk_attribute").ok().flatten().as_deref(),
            config::get("max_risk").ok().flatten().as_deref(),
            config::get_or("serve_inactive", false),
        )
    }
}

/// The verdict on one item read at `now_ms`.
pub fn judge(item: &ReadItem, now_ms: i64, s: &Settings) -> Verdict {
    let deny = |code: &str, message: String| {
        Verdict::new(Decision::Deny, vec![Reason::new(code, message)])
    };
    if item.lifecycle != "active" && !s.serve_inactive {
        return deny(
            "status_blocked",
            format!("the item is {}, not active", item.lifecycle),
        );
    }
    if let Some((_, days)) = s.max_age_days.iter().find(|(k, _)| *k == item.kind) {
        let age_days = (now_ms - item.event_at_ms.unwrap_or(item.created_at_ms)) / DAY_MS;
        if age_days > *days {
            return deny(
                "stale",
                format!(
                    "a '{}' older than {days} days is stale (this one is {age_days})",
                    item.kind
                ),
            );
        }
    }
    if let Some((_, level)) = item.attributes.iter().find(|(k, _)| *k == s.risk_attribute) {
        let allowed = RISK_LEVELS[s.max_risk];
        match RISK_LEVELS.iter().position(|l| *l == level.trim()) {
            Some(rank) if rank <= s.max_risk => {}
            Some(_) => {
                return deny(
                    "risk_blocked",
                    format!("risk '{level}' is above the served '{allowed}'"),
                );
            }
            None => {
                return deny(
                    "risk_blocked",
                    format!(
                        "risk '{level}' is not a known level ({})",
                        RISK_LEVELS.join(", ")
                    ),
                );
            }
        }
    }
    Verdict::allow()
}

impl Policy for Freshness {
    fn check_read(item: ReadItem, request: ReadRequest) -> Result<Verdict, PluginError> {
        Ok(judge(&item, request.now_ms, &Settings::from_config()?))
    }
}

mem_plugin_sdk::export_plugin!(policy: Freshness);

#[cfg(test)]
mod tests {
    use super::*;

    fn item(kind: &str, age_days: i64, attrs: &[(&str, &str)]) -> ReadItem {
        ReadItem {
            id: "m".into(),
            kind: kind.into(),
            role: None,
            path: "/".into(),
            lifecycle: "active".into(),
            confidence: 1.0,
            created_at_ms: 1_000 * DAY_MS - age_days * DAY_MS,
            event_at_ms: None,
            tags: vec![],
            source: None,
            attributes: attrs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            pinned: false,
        }
    }

    fn code(v: &Verdict) -> Option<&str> {
        v.reasons.first().map(|r| r.code.as_str())
    }

    #[test]
    fn age_per_kind_makes_an_item_stale() {
        let s = Settings::parse("task_state=30, observation = 365", None, None, false).unwrap();
        let now = 1_000 * DAY_MS;
        assert_eq!(
            judge(&item("task_state", 31, &[]), now, &s).decision,
            Decision::Deny
        );
        assert_eq!(
            code(&judge(&item("task_state", 31, &[]), now, &s)),
            Some("stale")
        );
        assert_eq!(
            judge(&item("task_state", 29, &[]), now, &s).decision,
            Decision::Allow
        );
        assert_eq!(
            judge(&item("fact", 900, &[]), now, &s).decision,
            Decision::Allow
        );
    }

    #[test]
    fn risk_above_the_served_level_is_blocked_and_unknown_levels_too() {
        let s = Settings::parse("", None, Some("medium"), false).unwrap();
        let now = 1_000 * DAY_MS;
        assert_eq!(
            judge(&item("fact", 0, &[("risk", "low")]), now, &s).decision,
            Decision::Allow
        );
        assert_eq!(
            code(&judge(&item("fact", 0, &[("risk", "high")]), now, &s)),
            Some("risk_blocked")
        );
        assert_eq!(
            code(&judge(&item("fact", 0, &[("risk", "huge")]), now, &s)),
            Some("risk_blocked")
        );
    }

    #[test]
    fn inactive_items_are_blocked_unless_served() {
        let mut i = item("fact", 0, &[]);
        i.lifecycle = "archived".into();
        let now = 1_000 * DAY_MS;
        let s = Settings::default();
        assert_eq!(code(&judge(&i, now, &s)), Some("status_blocked"));
        let s = Settings::parse("", None, None, true).unwrap();
        assert_eq!(judge(&i, now, &s).decision, Decision::Allow);
    }

    #[test]
    fn bad_settings_are_refused_with_a_code() {
        assert_eq!(
            Settings::parse("task_state", None, None, false)
                .unwrap_err()
                .code,
            "invalid_config"
        );
        assert_eq!(
            Settings::parse("x=-1", None, None, false).unwrap_err().code,
            "invalid_config"
        );
        assert_eq!(
            Settings::parse("", None, Some("extreme"), false)
                .unwrap_err()
                .code,
            "invalid_config"
        );
    }
}
