//! Where a file or a memory sits on the timeline (mem SPEC F6.3), and
//! which evidence put it there.
//!
//! The precedence is fixed: what the uploader said (`source` metadata)
//! outranks what a processor read from the content, which outranks when
//! the file was stored. A processor time counts only when it carries its
//! zone: an EXIF time without one is kept as `uncertain_time` (shown, never
//! used), because its instant could be off by a day at either end of the
//! world. Memories use their event time, else when they were written.
//!
//! Times keep the offset they were given in: the local wall clock of the
//! place says which day and month a photo belongs to, so the timeline
//! groups by that local time, not by UTC.

use super::{FileRecord, Memory};
use chrono::{DateTime, FixedOffset, NaiveDateTime, Utc};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Where an item's timeline time came from.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum TimeSource {
    /// The uploader's source metadata (`captured_at`).
    Source,
    /// The image processor's EXIF capture time, with its zone.
    Exif,
    /// The document processor's creation date (PDF `CreationDate`).
    Document,
    /// The audio processor's recording date, when its tag carries a zone.
    Recording,
    /// When the file was stored (nothing better is known).
    Uploaded,
    /// A memory's event time (`provenance.event_at`).
    Event,
    /// When a memory was written (it names no event time).
    Created,
}

impl TimeSource {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Source => "source",
            Self::Exif => "exif",
            Self::Document => "document",
            Self::Recording => "recording",
            Self::Uploaded => "uploaded",
            Self::Event => "event",
            Self::Created => "created",
        }
    }
}

/// Where an item's position came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PositionSource {
    /// The uploader's source metadata (`lat`, `lon`).
    Source,
    /// The image processor's EXIF GPS position.
    Exif,
}

/// What the processors read from a file's content about when and where it
/// was made, kept on the file record when it is processed (so the
/// timeline never reads processed content).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ContentTime {
    /// A time with its zone, RFC 3339.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub captured_at: Option<String>,
    /// Which processor metadata gave `captured_at`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub captured_by: Option<TimeSource>,
    /// A wall-clock time without a zone (EXIF without an offset, an audio
    /// tag's date): its instant is uncertain, so the timeline does not use it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uncertain_time: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lat: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lon: Option<f64>,
}

/// Processor metadata keys that carry a zoned time, in precedence order.
const ZONED_KEYS: &[(&str, TimeSource)] = &[
    ("time.captured_at", TimeSource::Exif),
    ("doc.created_at", TimeSource::Document),
    ("audio.year", TimeSource::Recording),
];
/// Keys of a time without a zone.
const LOCAL_KEYS: &[&str] = &["time.captured_local", "audio.year"];
/// Longest processor value read as a time (longer is not a time).
const MAX_TIME_CHARS: usize = 40;

fn zoned(v: &str) -> Option<DateTime<FixedOffset>> {
    (v.len() <= MAX_TIME_CHARS)
        .then(|| DateTime::parse_from_rfc3339(v.trim()).ok())
        .flatten()
}

/// `2012-03-04T10:00:00`, `2012-03-04` or `2012` (a tag's year), as given.
fn local(v: &str) -> Option<String> {
    let v = v.trim();
    if v.len() > MAX_TIME_CHARS {
        return None;
    }
    let ok = NaiveDateTime::parse_from_str(v, "%Y-%m-%dT%H:%M:%S").is_ok()
        || chrono::NaiveDate::parse_from_str(v, "%Y-%m-%d").is_ok()
        || (v.len() == 4 && v.bytes().all(|b| b.is_ascii_digit()));
    ok.then(|| v.to_string())
}

fn coordinate(meta: &BTreeMap<String, String>, key: &str, limit: f64) -> Option<f64> {
    let v: f64 = meta.get(key)?.trim().parse().ok()?;
    (v.is_finite() && v.abs() <= limit).then_some(v)
}

impl ContentTime {
    /// What `meta` (a processor's output, untrusted) says; `None` when it
    /// says nothing about time or place. Malformed values are ignored.
    pub fn from_metadata(meta: &BTreeMap<String, String>) -> Option<Self> {
        let mut out = Self::default();
        if let Some((v, by)) = ZONED_KEYS
            .iter()
            .find_map(|(k, by)| meta.get(*k).and_then(|v| zoned(v)).map(|t| (t, *by)))
        {
            out.captured_at = Some(v.to_rfc3339());
            out.captured_by = Some(by);
        }
        out.uncertain_time = LOCAL_KEYS
            .iter()
            .find_map(|k| meta.get(*k).and_then(|v| local(v)));
        if let (Some(lat), Some(lon)) = (
            coordinate(meta, "geo.lat", 90.0),
            coordinate(meta, "geo.lon", 180.0),
        ) {
            out.lat = Some(lat);
            out.lon = Some(lon);
        }
        (out != Self::default()).then_some(out)
    }
}

/// An item's resolved place on the timeline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TimelinePlace {
    /// RFC 3339, in the offset it was given in (its local wall clock).
    pub time: String,
    pub time_source: TimeSource,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lat: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lon: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub position_source: Option<PositionSource>,
    /// A processor time without a zone, shown but not used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uncertain_time: Option<String>,
}

/// A resolved time: the instant and the wall clock it is grouped by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlacedTime {
    pub at: DateTime<FixedOffset>,
    pub source: TimeSource,
}

impl PlacedTime {
    /// The wall-clock time of the place (what periods and months compare).
    pub fn local(&self) -> NaiveDateTime {
        self.at.naive_local()
    }

    pub fn utc(&self) -> DateTime<Utc> {
        self.at.with_timezone(&Utc)
    }
}

fn utc_fixed(t: DateTime<Utc>) -> DateTime<FixedOffset> {
    t.fixed_offset()
}

/// A file's timeline time by the precedence (source, zoned processor
/// time, stored time).
pub fn file_time(f: &FileRecord) -> PlacedTime {
    if let Some(at) = f.source.as_ref().and_then(|s| s.captured()) {
        return PlacedTime {
            at,
            source: TimeSource::Source,
        };
    }
    if let Some(c) = &f.content_time
        && let (Some(at), Some(by)) = (c.captured_at.as_deref().and_then(zoned), c.captured_by)
    {
        return PlacedTime { at, source: by };
    }
    PlacedTime {
        at: utc_fixed(f.created_at),
        source: TimeSource::Uploaded,
    }
}

/// A file's full place: time, position (source first, then EXIF) and
/// the uncertain time a processor saw.
pub fn file_place(f: &FileRecord) -> TimelinePlace {
    let t = file_time(f);
    let source_pos = f
        .source
        .as_ref()
        .and_then(|s| Some((s.lat?, s.lon?, PositionSource::Source)));
    let content_pos = f
        .content_time
        .as_ref()
        .and_then(|c| Some((c.lat?, c.lon?, PositionSource::Exif)));
    let pos = source_pos.or(content_pos);
    TimelinePlace {
        time: t.at.to_rfc3339(),
        time_source: t.source,
        lat: pos.map(|p| p.0),
        lon: pos.map(|p| p.1),
        position_source: pos.map(|p| p.2),
        uncertain_time: f
            .content_time
            .as_ref()
            .and_then(|c| c.uncertain_time.clone()),
    }
}

/// A memory's timeline time: its event time, else when it was written.
pub fn memory_time(m: &Memory) -> PlacedTime {
    match m.provenance.event_at {
        Some(t) => PlacedTime {
            at: utc_fixed(t),
            source: TimeSource::Event,
        },
        None => PlacedTime {
            at: utc_fixed(m.created_at),
            source: TimeSource::Created,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{IndexStatus, SourceMetadata};
    use crate::path::VPath;

    fn file(source: Option<&str>, meta: &[(&str, &str)]) -> FileRecord {
        let meta: BTreeMap<String, String> = meta
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let at = "2026-01-02T03:04:05Z".parse().unwrap();
        FileRecord {
            id: "file_1".into(),
            path: VPath::parse("/p/a.jpg").unwrap(),
            name: "a.jpg".into(),
            size: 1,
            sha256: "00".into(),
            mime: "image/jpeg".into(),
            tags: vec![],
            description: None,
            created_at: at,
            updated_at: at,
            index_status: IndexStatus::Done,
            index_error: None,
            index_attempts: 0,
            state_version: 1,
            source: source.map(|s| Box::new(SourceMetadata::parse(s).unwrap())),
            content_time: ContentTime::from_metadata(&meta).map(Box::new),
        }
    }

    #[test]
    fn source_metadata_outranks_exif_and_exif_fills_what_source_leaves_empty() {
        let f = file(
            Some(r#"{"captured_at":"2012-03-04T10:00:00+01:00"}"#),
            &[
                ("time.captured_at", "2010-01-01T00:00:00+02:00"),
                ("geo.lat", "38.7"),
                ("geo.lon", "-9.1"),
            ],
        );
        let p = file_place(&f);
        assert_eq!(p.time, "2012-03-04T10:00:00+01:00");
        assert_eq!(p.time_source, TimeSource::Source);
        assert_eq!((p.lat, p.lon), (Some(38.7), Some(-9.1)));
        assert_eq!(p.position_source, Some(PositionSource::Exif));

        let f = file(
            Some(r#"{"lat":1.0,"lon":2.0}"#),
            &[
                ("time.captured_at", "2010-01-01T23:30:00-05:00"),
                ("geo.lat", "38.7"),
                ("geo.lon", "-9.1"),
            ],
        );
        let p = file_place(&f);
        assert_eq!(p.time_source, TimeSource::Exif);
        assert_eq!(p.time, "2010-01-01T23:30:00-05:00");
        assert_eq!(p.position_source, Some(PositionSource::Source));
        assert_eq!((p.lat, p.lon), (Some(1.0), Some(2.0)));
        // Grouped by the place's wall clock, not UTC (already 2 January).
        assert_eq!(file_time(&f).local().to_string(), "2010-01-01 23:30:00");
    }

    #[test]
    fn an_exif_time_without_a_zone_is_uncertain_and_not_the_timeline_time() {
        let f = file(None, &[("time.captured_local", "2012-03-04T10:00:00")]);
        let p = file_place(&f);
        assert_eq!(p.time_source, TimeSource::Uploaded);
        assert_eq!(p.time, "2026-01-02T03:04:05+00:00");
        assert_eq!(p.uncertain_time.as_deref(), Some("2012-03-04T10:00:00"));
    }

    #[test]
    fn a_document_date_and_a_zoned_recording_date_are_used() {
        let f = file(None, &[("doc.created_at", "2012-06-01T14:30:05+02:00")]);
        assert_eq!(file_time(&f).source, TimeSource::Document);
        let f = file(None, &[("audio.year", "2012-06-01T14:30:05Z")]);
        assert_eq!(file_time(&f).source, TimeSource::Recording);
        // A bare year has no zone: uncertain, not used.
        let f = file(None, &[("audio.year", "1999")]);
        assert_eq!(file_time(&f).source, TimeSource::Uploaded);
        assert_eq!(file_place(&f).uncertain_time.as_deref(), Some("1999"));
    }

    #[test]
    fn hostile_processor_metadata_is_ignored() {
        for meta in [
            vec![("time.captured_at", "yesterday")],
            vec![("time.captured_at", "2012-03-04T10:00:00")],
            vec![("geo.lat", "91"), ("geo.lon", "0")],
            vec![("geo.lat", "NaN"), ("geo.lon", "0")],
            vec![("geo.lat", "1")],
            vec![("time.captured_local", "not a time")],
        ] {
            assert_eq!(
                ContentTime::from_metadata(
                    &meta
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect()
                ),
                None,
                "{meta:?}"
            );
        }
        let long = "2".repeat(MAX_TIME_CHARS + 1);
        assert_eq!(
            ContentTime::from_metadata(&[("doc.created_at".to_string(), long)].into()),
            None
        );
    }

    #[test]
    fn nothing_known_is_the_upload_time() {
        let f = file(None, &[]);
        assert!(f.content_time.is_none());
        assert_eq!(file_time(&f).source, TimeSource::Uploaded);
    }
}
