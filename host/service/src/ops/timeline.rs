//! `recall.timeline`: the files and memories of a period by month, with
//! counts and samples (the pass is in [`crate::timeline`]).

use crate::access::Scope;
use crate::door::{Caller, Operation, Replay};
use crate::recall::period::{PERIOD_FORMS, parse_period, period_pattern};
use crate::timeline::{DEFAULT_SAMPLES, FileType, MAX_SAMPLES, TimelineAnswer, TimelineScope};
use mem_core::{MemError, MemResult, VPath};
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// `recall.timeline`: what the caller may see of a period, by month.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Timeline {
    /// `2012`, `2012-03`, `2012-03-04`, or a range of them such as
    /// `2012-03..2012-08` (both ends included; at most 1200 months).
    #[schemars(schema_with = "period_schema")]
    pub period: String,
    /// Only what lies at or below this folder (default `/`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::ops::fields::opt_path")]
    pub path: Option<String>,
    /// `all` (default), `file` or `memory`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::ops::fields::opt_source")]
    pub source: Option<String>,
    /// Only files of this type: `image`, `doc`, `audio` (memories are
    /// left out), or `any` (default).
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["image", "doc", "audio", "any", null]))]
    pub file_type: Option<String>,
    /// Samples per month, 0 to 20 (default 5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = 20))]
    pub samples: Option<usize>,
}

fn period_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "string",
        "description": format!("The period: {PERIOD_FORMS} (both ends included)."),
        "pattern": period_pattern(),
        "x-mem-check": "period",
    })
}

impl Timeline {
    /// The checked scope of the pass.
    pub(crate) fn scope(&self) -> MemResult<TimelineScope> {
        let period = parse_period(&self.period)?;
        let path = VPath::parse(self.path.as_deref().unwrap_or("/"))?;
        let source = self
            .source
            .as_deref()
            .unwrap_or("all")
            .trim()
            .to_ascii_lowercase();
        let (mut files, mut memories) = match source.as_str() {
            "all" => (true, true),
            "file" | "files" => (true, false),
            "memory" | "memories" => (false, true),
            other => {
                return Err(MemError::bad_request(format!("unknown source {other:?}"))
                    .with_hint("send source all, file or memory")
                    .with_details(json!({ "field": "source" })));
            }
        };
        let file_type = match self.file_type.as_deref().map(str::trim) {
            None | Some("any") => None,
            Some("image") => Some(FileType::Image),
            Some("doc") => Some(FileType::Doc),
            Some("audio") => Some(FileType::Audio),
            Some(other) => {
                return Err(
                    MemError::bad_request(format!("unknown file type {other:?}"))
                        .with_hint("send type image, doc, audio or any")
                        .with_details(json!({ "field": "type" })),
                );
            }
        };
        if file_type.is_some() {
            // A file type asks about files.
            memories = false;
            files = true;
        }
        let samples = self.samples.unwrap_or(DEFAULT_SAMPLES);
        if samples > MAX_SAMPLES {
            return Err(crate::navigation::catalog::out_of_range(
                "samples",
                0,
                MAX_SAMPLES,
            ));
        }
        Ok(TimelineScope {
            period,
            path,
            files,
            memories,
            file_type,
            kind: None,
            samples,
        })
    }
}

impl Operation for Timeline {
    const NAME: &'static str = "recall.timeline";
    const SCOPE: Scope = Scope::Search;
    const REPLAY: Replay = Replay::None;
    type Output = TimelineAnswer;

    /// Out of the caller's paths nothing shows, counts included.
    fn run(self, c: &Caller<'_>) -> MemResult<TimelineAnswer> {
        c.require(Scope::Search)?;
        let scope = self.scope()?;
        c.svc.timeline(&scope, &|p| c.access.sees(p))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(t: Timeline) -> MemResult<TimelineScope> {
        t.scope()
    }

    #[test]
    fn a_file_type_asks_about_files_only() {
        let s = scope(Timeline {
            period: "2012".into(),
            file_type: Some("image".into()),
            ..Default::default()
        })
        .unwrap();
        assert!(s.files && !s.memories);
        assert_eq!(s.file_type, Some(FileType::Image));
        let s = scope(Timeline {
            period: "2012".into(),
            source: Some("memory".into()),
            ..Default::default()
        })
        .unwrap();
        assert!(!s.files && s.memories);
    }

    #[test]
    fn bad_arguments_are_refused_with_the_field() {
        for t in [
            Timeline {
                period: "12".into(),
                ..Default::default()
            },
            Timeline {
                period: "2012".into(),
                samples: Some(MAX_SAMPLES + 1),
                ..Default::default()
            },
            Timeline {
                period: "2012".into(),
                file_type: Some("video".into()),
                ..Default::default()
            },
        ] {
            let e = scope(t.clone()).expect_err(&format!("{t:?}"));
            assert!(e.details.get("field").is_some(), "{e:?}");
        }
    }
}
