//! The `mem-host` command line: parse, open the workspace, call the
//! service, render. Human-readable by default, `--format json` for
//! machines (one JSON document, or one per line for bulk commands).

mod annotation;
mod bundle;
mod documents;
mod fetch;
mod files;
mod govern;
mod lines;
mod mcp;
mod memory;
mod migrate;
mod navigate;
pub mod output;
mod plugin;
mod recall;
mod related;
mod serve;
mod tasks;
mod timeline;

use crate::client::Client;
use crate::workspace::{self, SessionStart};
use clap::{Args, Parser, Subcommand, ValueEnum};
use mem_core::MemResult;
use output::Out;
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(
    name = "mem-host",
    version,
    about = "Local-first memory host for AI agents",
    propagate_version = true
)]
pub struct Cli {
    /// Workspace folder (default: $MEM_HOME, else ./.mem).
    #[arg(long, global = true, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Output format.
    #[arg(long, global = true, value_enum, default_value_t = Format::Human, env = "MEM_FORMAT")]
    pub format: Format,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Human,
    Json,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create a workspace (default: $MEM_HOME, else ./.mem).
    Init(InitArgs),
    /// Store a file, a folder tree (--recursive) or stdin (-).
    Put(files::PutArgs),
    /// Write a file's content to a local path.
    Get(files::GetArgs),
    /// Print a file's content (or one processed chunk) to stdout.
    Cat(files::CatArgs),
    /// List a folder.
    Ls(files::LsArgs),
    /// Show a file's metadata, chunks with their locators, entities and tags.
    Info(files::InfoArgs),
    /// Accept or reject what a processor suggested about a file (`info` lists them).
    #[command(subcommand)]
    Annotation(annotation::AnnotationCommand),
    /// Move or rename a file or folder.
    Mv(files::MvArgs),
    /// Remove a file or folder.
    Rm(files::RmArgs),
    /// Create a folder.
    Mkdir(files::MkdirArgs),
    /// Remember something (or many things with --jsonl).
    Remember(memory::RememberArgs),
    /// Read and manage memories.
    #[command(subcommand)]
    Memory(memory::MemoryCommand),
    /// Propose a memory change through the write gate.
    #[command(subcommand)]
    Propose(govern::ProposeCommand),
    /// The review queue of proposals waiting for a person.
    #[command(subcommand)]
    Review(govern::ReviewCommand),
    /// The hash-chained audit log.
    #[command(subcommand)]
    Audit(govern::AuditCommand),
    /// Manage the workspace's WebAssembly plugins.
    #[command(subcommand)]
    Plugin(plugin::PluginCommand),
    /// Files by processing state, memories, index, budgets, plugin health.
    Status,
    /// Import a workspace bundle (into an empty workspace, or a new one with --into),
    /// or with --path a document (CLAUDE.md, AGENTS.md) as memories through an adapter plugin.
    Import(documents::ImportArgs),
    /// Export the workspace as a bundle (--out FILE [--scope P]),
    /// or with --path the memories of a path as a document through an adapter plugin.
    Export(documents::ExportArgs),
    /// Check a bundle's every entry, record and blob without importing it.
    Verify(bundle::VerifyArgs),
    /// Move the workspace into a shared backend (PostgreSQL + an S3-compatible
    /// store) through a bundle, verified hash by hash.
    Migrate(migrate::MigrateArgs),
    /// Every memory type with its role and fields.
    Types,
    /// What the workspace holds by folder, type and subject (paged).
    Catalog(navigate::CatalogArgs),
    /// Walk a memory's explicit relations breadth-first.
    Trace(navigate::TraceArgs),
    /// The recall log: content-free records of searches and context builds.
    #[command(subcommand)]
    Recall(navigate::RecallCommand),
    /// Check memories and types for consistency (exit 1 on errors).
    Lint,
    /// Check a planned action against remembered constraints (exit 1 unless ALLOW).
    Check(govern::CheckArgs),
    /// Character budgets and their usage.
    Budgets,
    /// Rebuild memory records from the event log.
    Rebuild(govern::RebuildArgs),
    /// Files and memories of a period by month: `timeline 2012`, `timeline 2012-03..2012-08`.
    Timeline(timeline::TimelineArgs),
    /// Hybrid (lexical + semantic) search over memories and file chunks.
    Search(recall::SearchArgs),
    /// A cited context pack within a hard character budget.
    Context(recall::ContextArgs),
    /// Embedding models (per user): install, list, status.
    #[command(subcommand)]
    Model(recall::ModelCommand),
    /// Bring the search index up to date, or rebuild it with --all.
    Reindex(recall::ReindexArgs),
    /// Items related to a memory or file (--type, --limit), or --refresh relations.
    Related(related::RelatedArgs),
    /// Write a task's handoff checkpoint (`checkpoint get KEY ID` shows one).
    Checkpoint(tasks::CheckpointArgs),
    /// Tasks you may see, by key.
    Tasks(tasks::TasksArgs),
    /// A task's checkpoints, newest first.
    Checkpoints(tasks::CheckpointsArgs),
    /// Resume a task: its handoff, resolved references and a context pack.
    Resume(tasks::ResumeArgs),
    /// Serve REST (/v1), MCP over HTTP (/mcp) and /metrics until SIGTERM.
    Serve(serve::ServeArgs),
    /// API tokens for HTTP and MCP clients.
    #[command(subcommand)]
    Token(serve::TokenCommand),
    /// MCP over stdin/stdout for agents (as the owner, or as $MEM_TOKEN).
    Mcp,
    /// Print a one-time sign-in link to the web page of a running `serve`.
    Web(serve::WebArgs),
}

#[derive(Debug, Args)]
pub struct InitArgs {
    /// Folder to create (default: the workspace folder).
    pub dir: Option<PathBuf>,
    /// Workspace name written to mem.toml (default: the folder's name).
    #[arg(long)]
    pub name: Option<String>,
}

/// How the command's embedding sessions start: quick for a command that
/// embeds a query or a few writes and exits (at 100k memories an optimized
/// session was a third of a cold `search`), optimized for one that embeds
/// many queries or texts.
fn session_start(command: &Command) -> SessionStart {
    let many = match command {
        Command::Search(a) => a.batch.is_some(),
        Command::Remember(a) => a.jsonl.is_some(),
        Command::Put(a) => a.recursive,
        Command::Import(_) | Command::Reindex(_) | Command::Rebuild(_) => true,
        _ => false,
    };
    if many {
        SessionStart::Optimized
    } else {
        SessionStart::Quick
    }
}

/// Runs one parsed command; the error carries the exit code.
pub fn run(cli: Cli) -> MemResult<()> {
    let out = Out::new(cli.format);
    let ws_dir = workspace::resolve(cli.workspace.as_deref());
    match cli.command {
        Command::Init(args) => {
            let dir = args.dir.unwrap_or(ws_dir);
            let outcome = workspace::init(&dir, args.name.as_deref())?;
            out.emit(&outcome, |o| {
                if o.created {
                    format!("initialised workspace at {}", o.path.display())
                } else {
                    format!(
                        "workspace at {} already exists; left unchanged",
                        o.path.display()
                    )
                }
            })
        }
        Command::Model(c) => recall::model(&out, c),
        Command::Serve(a) => serve::serve(&ws_dir, a),
        Command::Mcp => mcp::mcp(&ws_dir),
        Command::Verify(a) => bundle::verify(&out, a),
        Command::Migrate(a) => migrate::migrate(&ws_dir, &out, a),
        Command::Import(a) if a.path.is_none() && a.into.is_some() => bundle::import_into(&out, a),
        command => {
            let client = Client::open(&ws_dir, session_start(&command))?;
            let c = &client;
            let result = match command {
                Command::Put(a) => files::put(c, &out, a),
                Command::Get(a) => files::get(c, &out, a),
                Command::Cat(a) => files::cat(c, &out, a),
                Command::Ls(a) => files::ls(c, &out, a),
                Command::Info(a) => files::info(c, &out, a),
                Command::Annotation(cmd) => annotation::annotation(c, &out, cmd),
                Command::Mv(a) => files::mv(c, &out, a),
                Command::Rm(a) => files::rm(c, &out, a),
                Command::Mkdir(a) => files::mkdir(c, &out, a),
                Command::Remember(a) => memory::remember(c, &out, a),
                Command::Memory(cmd) => memory::run(c, &out, cmd),
                Command::Propose(cmd) => govern::propose(c, &out, cmd),
                Command::Review(cmd) => govern::review(c, &out, cmd),
                Command::Audit(cmd) => govern::audit(c, &out, cmd),
                Command::Types => govern::types(c, &out),
                Command::Catalog(a) => navigate::catalog(c, &out, a),
                Command::Trace(a) => navigate::trace(c, &out, a),
                Command::Recall(cmd) => navigate::recall(c, &out, cmd),
                Command::Plugin(cmd) => plugin::run(c, &out, cmd),
                Command::Status => plugin::status(c, &out),
                Command::Import(a) => documents::import(c, &out, a),
                Command::Export(a) => documents::export(c, &out, a),
                Command::Lint => govern::lint(c, &out),
                Command::Check(a) => govern::check(c, &out, a),
                Command::Budgets => govern::budgets(c, &out),
                Command::Rebuild(a) => govern::rebuild(c, &out, a),
                Command::Timeline(a) => timeline::timeline(c, &out, a),
                Command::Search(a) => recall::search(c, &out, a),
                Command::Context(a) => recall::context(c, &out, a),
                Command::Reindex(a) => recall::reindex(c, &out, a),
                Command::Related(a) => related::related(c, &out, a),
                Command::Token(cmd) => serve::token(c, &out, cmd),
                Command::Web(a) => serve::web(c, &out, a),
                Command::Checkpoint(a) => tasks::checkpoint(c, &out, a),
                Command::Tasks(a) => tasks::tasks(c, &out, a),
                Command::Checkpoints(a) => tasks::checkpoints(c, &out, a),
                Command::Resume(a) => tasks::resume(c, &out, a),
                Command::Init(_)
                | Command::Model(_)
                | Command::Serve(_)
                | Command::Mcp
                | Command::Verify(_)
                | Command::Migrate(_) => Ok(()),
            };
            // What the command's writes left for later (processing, the
            // index) is finished before the process exits.
            client.finish_and_exit();
            result
        }
    }
}
