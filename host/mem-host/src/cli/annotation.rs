//! `annotation accept|reject FILE ID`: a person decides what a processor
//! suggested about a file; `info` shows the annotations (see
//! [`annotation_lines`]).

use super::output::Out;
use crate::client::Client;
use clap::Subcommand;
use mem_core::MemResult;
use mem_core::model::{AnnotationDecision, AnnotationStatus};
use mem_service::annotations::AnnotationDecided;
use mem_service::ops::annotations::DecideAnnotation;
use mem_service::ops::file_details::FileDetails;

#[derive(Debug, Subcommand)]
pub enum AnnotationCommand {
    /// Accept a suggestion: a tag joins the file's tags, a description becomes its description.
    Accept(DecideArgs),
    /// Reject a suggestion (it is not offered again for this content).
    Reject(DecideArgs),
}

#[derive(Debug, clap::Args)]
pub struct DecideArgs {
    /// The file: its id (file_...) or full path.
    pub file: String,
    /// The annotation's id (ann_...), as `info FILE` lists it.
    pub id: String,
    /// The file's state_version as `info` showed it (`version:`).
    #[arg(long)]
    pub expected_version: u64,
    /// Why, kept with the decision and in the audit log.
    #[arg(long)]
    pub reason: Option<String>,
    /// Makes a retry safe: it returns the first answer.
    #[arg(long)]
    pub idempotency_key: Option<String>,
}

pub fn annotation(c: &Client, out: &Out, cmd: AnnotationCommand) -> MemResult<()> {
    let (decision, a) = match cmd {
        AnnotationCommand::Accept(a) => (AnnotationDecision::Accept, a),
        AnnotationCommand::Reject(a) => (AnnotationDecision::Reject, a),
    };
    let done = c
        .run(DecideAnnotation {
            target: a.file,
            annotation_id: a.id,
            decision,
            expected_version: a.expected_version,
            reason: a.reason,
            idempotency_key: a.idempotency_key,
        })?
        .value;
    out.emit(&done, human)
}

fn human(d: &AnnotationDecided) -> String {
    let a = &d.annotation;
    let mut s = format!(
        "{} {} {} {:?} of {}{}",
        if d.replayed { "already" } else { "now" },
        a.status.as_str(),
        a.kind.as_str(),
        a.value,
        d.file.path,
        if d.replayed {
            String::new()
        } else {
            format!(" (version {})", d.file.state_version)
        }
    );
    if !d.file.tags.is_empty() {
        s.push_str(&format!("\ntags:          {}", d.file.tags.join(", ")));
    }
    if let Some(desc) = &d.file.description {
        s.push_str(&format!("\ndescription:   {desc}"));
    }
    s
}

/// The annotations block of `info`: pending ones first, with the command
/// that decides them.
pub(super) fn annotation_lines(d: &FileDetails) -> String {
    let mut s = String::new();
    if d.annotations.is_empty() && d.annotation_notes.is_empty() {
        return s;
    }
    let pending = d
        .annotations
        .iter()
        .filter(|a| a.status == AnnotationStatus::Pending)
        .count();
    s.push_str(&format!(
        "\nannotations:   {pending} pending of {}",
        d.annotations.len()
    ));
    let mut ordered: Vec<_> = d.annotations.iter().collect();
    ordered.sort_by_key(|a| a.status != AnnotationStatus::Pending);
    for a in ordered {
        let value: String = a.value.chars().take(60).collect();
        let who = a
            .decided_by
            .as_deref()
            .map(|b| format!(" by {b}"))
            .unwrap_or_default();
        s.push_str(&format!(
            "\n  {}  {:<11} {:<8} {:?} from {}{who}",
            a.id,
            a.kind.as_str(),
            a.status.as_str(),
            value,
            a.producer,
        ));
    }
    for n in &d.annotation_notes {
        s.push_str(&format!("\n  note: {n}"));
    }
    if pending > 0 {
        s.push_str(&format!(
            "\n  decide: mem-host annotation accept|reject {} ID --expected-version {}",
            d.file.id, d.file.state_version
        ));
    }
    s
}
