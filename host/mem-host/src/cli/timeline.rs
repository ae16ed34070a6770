//! `timeline PERIOD`: the files and memories of a period, a table by month.

use super::output::Out;
use crate::client::Client;
use clap::Args;
use mem_core::MemResult;
use mem_service::ops::timeline::Timeline;
use mem_service::timeline::{TimelineAnswer, TimelineCounts};

#[derive(Debug, Args)]
pub struct TimelineArgs {
    /// 2012, 2012-03, 2012-03-04, or a range: 2012-03..2012-08 (both ends included).
    pub period: String,
    /// Only what lies at or below this folder (default /).
    #[arg(long, value_name = "P")]
    pub path: Option<String>,
    /// file, memory or all (default).
    #[arg(long, value_name = "S")]
    pub source: Option<String>,
    /// Only files of this type: image, doc, audio, or any (default).
    #[arg(long = "type", value_name = "T")]
    pub file_type: Option<String>,
    /// Samples per month, 0 to 20 (default 5).
    #[arg(long, value_name = "N")]
    pub samples: Option<usize>,
}

pub fn timeline(c: &Client, out: &Out, a: TimelineArgs) -> MemResult<()> {
    let answer = c
        .run(Timeline {
            period: a.period,
            path: a.path,
            source: a.source,
            file_type: a.file_type,
            samples: a.samples,
        })?
        .value;
    out.emit(&answer, human)
}

fn row(label: &str, c: &TimelineCounts) -> String {
    format!(
        "{label:<8} {:>6} {:>6} {:>6} {:>6} {:>6} {:>8} {:>6}",
        c.images, c.documents, c.audio, c.other_files, c.files, c.memories, c.total
    )
}

fn human(t: &TimelineAnswer) -> String {
    let mut lines = vec![format!(
        "timeline {} ({} to {}) under {}: {} items",
        t.period.text, t.period.from, t.period.to, t.path, t.totals.total
    )];
    lines.push(format!(
        "{:<8} {:>6} {:>6} {:>6} {:>6} {:>6} {:>8} {:>6}",
        "month", "images", "docs", "audio", "other", "files", "memories", "total"
    ));
    for m in &t.months {
        lines.push(row(&m.month, &m.counts));
        for s in &m.samples {
            lines.push(format!(
                "         {}  {}  ({}, {})",
                s.citation,
                s.title,
                s.time,
                s.time_source.as_str()
            ));
        }
    }
    lines.push(row("total", &t.totals));
    if t.samples_truncated {
        lines.push("(later months' samples left out; their counts are whole)".into());
    }
    lines.join("\n")
}
