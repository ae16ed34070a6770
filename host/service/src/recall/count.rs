//! Counting questions in a context pack: "how many photos from 2012",
//! "number of documents in March 2023", "how many decisions last month".
//!
//! Similarity search cannot count: the ten best matches of "photos from
//! 2012" say nothing about how many there are. When a query asks for a
//! number and names a dated period, the pack carries a timeline summary
//! (the count by month and the earliest items as cited evidence), computed
//! by the same pass as `recall.timeline`, under the request's scope and
//! the caller's boundary. What is counted comes from the query's words: a
//! file type (photos, documents, audio), memories (or one memory kind),
//! files, or everything when it names none.

use super::context::ContextRequest;
use super::period::{DatePeriod, MAX_PERIOD_MONTHS, period_in};
use crate::Service;
use crate::timeline::{FileType, PeriodView, Sample, TimelineCounts, TimelineScope};
use chrono::Months;
use mem_core::model::BUILTIN_KINDS;
use mem_core::{MemResult, VPath};
use regex::Regex;
use serde::{Deserialize, Serialize};
use std::sync::OnceLock;

/// Samples a summary cites (the earliest of the period).
const SUMMARY_SAMPLES: usize = 10;

/// The pack's answer to a counting question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TimelineSummary {
    /// What was counted, in the query's word (`photos`, `memories`, ...).
    pub counted: String,
    /// `image`, `doc`, `audio`, `files`, `memories` or `all`.
    pub what: String,
    pub period: PeriodView,
    /// How many items of `what` the period holds (what the caller sees).
    pub count: u64,
    pub counts: TimelineCounts,
    /// Per month holding items: `YYYY-MM` and its count.
    pub months: Vec<MonthCount>,
    /// The earliest items, as evidence.
    pub samples: Vec<Sample>,
    /// The summary in words (counted against `max_chars`).
    pub text: String,
    pub chars: usize,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MonthCount {
    pub month: String,
    pub count: u64,
}

/// What a counting question asks to count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Counted {
    Files(Option<FileType>),
    Memories(Option<String>),
    All,
}

impl Counted {
    fn what(&self) -> String {
        match self {
            Self::Files(Some(t)) => t.as_str().to_string(),
            Self::Files(None) => "files".into(),
            Self::Memories(Some(k)) => k.clone(),
            Self::Memories(None) => "memories".into(),
            Self::All => "all".into(),
        }
    }
}

fn asks_count() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"(?i)\b(how\s+many|number\s+of|count\s+(of|the|all|my))\b")
            .expect("a valid built-in pattern")
    })
}

type ReadCount = fn(&str) -> Counted;

fn memory_kind(word: &str) -> Counted {
    let w = word.to_ascii_lowercase();
    let k = BUILTIN_KINDS
        .iter()
        .find(|k| w == **k || w.strip_suffix('s') == Some(**k));
    Counted::Memories(k.map(|k| k.to_string()))
}

/// Words naming what to count, most specific first.
fn categories() -> &'static [(Regex, ReadCount)] {
    static C: OnceLock<Vec<(Regex, ReadCount)>> = OnceLock::new();
    C.get_or_init(|| {
        let cat = |words: &str, read: ReadCount| {
            // The patterns are constants of this module, tested below.
            let re = Regex::new(&format!(r"(?i)\b({words})\b")).expect("a valid built-in pattern");
            (re, read)
        };
        let kinds = BUILTIN_KINDS
            .iter()
            .map(|k| format!("{k}s?"))
            .collect::<Vec<_>>()
            .join("|");
        vec![
            cat(
                "photos?|photographs?|pictures?|pics|images?|snapshots?|selfies?",
                |_| Counted::Files(Some(FileType::Image)),
            ),
            cat("documents?|docs|pdfs?|papers|reports|spreadsheets?", |_| {
                Counted::Files(Some(FileType::Doc))
            }),
            cat(
                "audio|recordings?|songs?|tracks|music|podcasts?|voice\\s+memos?|mp3s?",
                |_| Counted::Files(Some(FileType::Audio)),
            ),
            cat("files?|uploads?", |_| Counted::Files(None)),
            cat("memories|memory|entries", |_| Counted::Memories(None)),
            cat(&kinds, memory_kind),
        ]
    })
}

/// What `query` asks to count and the word it used, when it asks for a
/// number at all.
pub(crate) fn counting(query: &str) -> Option<(Counted, String)> {
    if !asks_count().is_match(query) {
        return None;
    }
    for (re, read) in categories() {
        if let Some(m) = re.find(query) {
            return Some((read(m.as_str()), m.as_str().to_ascii_lowercase()));
        }
    }
    Some((Counted::All, "items".into()))
}

fn within(boundary: &[String]) -> Vec<VPath> {
    boundary
        .iter()
        .filter_map(|p| VPath::parse(p).ok())
        .collect()
}

impl Service {
    /// The timeline summary a counting question gets, if `req` is one (a
    /// number asked, a dated period named).
    pub(crate) fn count_summary(&self, req: &ContextRequest) -> MemResult<Option<TimelineSummary>> {
        let Some((counted, word)) = counting(&req.query) else {
            return Ok(None);
        };
        let Some(period) =
            period_in(&req.query, mem_core::time::now()).and_then(|p| DatePeriod::of_recall(&p))
        else {
            return Ok(None);
        };
        if period
            .from
            .checked_add_months(Months::new(MAX_PERIOD_MONTHS))
            .is_none_or(|l| period.until > l)
        {
            return Ok(None);
        }
        let Ok(path) = VPath::parse(req.scope.as_deref().unwrap_or("/")) else {
            return Ok(None);
        };
        let source = req.source.as_deref().unwrap_or("all");
        let (files_ok, memories_ok) = (
            !matches!(source, "memory" | "memories"),
            !matches!(source, "file" | "files"),
        );
        let (files, memories, file_type, kind) = match &counted {
            Counted::Files(t) => (files_ok, false, *t, None),
            Counted::Memories(k) => (false, memories_ok, None, k.clone()),
            Counted::All => (files_ok, memories_ok, None, None),
        };
        let boundary = within(&req.within);
        let sees = |p: &VPath| boundary.is_empty() || boundary.iter().any(|b| p.is_within(b));
        let scope = TimelineScope {
            period,
            path,
            files,
            memories,
            file_type,
            kind,
            samples: SUMMARY_SAMPLES,
        };
        let answer = self.timeline(&scope, &sees)?;
        let count = answer.totals.total;
        let months: Vec<MonthCount> = answer
            .months
            .iter()
            .map(|m| MonthCount {
                month: m.month.clone(),
                count: m.counts.total,
            })
            .collect();
        let samples: Vec<Sample> = answer
            .months
            .into_iter()
            .flat_map(|m| m.samples)
            .take(SUMMARY_SAMPLES)
            .collect();
        let mut summary = TimelineSummary {
            counted: word,
            what: counted.what(),
            period: answer.period,
            count,
            counts: answer.totals,
            months,
            samples,
            text: String::new(),
            chars: 0,
            reason: "the query asks how many and names a period: counted on the timeline \
                     (source metadata, then processor times with a zone, then upload or event time)"
                .into(),
        };
        summary.render();
        Ok(Some(summary))
    }
}

impl TimelineSummary {
    /// Writes `text` (and `chars`) from the counts and samples.
    pub(crate) fn render(&mut self) {
        let p = &self.period;
        let mut t = format!(
            "{} {} dated {} to {} ({:?}), counted on the timeline",
            self.count, self.counted, p.from, p.to, p.text
        );
        if !self.months.is_empty() {
            let parts: Vec<String> = self
                .months
                .iter()
                .map(|m| format!("{} {}", m.month, m.count))
                .collect();
            t.push_str(&format!("; by month: {}", parts.join(", ")));
        }
        if !self.samples.is_empty() {
            let parts: Vec<String> = self
                .samples
                .iter()
                .map(|s| {
                    format!(
                        "{} ({}, {}) {}",
                        s.title,
                        s.time,
                        s.time_source.as_str(),
                        s.citation
                    )
                })
                .collect();
            t.push_str(&format!("; earliest {}: {}", parts.len(), parts.join("; ")));
        }
        t.push('.');
        self.chars = t.chars().count();
        self.text = t;
    }

    /// Drops samples until the text fits `room` characters; `false` when
    /// even the bare count does not fit.
    pub(crate) fn fit(&mut self, room: usize) -> bool {
        while self.chars > room && !self.samples.is_empty() {
            self.samples.pop();
            self.render();
        }
        if self.chars > room && !self.months.is_empty() {
            self.months.clear();
            self.render();
        }
        self.chars <= room
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counting_questions_name_what_they_count() {
        for (q, c, w) in [
            (
                "how many photos from 2012",
                Counted::Files(Some(FileType::Image)),
                "photos",
            ),
            (
                "How many pictures did I take in March 2014?",
                Counted::Files(Some(FileType::Image)),
                "pictures",
            ),
            (
                "number of documents in 2020",
                Counted::Files(Some(FileType::Doc)),
                "documents",
            ),
            (
                "how many songs from 1999",
                Counted::Files(Some(FileType::Audio)),
                "songs",
            ),
            ("how many files in 2012", Counted::Files(None), "files"),
            (
                "how many memories from last month",
                Counted::Memories(None),
                "memories",
            ),
            (
                "how many decisions did we make in 2025",
                Counted::Memories(Some("decision".into())),
                "decisions",
            ),
            ("how many things happened in 2012", Counted::All, "items"),
        ] {
            assert_eq!(counting(q), Some((c, w.to_string())), "{q}");
        }
    }

    #[test]
    fn other_questions_are_not_counting_questions() {
        for q in [
            "photos from 2012",
            "what did we decide about many-to-many relations",
            "show me the count",
        ] {
            assert_eq!(counting(q), None, "{q}");
        }
    }

    #[test]
    fn a_summary_sheds_samples_to_fit_its_room() {
        let sample = |i: usize| {
            let mut s: Sample = serde_json::from_value(serde_json::json!({
                "id": format!("file_{i}"), "record": "file", "citation": format!("mem://file/file_{i}"),
                "title": format!("IMG_{i}.jpg"), "path": "/p", "file_type": "image",
                "kind": "image/jpeg", "time": "2012-03-04T10:00:00+01:00", "time_source": "source",
            }))
            .unwrap();
            s.title = format!("IMG_{i}.jpg");
            s
        };
        let mut s = TimelineSummary {
            counted: "photos".into(),
            what: "image".into(),
            period: PeriodView {
                text: "from 2012".into(),
                from: "2012-01-01".into(),
                to: "2012-12-31".into(),
            },
            count: 3,
            counts: TimelineCounts::default(),
            months: vec![MonthCount {
                month: "2012-03".into(),
                count: 3,
            }],
            samples: (0..3).map(sample).collect(),
            text: String::new(),
            chars: 0,
            reason: String::new(),
        };
        s.render();
        assert!(
            s.text
                .starts_with("3 photos dated 2012-01-01 to 2012-12-31 (\"from 2012\")"),
            "{}",
            s.text
        );
        assert!(s.text.contains("mem://file/file_2"), "{}", s.text);
        let full = s.chars;
        assert!(s.fit(full - 1));
        assert_eq!(s.samples.len(), 2);
        assert!(!s.fit(5));
    }
}
