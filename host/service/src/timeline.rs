//! The timeline (mem SPEC F6.3): the files and memories of a period,
//! grouped by month, with counts and a few samples each.
//!
//! Each item's time follows the precedence of [`mem_core::model::file_time`]
//! and [`mem_core::model::memory_time`], compared in the item's local wall
//! clock (a photo taken on 31 December in Lisbon belongs to December).
//!
//! The answer is one streaming pass over the memory and file records the
//! filters admit: records are read a page at a time and only counters and
//! at most `samples` items per month are kept, so memory stays bounded by
//! the months of the period (at most
//! [`crate::recall::period::MAX_PERIOD_MONTHS`]), not by the
//! workspace; the time is linear in its records (about what `catalog`
//! pays for its totals). Processed content is never read: a file's
//! processor time is kept on its record when it is processed.

use crate::recall::period::DatePeriod;
use crate::records::{decode, scan_each};
use chrono::Datelike;
use mem_core::model::{FileRecord, Lifecycle, Memory, PlacedTime, TimeSource};
use mem_core::store::Table;
use mem_core::{MemResult, VPath};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Samples per month unless asked for more or fewer.
pub const DEFAULT_SAMPLES: usize = 5;
/// Most samples per month.
pub const MAX_SAMPLES: usize = 20;
/// Most samples in one answer (the earliest months keep theirs): a long
/// period of busy months stays a bounded answer.
pub const MAX_SAMPLES_TOTAL: usize = 500;
/// Characters of a memory shown as its title.
const TITLE_CHARS: usize = 100;

/// A file's type on the timeline, from its sniffed MIME type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FileType {
    Image,
    Doc,
    Audio,
    Other,
}

impl FileType {
    pub fn of_mime(mime: &str) -> Self {
        let m = mime.to_ascii_lowercase();
        if m.starts_with("image/") {
            Self::Image
        } else if m.starts_with("audio/") {
            Self::Audio
        } else if m.starts_with("text/")
            || m == "application/pdf"
            || m == "application/json"
            || m == "application/rtf"
            || m == "application/msword"
            || m == "application/epub+zip"
            || m.starts_with("application/vnd.openxmlformats-officedocument.")
            || m.starts_with("application/vnd.oasis.opendocument.")
            || m.starts_with("application/vnd.ms-")
        {
            Self::Doc
        } else {
            Self::Other
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Image => "image",
            Self::Doc => "doc",
            Self::Audio => "audio",
            Self::Other => "other",
        }
    }
}

/// What a timeline pass covers (checked).
#[derive(Debug, Clone)]
pub(crate) struct TimelineScope {
    pub period: DatePeriod,
    pub path: VPath,
    pub files: bool,
    pub memories: bool,
    /// Only files of this type (`None`: any).
    pub file_type: Option<FileType>,
    /// Only memories of this kind (`None`: any).
    pub kind: Option<String>,
    pub samples: usize,
}

/// The period as answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PeriodView {
    /// As asked.
    pub text: String,
    /// First day, `YYYY-MM-DD`.
    pub from: String,
    /// Last day (included), `YYYY-MM-DD`.
    pub to: String,
}

/// How many items a month (or the period) holds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TimelineCounts {
    pub total: u64,
    pub memories: u64,
    pub files: u64,
    pub images: u64,
    pub documents: u64,
    pub audio: u64,
    pub other_files: u64,
}

impl TimelineCounts {
    fn add(&mut self, item: &Sample) {
        self.total += 1;
        match item.file_type {
            None => self.memories += 1,
            Some(t) => {
                self.files += 1;
                match t {
                    FileType::Image => self.images += 1,
                    FileType::Doc => self.documents += 1,
                    FileType::Audio => self.audio += 1,
                    FileType::Other => self.other_files += 1,
                }
            }
        }
    }
}

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Record {
    Memory,
    File,
}

/// One item of a month, as evidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Sample {
    pub id: String,
    pub record: Record,
    /// `mem://file/ID` or `mem://memory/ID`.
    pub citation: String,
    /// A file's name, or the start of a memory's content.
    pub title: String,
    /// A file's path, a memory's folder.
    pub path: String,
    /// A file's type (absent for a memory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_type: Option<FileType>,
    /// A memory's kind, or a file's MIME type.
    pub kind: String,
    /// RFC 3339, in the offset it was given in.
    pub time: String,
    pub time_source: TimeSource,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lat: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lon: Option<f64>,
    /// The local wall clock the item is grouped by (sort key, not sent).
    #[serde(skip)]
    #[schemars(skip)]
    local: chrono::NaiveDateTime,
}

/// One month of the period that holds items.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TimelineMonth {
    /// `YYYY-MM`.
    pub month: String,
    pub counts: TimelineCounts,
    /// The month's earliest items (at most `samples`), earliest first.
    pub samples: Vec<Sample>,
}

/// The timeline of a period.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TimelineAnswer {
    pub period: PeriodView,
    pub path: String,
    /// `all`, `file` or `memory`.
    pub source: String,
    /// The file type asked for (`any` when none).
    #[serde(rename = "type")]
    pub file_type: String,
    pub totals: TimelineCounts,
    /// Months holding items, oldest first (empty months are left out).
    pub months: Vec<TimelineMonth>,
    /// Some months lost their samples to the answer's bound
    /// ([`MAX_SAMPLES_TOTAL`]); their counts are whole.
    pub samples_truncated: bool,
}

#[derive(Default)]
struct MonthAcc {
    counts: TimelineCounts,
    samples: Vec<Sample>,
}

impl MonthAcc {
    /// Keeps the `n` earliest samples (by local time, then id).
    fn offer(&mut self, s: Sample, n: usize) {
        self.counts.add(&s);
        if n == 0 {
            return;
        }
        let key = |x: &Sample| (x.local, x.id.clone());
        if self.samples.len() == n && self.samples.last().is_some_and(|l| key(l) <= key(&s)) {
            return;
        }
        let at = self.samples.partition_point(|x| key(x) <= key(&s));
        self.samples.insert(at, s);
        self.samples.truncate(n);
    }
}

fn month_key(t: chrono::NaiveDateTime) -> (i32, u32) {
    (t.year(), t.month())
}

fn placed(s: &mut Sample, t: PlacedTime) {
    s.time = t.at.to_rfc3339();
    s.time_source = t.source;
    s.local = t.local();
}

impl crate::Service {
    /// The timeline of `scope` as seen by a caller confined to `sees`
    /// (one streaming pass; see the module's note).
    pub(crate) fn timeline(
        &self,
        scope: &TimelineScope,
        sees: &dyn Fn(&VPath) -> bool,
    ) -> MemResult<TimelineAnswer> {
        let admits = |p: &VPath| p.is_within(&scope.path) && sees(p);
        let mut months: BTreeMap<(i32, u32), MonthAcc> = BTreeMap::new();
        let mut totals = TimelineCounts::default();
        let n = scope.samples.min(MAX_SAMPLES);
        let mut offer = |s: Sample| {
            if !scope.period.contains(s.local) {
                return;
            }
            totals.add(&s);
            months.entry(month_key(s.local)).or_default().offer(s, n);
        };
        if scope.memories {
            scan_each(self.store(), Table::Memories, "", |key, raw| {
                let m: Memory = decode(Table::Memories, key, raw)?;
                if m.lifecycle != Lifecycle::Active
                    || !admits(&m.path)
                    || scope.kind.as_ref().is_some_and(|k| *k != m.kind)
                {
                    return Ok(());
                }
                let mut s = Sample {
                    citation: format!("mem://memory/{}", m.id),
                    title: crate::navigation::title(
                        m.content.as_deref().unwrap_or(""),
                        TITLE_CHARS,
                    ),
                    path: m.path.as_str().to_string(),
                    file_type: None,
                    kind: m.kind.clone(),
                    record: Record::Memory,
                    time: String::new(),
                    time_source: TimeSource::Created,
                    lat: None,
                    lon: None,
                    local: chrono::NaiveDateTime::default(),
                    id: m.id.clone(),
                };
                placed(&mut s, mem_core::model::memory_time(&m));
                offer(s);
                Ok(())
            })?;
        }
        if scope.files {
            scan_each(self.store(), Table::Files, "", |key, raw| {
                let f: FileRecord = decode(Table::Files, key, raw)?;
                let file_type = FileType::of_mime(&f.mime);
                if !admits(&f.path) || scope.file_type.is_some_and(|t| t != file_type) {
                    return Ok(());
                }
                let place = mem_core::model::file_place(&f);
                let mut s = Sample {
                    citation: format!("mem://file/{}", f.id),
                    title: f.name.clone(),
                    path: f.path.as_str().to_string(),
                    file_type: Some(file_type),
                    kind: f.mime.clone(),
                    record: Record::File,
                    time: String::new(),
                    time_source: TimeSource::Uploaded,
                    lat: place.lat,
                    lon: place.lon,
                    local: chrono::NaiveDateTime::default(),
                    id: f.id.clone(),
                };
                placed(&mut s, mem_core::model::file_time(&f));
                offer(s);
                Ok(())
            })?;
        }
        let mut budget = MAX_SAMPLES_TOTAL;
        let mut samples_truncated = false;
        let months = months
            .into_iter()
            .map(|((y, m), mut acc)| {
                if acc.samples.len() > budget {
                    acc.samples.truncate(budget);
                    samples_truncated = true;
                }
                budget -= acc.samples.len();
                TimelineMonth {
                    month: format!("{y:04}-{m:02}"),
                    counts: acc.counts,
                    samples: acc.samples,
                }
            })
            .collect();
        Ok(TimelineAnswer {
            period: PeriodView {
                text: scope.period.text.clone(),
                from: scope.period.from.to_string(),
                to: scope.period.last_day().to_string(),
            },
            path: scope.path.as_str().to_string(),
            source: match (scope.files, scope.memories) {
                (true, false) => "file",
                (false, true) => "memory",
                _ => "all",
            }
            .to_string(),
            file_type: scope.file_type.map_or("any", FileType::as_str).to_string(),
            totals,
            months,
            samples_truncated,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(id: &str, local: &str, file_type: Option<FileType>) -> Sample {
        Sample {
            id: id.into(),
            record: if file_type.is_some() {
                Record::File
            } else {
                Record::Memory
            },
            citation: String::new(),
            title: String::new(),
            path: "/".into(),
            file_type,
            kind: String::new(),
            time: String::new(),
            time_source: TimeSource::Created,
            lat: None,
            lon: None,
            local: local.parse().unwrap(),
        }
    }

    #[test]
    fn a_month_keeps_its_earliest_samples_and_counts_every_item() {
        let mut m = MonthAcc::default();
        for (id, t, ty) in [
            ("d", "2012-03-20T00:00:00", Some(FileType::Image)),
            ("a", "2012-03-01T00:00:00", None),
            ("c", "2012-03-09T00:00:00", Some(FileType::Doc)),
            ("b", "2012-03-05T00:00:00", Some(FileType::Image)),
            ("e", "2012-03-30T00:00:00", Some(FileType::Audio)),
        ] {
            m.offer(sample(id, t, ty), 3);
        }
        let ids: Vec<&str> = m.samples.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["a", "b", "c"]);
        let c = &m.counts;
        assert_eq!(
            (c.total, c.memories, c.files, c.images, c.documents, c.audio),
            (5, 1, 4, 2, 1, 1)
        );
    }

    #[test]
    fn months_group_by_the_local_wall_clock() {
        let t: chrono::NaiveDateTime = "2011-12-31T23:30:00".parse().unwrap();
        assert_eq!(month_key(t), (2011, 12));
    }

    #[test]
    fn mime_types_map_to_file_types() {
        for (mime, t) in [
            ("image/jpeg", FileType::Image),
            ("image/heic", FileType::Image),
            ("audio/mpeg", FileType::Audio),
            ("application/pdf", FileType::Doc),
            ("text/markdown", FileType::Doc),
            ("text/html", FileType::Doc),
            ("application/zip", FileType::Other),
            ("video/mp4", FileType::Other),
        ] {
            assert_eq!(FileType::of_mime(mime), t, "{mime}");
        }
    }
}
