//! The agent's tools: each is one service operation with the description
//! an agent reads. The input schema is the operation's own request schema
//! (tailored to the workspace), so it requires exactly what the server
//! requires. Review, write policy, tokens, audit and plugins are not here.

use mem_service::door::{OpEntry, entry};
use mem_service::ops::{admin, files, memories, recall, related, tasks};
use mem_service::{check, recall as rc};

#[derive(Debug, Clone, Copy)]
pub(crate) struct ToolDef {
    pub name: &'static str,
    pub op: OpEntry,
    pub description: &'static str,
    pub read_only: bool,
    pub destructive: bool,
    /// A rule the tool's input schema adds to the operation's request
    /// schema (what the operation enforces beyond the shared schema).
    pub shape: Option<fn(&mut serde_json::Value)>,
}

fn tool(name: &'static str, op: OpEntry, description: &'static str) -> ToolDef {
    ToolDef {
        name,
        op,
        description,
        read_only: false,
        destructive: false,
        shape: None,
    }
}

impl ToolDef {
    fn reads(mut self) -> Self {
        self.read_only = true;
        self
    }
    fn destroys(mut self) -> Self {
        self.destructive = true;
        self
    }
    fn shaped(mut self, rule: fn(&mut serde_json::Value)) -> Self {
        self.shape = Some(rule);
        self
    }
}

pub(crate) fn tools() -> Vec<ToolDef> {
    vec![
        tool(
            "mem_put",
            entry::<files::PutFileRequest>(),
            "Store a file in the workspace: text as `content`, or binary files (PDF, images, \
             audio) as standard base64 in `content_base64`; exactly one of the two. `path` is \
             the full virtual path including the file name (e.g. /notes/deploy.md); folders are \
             created as needed. An existing path is an error unless `replace` is true (the file \
             keeps its id). The host sniffs the MIME type from the bytes; `mime` is only a hint \
             that picks among text types for text content (e.g. text/markdown for a file named \
             without .md) and is ignored otherwise; the answer's `file.mime` is what the host \
             decided. The file is processed and indexed before the answer (unless `wait` is \
             false), so mem_search finds it at once. `source_metadata` says where and when the \
             content comes from, as JSON text (e.g. \
             {\"captured_at\":\"2012-03-04T10:00:00+01:00\",\"place\":\"Lisbon\"}). Returns \
             the file record; cite it as mem://file/ID.",
        )
        .shaped(files::inline_content_rule),
        tool(
            "mem_get",
            entry::<files::ReadFile>(),
            "Read a file: its record (id, path, mime, size, tags, index status), what processing \
             found (`file.processed`: metadata, entities, suggested tags and a page of chunks, \
             each with its citable locator mem://file/ID#Lx-y; page with `chunks_from` and \
             `chunks_limit`) and its text content. `target` is a file id (file_...) or the full \
             path. Content longer than `max_chars` (default 200000) is cut and `truncated` is \
             set; binary files return no text.",
        )
        .reads(),
        tool(
            "mem_list",
            entry::<files::ListFolder>(),
            "List a folder: its subfolders and files (with ids, sizes, tags). `path` defaults to \
             the root `/`. With `tags`, lists instead the files carrying every one of them in \
             the folder and all folders below it.",
        )
        .reads(),
        tool(
            "mem_search",
            entry::<rc::SearchQuery>(),
            "Search files and memories (lexical and, when a model is installed, semantic). \
             Returns ranked hits with ids, citations (mem://memory/ID, mem://file/ID#Lx-y), \
             scores and matched terms. Filter by `kinds`, `path`, `tags`, `since`/`until`, \
             `lifecycle`, `source` (memory|file|all), `type` (files only: image|doc|audio|any). \
             A period named in the query (\"in May \
             2023\", \"last week\") ranks hits from then higher without filtering the rest. \
             Prefer mem_context to gather evidence for an answer; use mem_search to look things \
             up or explore.",
        )
        .reads(),
        tool(
            "mem_related",
            entry::<related::GetRelated>(),
            "Items related to a memory or a file, best first: `same_topic` (similar meaning),              `same_event` (close in time at one place), `same_person` (name the same people),              `sequel` (next or previous in a name, number or date series), `duplicate_of` and              `conflicts_with`. `id` is a memory id (mem_...), a file id (file_...) or a file's              full path; filter with `type`, cap with `limit` (default 10). Each relation has a              score, a reason and the detector that found it. `pending` means recent writes still              wait for their relations.",
        )
        .reads(),
        tool(
            "mem_context",
            entry::<rc::ContextRequest>(),
            "Get a context pack for a question or task: the evidence to answer from, selected, \
             gated and packed under a character budget (`max_chars`), in lanes by role: `must` \
             (binding constraints), `should` (guidance), `context` (facts, files, symbols the \
             query names), `provisional` (not active, or tentative: verify before relying on \
             it), `conflict` (contradicting items). Every item has a `citation` to quote. \
             `missing` lists open questions and query terms nothing covered; `trace` explains \
             selection and what the read gate rejected: when the pack is \
             empty or thin, rephrase or widen (drop `kinds`/`scope`) and call again. Call this \
             first, before answering from memory.",
        )
        .reads(),
        tool(
            "mem_remember",
            entry::<mem_service::RememberRequest>(),
            "Remember one small statement as a memory. `kind` is a memory type (see mem_types: \
             e.g. fact, decision, preference, observation, task_state), `path` the folder it \
             belongs to (e.g. /ops), `content` the statement in one or two self-contained \
             sentences. `idempotency_key` is required: choose a unique key per statement and \
             reuse it when retrying the same write. Add provenance (`source_type`, `source_ref`, \
             `agent_id`, `session_id`, `task_id`, `event_at`) when known. The workspace's write \
             policy may queue the write for review: then `memory` is absent and `proposal` says \
             so. For a change to what is already known, use mem_propose.",
        ),
        tool(
            "mem_memory_get",
            entry::<memories::GetMemory>(),
            "Get one memory by id (mem_...): content, kind, path, lifecycle, state_version (the \
             expected_version for writes), confidence, feedback, provenance and relations.",
        )
        .reads(),
        tool(
            "mem_memory_list",
            entry::<mem_service::ListMemories>(),
            "List memories, filtered by folder `path`, `kind`, `agent` (who wrote it), `pinned` and `lifecycle` (active by default; \
             archived, superseded, forgotten or all). Paged: pass `next_cursor` back as `cursor` \
             to continue (a page may be short, even empty, while `next_cursor` goes on).",
        )
        .reads(),
        tool(
            "mem_feedback",
            entry::<memories::Feedback>(),
            "Give feedback on a memory you used: `useful` or `not_useful` (adjusts its ranking and \
             confidence), `pin` or `unpin` (pinned memories are always packed). Needs the \
             memory's current state_version as `expected_version`; an `idempotency_key` makes a \
             retry safe (it returns the first answer).",
        ),
        tool(
            "mem_archive",
            entry::<memories::Archive>(),
            "Archive a memory that is no longer current: it leaves recall but is kept and can be \
             restored. Needs the memory's current state_version as `expected_version`; an \
             `idempotency_key` makes a retry safe.",
        ),
        tool(
            "mem_restore",
            entry::<memories::Restore>(),
            "Restore an archived memory to active. Needs the memory's current state_version as \
             `expected_version`; an `idempotency_key` makes a retry safe.",
        ),
        tool(
            "mem_forget",
            entry::<memories::Forget>(),
            "Forget a memory for good: its content is erased and cannot be restored (a tombstone \
             and the reason stay in the audit log). Only when the user asks to forget something; \
             otherwise use mem_archive. Requires `confirm: true`, a `reason`, and the memory's \
             current state_version as `expected_version`.",
        )
        .destroys(),
        tool(
            "mem_propose",
            entry::<mem_service::ProposalRequest>(),
            "Propose a change to memory through the workspace's gate instead of asserting it: \
             `op` create (a new memory in `memory`), replace (one target with `memory`), remove \
             (one target, `reason` required) or consolidate (two or more targets into `memory`). \
             Attach `evidence` (citations) and an `idempotency_key`. The gate auto-approves or \
             queues it for a person to review; the outcome says which.",
        ),
        tool(
            "mem_import",
            entry::<admin::ImportDocument>(),
            "Import another agent's memory document into the folder `path`: `adapter` names the \
             format (agents-md for CLAUDE.md/AGENTS.md, the default; mem0 for a mem0 get_all \
             export; hermes-md for Hermes MEMORY.md/USER.md; obsidian for one note), `name` the \
             document (e.g. USER.md: Hermes reads its entries as preferences), `content` its \
             text. Each entry becomes a memory citing the document's lines, through the write \
             gate (a proposal when the policy reviews). Importing the same document again \
             replays; an edited version replaces only what changed. One result per entry.",
        ),
        tool(
            "mem_export",
            entry::<admin::ExportDocument>(),
            "Render the active memories under `path` as a document another agent reads: \
             `adapter` agents-md (default), mem0, hermes-md or obsidian, `name` the document \
             (default AGENTS.md). `split: true` gives one document per note (an Obsidian vault) \
             in `documents`. Kinds the format cannot express are kept in an \
             `<!-- mem:kind=K -->` marker, so importing the result keeps them.",
        )
        .reads(),
        tool(
            "mem_timeline",
            entry::<mem_service::ops::timeline::Timeline>(),
            "The files and memories of a period, by month: `period` is 2012, 2012-03, \
             2012-03-04 or a range such as 2012-03..2012-08 (both ends included). Each month \
             gives counts (files by type: images, documents, audio; memories) and its earliest \
             items (`samples`, default 5) with their time and where it came from (`source` \
             metadata, `exif`, `document`, `uploaded`; for memories `event` or `created`). \
             Narrow with `path`, `source` (file|memory|all) and `type` (image|doc|audio: files \
             only). Use it to answer \"how many ... in <period>\" with the count and cite the \
             samples.",
        )
        .reads(),
        tool(
            "mem_catalog",
            entry::<mem_service::navigation::catalog::Catalog>(),
            "Read the workspace's catalog first: what it holds under `path` (default /), grouped \
             by folder, type (memory kinds and file MIME types, with roles) and subject, with exact \
             totals, then the items themselves (id, type, status, a short title, citation) in \
             pages bounded by `limit` and `max_bytes`. Filter by `kind`/`type` and `status` \
             (active by default, or all). When `truncated`, pass `next_cursor` back as `cursor`; \
             a cursor_stale error means the workspace changed: start again without it.",
        )
        .reads(),
        tool(
            "mem_trace",
            entry::<mem_service::navigation::trace::Trace>(),
            "Follow a memory's explicit relations (supersedes, superseded_by, conflicts_with, \
             duplicate_of, ...) breadth-first from `id`: `direction` out (the relations it holds, \
             default), in (relations others hold to it) or both, optionally one `relation` kind, \
             up to `depth` hops (default 3) under `nodes`/`edges`/`max_bytes` budgets (defaults \
             20/40/8192). Each edge is tree, back (a cycle), cross or missing (not visible). When \
             `truncated`, pass `next_cursor` back as `cursor` to continue.",
        )
        .reads(),
        tool(
            "mem_types",
            entry::<recall::Types>(),
            "List the memory types (kinds) this workspace accepts, with their roles, descriptions \
             and fields. Use before mem_remember/mem_propose when unsure which kind fits.",
        )
        .reads(),
        tool(
            "mem_check",
            entry::<check::CheckRequest>(),
            "Check an intended action against the workspace's constraints before doing it: `text` \
             describes the action, `context` where it happens, `path` limits to constraints \
             scoped there. Returns status ALLOW, BLOCK (with the constraints that block it, \
             cited) or NEEDS_REVIEW.",
        )
        .reads(),
        tool(
            "mem_checkpoint",
            entry::<tasks::CheckpointTask>(),
            "Checkpoint a task so another agent (or a later session) can carry it on: `task` is \
             its key, `handoff` the handoff.v1 document (`version: \"handoff.v1\"`, `goal`, \
             `progress`, `decisions`, `completed_steps`, `next_steps`, `blockers`, `references` \
             as {uri, note} with mem://memory/ID, mem://file/ID#L10-20 or URLs, `producer` \
             {agent, session}). Every checkpoint after the first names the task's current head \
             as `base_checkpoint_id`; if someone checkpointed first you get checkpoint_conflict \
             with the head: mem_resume it, merge, and checkpoint again. `idempotency_key` is \
             required; resending the same request returns the original checkpoint.",
        ),
        tool(
            "mem_resume",
            entry::<tasks::ResumeTask>(),
            "Resume a task another agent checkpointed: returns its latest handoff (or \
             `checkpoint_id`'s) with goal, progress, decisions, next steps and blockers, every \
             reference resolved (content hash and excerpt) or listed in `missing` with why, and \
             a context pack for `focus` (default: the goal) within `max_chars`. Call this first \
             when picking up a task; its `task.head_checkpoint_id` is the base for your next \
             mem_checkpoint.",
        )
        .reads(),
        tool(
            "mem_task_list",
            entry::<tasks::ListTasks>(),
            "List the tasks you may see (key, scope, goal, head checkpoint, when and by whom it \
             was last checkpointed), optionally under a folder `scope`. Paged by `cursor`.",
        )
        .reads(),
        tool(
            "mem_checkpoint_list",
            entry::<tasks::ListCheckpoints>(),
            "List a task's checkpoints, newest first; pass `next_before` back as `before` for \
             older ones.",
        )
        .reads(),
        tool(
            "mem_checkpoint_get",
            entry::<tasks::GetCheckpoint>(),
            "Get one checkpoint of a task by id (ckpt_...): its handoff as written, its base and \
             who wrote it.",
        )
        .reads(),
    ]
}
