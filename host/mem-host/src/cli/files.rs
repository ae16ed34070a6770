//! File and folder commands: put, get, cat, ls, info, mv, rm, mkdir.

use super::output::{Out, human_size, to_json};
use crate::client::Client;
use clap::Args;
use mem_core::model::{FileRecord, SourceMetadata};
use mem_core::{ErrorCode, MemError, MemResult, VPath};
use mem_service::ops::file_details::FileDetails;
use mem_service::ops::files::{FileInfo, ListFolder, Mkdir, Move, PutFileRequest, Remove};
use mem_service::{Entry, PutFileResult};
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(Debug, Args)]
pub struct PutArgs {
    /// Local file, folder (with --recursive), or `-` for stdin. With --url:
    /// the virtual path to store at (DEST; default: --to and the URL's
    /// file name, or --name).
    #[arg(value_name = "SOURCE|DEST")]
    pub source: Option<PathBuf>,
    /// Fetch the content from this http(s) URL instead (at most the
    /// workspace's max_file_bytes, 5 redirects, --timeout); its MIME type
    /// is sniffed from the bytes, not taken from the server.
    #[arg(long, value_name = "URL", conflicts_with = "recursive")]
    pub url: Option<String>,
    /// With --url: seconds the whole fetch may take.
    #[arg(long, value_name = "SECS", default_value_t = 60, requires = "url")]
    pub timeout: u64,
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
    #[command(flatten)]
    pub source_meta: SourceArgs,
}

/// Source metadata flags: where and when the content comes from. They
/// outrank what processors read from the content (EXIF and the like).
#[derive(Debug, Args, Default)]
pub struct SourceArgs {
    /// When the content was made: RFC 3339 with a zone, e.g. 2012-03-04T10:00:00+01:00.
    #[arg(long, value_name = "TIME")]
    pub captured_at: Option<String>,
    /// Latitude in degrees (-90 to 90), with --lon.
    #[arg(long, allow_hyphen_values = true)]
    pub lat: Option<f64>,
    /// Longitude in degrees (-180 to 180), with --lat.
    #[arg(long, allow_hyphen_values = true)]
    pub lon: Option<f64>,
    /// How far off the position may be, in metres.
    #[arg(long, value_name = "METRES")]
    pub location_accuracy: Option<f64>,
    /// A place name.
    #[arg(long)]
    pub place: Option<String>,
    /// What kind of source: camera, scan, web, export, ...
    #[arg(long)]
    pub source_kind: Option<String>,
    /// Which source: a device, an application, a site.
    #[arg(long)]
    pub source_name: Option<String>,
}

impl SourceArgs {
    /// The flags as source metadata text (the service checks it), or none.
    pub fn to_text(&self) -> Option<String> {
        let m = self.to_meta();
        (!m.is_empty()).then(|| m.to_text())
    }

    /// The flags as source metadata (unchecked).
    pub fn to_meta(&self) -> SourceMetadata {
        SourceMetadata {
            captured_at: self.captured_at.clone(),
            lat: self.lat,
            lon: self.lon,
            location_accuracy: self.location_accuracy,
            place: self.place.clone(),
            source_kind: self.source_kind.clone(),
            source_name: self.source_name.clone(),
        }
    }
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
pub struct CatArgs {
    /// File id or virtual path.
    pub target: String,
    /// Print processed chunk N (from 0, as `info` numbers them) instead.
    #[arg(long, value_name = "N")]
    pub chunk: Option<u32>,
}

#[derive(Debug, Args)]
pub struct InfoArgs {
    /// File id or virtual path.
    pub target: String,
    /// First chunk shown (the `next_chunk` of the previous page).
    #[arg(long, value_name = "N")]
    pub chunks_from: Option<u32>,
    /// Chunks shown (1 to 100, default 20).
    #[arg(long, value_name = "N")]
    pub chunks_limit: Option<u32>,
}

#[derive(Debug, Args)]
pub struct LsArgs {
    /// Folder (or file) to list.
    #[arg(default_value = "/")]
    pub path: String,
    /// Only files with this tag, in the folder and below; repeatable (all
    /// must match).
    #[arg(long = "tag", value_name = "T")]
    pub tags: Vec<String>,
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

pub(super) fn put_line(r: &PutFileResult) -> String {
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

fn open_local(path: &Path) -> MemResult<std::fs::File> {
    std::fs::File::open(path)
        .map_err(|e| MemError::io(&format!("cannot read {}", path.display()), &e))
}

fn local_name(path: &Path) -> MemResult<String> {
    path.file_name()
        .map(|n| n.to_string_lossy().to_string())
        .ok_or_else(|| {
            MemError::bad_request(format!("{} has no file name", path.display()))
                .with_hint("pass --name")
        })
}

pub(super) fn put_request(path: &VPath, a: &PutArgs) -> PutFileRequest {
    PutFileRequest {
        path: path.as_str().to_string(),
        tags: a.tags.clone(),
        replace: a.replace,
        wait: true,
        source_metadata: a.source_meta.to_text(),
        ..Default::default()
    }
}

pub fn put(c: &Client, out: &Out, a: PutArgs) -> MemResult<()> {
    let folder = VPath::parse(&a.to)?;
    if let Some(url) = &a.url {
        return super::fetch::put(c, out, url, &folder, &a);
    }
    let Some(source) = a.source.clone() else {
        return Err(MemError::bad_request("put needs something to store")
            .with_hint("name a local file or folder, `-` for stdin, or --url URL"));
    };
    if source.as_os_str() == "-" {
        let name = a.name.clone().ok_or_else(|| {
            MemError::bad_request("storing stdin needs a name").with_hint("pass --name NAME")
        })?;
        let req = put_request(&folder.join(&name)?, &a);
        let r = c.put_stream(req, &mut std::io::stdin())?.value;
        return out.emit(&r, put_line);
    }
    let meta = std::fs::metadata(&source)
        .map_err(|e| MemError::io(&format!("cannot read {}", source.display()), &e))?;
    if meta.is_dir() {
        if !a.recursive {
            return Err(
                MemError::bad_request(format!("{} is a folder", source.display()))
                    .with_hint("use --recursive to store a folder tree"),
            );
        }
        let root_name = match &a.name {
            Some(n) => n.clone(),
            None => local_name(&source.canonicalize().unwrap_or(source.clone()))?,
        };
        return put_tree(c, out, &source, &folder.join(&root_name)?, &a);
    }
    let name = match &a.name {
        Some(n) => n.clone(),
        None => local_name(&source)?,
    };
    let req = put_request(&folder.join(&name)?, &a);
    let r = c.put_stream(req, &mut open_local(&source)?)?.value;
    out.emit(&r, put_line)
}

/// Stores a local tree under `dest`; one result line per file, as each is
/// stored. Symlinks are skipped (reported), so a tree cannot pull in files
/// from outside itself.
fn put_tree(c: &Client, out: &Out, local: &Path, dest: &VPath, a: &PutArgs) -> MemResult<()> {
    let mut failed = 0;
    let mut total = 0;
    let mut stack = vec![(local.to_path_buf(), dest.clone())];
    mkdir_p(c, dest)?;
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
            if ft.is_symlink() {
                if out.json() {
                    out.line(&to_json(&serde_json::json!({
                        "ok": false, "source": path.display().to_string(), "skipped": "symlink"
                    }))?)?;
                } else {
                    out.line(&format!("skipped {} (symlink)", path.display()))?;
                }
                continue;
            }
            let stored = vdir.join(&name).and_then(|vpath| {
                if ft.is_dir() {
                    mkdir_p(c, &vpath)?;
                    stack.push((path.clone(), vpath));
                    Ok(None)
                } else if ft.is_file() {
                    let req = put_request(&vpath, a);
                    Ok(Some(c.put_stream(req, &mut open_local(&path)?)?.value))
                } else {
                    Ok(None)
                }
            });
            match stored {
                Ok(None) => {}
                Ok(Some(ok)) => {
                    total += 1;
                    if out.json() {
                        out.line(&to_json(&serde_json::json!({ "ok": true, "result": ok }))?)?
                    } else {
                        out.line(&put_line(&ok))?
                    }
                }
                Err(e) => {
                    total += 1;
                    failed += 1;
                    let local = path.display().to_string();
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
    }
    if failed > 0 {
        return Err(MemError::new(
            ErrorCode::BadRequest,
            format!("{failed} of {total} files failed"),
        )
        .with_hint("see the per-file errors above; the other files were stored"));
    }
    Ok(())
}

fn mkdir_p(c: &Client, path: &VPath) -> MemResult<()> {
    c.run(Mkdir {
        path: path.as_str().to_string(),
        parents: true,
        idempotency_key: None,
    })?;
    Ok(())
}

pub fn get(c: &Client, out: &Out, a: GetArgs) -> MemResult<()> {
    if a.output.as_deref().is_some_and(|o| o.as_os_str() == "-") {
        c.copy_file(&a.target, &mut std::io::stdout().lock())?;
        return Ok(());
    }
    let info = c
        .run(FileInfo {
            target: a.target.clone(),
            chunks_limit: Some(1),
            ..FileInfo::default()
        })?
        .value
        .file;
    let dest = a.output.unwrap_or_else(|| PathBuf::from(&info.name));
    let cannot = |e: &std::io::Error| MemError::io(&format!("cannot write {}", dest.display()), e);
    let exists = || {
        MemError::io(
            &format!("cannot write {}", dest.display()),
            &std::io::Error::from(std::io::ErrorKind::AlreadyExists),
        )
        .with_hint("the local file exists; pass --force to overwrite it")
    };
    if !a.force && dest.exists() {
        return Err(exists());
    }
    // The bytes go to a file beside the destination, renamed over it once
    // complete: a download that fails midway leaves the old file (or none).
    let part = dest.with_file_name(format!(
        ".{}.{}.part",
        dest.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| info.name.clone()),
        std::process::id()
    ));
    let written = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&part)
            .map_err(|e| cannot(&e))?;
        let file = c.copy_file(&info.id, &mut f)?;
        f.sync_all().map_err(|e| cannot(&e))?;
        if !a.force && dest.exists() {
            return Err(exists());
        }
        std::fs::rename(&part, &dest).map_err(|e| cannot(&e))?;
        Ok(file)
    })();
    let file = written.inspect_err(|_| {
        let _ = std::fs::remove_file(&part);
    })?;
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

pub fn cat(c: &Client, out: &Out, a: CatArgs) -> MemResult<()> {
    let Some(n) = a.chunk else {
        let mut stdout = std::io::stdout().lock();
        c.copy_file(&a.target, &mut stdout)?;
        return stdout.flush().map_err(|e| crate::client::write_error(&e));
    };
    let d = c
        .run(FileInfo {
            target: a.target.clone(),
            chunks_from: Some(n),
            chunks_limit: Some(1),
        })?
        .value;
    let count = d.processed.as_ref().map_or(0, |p| p.chunk_count);
    let Some(chunk) = d.processed.and_then(|p| p.chunks.into_iter().next()) else {
        return Err(MemError::not_found("chunk", &format!("{}#{n}", d.file.id))
            .with_hint(if count == 0 {
                "the file has no processed chunks; see its index_status with `mem-host info`"
                    .to_string()
            } else {
                format!("the file has {count} chunks, numbered 0 to {}", count - 1)
            })
            .with_details(serde_json::json!({ "chunk": n, "chunk_count": count })));
    };
    out.emit(&chunk, |ch| ch.text.clone())
}

fn file_details(d: &FileDetails) -> String {
    let mut s = file_record(&d.file);
    s.push_str(&super::annotation::annotation_lines(d));
    let Some(p) = &d.processed else {
        s.push_str("\nprocessed:     not yet");
        return s;
    };
    if let Some(t) = &p.title {
        s.push_str(&format!("\ntitle:         {t}"));
    }
    for (k, v) in &p.metadata {
        s.push_str(&format!("\nmeta.{k:<9} {v}"));
    }
    if !p.suggested_tags.is_empty() {
        s.push_str(&format!("\nsuggested:     {}", p.suggested_tags.join(", ")));
    }
    if p.entity_count > 0 {
        let shown: Vec<String> = p
            .entities
            .iter()
            .map(|e| format!("{} ({})", e.value, e.kind))
            .collect();
        let more = p.entity_count - p.entities.len();
        s.push_str(&format!("\nentities:      {}", shown.join(", ")));
        if more > 0 {
            s.push_str(&format!(" and {more} more"));
        }
    }
    s.push_str(&format!("\nchunks:        {}", p.chunk_count));
    for ch in &p.chunks {
        let first = ch.text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        let preview: String = first.chars().take(60).collect();
        s.push_str(&format!(
            "\n  {:>3}  {:<40} {:<10} {}",
            ch.index, ch.locator, ch.kind, preview
        ));
    }
    if let Some(next) = p.next_chunk {
        s.push_str(&format!("\n  more: --chunks-from {next}"));
    }
    s
}

fn file_record(f: &FileRecord) -> String {
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
    if let Some(d) = &f.description {
        s.push_str(&format!("\ndescription:   {d}"));
    }
    if let Some(e) = &f.index_error {
        s.push_str(&format!("\nindex_error:   {e}"));
    }
    s.push_str(&source_lines(f));
    let t = mem_core::model::file_place(f);
    s.push_str(&format!(
        "\ntimeline:      {} ({})",
        t.time,
        t.time_source.as_str()
    ));
    if let Some(u) = &t.uncertain_time {
        s.push_str(&format!(
            "\nuncertain:     {u} (a processor time without a zone; not used)"
        ));
    }
    s
}

/// The `info` lines of a file's source metadata (none without it).
fn source_lines(f: &FileRecord) -> String {
    let Some(m) = &f.source else {
        return String::new();
    };
    let mut s = String::new();
    if let Some(t) = &m.captured_at {
        s.push_str(&format!("\ncaptured_at:   {t}"));
    }
    if let (Some(lat), Some(lon)) = (m.lat, m.lon) {
        let acc = m
            .location_accuracy
            .map(|a| format!(" (±{a} m)"))
            .unwrap_or_default();
        s.push_str(&format!("\nposition:      {lat}, {lon}{acc}"));
    }
    for (label, v) in [
        ("place:        ", &m.place),
        ("source_kind:  ", &m.source_kind),
        ("source_name:  ", &m.source_name),
    ] {
        if let Some(v) = v {
            s.push_str(&format!("\n{label} {v}"));
        }
    }
    s
}

pub fn info(c: &Client, out: &Out, a: InfoArgs) -> MemResult<()> {
    let f = c
        .run(FileInfo {
            target: a.target,
            chunks_from: a.chunks_from,
            chunks_limit: a.chunks_limit,
        })?
        .value;
    out.emit(&f, file_details)
}

pub fn ls(c: &Client, out: &Out, a: LsArgs) -> MemResult<()> {
    // `ls` shows the whole folder: it follows the listing's pages.
    let tagged = !a.tags.is_empty();
    let list = |cursor| {
        c.run(ListFolder {
            path: Some(a.path.clone()),
            tags: a.tags.clone(),
            cursor,
            ..ListFolder::default()
        })
    };
    let mut listing = list(None)?.value;
    while let Some(cursor) = listing.next_cursor.take() {
        let page = list(Some(cursor))?.value;
        listing.entries.extend(page.entries);
        listing.next_cursor = page.next_cursor;
    }
    out.emit(&listing, |l| {
        if l.entries.is_empty() && tagged {
            return format!("no file in {} carries those tags", l.path);
        }
        if l.entries.is_empty() {
            return format!("{} is empty", l.path);
        }
        l.entries
            .iter()
            .map(|e| match e {
                Entry::Folder { name, .. } => format!("{name}/"),
                Entry::File(f) => format!(
                    "{:<32} {:>10}  {:<24} {:<10} {}",
                    // A tagged listing reaches below the folder.
                    if tagged { f.path.as_str() } else { &f.name },
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

pub fn mv(c: &Client, out: &Out, a: MvArgs) -> MemResult<()> {
    let r = c
        .run(Move {
            from: a.source,
            to: a.destination,
            idempotency_key: None,
        })?
        .value;
    out.emit(&r, |r| {
        format!(
            "moved {} -> {} ({} files, {} folders)",
            r.from, r.to, r.files_moved, r.folders_moved
        )
    })
}

pub fn rm(c: &Client, out: &Out, a: RmArgs) -> MemResult<()> {
    let r = c
        .run(Remove {
            target: a.target,
            recursive: a.recursive,
            idempotency_key: None,
        })?
        .value;
    out.emit(&r, |r| {
        format!(
            "removed {} ({} files, {} folders)",
            r.path, r.files_removed, r.folders_removed
        )
    })
}

pub fn mkdir(c: &Client, out: &Out, a: MkdirArgs) -> MemResult<()> {
    let r = c
        .run(Mkdir {
            path: a.path,
            parents: a.parents,
            idempotency_key: None,
        })?
        .value;
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
