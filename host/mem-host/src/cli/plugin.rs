//! `plugin` commands (owner only): install, list, inspect, remove, grant,
//! revoke; `status`; documents in and out through adapter plugins. Each
//! is a service operation (audited; grants are written to `mem.toml` by
//! the service, which owns it).

use super::output::Out;
use crate::client::Client;
use base64::Engine;
use clap::Subcommand;
use mem_core::plugin::{Capability, PluginInfo, PluginManifest};
use mem_core::{MemError, MemResult};
use mem_service::ops::admin::{ExportDocument, ImportDocument};
use mem_service::ops::plugins::{
    PluginGrant, PluginInspect, PluginInstall, PluginList, PluginRemove, PluginRevoke,
};
use mem_service::ops::recall::Status;
use std::path::PathBuf;

#[derive(Debug, Subcommand)]
pub enum PluginCommand {
    /// Install a plugin: verifies digest, world and WIT version, then copies it in.
    Install {
        /// The component (.wasm).
        wasm: PathBuf,
        /// Its manifest (default: manifest.json beside the .wasm).
        #[arg(long)]
        manifest: Option<PathBuf>,
        /// Replace an installed plugin of the same name.
        #[arg(long)]
        replace: bool,
    },
    /// Installed plugins.
    List,
    /// World, requested vs granted capabilities, limits, failures.
    Inspect { name: String },
    /// Uninstall a plugin (refused while mem.toml names it, unless --force,
    /// which also takes it out of the configuration).
    Remove {
        name: String,
        #[arg(long)]
        force: bool,
    },
    /// Grant capabilities (log, config, kv, embed, fs).
    Grant {
        name: String,
        #[arg(required = true)]
        capabilities: Vec<String>,
        /// Host folder readable with `fs` (repeatable; absolute).
        #[arg(long = "path")]
        paths: Vec<String>,
    },
    /// Revoke capabilities.
    Revoke {
        name: String,
        #[arg(required = true)]
        capabilities: Vec<String>,
    },
}

fn info_line(p: &PluginInfo) -> String {
    format!(
        "{:<14} {:<8} {:<18} granted: {}{}{}",
        p.manifest.name,
        p.manifest.version,
        p.manifest.world.to_string(),
        p.effective
            .iter()
            .map(|c| c.as_str())
            .collect::<Vec<_>>()
            .join(","),
        if p.missing.is_empty() {
            String::new()
        } else {
            format!(
                "  missing: {}",
                p.missing
                    .iter()
                    .map(|c| c.as_str())
                    .collect::<Vec<_>>()
                    .join(",")
            )
        },
        if p.failures.total > 0 {
            format!("  failures: {}", p.failures.total)
        } else {
            String::new()
        }
    )
}

pub fn run(c: &Client, out: &Out, cmd: PluginCommand) -> MemResult<()> {
    match cmd {
        PluginCommand::Install {
            wasm,
            manifest,
            replace,
        } => {
            let bytes = std::fs::read(&wasm)
                .map_err(|e| MemError::io(&format!("cannot read {}", wasm.display()), &e))?;
            let manifest_path = manifest.unwrap_or_else(|| wasm.with_file_name("manifest.json"));
            let text = std::fs::read_to_string(&manifest_path).map_err(|e| {
                MemError::io(&format!("cannot read {}", manifest_path.display()), &e)
            })?;
            let manifest: PluginManifest = serde_json::from_str(&text).map_err(|e| {
                MemError::bad_request(format!(
                    "{} is not a plugin manifest: {e}",
                    manifest_path.display()
                ))
                .with_hint("schemas/plugin-manifest.schema.json describes the format")
            })?;
            let info = c
                .run(PluginInstall {
                    manifest,
                    wasm_base64: base64::engine::general_purpose::STANDARD.encode(&bytes),
                    replace,
                    idempotency_key: None,
                })?
                .value;
            out.emit(&info, |i| format!("installed {}", info_line(i)))
        }
        PluginCommand::List => {
            let list = c.run(PluginList {})?.value;
            out.emit(&list, |l| {
                if l.is_empty() {
                    return "no plugins installed".into();
                }
                l.iter().map(info_line).collect::<Vec<_>>().join("\n")
            })
        }
        PluginCommand::Inspect { name } => {
            let info = c.run(PluginInspect { name })?.value;
            out.emit(&info, |i| {
                serde_json::to_string_pretty(i).unwrap_or_else(|_| info_line(i))
            })
        }
        PluginCommand::Remove { name, force } => {
            let r = c
                .run(PluginRemove {
                    name,
                    force,
                    idempotency_key: None,
                })?
                .value;
            out.emit(&r, |r| {
                if r.unconfigured.is_empty() {
                    format!("removed {}", r.removed)
                } else {
                    format!(
                        "removed {} (and dropped it from {})",
                        r.removed,
                        r.unconfigured.join(", ")
                    )
                }
            })
        }
        PluginCommand::Grant {
            name,
            capabilities,
            paths,
        } => {
            let info = c
                .run(PluginGrant {
                    name,
                    capabilities: parse_caps(&capabilities)?,
                    paths,
                    idempotency_key: None,
                })?
                .value;
            out.emit(&info, |i| format!("granted; {}", info_line(i)))
        }
        PluginCommand::Revoke { name, capabilities } => {
            let info = c
                .run(PluginRevoke {
                    name,
                    capabilities: parse_caps(&capabilities)?,
                    idempotency_key: None,
                })?
                .value;
            out.emit(&info, |i| format!("revoked; {}", info_line(i)))
        }
    }
}

fn parse_caps(raw: &[String]) -> MemResult<Vec<Capability>> {
    raw.iter()
        .flat_map(|r| r.split(','))
        .filter(|s| !s.trim().is_empty())
        .map(|s| Capability::parse_or_err(s.trim()))
        .collect()
}

pub fn status(c: &Client, out: &Out) -> MemResult<()> {
    let s = c.run(Status {})?.value;
    out.emit(&s, |s| {
        let mut lines = vec![
            format!(
                "workspace {}: {} files, {} memories, {} proposals queued",
                s.workspace, s.files, s.memories, s.queued_proposals
            ),
            format!(
                "processing: {}",
                s.index_status
                    .iter()
                    .map(|(k, v)| format!("{v} {k}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ];
        if let Some(i) = &s.index {
            lines.push(format!(
                "index: {} documents, {} vectors, model {}",
                i.documents,
                i.vectors,
                i.model.as_deref().unwrap_or("none")
            ));
        }
        for b in &s.budgets {
            lines.push(format!("budget {}: {} / {}", b.budget, b.usage, b.limit));
        }
        for p in &s.plugins {
            lines.push(format!(
                "plugin {} ({}): {} failures",
                p.name, p.world, p.failures
            ));
        }
        lines.join("\n")
    })
}

/// `import FILE --path P` reads a document through an adapter;
/// `import FILE [--into DIR]` (no `--path`) imports a workspace bundle.
#[derive(Debug, clap::Args)]
pub struct ImportArgs {
    /// The document (CLAUDE.md, AGENTS.md, ...), or a bundle `export --out` wrote.
    pub file: PathBuf,
    /// The adapter plugin that reads a document.
    #[arg(long, default_value = "agents-md")]
    pub adapter: String,
    /// Where a document's memories go (a document import).
    #[arg(long, conflicts_with = "into")]
    pub path: Option<String>,
    /// A bundle import into this folder: a new workspace is made there
    /// (default: the workspace, which must be empty).
    #[arg(long, value_name = "DIR")]
    pub into: Option<PathBuf>,
}

/// `export --path P` renders a document through an adapter;
/// `export --out FILE [--scope P]` writes a workspace bundle.
#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    /// The adapter plugin that writes the document.
    #[arg(long, default_value = "agents-md")]
    pub adapter: String,
    /// Memories under this path are exported as a document.
    #[arg(long, conflicts_with = "scope")]
    pub path: Option<String>,
    /// A bundle holds only what lies under this path (default: everything).
    #[arg(long)]
    pub scope: Option<String>,
    /// Document name the adapter renders (e.g. AGENTS.md).
    #[arg(long, default_value = "AGENTS.md")]
    pub name: String,
    /// Write here instead of stdout (a bundle: required).
    #[arg(short, long, visible_alias = "out")]
    pub output: Option<PathBuf>,
}

/// `import`: one result line per entry, like `remember --jsonl`.
pub fn import(c: &Client, out: &Out, a: ImportArgs) -> MemResult<()> {
    let Some(path) = a.path else {
        return super::bundle::import(c, out, &a.file);
    };
    let bytes = std::fs::read(&a.file)
        .map_err(|e| MemError::io(&format!("cannot read {}", a.file.display()), &e))?;
    let name = a
        .file
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_else(|| "document".into());
    let results = c.import_document(
        ImportDocument {
            path,
            adapter: Some(a.adapter),
            name: Some(name),
            content: None,
        },
        bytes,
    )?;
    let mut failed = 0;
    for (i, r) in results.into_iter().enumerate() {
        let doc = match (r.result, r.error) {
            (Some(o), _) => {
                serde_json::json!({ "entry": i + 1, "ok": true, "replayed": o.replayed, "memory": o.memory, "proposal": o.proposal })
            }
            (None, e) => {
                failed += 1;
                serde_json::json!({ "entry": i + 1, "ok": false, "error": e })
            }
        };
        if out.json() {
            out.line(&super::output::to_json(&doc)?)?;
        } else {
            out.line(&format!(
                "entry {}: {}",
                i + 1,
                doc["memory"]["id"]
                    .as_str()
                    .or(doc["error"]["message"].as_str())
                    .unwrap_or("queued")
            ))?;
        }
    }
    if failed > 0 {
        return Err(MemError::new(
            mem_core::ErrorCode::BadRequest,
            format!("{failed} entries failed"),
        )
        .with_hint("the other entries were stored; see the per-entry errors above"));
    }
    Ok(())
}

pub fn export(c: &Client, out: &Out, a: ExportArgs) -> MemResult<()> {
    let Some(path) = a.path else {
        return super::bundle::export(c, out, a.scope, a.output);
    };
    let doc = c
        .run(ExportDocument {
            path,
            adapter: Some(a.adapter),
            name: Some(a.name),
        })?
        .value;
    match a.output {
        Some(path) => {
            std::fs::write(&path, doc.content.as_bytes())
                .map_err(|e| MemError::io(&format!("cannot write {}", path.display()), &e))?;
            out.emit(
                &serde_json::json!({ "written": path, "bytes": doc.content.len() }),
                |_| format!("wrote {}", path.display()),
            )
        }
        None => {
            use std::io::Write;
            let mut stdout = std::io::stdout().lock();
            stdout
                .write_all(doc.content.as_bytes())
                .and_then(|_| stdout.flush())
                .map_err(|e| crate::client::write_error(&e))
        }
    }
}
