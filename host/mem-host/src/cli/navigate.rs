//! Navigation and observability commands: `catalog`, `trace ID` and
//! `recall log`.

use super::output::Out;
use crate::client::Client;
use clap::{Args, Subcommand};
use mem_core::MemResult;
use mem_service::navigation::catalog::Catalog;
use mem_service::navigation::trace::{Direction, Trace};
use mem_service::recall_log::RecallLogQuery;

#[derive(Debug, Args)]
pub struct CatalogArgs {
    /// Only what lies at or below this folder (default /).
    #[arg(long, value_name = "P")]
    pub path: Option<String>,
    /// Only memories of this kind.
    #[arg(long, value_name = "K")]
    pub kind: Option<String>,
    /// Only memories of this type (a kind or a schema type).
    #[arg(long = "type", value_name = "T")]
    pub type_name: Option<String>,
    /// active (default), archived, superseded, deprecated, forgotten or all.
    #[arg(long, value_name = "S")]
    pub status: Option<String>,
    /// Most items on the page.
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// Most bytes of item JSON on the page.
    #[arg(long, value_name = "N")]
    pub max_bytes: Option<usize>,
    /// The previous page's next_cursor.
    #[arg(long, value_name = "C")]
    pub cursor: Option<String>,
}

#[derive(Debug, Args)]
pub struct TraceArgs {
    /// The memory (or file) id to start from.
    pub id: String,
    /// out (the relations it holds, default), in, or both.
    #[arg(long, value_enum, value_name = "D")]
    pub direction: Option<DirectionArg>,
    /// Only relations of this kind.
    #[arg(long, value_name = "R")]
    pub relation: Option<String>,
    /// Hops from the start (default 3, at most 10).
    #[arg(long, value_name = "N")]
    pub depth: Option<u32>,
    /// Most nodes on the page (default 20).
    #[arg(long, value_name = "N")]
    pub nodes: Option<usize>,
    /// Most edges on the page (default 40).
    #[arg(long, value_name = "N")]
    pub edges: Option<usize>,
    /// Most bytes of node and edge JSON on the page (default 8192).
    #[arg(long, value_name = "N")]
    pub max_bytes: Option<usize>,
    /// The previous page's next_cursor.
    #[arg(long, value_name = "C")]
    pub cursor: Option<String>,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum DirectionArg {
    In,
    Out,
    Both,
}

#[derive(Debug, Subcommand)]
pub enum RecallCommand {
    /// Content-free records of searches and context builds, and the
    /// questions that keep coming back empty (owner only).
    Log {
        /// Only records of this fingerprint.
        #[arg(long, value_name = "F", conflicts_with = "query")]
        fingerprint: Option<String>,
        /// Only records of this question (its fingerprint is computed).
        #[arg(long, value_name = "TEXT")]
        query: Option<String>,
        /// Most records and questions shown (default 50).
        #[arg(long, value_name = "N")]
        limit: Option<usize>,
    },
}

pub fn catalog(c: &Client, out: &Out, a: CatalogArgs) -> MemResult<()> {
    let page = c
        .run(Catalog {
            path: a.path,
            kind: a.kind,
            type_name: a.type_name,
            status: a.status,
            limit: a.limit,
            max_bytes: a.max_bytes,
            cursor: a.cursor,
        })?
        .value;
    out.emit(&page, |p| {
        let t = &p.totals;
        let mut lines = vec![format!(
            "{}: {} memories, {} files, {} bytes (revision {})",
            p.path, t.memories, t.files, t.bytes, p.revision
        )];
        let groups = |title: &str, g: &[mem_service::navigation::catalog::Group]| {
            let parts: Vec<String> = g
                .iter()
                .map(|g| format!("{} {}", g.name, g.memories + g.files))
                .collect();
            format!("{title}: {}", parts.join(", "))
        };
        lines.push(groups("folders", &p.folders));
        lines.push(groups("types", &p.types));
        if !p.subjects.is_empty() {
            lines.push(groups("subjects", &p.subjects));
        }
        for c in &p.consolidation {
            lines.push(format!("consolidation {}", c.summary()));
        }
        for i in &p.items {
            lines.push(format!(
                "{}  {:<12} {:<10} {}  {}",
                i.id, i.type_name, i.status, i.path, i.title
            ));
        }
        if let Some(next) = &p.next_cursor {
            lines.push(format!("more: --cursor {next}"));
        }
        lines.join("\n")
    })
}

pub fn trace(c: &Client, out: &Out, a: TraceArgs) -> MemResult<()> {
    let result = c
        .run(Trace {
            id: a.id,
            direction: a.direction.map(|d| match d {
                DirectionArg::In => Direction::In,
                DirectionArg::Out => Direction::Out,
                DirectionArg::Both => Direction::Both,
            }),
            relation: a.relation,
            depth: a.depth,
            nodes: a.nodes,
            edges: a.edges,
            max_bytes: a.max_bytes,
            cursor: a.cursor,
        })?
        .value;
    out.emit(&result, |r| {
        let mut lines: Vec<String> = r
            .nodes
            .iter()
            .map(|n| {
                format!(
                    "{}{}  {} {}  {}",
                    "  ".repeat(n.depth as usize),
                    n.id,
                    n.type_name,
                    n.status,
                    n.title
                )
            })
            .collect();
        for e in &r.edges {
            lines.push(format!(
                "{} -{}-> {}  ({:?})",
                e.from, e.relation, e.to, e.class
            ));
        }
        if r.depth_limited {
            lines.push(format!("depth limit {} reached", r.depth));
        }
        if let Some(next) = &r.next_cursor {
            lines.push(format!("more: --cursor {next}"));
        }
        lines.join("\n")
    })
}

pub fn recall(c: &Client, out: &Out, cmd: RecallCommand) -> MemResult<()> {
    let RecallCommand::Log {
        fingerprint,
        query,
        limit,
    } = cmd;
    let report = c
        .run(RecallLogQuery {
            fingerprint,
            query,
            limit,
        })?
        .value;
    out.emit(&report, |r| {
        let mut lines = vec![format!("{} records", r.matched)];
        for q in &r.questions {
            lines.push(format!(
                "{}  seen {}  empty {}  missing {}  last {}",
                q.fingerprint,
                q.seen,
                q.empty,
                q.missing,
                mem_core::time::to_rfc3339(&q.last_at)
            ));
        }
        lines.join("\n")
    })
}
