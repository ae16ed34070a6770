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
        for c in &s.consolidation {
            lines.push(format!("consolidation {}", c.summary()));
        }
        if let Some(r) = &s.relations {
            lines.push(format!(
                "relations: computed up to event {} of {}{}",
                r.computed_to,
                r.log_head,
                if r.pending { " (pending)" } else { "" }
            ));
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
