//! `related ID [--type T] [--limit N]`: items related to a memory or a
//! file; `related --refresh [--all]`: recompute relations.

use super::output::Out;
use crate::client::Client;
use clap::Args;
use mem_core::{MemError, MemResult};
use mem_service::ops::related::{GetRelated, RefreshRelated};
use mem_service::related::{RefreshReport, RelatedResult, RelationType};

#[derive(Debug, Args)]
pub struct RelatedArgs {
    /// A memory id, a file id or a file's path.
    #[arg(required_unless_present = "refresh", conflicts_with = "refresh")]
    pub id: Option<String>,
    /// same_topic, same_event, same_person, sequel, duplicate_of or conflicts_with.
    #[arg(long = "type", value_name = "T")]
    pub kind: Option<String>,
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// Recompute relations of items written since the last computation.
    #[arg(long)]
    pub refresh: bool,
    /// With --refresh: of every item (after changing `[plugins] related`).
    #[arg(long, requires = "refresh")]
    pub all: bool,
    /// With --refresh: most items recomputed now (run again while pending).
    #[arg(long, value_name = "N", requires = "refresh")]
    pub max_items: Option<usize>,
}

fn relation_type(s: &str) -> MemResult<RelationType> {
    RelationType::parse(s).ok_or_else(|| {
        MemError::bad_request(format!("unknown relation type {s:?}"))
            .with_hint("use one of same_topic, same_event, same_person, sequel, duplicate_of, conflicts_with")
            .with_details(serde_json::json!({ "type": s }))
    })
}

pub fn related(c: &Client, out: &Out, a: RelatedArgs) -> MemResult<()> {
    if a.refresh {
        let r = c
            .run(RefreshRelated {
                all: a.all,
                max_items: a.max_items,
            })?
            .value;
        return out.emit(&r, |r: &RefreshReport| {
            let mut s = format!(
                "recomputed {} items, {} relations (detectors: {})",
                r.items,
                r.relations,
                if r.detectors.is_empty() {
                    "none".into()
                } else {
                    r.detectors.join(", ")
                }
            );
            if r.pending {
                s.push_str("; more pending, run again");
            }
            for f in &r.failures {
                s.push_str(&format!("\nfailed: {f}"));
            }
            s
        });
    }
    let kind = a.kind.as_deref().map(relation_type).transpose()?;
    let r = c
        .run(GetRelated {
            id: a.id.unwrap_or_default(),
            kind,
            limit: a.limit,
        })?
        .value;
    out.emit(&r, |r: &RelatedResult| {
        let mut lines: Vec<String> = r
            .relations
            .iter()
            .map(|e| {
                format!(
                    "{:<14} {:.2}  {}  {}  ({}: {})",
                    e.kind.as_str(),
                    e.score,
                    e.id,
                    e.label,
                    e.detector,
                    e.reason
                )
            })
            .collect();
        if lines.is_empty() {
            lines.push("no related items".into());
        }
        if r.truncated {
            lines.push(format!(
                "… {} of {} shown (--limit)",
                r.relations.len(),
                r.total
            ));
        }
        if r.pending {
            lines.push("recent writes still wait for their relations".into());
        }
        lines.join("\n")
    })
}
