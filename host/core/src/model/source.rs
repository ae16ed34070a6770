//! Source metadata: what the person or agent putting a file says about
//! where and when it comes from (mem SPEC F1). It outranks whatever a
//! processor later reads from the content, so it is decoded strictly: a
//! guess never enters the record.
//!
//! It travels as JSON *text* (a header, a form field, a request field) and
//! is decoded from the text itself, so a field given twice is refused
//! rather than silently keeping the last one.

use crate::error::{ErrorCode, MemError};
use chrono::{DateTime, FixedOffset};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::json;

/// Longest source metadata text accepted, in bytes.
pub const MAX_SOURCE_METADATA_BYTES: usize = 4096;
/// Longest place, source kind or source name, in characters.
pub const MAX_SOURCE_TEXT_CHARS: usize = 512;
/// Longest believable location accuracy (metres): half the equator.
const MAX_ACCURACY_M: f64 = 20_037_508.0;

/// Where and when a file comes from, as its uploader says.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SourceMetadata {
    /// When the content was made, RFC 3339 with its zone offset (kept as
    /// given: the offset says the local time of the place).
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub captured_at: Option<String>,
    /// Latitude in degrees, -90 to 90 (with `lon`).
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub lat: Option<f64>,
    /// Longitude in degrees, -180 to 180 (with `lat`).
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub lon: Option<f64>,
    /// How far off the position may be, in metres.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub location_accuracy: Option<f64>,
    /// A place name, e.g. "Lisbon".
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub place: Option<String>,
    /// What kind of source, e.g. `camera`, `scan`, `web`, `export`.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub source_kind: Option<String>,
    /// Which source, e.g. a device, an application or a site.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub source_name: Option<String>,
}

/// A field that is given must have a value: an explicit `null` is refused
/// (it would read as "unknown" and "not given" alike).
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

fn bad(message: impl Into<String>, field: Option<&str>) -> MemError {
    let e = MemError::new(ErrorCode::BadSourceMetadata, message);
    match field {
        Some(f) => e.with_details(json!({ "field": f })),
        None => e,
    }
}

impl SourceMetadata {
    /// Decodes and checks source metadata given as JSON text.
    pub fn parse(text: &str) -> Result<Self, MemError> {
        if text.len() > MAX_SOURCE_METADATA_BYTES {
            return Err(bad(
                format!(
                    "source metadata is {} bytes; at most {MAX_SOURCE_METADATA_BYTES} are accepted",
                    text.len()
                ),
                None,
            ));
        }
        // serde would read a struct from an array too.
        if !text.trim_start().starts_with('{') {
            return Err(bad("source metadata must be a JSON object", None));
        }
        let meta: Self = serde_json::from_str(text)
            .map_err(|e| bad(format!("source metadata is not accepted: {e}"), None))?;
        meta.check()?;
        Ok(meta)
    }

    /// True when no field is given.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// The capture time, when given (checked to carry a zone).
    pub fn captured(&self) -> Option<DateTime<FixedOffset>> {
        self.captured_at
            .as_deref()
            .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
    }

    /// The rules no JSON type states: ranges, pairs, zones, clean text.
    pub fn check(&self) -> Result<(), MemError> {
        if let Some(t) = &self.captured_at
            && DateTime::parse_from_rfc3339(t).is_err()
        {
            return Err(bad(
                format!("captured_at {t:?} is not an RFC 3339 time with a zone"),
                Some("captured_at"),
            )
            .with_hint("give the offset, e.g. 2012-03-04T10:00:00+01:00 or ...Z"));
        }
        match (self.lat, self.lon) {
            (Some(lat), Some(lon)) => {
                if !(-90.0..=90.0).contains(&lat) {
                    return Err(bad(format!("lat {lat} is outside -90..90"), Some("lat")));
                }
                if !(-180.0..=180.0).contains(&lon) {
                    return Err(bad(format!("lon {lon} is outside -180..180"), Some("lon")));
                }
            }
            (None, None) => {
                if self.location_accuracy.is_some() {
                    return Err(bad(
                        "location_accuracy is given without a position",
                        Some("location_accuracy"),
                    )
                    .with_hint("give lat and lon with it, or leave it out"));
                }
            }
            (Some(_), None) | (None, Some(_)) => {
                return Err(bad("a position needs both lat and lon", Some("lat"))
                    .with_hint("give lat and lon together"));
            }
        }
        if let Some(a) = self.location_accuracy
            && !(0.0..=MAX_ACCURACY_M).contains(&a)
        {
            return Err(bad(
                format!("location_accuracy {a} is not 0 to {MAX_ACCURACY_M} metres"),
                Some("location_accuracy"),
            ));
        }
        for (name, value) in [
            ("captured_at", &self.captured_at),
            ("place", &self.place),
            ("source_kind", &self.source_kind),
            ("source_name", &self.source_name),
        ] {
            let Some(v) = value else { continue };
            if v.trim().is_empty() {
                return Err(bad(format!("{name} is empty"), Some(name)));
            }
            if v.chars().any(char::is_control) {
                return Err(bad(
                    format!("{name} contains control characters"),
                    Some(name),
                ));
            }
            if v.chars().count() > MAX_SOURCE_TEXT_CHARS {
                return Err(bad(
                    format!("{name} is longer than {MAX_SOURCE_TEXT_CHARS} characters"),
                    Some(name),
                ));
            }
        }
        Ok(())
    }

    /// The metadata as compact JSON text (what [`Self::parse`] reads).
    pub fn to_text(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(text: &str) {
        let e = SourceMetadata::parse(text).expect_err(text);
        assert_eq!(e.code, ErrorCode::BadSourceMetadata, "{text}: {e:?}");
    }

    #[test]
    fn a_complete_record_round_trips() {
        let text = r#"{"captured_at":"2012-03-04T10:00:00+01:00","lat":38.7,"lon":-9.1,"location_accuracy":12.5,"place":"Lisbon","source_kind":"camera","source_name":"Pixel"}"#;
        let m = SourceMetadata::parse(text).unwrap();
        assert_eq!(m.place.as_deref(), Some("Lisbon"));
        assert_eq!(SourceMetadata::parse(&m.to_text()).unwrap(), m);
        assert_eq!(m.captured().unwrap().offset().local_minus_utc(), 3600);
    }

    #[test]
    fn hostile_source_metadata_is_bad_source_metadata() {
        refused(r#"{"colour":"red"}"#);
        refused(r#"{"lat":91,"lon":0}"#);
        refused(r#"{"lat":0,"lon":-180.5}"#);
        refused(r#"{"lat":10}"#);
        refused(r#"{"location_accuracy":5}"#);
        refused(r#"{"lat":1,"lon":1,"location_accuracy":-1}"#);
        refused(r#"{"place":"a\u0007b"}"#);
        refused(r#"{"place":"  "}"#);
        refused(r#"{"captured_at":"2012-03-04T10:00:00"}"#);
        refused(r#"{"captured_at":"yesterday"}"#);
        refused(r#"{"place":"a","place":"b"}"#);
        refused(r#"{"place":null}"#);
        refused(r#"{"lat":"1","lon":1}"#);
        refused("[]");
        refused("not json");
        refused(&format!(
            r#"{{"place":"{}"}}"#,
            "x".repeat(MAX_SOURCE_METADATA_BYTES)
        ));
    }
}
