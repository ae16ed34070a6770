//! Workspace bundles at the command line: `export --out FILE [--scope P]`,
//! `import FILE [--into DIR]` and `verify FILE`.

use super::documents::ImportArgs;
use super::output::{Out, human_size};
use crate::client::Client;
use crate::workspace::{self, SessionStart};
use mem_core::{ErrorCode, MemError, MemResult};
use mem_service::bundle::{ImportReport, Limits};
use mem_service::config::CONFIG_FILE;
use mem_service::ops::bundles::ExportBundle;
use std::io::{BufReader, BufWriter};
use std::path::{Path, PathBuf};

#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// The bundle `export --out` wrote.
    pub file: PathBuf,
}

fn open(file: &Path) -> MemResult<BufReader<std::fs::File>> {
    std::fs::File::open(file)
        .map(BufReader::new)
        .map_err(|e| MemError::io(&format!("cannot open {}", file.display()), &e))
}

/// The archive is written beside `file` and renamed into place: a failed
/// export leaves no half archive behind.
pub fn export(
    c: &Client,
    out: &Out,
    scope: Option<String>,
    file: Option<PathBuf>,
) -> MemResult<()> {
    let file = file.ok_or_else(|| {
        MemError::bad_request("a bundle export needs --out FILE")
            .with_hint("name the archive to write, e.g. `mem-host export --out workspace.mem-bundle`; `--path P` exports a document instead")
    })?;
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_else(|| "bundle".into());
    let tmp = file.with_file_name(format!(".{name}.partial-{}", std::process::id()));
    let written = (|| {
        use std::os::unix::fs::OpenOptionsExt;
        let f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)
            .map_err(|e| MemError::io(&format!("cannot create {}", tmp.display()), &e))?;
        let mut w = BufWriter::new(f);
        let report = c.export_bundle(ExportBundle { scope }, &mut w)?;
        let f = w
            .into_inner()
            .map_err(|e| MemError::io("cannot write the bundle", e.error()))?;
        f.sync_all()
            .map_err(|e| MemError::io("cannot write the bundle", &e))?;
        std::fs::rename(&tmp, &file)
            .map_err(|e| MemError::io(&format!("cannot write {}", file.display()), &e))?;
        Ok(report)
    })();
    let report = match written {
        Ok(r) => r,
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
    };
    let mut doc = serde_json::to_value(&report)
        .map_err(|e| MemError::internal(format!("cannot encode the report: {e}")))?;
    doc["path"] = serde_json::json!(file);
    out.emit(&doc, |_| {
        let records: u64 = report.counts.records.values().sum();
        format!(
            "wrote {} ({}): {records} records, {} blobs, {} plugins; bundle {}",
            file.display(),
            human_size(report.bytes),
            report.counts.blobs,
            report.counts.plugins,
            &report.bundle[..12.min(report.bundle.len())]
        )
    })
}

fn emit_import(out: &Out, r: &ImportReport) -> MemResult<()> {
    out.emit(r, |r| r.message.clone())
}

/// Into the workspace (which must be empty).
pub fn import(c: &Client, out: &Out, file: &Path) -> MemResult<()> {
    let report = c.import_bundle(&mut open(file)?)?;
    emit_import(out, &report)
}

/// Into `--into DIR`: a new workspace is made there (an existing one must
/// be empty). A failed import removes what it made.
pub fn import_into(out: &Out, a: ImportArgs) -> MemResult<()> {
    let Some(dir) = a.into else {
        return Err(MemError::internal("import_into without --into"));
    };
    let mut input = open(&a.file)?;
    let existed = dir.exists();
    let fresh = !dir.join(CONFIG_FILE).exists();
    if fresh && existed {
        let holds = std::fs::read_dir(&dir)
            .map_err(|e| MemError::io(&format!("cannot read {}", dir.display()), &e))?
            .next()
            .is_some();
        if holds {
            return Err(MemError::new(
                ErrorCode::WorkspaceNotEmpty,
                format!("{} holds files and is not a workspace", dir.display()),
            )
            .with_hint("import into a new or empty folder")
            .with_details(serde_json::json!({ "path": dir })));
        }
    }
    if fresh {
        workspace::init(&dir, None)?;
    }
    let result = Client::open(&dir, SessionStart::Optimized).and_then(|client| {
        let r = client.import_bundle(&mut input);
        client.finish();
        r
    });
    match result {
        Ok(report) => emit_import(out, &report),
        Err(e) => {
            if fresh {
                undo_init(&dir, existed);
            }
            Err(e)
        }
    }
}

/// Removes the workspace `init` made for a failed import.
fn undo_init(dir: &Path, keep_folder: bool) {
    if !keep_folder {
        let _ = std::fs::remove_dir_all(dir);
        return;
    }
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let p = e.path();
            let _ = if p.is_dir() {
                std::fs::remove_dir_all(&p)
            } else {
                std::fs::remove_file(&p)
            };
        }
    }
}

pub fn verify(out: &Out, a: VerifyArgs) -> MemResult<()> {
    let report = mem_service::bundle::verify(&mut open(&a.file)?, &Limits::default())?;
    out.emit(&report, |r| {
        format!(
            "{} verifies: format {} from workspace {}, {} records, {} blobs, {} plugins ({} entries checked); bundle {}",
            a.file.display(),
            r.format_version,
            r.source.workspace,
            r.records,
            r.counts.blobs,
            r.counts.plugins,
            r.entries,
            &r.bundle[..12.min(r.bundle.len())]
        )
    })
}
