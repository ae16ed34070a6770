//! The `mem-host` command line: parse, open the workspace, call the
//! service, render. Human-readable by default, `--format json` for
//! machines (one JSON document, or one per line for bulk commands).

mod files;
mod govern;
mod mcp;
mod memory;
pub mod output;
mod plugin;
mod recall;
mod serve;

use crate::workspace;
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
    /// Print a file's content to stdout.
    Cat(files::TargetArg),
    /// List a folder.
    Ls(files::LsArgs),
    /// Show a file's metadata.
    Info(files::TargetArg),
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
    /// Import a document (CLAUDE.md, AGENTS.md) as memories through an adapter plugin.
    Import(plugin::ImportArgs),
    /// Export memories of a path as a document through an adapter plugin.
    Export(plugin::ExportArgs),
    /// Every memory type with its role and fields.
    Types,
    /// Check memories and types for consistency (exit 1 on errors).
    Lint,
    /// Check a planned action against remembered constraints (exit 1 unless ALLOW).
    Check(govern::CheckArgs),
    /// Character budgets and their usage.
    Budgets,
    /// Rebuild memory records from the event log.
    Rebuild(govern::RebuildArgs),
    /// Hybrid (lexical + semantic) search over memories and file chunks.
    Search(recall::SearchArgs),
    /// A cited context pack within a hard character budget.
    Context(recall::ContextArgs),
    /// Embedding models (per user): install, list, status.
    #[command(subcommand)]
    Model(recall::ModelCommand),
    /// Bring the search index up to date, or rebuild it with --all.
    Reindex(recall::ReindexArgs),
    /// Serve REST (/v1), MCP over HTTP (/mcp) and /metrics until SIGTERM.
    Serve(serve::ServeArgs),
    /// API tokens for HTTP and MCP clients.
    #[command(subcommand)]
    Token(serve::TokenCommand),
    /// MCP over stdin/stdout for agents (as the owner, or as $MEM_TOKEN).
    Mcp,
}

#[derive(Debug, Args)]
pub struct InitArgs {
    /// Folder to create (default: the workspace folder).
    pub dir: Option<PathBuf>,
    /// Workspace name written to mem.toml (default: the folder's name).
    #[arg(long)]
    pub name: Option<String>,
}

/// Runs one parsed command; the error carries the exit code.
pub fn run(cli: Cli) -> MemResult<()> {
    let out = Out::new(cli.format);
    let cli_format = cli.format;
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
        Command::Token(c) => serve::token(&ws_dir, &out, c),
        Command::Mcp => mcp::mcp(&ws_dir),
        command => {
            let ws = workspace::open(&ws_dir)?;
            let svc = &ws.service;
            match command {
                Command::Init(_) => Ok(()),
                Command::Put(a) => {
                    files::put(svc, &out, a)?;
                    // Acknowledged above; now the processor plugins run on
                    // what is pending. A failure here is kept on the file
                    // (see `status`, retried by `reindex`), not the put's.
                    if let Err(e) = svc.process_pending(None) {
                        eprintln!("{}", output::render_error(cli_format, &e));
                    }
                    Ok(())
                }
                Command::Get(a) => files::get(svc, &out, a),
                Command::Cat(a) => files::cat(svc, a),
                Command::Ls(a) => files::ls(svc, &out, a),
                Command::Info(a) => files::info(svc, &out, a),
                Command::Mv(a) => files::mv(svc, &out, a),
                Command::Rm(a) => files::rm(svc, &out, a),
                Command::Mkdir(a) => files::mkdir(svc, &out, a),
                Command::Remember(a) => memory::remember(svc, &out, a),
                Command::Memory(c) => memory::run(svc, &out, c),
                Command::Propose(c) => govern::propose(svc, &out, c),
                Command::Review(c) => govern::review(svc, &out, c),
                Command::Audit(c) => govern::audit(svc, &out, c),
                Command::Types => govern::types(svc, &out),
                Command::Plugin(c) => plugin::run(&ws, &out, c),
                Command::Status => plugin::status(&ws, &out),
                Command::Import(a) => plugin::import(&ws, &out, a),
                Command::Export(a) => plugin::export(&ws, &out, a),
                Command::Lint => govern::lint(svc, &out),
                Command::Check(a) => govern::check(svc, &out, a),
                Command::Budgets => govern::budgets(svc, &out),
                Command::Rebuild(a) => govern::rebuild(svc, &out, a),
                Command::Search(a) => recall::search(svc, &out, a),
                Command::Context(a) => recall::context(svc, &out, a),
                Command::Reindex(a) => recall::reindex(svc, &out, a),
                Command::Model(_) | Command::Serve(_) | Command::Token(_) | Command::Mcp => Ok(()),
            }
        }
    }
}
