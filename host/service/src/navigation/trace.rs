//! `trace`: a deterministic breadth-first walk over explicit relations
//! (a memory's `relations`, whatever their kind: `supersedes`,
//! `superseded_by`, `conflicts_with`, `duplicate_of`, detector relations),
//! under hard budgets.
//!
//! The walk is a fixed sequence of steps at one revision (nodes in BFS
//! order, each node's edges sorted by relation and id), so a page is a
//! slice of it and the cursor only says where the slice starts: stateless,
//! and `cursor_stale` once the workspace changed. Every edge is marked
//! `tree` (it discovered its target), `back` (its target is an ancestor:
//! a cycle), `cross` (its target was reached another way) or `missing`
//! (the target does not exist or lies outside the caller's paths: the
//! two read the same, and neither is traversed).
//!
//! Incoming edges (`in`, `both`) come from one scan of the memories per
//! request, which builds the reverse adjacency of what the caller may see;
//! no hop scans again. Files hold no relations of their own: they appear
//! as targets (and through incoming edges).

use super::catalog::{Record, out_of_range};
use super::cursor::Kind;
use super::{filters_digest, title};
use crate::records::{decode, load, scan_all};
use mem_core::model::{FileRecord, Memory};
use mem_core::store::Table;
use mem_core::{ErrorCode, MemError, MemResult, VPath, id};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::{HashMap, HashSet, VecDeque};

pub const DEFAULT_DEPTH: u32 = 3;
pub const MAX_DEPTH: u32 = 10;
pub const DEFAULT_NODES: usize = 20;
pub const MAX_NODES: usize = 500;
pub const DEFAULT_EDGES: usize = 40;
pub const MAX_EDGES: usize = 1000;
pub const DEFAULT_TRACE_BYTES: usize = 8192;
pub const MIN_TRACE_BYTES: usize = 512;
pub const MAX_TRACE_BYTES: usize = 262_144;
/// Steps of one walk, across all its pages: what a cursor may point into.
pub const MAX_STEPS: usize = 20_000;
const TITLE_CHARS: usize = 100;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    In,
    #[default]
    Out,
    Both,
}

impl Direction {
    fn as_str(self) -> &'static str {
        match self {
            Self::In => "in",
            Self::Out => "out",
            Self::Both => "both",
        }
    }
}

/// `navigation.trace`: where the relations of one memory lead.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Trace {
    /// The memory (or file) to start from.
    #[schemars(length(min = 1, max = 64))]
    pub id: String,
    /// Follow relations this memory holds (`out`, default), relations
    /// others hold to it (`in`), or both.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direction: Option<Direction>,
    /// Only relations of this kind (e.g. `supersedes`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 64))]
    pub relation: Option<String>,
    /// Hops from the start (default 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 10))]
    pub depth: Option<u32>,
    /// Most nodes on the page (default 20).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 500))]
    pub nodes: Option<usize>,
    /// Most edges on the page (default 40).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 1000))]
    pub edges: Option<usize>,
    /// Most bytes of node and edge JSON on the page (default 8192).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 512, max = 262144))]
    pub max_bytes: Option<usize>,
    /// The `next_cursor` of the previous page of the same trace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "cursor_schema")]
    pub cursor: Option<String>,
}

fn cursor_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "type": ["string", "null"], "pattern": CURSOR_PATTERN })
}

const CURSOR_PATTERN: &str = "^t[0-9]{1,20}-[0-9]{1,5}-[0-9a-f]{8}$";

/// One page of a trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TraceResult {
    pub root: String,
    pub revision: u64,
    pub direction: Direction,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relation: Option<String>,
    pub depth: u32,
    pub nodes: Vec<TraceNode>,
    pub edges: Vec<TraceEdge>,
    /// The walk goes on: pass `next_cursor` back as `cursor`.
    pub truncated: bool,
    /// The budget that ended the page: `nodes`, `edges` or `max_bytes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncated_by: Option<String>,
    /// Nodes at the depth limit have relations not followed.
    pub depth_limited: bool,
    pub next_cursor: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TraceNode {
    pub id: String,
    pub record: Record,
    /// Memory kind, or the file's MIME type.
    #[serde(rename = "type")]
    pub type_name: String,
    pub path: String,
    /// Memory lifecycle, or the file's index status.
    pub status: String,
    pub title: String,
    /// Hops from the root.
    pub depth: u32,
    pub citation: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EdgeClass {
    /// Discovered its target.
    Tree,
    /// Leads back to an ancestor on the walk: a cycle.
    Back,
    /// Leads to a node reached another way.
    Cross,
    /// Its target does not exist or is not visible to the caller.
    Missing,
}

/// A relation `from` holds to `to`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TraceEdge {
    pub from: String,
    pub to: String,
    pub relation: String,
    /// `out`: followed from `from`; `in`: followed backwards from `to`.
    pub via: Direction,
    pub class: EdgeClass,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
}

/// A node as loaded: what it shows, and the relations it holds.
struct Loaded {
    node: TraceNode,
    out: Vec<(String, String, Option<f64>)>,
}

/// One step of the walk: an edge (with the node it discovered), or the root.
struct Step {
    edge: Option<TraceEdge>,
    node: Option<TraceNode>,
}

struct Budgets {
    depth: u32,
    nodes: usize,
    edges: usize,
    bytes: usize,
}

impl Trace {
    fn budgets(&self) -> MemResult<Budgets> {
        let depth = self.depth.unwrap_or(DEFAULT_DEPTH);
        if !(1..=MAX_DEPTH).contains(&depth) {
            return Err(out_of_range("depth", 1, MAX_DEPTH as usize));
        }
        let nodes = self.nodes.unwrap_or(DEFAULT_NODES);
        if !(1..=MAX_NODES).contains(&nodes) {
            return Err(out_of_range("nodes", 1, MAX_NODES));
        }
        let edges = self.edges.unwrap_or(DEFAULT_EDGES);
        if !(1..=MAX_EDGES).contains(&edges) {
            return Err(out_of_range("edges", 1, MAX_EDGES));
        }
        let bytes = self.max_bytes.unwrap_or(DEFAULT_TRACE_BYTES);
        if !(MIN_TRACE_BYTES..=MAX_TRACE_BYTES).contains(&bytes) {
            return Err(out_of_range("max_bytes", MIN_TRACE_BYTES, MAX_TRACE_BYTES));
        }
        Ok(Budgets {
            depth,
            nodes,
            edges,
            bytes,
        })
    }
}

/// Trace cursors: `t{revision}-{step}-{digest}`.
const CURSOR: Kind = Kind {
    tag: 't',
    pages: "trace",
};

/// Where a page starts: a step of the walk (never 0, at most [`MAX_STEPS`]).
fn start_of(cursor: Option<&str>, revision: u64, digest: &str) -> MemResult<usize> {
    let pos = CURSOR.decode(cursor, revision, digest)?;
    if cursor.is_some() && (pos == 0 || pos > MAX_STEPS) {
        return Err(MemError::new(
            ErrorCode::Unprocessable,
            "the cursor points outside the trace",
        )
        .with_hint("pass back the next_cursor of the previous page of the same trace")
        .with_details(json!({ "field": "cursor" })));
    }
    Ok(pos)
}

/// The walk, generated lazily one step at a time.
struct Walk<'a> {
    svc: &'a crate::Service,
    sees: &'a dyn Fn(&VPath) -> bool,
    relation: Option<&'a str>,
    direction: Direction,
    max_depth: u32,
    /// target → (relation, source) of the visible memories (`in`, `both`).
    reverse: HashMap<String, Vec<(String, String, Option<f64>)>>,
    cache: HashMap<String, Option<Loaded>>,
    parent: HashMap<String, Option<String>>,
    queue: VecDeque<(String, u32)>,
    /// Edges of the node being expanded, not yet stepped.
    pending: VecDeque<(TraceEdge, String, u32)>,
    seen_edges: HashSet<(String, String, String)>,
    depth_limited: bool,
    root: Option<TraceNode>,
}

impl<'a> Walk<'a> {
    /// The node `id` if it exists and the caller may see it.
    fn load(&mut self, id: &str) -> MemResult<Option<&Loaded>> {
        if !self.cache.contains_key(id) {
            let loaded = self.read(id)?;
            self.cache.insert(id.to_string(), loaded);
        }
        Ok(self.cache.get(id).and_then(Option::as_ref))
    }

    fn read(&self, id: &str) -> MemResult<Option<Loaded>> {
        if id::has_prefix(id, id::FILE) {
            let Some(f) = load::<FileRecord>(self.svc.store(), Table::Files, id)? else {
                return Ok(None);
            };
            let f = f.value;
            if !(self.sees)(&f.path) {
                return Ok(None);
            }
            return Ok(Some(Loaded {
                node: TraceNode {
                    citation: format!("mem://file/{}", f.id),
                    id: f.id,
                    record: Record::File,
                    type_name: f.mime,
                    path: f.path.as_str().to_string(),
                    status: f.index_status.as_str().to_string(),
                    title: f.name,
                    depth: 0,
                },
                out: Vec::new(),
            }));
        }
        let Some(m) = load::<Memory>(self.svc.store(), Table::Memories, id)? else {
            return Ok(None);
        };
        let m = m.value;
        if !(self.sees)(&m.path) {
            return Ok(None);
        }
        let mut out: Vec<(String, String, Option<f64>)> = m
            .relations
            .iter()
            .filter(|r| self.relation.is_none_or(|k| k == r.kind))
            .map(|r| (r.kind.clone(), r.target.clone(), r.score))
            .collect();
        out.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
        out.dedup_by(|a, b| a.0 == b.0 && a.1 == b.1);
        Ok(Some(Loaded {
            node: TraceNode {
                citation: format!("mem://memory/{}", m.id),
                title: title(m.content.as_deref().unwrap_or(""), TITLE_CHARS),
                id: m.id,
                record: Record::Memory,
                type_name: m.kind,
                path: m.path.as_str().to_string(),
                status: m.lifecycle.as_str().to_string(),
                depth: 0,
            },
            out,
        }))
    }

    /// One scan of the memories: who holds a relation to whom.
    fn build_reverse(&mut self) -> MemResult<()> {
        for (key, raw) in scan_all(self.svc.store(), Table::Memories, "")? {
            let m: Memory = decode(Table::Memories, &key, &raw)?;
            if !(self.sees)(&m.path) {
                continue;
            }
            for r in &m.relations {
                if self.relation.is_none_or(|k| k == r.kind) {
                    self.reverse.entry(r.target.clone()).or_default().push((
                        r.kind.clone(),
                        m.id.clone(),
                        r.score,
                    ));
                }
            }
        }
        for sources in self.reverse.values_mut() {
            sources.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
            sources.dedup_by(|a, b| a.0 == b.0 && a.1 == b.1);
        }
        Ok(())
    }

    /// The edges of `id` in walk order: out first, then in; each edge once.
    fn edges_of(&mut self, id: &str) -> MemResult<Vec<(TraceEdge, String)>> {
        let mut v = Vec::new();
        if self.direction != Direction::In {
            let out = self.load(id)?.map(|l| l.out.clone()).unwrap_or_default();
            for (kind, target, score) in out {
                v.push((
                    TraceEdge {
                        from: id.to_string(),
                        to: target.clone(),
                        relation: kind,
                        via: Direction::Out,
                        class: EdgeClass::Missing,
                        score,
                    },
                    target,
                ));
            }
        }
        if self.direction != Direction::Out {
            for (kind, source, score) in self.reverse.get(id).cloned().unwrap_or_default() {
                v.push((
                    TraceEdge {
                        from: source.clone(),
                        to: id.to_string(),
                        relation: kind,
                        via: Direction::In,
                        class: EdgeClass::Missing,
                        score,
                    },
                    source,
                ));
            }
        }
        v.retain(|(e, _)| {
            self.seen_edges
                .insert((e.from.clone(), e.to.clone(), e.relation.clone()))
        });
        Ok(v)
    }

    /// True when `a` is `b` or one of its ancestors on the walk.
    fn is_ancestor(&self, a: &str, b: &str) -> bool {
        let mut at = Some(b.to_string());
        while let Some(n) = at {
            if n == a {
                return true;
            }
            at = self.parent.get(&n).cloned().flatten();
        }
        false
    }

    fn next_step(&mut self) -> MemResult<Option<Step>> {
        if let Some(root) = self.root.take() {
            return Ok(Some(Step {
                edge: None,
                node: Some(root),
            }));
        }
        loop {
            if let Some((mut edge, neighbour, depth)) = self.pending.pop_front() {
                let from = if edge.via == Direction::Out {
                    edge.from.clone()
                } else {
                    edge.to.clone()
                };
                let Some(loaded) = self.load(&neighbour)? else {
                    edge.class = EdgeClass::Missing;
                    return Ok(Some(Step {
                        edge: Some(edge),
                        node: None,
                    }));
                };
                let mut node = loaded.node.clone();
                if self.parent.contains_key(&neighbour) {
                    edge.class = if self.is_ancestor(&neighbour, &from) {
                        EdgeClass::Back
                    } else {
                        EdgeClass::Cross
                    };
                    return Ok(Some(Step {
                        edge: Some(edge),
                        node: None,
                    }));
                }
                edge.class = EdgeClass::Tree;
                node.depth = depth;
                self.parent.insert(neighbour.clone(), Some(from));
                self.queue.push_back((neighbour, depth));
                return Ok(Some(Step {
                    edge: Some(edge),
                    node: Some(node),
                }));
            }
            let Some((id, depth)) = self.queue.pop_front() else {
                return Ok(None);
            };
            let edges = self.edges_of(&id)?;
            if depth >= self.max_depth {
                self.depth_limited |= !edges.is_empty();
                continue;
            }
            self.pending
                .extend(edges.into_iter().map(|(e, n)| (e, n, depth + 1)));
        }
    }
}

fn size_of<T: Serialize>(v: &T) -> usize {
    serde_json::to_vec(v).map_or(0, |b| b.len())
}

impl crate::Service {
    /// One page of the walk from `req.id` as seen by a caller confined to
    /// `sees`; a start it may not see is `not_found`.
    pub(crate) fn trace(
        &self,
        req: &Trace,
        sees: &dyn Fn(&VPath) -> bool,
    ) -> MemResult<TraceResult> {
        let b = req.budgets()?;
        let direction = req.direction.unwrap_or_default();
        let relation = req.relation.as_deref().map(str::trim);
        let digest = filters_digest(&[
            &req.id,
            direction.as_str(),
            relation.unwrap_or(""),
            &b.depth.to_string(),
        ]);
        let revision = self.revision()?;
        let start = start_of(req.cursor.as_deref(), revision, &digest)?;
        let mut walk = Walk {
            svc: self,
            sees,
            relation,
            direction,
            max_depth: b.depth,
            reverse: HashMap::new(),
            cache: HashMap::new(),
            parent: HashMap::new(),
            queue: VecDeque::new(),
            pending: VecDeque::new(),
            seen_edges: HashSet::new(),
            depth_limited: false,
            root: None,
        };
        let what = if id::has_prefix(&req.id, id::FILE) {
            "file"
        } else {
            "memory"
        };
        let root = walk
            .load(&req.id)?
            .map(|l| l.node.clone())
            .ok_or_else(|| MemError::not_found(what, &req.id))?;
        if direction != Direction::Out {
            walk.build_reverse()?;
        }
        walk.parent.insert(root.id.clone(), None);
        walk.queue.push_back((root.id.clone(), 0));
        walk.root = Some(root);

        let (mut nodes, mut edges) = (Vec::new(), Vec::new());
        let (mut used, mut position) = (0usize, 0usize);
        let mut truncated_by: Option<&str> = None;
        while let Some(step) = walk.next_step()? {
            if position >= MAX_STEPS {
                break;
            }
            if position < start {
                position += 1;
                continue;
            }
            let size =
                step.edge.as_ref().map_or(0, size_of) + step.node.as_ref().map_or(0, size_of);
            let first = nodes.is_empty() && edges.is_empty();
            let over = if step.node.is_some() && nodes.len() == b.nodes {
                Some("nodes")
            } else if step.edge.is_some() && edges.len() == b.edges {
                Some("edges")
            } else if !first && used + size > b.bytes {
                Some("max_bytes")
            } else {
                None
            };
            if over.is_some() {
                truncated_by = over;
                break;
            }
            used += size;
            position += 1;
            nodes.extend(step.node);
            edges.extend(step.edge);
        }
        let truncated = truncated_by.is_some();
        Ok(TraceResult {
            root: req.id.clone(),
            revision,
            direction,
            relation: relation.map(str::to_string),
            depth: b.depth,
            nodes,
            edges,
            truncated,
            truncated_by: truncated_by.map(str::to_string),
            depth_limited: walk.depth_limited,
            next_cursor: truncated.then(|| CURSOR.encode(revision, position, &digest)),
        })
    }
}
