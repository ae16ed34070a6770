//! `import` / `export` of documents in other agents' formats through
//! adapter plugins: one document (AGENTS.md, a mem0 export, MEMORY.md) or
//! a folder of notes (an Obsidian vault, one document per note). Without
//! `--path` they handle workspace bundles instead (see `bundle`).

use super::output::Out;
use crate::client::Client;
use mem_core::{ErrorCode, MemError, MemResult};
use mem_service::ops::admin::{ExportDocument, ImportDocument};
use std::path::{Path, PathBuf};

/// Most notes a folder import reads.
const MAX_NOTES: usize = 10_000;

/// `import FILE --path P` reads a document through an adapter (a folder:
/// each Markdown note in it); `import FILE [--into DIR]` (no `--path`)
/// imports a workspace bundle.
#[derive(Debug, clap::Args)]
pub struct ImportArgs {
    /// The document (CLAUDE.md, AGENTS.md, a mem0 export, MEMORY.md), a
    /// folder of notes (an Obsidian vault), or a bundle `export --out` wrote.
    pub file: PathBuf,
    /// The adapter plugin that reads a document: agents-md, mem0,
    /// hermes-md, obsidian, or an installed one.
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
    /// Document name the adapter renders (e.g. USER.md, whose entries
    /// Hermes reads as preferences); default: the `--output` file's name,
    /// else AGENTS.md.
    #[arg(long)]
    pub name: Option<String>,
    /// One document per note into the folder `--output` (an Obsidian vault).
    #[arg(long, requires = "path", requires = "output")]
    pub split: bool,
    /// Write here instead of stdout (a bundle: required; `--split`: a folder).
    #[arg(short, long, visible_alias = "out")]
    pub output: Option<PathBuf>,
}

/// The Markdown notes under `dir`, sorted, as (name relative to `dir`,
/// path); hidden files and folders (`.obsidian/`, `.trash/`) are skipped.
fn notes_in(dir: &Path) -> MemResult<Vec<(String, PathBuf)>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let read = std::fs::read_dir(&d)
            .map_err(|e| MemError::io(&format!("cannot read {}", d.display()), &e))?;
        for item in read {
            let item =
                item.map_err(|e| MemError::io(&format!("cannot read {}", d.display()), &e))?;
            let path = item.path();
            let name = item.file_name().to_string_lossy().to_string();
            if name.starts_with('.') {
                continue;
            }
            let kind = item
                .file_type()
                .map_err(|e| MemError::io(&format!("cannot read {}", path.display()), &e))?;
            if kind.is_dir() {
                stack.push(path);
            } else if kind.is_file() && name.to_ascii_lowercase().ends_with(".md") {
                let rel = path.strip_prefix(dir).unwrap_or(&path);
                let rel = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().to_string())
                    .collect::<Vec<_>>()
                    .join("/");
                out.push((rel, path));
            }
        }
        if out.len() > MAX_NOTES {
            return Err(MemError::new(
                ErrorCode::PayloadTooLarge,
                format!("{} holds more than {MAX_NOTES} notes", dir.display()),
            )
            .with_hint("import its subfolders one at a time"));
        }
    }
    out.sort();
    Ok(out)
}

/// `import`: one result line per entry, like `remember --jsonl`; a folder
/// imports each note as its own document (a note that fails is reported
/// and the others are still imported).
pub fn import(c: &Client, out: &Out, a: ImportArgs) -> MemResult<()> {
    let Some(path) = a.path else {
        return super::bundle::import(c, out, &a.file);
    };
    let documents = if a.file.is_dir() {
        notes_in(&a.file)?
    } else {
        let name = a
            .file
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_else(|| "document".into());
        vec![(name, a.file.clone())]
    };
    let folder = a.file.is_dir();
    let mut failed = 0;
    for (name, file) in documents {
        let bytes = std::fs::read(&file)
            .map_err(|e| MemError::io(&format!("cannot read {}", file.display()), &e))?;
        let req = ImportDocument {
            path: path.clone(),
            adapter: Some(a.adapter.clone()),
            name: Some(name.clone()),
            content: None,
        };
        let results = match c.import_document(req, bytes) {
            Ok(r) => r,
            Err(e) if folder => {
                failed += 1;
                let doc = serde_json::json!({ "document": name, "ok": false, "error": e });
                report(out, &doc, &format!("{name}: {}", e.message))?;
                continue;
            }
            Err(e) => return Err(e),
        };
        for (i, r) in results.into_iter().enumerate() {
            let doc = match (r.result, r.error) {
                (Some(o), _) => {
                    serde_json::json!({ "document": name, "entry": i + 1, "ok": true, "replayed": o.replayed, "memory": o.memory, "proposal": o.proposal })
                }
                (None, e) => {
                    failed += 1;
                    serde_json::json!({ "document": name, "entry": i + 1, "ok": false, "error": e })
                }
            };
            let human = format!(
                "{name} entry {}: {}",
                i + 1,
                doc["memory"]["id"]
                    .as_str()
                    .or(doc["error"]["message"].as_str())
                    .unwrap_or("queued")
            );
            report(out, &doc, &human)?;
        }
    }
    if failed > 0 {
        return Err(
            MemError::new(ErrorCode::BadRequest, format!("{failed} entries failed"))
                .with_hint("the other entries were stored; see the per-entry errors above"),
        );
    }
    Ok(())
}

fn report(out: &Out, doc: &serde_json::Value, human: &str) -> MemResult<()> {
    if out.json() {
        out.line(&super::output::to_json(doc)?)
    } else {
        out.line(human)
    }
}

pub fn export(c: &Client, out: &Out, a: ExportArgs) -> MemResult<()> {
    let Some(path) = a.path else {
        return super::bundle::export(c, out, a.scope, a.output);
    };
    let name = a.name.or_else(|| {
        a.output
            .as_deref()
            .and_then(Path::file_name)
            .map(|n| n.to_string_lossy().to_string())
    });
    let doc = c
        .run(ExportDocument {
            path,
            adapter: Some(a.adapter),
            name: if a.split { None } else { name },
            split: a.split.then_some(true),
        })?
        .value;
    if a.split {
        let Some(dir) = a.output else {
            return Err(MemError::bad_request("--split needs --output DIR"));
        };
        std::fs::create_dir_all(&dir)
            .map_err(|e| MemError::io(&format!("cannot create {}", dir.display()), &e))?;
        let mut written = Vec::new();
        for d in &doc.documents {
            // The host names notes without folders; refuse anything else.
            if d.name.contains(['/', '\\']) || d.name.starts_with('.') {
                return Err(MemError::new(
                    ErrorCode::PluginFailed,
                    format!("the export named a note {:?}", d.name),
                )
                .with_hint("report it to the adapter's author"));
            }
            let file = dir.join(&d.name);
            std::fs::write(&file, d.content.as_bytes())
                .map_err(|e| MemError::io(&format!("cannot write {}", file.display()), &e))?;
            written.push(file);
        }
        return out.emit(
            &serde_json::json!({ "written": written, "notes": written.len() }),
            |_| format!("wrote {} notes to {}", written.len(), dir.display()),
        );
    }
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
