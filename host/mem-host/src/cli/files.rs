//! File and folder commands: put, get, cat, ls, info, mv, rm, mkdir.

use super::output::{Out, human_size, to_json};
use clap::Args;
use mem_core::model::FileRecord;
use mem_core::{ErrorCode, MemError, MemResult, VPath};
use mem_service::{Entry, PutFile, PutFileResult, Service};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

#[derive(Debug, Args)]
pub struct PutArgs {
    /// Local file, folder (with --recursive), or `-` for stdin.
    pub source: PathBuf,
    /// Store a folder and everything below it.
    #[arg(short, long)]
    pub recursive: bool,
    /// Name of the stored file (required for stdin).
    #[arg(long)]
    pub name: Option<String>,
    /// Virtual folder to store into (created if missing).
    #[arg(long, default_value = "/")]
    pub to: String,
    /// Tag the stored file(s); repeatable.
    #[arg(long = "tag", value_name = "TAG")]
    pub tags: Vec<String>,
    /// Replace the content of an existing file at the same path.
    #[arg(long)]
    pub replace: bool,
}

#[derive(Debug, Args)]
pub struct GetArgs {
    /// File id or virtual path.
    pub target: String,
    /// Local path to write (default: the file's name in the current folder).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Overwrite an existing local file.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct TargetArg {
    /// File id or virtual path.
    pub target: String,
}

#[derive(Debug, Args)]
pub struct LsArgs {
    /// Folder (or file) to list.
    #[arg(default_value = "/")]
    pub path: String,
}

#[derive(Debug, Args)]
pub struct MvArgs {
    /// File id or path, or folder path.
    pub source: String,
    /// New path, or an existing folder to move into.
    pub destination: String,
}

#[derive(Debug, Args)]
pub struct RmArgs {
    /// File id or path, or folder path.
    pub target: String,
    /// Remove a non-empty folder with everything inside.
    #[arg(short, long)]
    pub recursive: bool,
}

#[derive(Debug, Args)]
pub struct MkdirArgs {
    pub path: String,
    /// Create missing parents; an existing folder is not an error.
    #[arg(short, long)]
    pub parents: bool,
}

fn put_line(r: &PutFileResult) -> String {
    let f = &r.file;
    let mut s = format!(
        "{} {}  {}  {}  {}",
        if r.created { "stored" } else { "replaced" },
        f.path,
        f.id,
        human_size(f.size),
        f.mime
    );
    if r.deduplicated {
        s.push_str("  (content already stored; deduplicated)");
    }
    s
}

fn read_local(path: &Path) -> MemResult<Vec<u8>> {
    std::fs::read(path).map_err(|e| MemError::io(&format!("cannot read {}", path.display()), &e))
}

fn local_name(path: &Path) -> MemResult<String> {
    path.file_name()
        .map(|n| n.to_string_lossy().to_string())
        .ok_or_else(|| {
            MemError::bad_request(format!("{} has no file name", path.display()))
                .with_hint("pass --name")
        })
}

pub fn put(svc: &Service, out: &Out, a: PutArgs) -> MemResult<()> {
    let folder = VPath::parse(&a.to)?;
    if a.source.as_os_str() == "-" {
        let name = a.name.ok_or_else(|| {
            MemError::bad_request("storing stdin needs a name").with_hint("pass --name NAME")
        })?;
        let mut bytes = Vec::new();
        std::io::stdin()
            .read_to_end(&mut bytes)
            .map_err(|e| MemError::io("cannot read stdin", &e))?;
        let r = svc.put_file(PutFile {
            path: folder.join(&name)?,
            bytes,
            tags: a.tags,
            replace: a.replace,
        })?;
        return out.emit(&r, put_line);
    }
    let meta = std::fs::metadata(&a.source)
        .map_err(|e| MemError::io(&format!("cannot read {}", a.source.display()), &e))?;
    if meta.is_dir() {
        if !a.recursive {
            return Err(
                MemError::bad_request(format!("{} is a folder", a.source.display()))
                    .with_hint("use --recursive to store a folder tree"),
            );
        }
        let root_name = match &a.name {
            Some(n) => n.clone(),
            None => local_name(&a.source.canonicalize().unwrap_or(a.source.clone()))?,
        };
        return put_tree(
            svc,
            out,
            &a.source,
            &folder.join(&root_name)?,
            &a.tags,
            a.replace,
        );
    }
    let name = match a.name {
        Some(n) => n,
        None => local_name(&a.source)?,
    };
    let bytes = read_local(&a.source)?;
    let r = svc.put_file(PutFile {
        path: folder.join(&name)?,
        bytes,
        tags: a.tags,
        replace: a.replace,
    })?;
    out.emit(&r, put_line)
}

/// Stores a local tree under `dest`; one result line per file, printed
/// only after the whole tree is durable. Symlinks are skipped (reported),
/// so a tree cannot pull in files from outside itself.
fn put_tree(
    svc: &Service,
    out: &Out,
    local: &Path,
    dest: &VPath,
    tags: &[String],
    replace: bool,
) -> MemResult<()> {
    let mut results: Vec<Result<PutFileResult, (String, MemError)>> = Vec::new();
    let mut skipped = Vec::new();
    let mut stack = vec![(local.to_path_buf(), dest.clone())];
    svc.mkdir(dest, true)?;
    while let Some((dir, vdir)) = stack.pop() {
        let mut entries: Vec<_> = std::fs::read_dir(&dir)
            .map_err(|e| MemError::io(&format!("cannot read {}", dir.display()), &e))?
            .filter_map(Result::ok)
            .collect();
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().to_string();
            let ft = entry
                .file_type()
                .map_err(|e| MemError::io(&format!("cannot stat {}", path.display()), &e))?;
            let vpath = match vdir.join(&name) {
                Ok(p) => p,
                Err(e) => {
                    results.push(Err((path.display().to_string(), e)));
                    continue;
                }
            };
            if ft.is_symlink() {
                skipped.push(path.display().to_string());
            } else if ft.is_dir() {
                svc.mkdir(&vpath, true)?;
                stack.push((path, vpath));
            } else if ft.is_file() {
                let r = read_local(&path).and_then(|bytes| {
                    svc.put_file_deferred(PutFile {
                        path: vpath,
                        bytes,
                        tags: tags.to_vec(),
                        replace,
                    })
                });
                results.push(r.map_err(|e| (path.display().to_string(), e)));
            }
        }
    }
    svc.flush()?;
    let mut failed = 0;
    for r in &results {
        match r {
            Ok(ok) if out.json() => {
                out.line(&to_json(&serde_json::json!({ "ok": true, "result": ok }))?)?
            }
            Ok(ok) => out.line(&put_line(ok))?,
            Err((local, e)) => {
                failed += 1;
                if out.json() {
                    out.line(&to_json(
                        &serde_json::json!({ "ok": false, "source": local, "error": e }),
                    )?)?;
                } else {
                    out.line(&format!("failed {local}: {}: {}", e.code, e.message))?;
                }
            }
        }
    }
    for s in &skipped {
        if out.json() {
            out.line(&to_json(
                &serde_json::json!({ "ok": false, "source": s, "skipped": "symlink" }),
            )?)?;
        } else {
            out.line(&format!("skipped {s} (symlink)"))?;
        }
    }
    if failed > 0 {
        return Err(MemError::new(
            ErrorCode::BadRequest,
            format!("{failed} of {} files failed", results.len()),
        )
        .with_hint("see the per-file errors above; the other files were stored"));
    }
    Ok(())
}

pub fn get(svc: &Service, out: &Out, a: GetArgs) -> MemResult<()> {
    let (file, bytes) = svc.read_file(&a.target)?;
    let dest = a.output.unwrap_or_else(|| PathBuf::from(&file.name));
    if dest.as_os_str() == "-" {
        return write_stdout(&bytes);
    }
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true);
    if a.force {
        opts.create(true).truncate(true);
    } else {
        opts.create_new(true);
    }
    let mut f = opts.open(&dest).map_err(|e| {
        let err = MemError::io(&format!("cannot write {}", dest.display()), &e);
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            err.with_hint("the local file exists; pass --force to overwrite it")
        } else {
            err
        }
    })?;
    f.write_all(&bytes)
        .and_then(|_| f.sync_all())
        .map_err(|e| MemError::io(&format!("cannot write {}", dest.display()), &e))?;
    let doc = serde_json::json!({ "file": file, "written_to": dest.display().to_string() });
    out.emit(&doc, |_| {
        format!(
            "wrote {} ({}) to {}",
            file.path,
            human_size(file.size),
            dest.display()
        )
    })
}

fn write_stdout(bytes: &[u8]) -> MemResult<()> {
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(bytes)
        .and_then(|_| stdout.flush())
        .map_err(|e| MemError::io("cannot write to stdout", &e))
}

pub fn cat(svc: &Service, a: TargetArg) -> MemResult<()> {
    let (_, bytes) = svc.read_file(&a.target)?;
    write_stdout(&bytes)
}

fn file_details(f: &FileRecord) -> String {
    let mut s = format!(
        "id:            {}\npath:          {}\nsize:          {} ({} bytes)\nmime:          {}\nsha256:        {}\ncreated:       {}\nupdated:       {}\nindex_status:  {}\nversion:       {}",
        f.id,
        f.path,
        human_size(f.size),
        f.size,
        f.mime,
        f.sha256,
        mem_core::time::to_rfc3339(&f.created_at),
        mem_core::time::to_rfc3339(&f.updated_at),
        f.index_status.as_str(),
        f.state_version,
    );
    if !f.tags.is_empty() {
        s.push_str(&format!("\ntags:          {}", f.tags.join(", ")));
    }
    if let Some(e) = &f.index_error {
        s.push_str(&format!("\nindex_error:   {e}"));
    }
    s
}

pub fn info(svc: &Service, out: &Out, a: TargetArg) -> MemResult<()> {
    let f = svc.file_info(&a.target)?;
    out.emit(&f, file_details)
}

pub fn ls(svc: &Service, out: &Out, a: LsArgs) -> MemResult<()> {
    let listing = svc.list_folder(&VPath::parse(&a.path)?)?;
    out.emit(&listing, |l| {
        if l.entries.is_empty() {
            return format!("{} is empty", l.path);
        }
        l.entries
            .iter()
            .map(|e| match e {
                Entry::Folder { name, .. } => format!("{name}/"),
                Entry::File(f) => format!(
                    "{:<32} {:>10}  {:<24} {:<10} {}",
                    f.name,
                    human_size(f.size),
                    f.mime,
                    f.index_status.as_str(),
                    f.id
                ),
            })
            .collect::<Vec<_>>()
            .join("\n")
    })
}

pub fn mv(svc: &Service, out: &Out, a: MvArgs) -> MemResult<()> {
    let r = svc.move_path(&a.source, &VPath::parse(&a.destination)?)?;
    out.emit(&r, |r| {
        format!(
            "moved {} -> {} ({} files, {} folders)",
            r.from, r.to, r.files_moved, r.folders_moved
        )
    })
}

pub fn rm(svc: &Service, out: &Out, a: RmArgs) -> MemResult<()> {
    let r = svc.remove_path(&a.target, a.recursive)?;
    out.emit(&r, |r| {
        format!(
            "removed {} ({} files, {} folders)",
            r.path, r.files_removed, r.folders_removed
        )
    })
}

pub fn mkdir(svc: &Service, out: &Out, a: MkdirArgs) -> MemResult<()> {
    let r = svc.mkdir(&VPath::parse(&a.path)?, a.parents)?;
    out.emit(&r, |r| {
        if r.created.is_empty() {
            format!("{} already exists", r.path)
        } else {
            format!(
                "created {}",
                r.created
                    .iter()
                    .map(VPath::as_str)
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
    })
}
