//! Timestamps: UTC, RFC 3339 with millisecond precision on the wire.

use chrono::{DateTime, SecondsFormat, Utc};

pub type Timestamp = DateTime<Utc>;

pub fn now() -> Timestamp {
    Utc::now()
}

pub fn to_rfc3339(t: &Timestamp) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// Parses an RFC 3339 timestamp (any offset) into UTC.
pub fn parse_rfc3339(s: &str) -> Result<Timestamp, crate::MemError> {
    DateTime::parse_from_rfc3339(s.trim())
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| {
            crate::MemError::bad_request(format!("bad timestamp {s:?}: {e}"))
                .with_hint("use RFC 3339, e.g. 2026-11-30T12:00:00Z")
        })
}
