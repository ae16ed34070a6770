//! Files and folders: a virtual tree over content-addressed blobs.
//!
//! Folders are records of their own (empty folders exist); a file's path is
//! unique. Identical bytes are stored once and reference-counted by the
//! store. Folders that hold memories cannot be deleted or moved, since a
//! memory's path scope is part of the immutable statement.

use crate::Service;
use crate::content::Staged;
use crate::records::{Stored, any_with_prefix, encode, load, push_event, scan_all, transact};
use mem_core::id::{self, new_id};
use mem_core::model::{FileRecord, FolderRecord, IndexStatus};
use mem_core::store::{Batch, Durability, Table};
use mem_core::time::{Timestamp, now};
use mem_core::{ErrorCode, MemError, MemResult, VPath};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::BTreeSet;

use crate::ops::fields::{MAX_TAG_CHARS, MAX_TAGS};

/// A file record to write over content already staged in the blob store.
#[derive(Debug, Clone)]
pub(crate) struct PutFile {
    /// Full virtual path of the new file (folder + name).
    pub path: VPath,
    pub content: Staged,
    pub tags: Vec<String>,
    /// Replace the content of an existing file at `path` (keeping its id).
    pub replace: bool,
    /// The uploader's source metadata, checked; on a replace, `None`
    /// keeps the file's earlier one.
    pub source: Option<mem_core::model::SourceMetadata>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PutFileResult {
    pub file: FileRecord,
    /// False when an existing file's content was replaced.
    pub created: bool,
    /// The same bytes were already stored; no new blob was written.
    pub deduplicated: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MoveResult {
    pub from: VPath,
    pub to: VPath,
    pub files_moved: usize,
    pub folders_moved: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RemoveResult {
    pub path: VPath,
    pub files_removed: usize,
    pub folders_removed: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MkdirResult {
    pub path: VPath,
    /// Folders that did not exist before, parents first.
    pub created: Vec<VPath>,
}

/// What a `rm`/`mv` target turned out to be.
enum Node {
    File(Box<Stored<FileRecord>>),
    Folder(VPath),
}

/// A folder's contents: its file records and its folder entries.
type Subtree = (Vec<Stored<FileRecord>>, Vec<(String, Vec<u8>)>);

/// Tags are 1 to 64 characters without whitespace, comma, control or
/// invisible characters (`ops::fields::tags` states the same); duplicates
/// collapse, order is sorted.
pub(crate) fn tag_ok(t: &str) -> bool {
    let n = t.chars().count();
    (1..=MAX_TAG_CHARS).contains(&n)
        && !t.chars().any(|c| {
            c.is_whitespace() || c == ',' || c.is_control() || mem_core::path::is_invisible(c)
        })
}

/// The tags of a file, checked (see [`tag_ok`]).
pub(crate) fn validate_tags(tags: &[String]) -> MemResult<Vec<String>> {
    if tags.len() > MAX_TAGS {
        return Err(MemError::bad_request(format!(
            "too many tags ({}; at most {MAX_TAGS})",
            tags.len()
        ))
        .with_hint("keep the tags that matter most"));
    }
    let mut out = BTreeSet::new();
    for t in tags {
        if !tag_ok(t) {
            return Err(MemError::bad_request(format!("bad tag {t:?}"))
                .with_hint(format!(
                    "tags are 1-{MAX_TAG_CHARS} characters without spaces, commas or invisible characters"
                ))
                .with_details(json!({ "tag": t })));
        }
        out.insert(t.clone());
    }
    Ok(out.into_iter().collect())
}

impl Service {
    /// Stores a file record at `req.path` over staged content, creating
    /// missing parent folders, and queues it for the processors.
    pub(crate) fn put_file(&self, req: PutFile) -> MemResult<PutFileResult> {
        let out = self.put_file_with(req, Durability::Immediate)?;
        self.after_write();
        self.enqueue_processing(&out.file);
        Ok(out)
    }

    fn put_file_with(&self, req: PutFile, durability: Durability) -> MemResult<PutFileResult> {
        if req.path.is_root() {
            return Err(
                MemError::new(ErrorCode::BadPath, "a file cannot be stored at '/'")
                    .with_hint("name the file, e.g. --name notes.md or --to /folder"),
            );
        }
        let tags = validate_tags(&req.tags)?;
        let Staged {
            sha256: sha,
            size,
            mime,
            deduplicated,
        } = req.content;
        let store = self.store();
        let path = req.path;
        transact(store, durability, || {
            let mut batch = Batch::new();
            let at = now();
            if load::<FolderRecord>(store, Table::Folders, path.as_str())?.is_some() {
                return Err(
                    MemError::new(ErrorCode::AlreadyExists, format!("{path} is a folder"))
                        .with_hint(
                            "choose a file name inside the folder, e.g. --to <folder> with --name",
                        )
                        .with_details(json!({ "path": path })),
                );
            }
            if let Some(parent) = path.parent() {
                self.ensure_folder(&mut batch, &parent, at)?;
            }
            let existing = self.file_at(&path)?;
            let (file, created) = match existing {
                Some(old) if req.replace => {
                    let mut f = old.value.clone();
                    if f.sha256 != sha {
                        batch.blob_ref(f.sha256.clone(), -1);
                        batch.blob_ref(sha.clone(), 1);
                        batch.delete(Table::FileContent, f.id.clone());
                        f.content_time = None;
                        f.index_status = IndexStatus::Pending;
                        f.index_error = None;
                        f.index_attempts = 0;
                    }
                    f.size = size;
                    f.sha256 = sha.clone();
                    f.mime = mime.clone();
                    f.tags = tags.clone();
                    if req.source.is_some() {
                        f.source = req.source.clone().map(Box::new);
                    }
                    f.updated_at = at;
                    f.state_version += 1;
                    batch.expect(Table::Files, f.id.clone(), Some(old.raw.clone()));
                    push_event(
                        &mut batch,
                        "file.replaced",
                        &f.id,
                        Some(f.state_version),
                        json!({ "path": path }),
                    )?;
                    (f, false)
                }
                Some(old) => {
                    return Err(MemError::new(
                        ErrorCode::AlreadyExists,
                        format!("a file already exists at {path}"),
                    )
                    .with_hint("use --replace to replace its content, or choose another name")
                    .with_details(json!({ "path": path, "id": old.value.id })));
                }
                None => {
                    let f = FileRecord {
                        id: new_id(id::FILE),
                        path: path.clone(),
                        name: path.name().to_string(),
                        size,
                        sha256: sha.clone(),
                        mime: mime.clone(),
                        tags: tags.clone(),
                        description: None,
                        created_at: at,
                        updated_at: at,
                        index_status: IndexStatus::Pending,
                        index_error: None,
                        index_attempts: 0,
                        state_version: 1,
                        source: req.source.clone().map(Box::new),
                        content_time: None,
                    };
                    batch.expect(Table::FilePaths, path.as_str(), None);
                    batch.put(Table::FilePaths, path.as_str(), f.id.as_bytes().to_vec());
                    batch.blob_ref(sha.clone(), 1);
                    push_event(
                        &mut batch,
                        "file.created",
                        &f.id,
                        Some(1),
                        json!({ "path": path }),
                    )?;
                    (f, true)
                }
            };
            batch.put(Table::Files, file.id.clone(), encode(&file)?);
            Ok((
                batch,
                PutFileResult {
                    file,
                    created,
                    deduplicated,
                },
            ))
        })
    }

    /// Adds to `batch` every missing folder from the root down to `path`.
    pub(crate) fn ensure_folder(
        &self,
        batch: &mut Batch,
        path: &VPath,
        at: Timestamp,
    ) -> MemResult<Vec<VPath>> {
        let mut created = Vec::new();
        let mut chain = path.ancestors();
        chain.push(path.clone());
        for p in chain.into_iter().filter(|p| !p.is_root()) {
            if self.store().get(Table::Folders, p.as_str())?.is_some() {
                continue;
            }
            if let Some(file_id) = self.store().get(Table::FilePaths, p.as_str())? {
                return Err(MemError::new(
                    ErrorCode::AlreadyExists,
                    format!("{p} is a file, not a folder"),
                )
                .with_hint("choose a folder path that no file occupies")
                .with_details(json!({ "path": p, "id": String::from_utf8_lossy(&file_id) })));
            }
            let rec = FolderRecord {
                path: p.clone(),
                created_at: at,
            };
            batch.expect(Table::Folders, p.as_str(), None);
            batch.expect(Table::FilePaths, p.as_str(), None);
            batch.put(Table::Folders, p.as_str(), encode(&rec)?);
            push_event(batch, "folder.created", p.as_str(), None, json!({}))?;
            created.push(p);
        }
        Ok(created)
    }

    /// `mkdir` (`parents = false`: the parent must exist and the folder must
    /// not) or `mkdir -p` (creates parents; an existing folder is fine).
    pub(crate) fn mkdir(&self, path: &VPath, parents: bool) -> MemResult<MkdirResult> {
        let store = self.store();
        transact(store, Durability::Immediate, || {
            let mut batch = Batch::new();
            if path.is_root() || self.folder_exists(path)? {
                if parents {
                    return Ok((
                        batch,
                        MkdirResult {
                            path: path.clone(),
                            created: vec![],
                        },
                    ));
                }
                return Err(MemError::new(
                    ErrorCode::AlreadyExists,
                    format!("folder {path} already exists"),
                )
                .with_hint("use -p to accept an existing folder")
                .with_details(json!({ "path": path })));
            }
            if !parents
                && let Some(parent) = path.parent()
                && !self.folder_exists(&parent)?
            {
                return Err(MemError::new(
                    ErrorCode::NotFound,
                    format!("parent folder {parent} does not exist"),
                )
                .with_hint("use -p to create missing parents")
                .with_details(json!({ "path": parent })));
            }
            let created = self.ensure_folder(&mut batch, path, now())?;
            Ok((
                batch,
                MkdirResult {
                    path: path.clone(),
                    created,
                },
            ))
        })
    }

    pub(crate) fn folder_exists(&self, path: &VPath) -> MemResult<bool> {
        Ok(path.is_root() || self.store().get(Table::Folders, path.as_str())?.is_some())
    }

    pub(crate) fn file_at(&self, path: &VPath) -> MemResult<Option<Stored<FileRecord>>> {
        match self.store().get(Table::FilePaths, path.as_str())? {
            Some(id) => {
                let id = String::from_utf8_lossy(&id).to_string();
                load(self.store(), Table::Files, &id)
            }
            None => Ok(None),
        }
    }

    fn load_file(&self, target: &str) -> MemResult<Stored<FileRecord>> {
        let found = if target.starts_with('/') {
            self.file_at(&VPath::parse(target)?)?
        } else {
            load(self.store(), Table::Files, target)?
        };
        found.ok_or_else(|| MemError::not_found("file", target))
    }

    /// A file's record, by id or by virtual path.
    pub(crate) fn file_info(&self, target: &str) -> MemResult<FileRecord> {
        Ok(self.load_file(target)?.value)
    }

    /// A file's record and a reader over its content, by id or by
    /// virtual path: the content streams, whatever its size.
    pub(crate) fn open_file(
        &self,
        target: &str,
    ) -> MemResult<(FileRecord, Box<dyn std::io::Read + Send>)> {
        let file = self.load_file(target)?.value;
        let reader = self.store().open_blob(&file.sha256)?.ok_or_else(|| {
            MemError::new(
                ErrorCode::StoreCorrupt,
                format!("content of {} ({}) is missing", file.id, file.sha256),
            )
            .with_hint("restore the workspace from a backup or bundle")
        })?;
        Ok((file, reader))
    }

    /// A file's record and at most `max_bytes` of its content.
    pub(crate) fn read_file(
        &self,
        target: &str,
        max_bytes: u64,
    ) -> MemResult<(FileRecord, Vec<u8>)> {
        let (file, reader) = self.open_file(target)?;
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut std::io::Read::take(reader, max_bytes), &mut bytes)
            .map_err(|e| MemError::io(&format!("cannot read the content of {}", file.id), &e))?;
        Ok((file, bytes))
    }

    fn node(&self, target: &str) -> MemResult<Node> {
        if target.starts_with('/') {
            let path = VPath::parse(target)?;
            if let Some(f) = self.file_at(&path)? {
                return Ok(Node::File(Box::new(f)));
            }
            if self.folder_exists(&path)? {
                return Ok(Node::Folder(path));
            }
            return Err(MemError::not_found("path", target));
        }
        Ok(Node::File(Box::new(self.load_file(target)?)))
    }

    fn ensure_no_memories(&self, folder: &VPath, action: &str) -> MemResult<()> {
        let prefix = if folder.is_root() {
            String::new()
        } else {
            folder.as_str().to_string()
        };
        // MemoryPaths keys are "{path}\0{id}": the folder itself, or below it.
        let holds = any_with_prefix(self.store(), Table::MemoryPaths, &format!("{prefix}\0"))?
            || any_with_prefix(self.store(), Table::MemoryPaths, &folder.child_prefix())?;
        if holds {
            return Err(MemError::new(
                ErrorCode::FolderHasMemories,
                format!("cannot {action} {folder}: it holds memories"),
            )
            .with_hint("forget those memories first (`memory list --path <folder> --lifecycle all`), or leave the folder in place")
            .with_details(json!({ "path": folder })));
        }
        Ok(())
    }

    /// Moves a file (by id or path) or a folder. When `dst` is an existing
    /// folder, the source moves into it under its own name.
    pub(crate) fn move_path(&self, src: &str, dst: &VPath) -> MemResult<MoveResult> {
        let store = self.store();
        transact(store, Durability::Immediate, || {
            let node = self.node(src)?;
            let src_path = match &node {
                Node::File(f) => f.value.path.clone(),
                Node::Folder(p) => p.clone(),
            };
            if src_path.is_root() {
                return Err(MemError::new(
                    ErrorCode::BadPath,
                    "the root folder cannot be moved",
                ));
            }
            let target = if self.folder_exists(dst)? && dst != &src_path {
                dst.join(src_path.name())?
            } else {
                dst.clone()
            };
            if target == src_path {
                return Ok((
                    Batch::new(),
                    MoveResult {
                        from: src_path.clone(),
                        to: target,
                        files_moved: 0,
                        folders_moved: 0,
                    },
                ));
            }
            if self.file_at(&target)?.is_some() || self.folder_exists(&target)? {
                return Err(MemError::new(
                    ErrorCode::AlreadyExists,
                    format!("{target} already exists"),
                )
                .with_hint("remove it first or choose another destination")
                .with_details(json!({ "path": target })));
            }
            let parent = target.parent().unwrap_or_else(VPath::root);
            if !self.folder_exists(&parent)? {
                return Err(MemError::new(
                    ErrorCode::NotFound,
                    format!("destination folder {parent} does not exist"),
                )
                .with_hint("create it with `mkdir -p` first")
                .with_details(json!({ "path": parent })));
            }
            let mut batch = Batch::new();
            let at = now();
            match node {
                Node::File(f) => {
                    self.push_file_move(&mut batch, *f, &target, at)?;
                    Ok((
                        batch,
                        MoveResult {
                            from: src_path,
                            to: target,
                            files_moved: 1,
                            folders_moved: 0,
                        },
                    ))
                }
                Node::Folder(folder) => {
                    if target.is_within(&folder) {
                        return Err(MemError::new(
                            ErrorCode::MoveIntoSelf,
                            format!("cannot move {folder} into itself ({target})"),
                        )
                        .with_hint("choose a destination outside the folder")
                        .with_details(json!({ "from": folder, "to": target })));
                    }
                    self.ensure_no_memories(&folder, "move")?;
                    let (files, folders) = self.subtree(&folder)?;
                    for (key, raw) in &folders {
                        let old = VPath::parse(key)?;
                        let mut rec: FolderRecord =
                            crate::records::decode(Table::Folders, key, raw)?;
                        rec.path = old.rebase(&folder, &target)?;
                        batch.expect(Table::Folders, key.clone(), Some(raw.clone()));
                        batch.delete(Table::Folders, key.clone());
                        batch.expect(Table::Folders, rec.path.as_str(), None);
                        batch.put(Table::Folders, rec.path.as_str(), encode(&rec)?);
                    }
                    for f in &files {
                        let new_path = f.value.path.rebase(&folder, &target)?;
                        self.push_file_move(&mut batch, f.clone(), &new_path, at)?;
                    }
                    push_event(
                        &mut batch,
                        "folder.moved",
                        folder.as_str(),
                        None,
                        json!({ "to": target }),
                    )?;
                    Ok((
                        batch,
                        MoveResult {
                            from: folder,
                            to: target,
                            files_moved: files.len(),
                            folders_moved: folders.len(),
                        },
                    ))
                }
            }
        })
        .inspect(|_| self.after_write())
    }

    fn push_file_move(
        &self,
        batch: &mut Batch,
        f: Stored<FileRecord>,
        to: &VPath,
        at: Timestamp,
    ) -> MemResult<()> {
        let mut rec = f.value.clone();
        let from = rec.path.clone();
        rec.path = to.clone();
        rec.name = to.name().to_string();
        rec.updated_at = at;
        rec.state_version += 1;
        batch.expect(Table::Files, rec.id.clone(), Some(f.raw));
        batch.expect(Table::FilePaths, to.as_str(), None);
        batch.delete(Table::FilePaths, from.as_str());
        batch.put(Table::FilePaths, to.as_str(), rec.id.as_bytes().to_vec());
        batch.put(Table::Files, rec.id.clone(), encode(&rec)?);
        push_event(
            batch,
            "file.moved",
            &rec.id,
            Some(rec.state_version),
            json!({ "from": from, "to": to }),
        )
    }

    /// Files and folders strictly below `folder` (folders include `folder`).
    fn subtree(&self, folder: &VPath) -> MemResult<Subtree> {
        let prefix = folder.child_prefix();
        let mut folders = Vec::new();
        if let Some(raw) = self.store().get(Table::Folders, folder.as_str())? {
            folders.push((folder.as_str().to_string(), raw));
        }
        folders.extend(scan_all(self.store(), Table::Folders, &prefix)?);
        let mut files = Vec::new();
        for (_, id) in scan_all(self.store(), Table::FilePaths, &prefix)? {
            let id = String::from_utf8_lossy(&id).to_string();
            if let Some(f) = load(self.store(), Table::Files, &id)? {
                files.push(f);
            }
        }
        Ok((files, folders))
    }

    /// Removes a file, or a folder (`recursive` for a non-empty one).
    pub(crate) fn remove_path(&self, target: &str, recursive: bool) -> MemResult<RemoveResult> {
        let store = self.store();
        transact(store, Durability::Immediate, || {
            let mut batch = Batch::new();
            match self.node(target)? {
                Node::File(f) => {
                    let path = f.value.path.clone();
                    self.push_file_delete(&mut batch, *f)?;
                    Ok((batch, RemoveResult { path, files_removed: 1, folders_removed: 0 }))
                }
                Node::Folder(folder) => {
                    if folder.is_root() {
                        return Err(MemError::new(ErrorCode::BadPath, "the root folder cannot be removed"));
                    }
                    self.ensure_no_memories(&folder, "remove")?;
                    let (files, folders) = self.subtree(&folder)?;
                    if !recursive && (folders.len() > 1 || !files.is_empty()) {
                        return Err(MemError::new(ErrorCode::FolderNotEmpty, format!("folder {folder} is not empty"))
                            .with_hint("use --recursive to remove it with everything inside")
                            .with_details(json!({ "path": folder, "files": files.len(), "folders": folders.len() - 1 })));
                    }
                    let counts = (files.len(), folders.len());
                    for f in files {
                        self.push_file_delete(&mut batch, f)?;
                    }
                    for (key, raw) in folders {
                        batch.expect(Table::Folders, key.clone(), Some(raw));
                        batch.delete(Table::Folders, key);
                    }
                    push_event(&mut batch, "folder.deleted", folder.as_str(), None, json!({}))?;
                    Ok((batch, RemoveResult { path: folder, files_removed: counts.0, folders_removed: counts.1 }))
                }
            }
        }).inspect(|_| self.after_write())
    }

    fn push_file_delete(&self, batch: &mut Batch, f: Stored<FileRecord>) -> MemResult<()> {
        let rec = f.value;
        batch.expect(Table::Files, rec.id.clone(), Some(f.raw));
        batch.delete(Table::Files, rec.id.clone());
        batch.delete(Table::FilePaths, rec.path.as_str());
        batch.delete(Table::FileContent, rec.id.clone());
        batch.delete(Table::Annotations, rec.id.clone());
        batch.blob_ref(rec.sha256.clone(), -1);
        push_event(
            batch,
            "file.deleted",
            &rec.id,
            Some(rec.state_version + 1),
            json!({ "path": rec.path }),
        )
    }
}
