//! `plugin` commands (owner only): install, list, inspect, remove, grant,
//! revoke; and `status`. Grants live in `mem.toml`, edited in place with
//! comments kept, validated before anything is written.

use super::output::Out;
use crate::workspace::Workspace;
use clap::Subcommand;
use mem_core::plugin::{Capability, InstallOptions, PluginHost, PluginInfo, PluginManifest};
use mem_core::{MemError, MemResult};
use mem_service::WorkspaceConfig;
use mem_service::config::CONFIG_FILE;
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
    /// Uninstall a plugin.
    Remove { name: String },
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

pub fn run(ws: &Workspace, out: &Out, cmd: PluginCommand) -> MemResult<()> {
    let host = ws.plugins.as_ref();
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
            let info = host.install(&bytes, &manifest, InstallOptions { replace })?;
            out.emit(&info, |i| format!("installed {}", info_line(i)))
        }
        PluginCommand::List => {
            let list = host.list()?;
            out.emit(&list, |l| {
                if l.is_empty() {
                    return "no plugins installed".into();
                }
                l.iter().map(info_line).collect::<Vec<_>>().join("\n")
            })
        }
        PluginCommand::Inspect { name } => {
            let info = host.inspect(&name)?;
            out.emit(&info, |i| {
                serde_json::to_string_pretty(i).unwrap_or_else(|_| info_line(i))
            })
        }
        PluginCommand::Remove { name } => {
            host.remove(&name)?;
            out.emit(&serde_json::json!({ "removed": name }), |_| {
                format!("removed {name}")
            })
        }
        PluginCommand::Grant {
            name,
            capabilities,
            paths,
        } => {
            host.inspect(&name)?;
            let caps = parse_caps(&capabilities)?;
            let mut cfg = ws.service.config().plugins.clone();
            for c in &caps {
                cfg.grant(&name, *c, if *c == Capability::Fs { &paths } else { &[] })?;
            }
            save_plugin_settings(ws, &name, &cfg)?;
            host.set_config(cfg)?;
            let info = host.inspect(&name)?;
            out.emit(&info, |i| format!("granted; {}", info_line(i)))
        }
        PluginCommand::Revoke { name, capabilities } => {
            let caps = parse_caps(&capabilities)?;
            let mut cfg = ws.service.config().plugins.clone();
            for c in &caps {
                cfg.revoke(&name, *c);
            }
            save_plugin_settings(ws, &name, &cfg)?;
            host.set_config(cfg)?;
            let info = host.inspect(&name)?;
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

/// Writes `[plugins.NAME] grants/fs` into mem.toml, keeping the rest of
/// the file (comments included); the result must parse and validate
/// before it replaces the old file.
fn save_plugin_settings(
    ws: &Workspace,
    name: &str,
    cfg: &mem_core::plugin::PluginsConfig,
) -> MemResult<()> {
    let path = ws.dir.join(CONFIG_FILE);
    let text = std::fs::read_to_string(&path)
        .map_err(|e| MemError::io(&format!("cannot read {}", path.display()), &e))?;
    let mut doc: toml_edit::DocumentMut = text.parse().map_err(|e| {
        MemError::new(
            mem_core::ErrorCode::ConfigInvalid,
            format!("mem.toml is invalid: {e}"),
        )
        .with_hint("fix mem.toml first")
    })?;
    let settings = cfg.settings(name);
    if !doc.contains_table("plugins") {
        doc["plugins"] = toml_edit::table();
    }
    let plugins = doc["plugins"].as_table_mut().ok_or_else(|| {
        MemError::new(
            mem_core::ErrorCode::ConfigInvalid,
            "mem.toml [plugins] is not a table",
        )
    })?;
    if !plugins.contains_key(name) {
        plugins.insert(name, toml_edit::table());
    }
    let entry = &mut plugins[name];
    let grants: toml_edit::Array = settings.grants.iter().map(|c| c.as_str()).collect();
    entry["grants"] = toml_edit::value(grants);
    let fs: toml_edit::Array = settings.fs.iter().map(String::as_str).collect();
    entry["fs"] = toml_edit::value(fs);
    let new_text = doc.to_string();
    WorkspaceConfig::parse(&new_text)?;
    let tmp = path.with_extension("toml.tmp");
    std::fs::write(&tmp, new_text.as_bytes())
        .and_then(|_| std::fs::File::open(&tmp).and_then(|f| f.sync_all()))
        .and_then(|_| std::fs::rename(&tmp, &path))
        .map_err(|e| MemError::io(&format!("cannot write {}", path.display()), &e))
}

pub fn status(ws: &Workspace, out: &Out) -> MemResult<()> {
    let s = ws.service.status()?;
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

#[derive(Debug, clap::Args)]
pub struct ImportArgs {
    /// The document (CLAUDE.md, AGENTS.md, ...).
    pub file: PathBuf,
    /// The adapter plugin that reads it.
    #[arg(long, default_value = "agents-md")]
    pub adapter: String,
    /// Where the memories go.
    #[arg(long)]
    pub path: String,
}

#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    /// The adapter plugin that writes the document.
    #[arg(long, default_value = "agents-md")]
    pub adapter: String,
    /// Memories under this path are exported.
    #[arg(long)]
    pub path: String,
    /// Document name the adapter renders (e.g. AGENTS.md).
    #[arg(long, default_value = "AGENTS.md")]
    pub name: String,
    /// Write here instead of stdout.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
}

/// `import`: one result line per entry, like `remember --jsonl`.
pub fn import(ws: &Workspace, out: &Out, a: ImportArgs) -> MemResult<()> {
    let bytes = std::fs::read(&a.file)
        .map_err(|e| MemError::io(&format!("cannot read {}", a.file.display()), &e))?;
    let name = a
        .file
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_else(|| "document".into());
    let results = ws
        .service
        .import_document(&a.adapter, &name, &bytes, &a.path)?;
    let mut failed = 0;
    for (i, r) in results.into_iter().enumerate() {
        let doc = match r {
            Ok(o) => {
                serde_json::json!({ "entry": i + 1, "ok": true, "replayed": o.replayed, "memory": o.memory, "proposal": o.proposal })
            }
            Err(e) => {
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

pub fn export(ws: &Workspace, out: &Out, a: ExportArgs) -> MemResult<()> {
    let bytes = ws.service.export_document(&a.adapter, &a.name, &a.path)?;
    match a.output {
        Some(path) => {
            std::fs::write(&path, &bytes)
                .map_err(|e| MemError::io(&format!("cannot write {}", path.display()), &e))?;
            out.emit(
                &serde_json::json!({ "written": path, "bytes": bytes.len() }),
                |_| format!("wrote {}", path.display()),
            )
        }
        None => {
            use std::io::Write;
            std::io::stdout()
                .write_all(&bytes)
                .map_err(|e| MemError::io("cannot write to stdout", &e))
        }
    }
}
