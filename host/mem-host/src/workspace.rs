//! Finding, creating and opening a workspace folder, and wiring its
//! backends (the sled store or the shared PostgreSQL + object-store one,
//! the native index, the wasm plugin runtime) into a [`Service`]. This is
//! the only place that names concrete backends.

use mem_core::index::Embedder;
use mem_core::store::Store;
use mem_core::{ErrorCode, MemError, MemResult};
pub use mem_index::SessionStart;
use mem_runtime::WasmPluginHost;
use mem_service::config::CONFIG_FILE;
use mem_service::deployment::StoreBackend;
use mem_service::{Service, WorkspaceConfig};
use mem_store::SledStore;
use mem_store_postgres::{PgOptions, PgStore, S3Options};
use std::fs;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// Where the store lives inside a workspace folder.
const STORE_DIR: &str = "store";
/// Where the search index lives inside a workspace folder.
pub const INDEX_DIR: &str = "index";
/// Where installed plugins (and their compiled cache) live.
pub const PLUGINS_DIR: &str = "plugins";

/// The workspace folder: `--workspace`, else `$MEM_HOME`, else `./.mem`.
pub fn resolve(explicit: Option<&Path>) -> PathBuf {
    if let Some(p) = explicit {
        return p.to_path_buf();
    }
    match std::env::var_os("MEM_HOME") {
        Some(h) if !h.is_empty() => PathBuf::from(h),
        _ => PathBuf::from(".mem"),
    }
}

/// What `init` did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct InitOutcome {
    pub path: PathBuf,
    pub created: bool,
}

fn mkdir_private(dir: &Path) -> MemResult<()> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| MemError::io(&format!("cannot create {}", dir.display()), &e))?;
    fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
        .map_err(|e| MemError::io(&format!("cannot set permissions of {}", dir.display()), &e))
}

/// Creates a workspace (idempotent: an existing one is left untouched).
pub fn init(dir: &Path, name: Option<&str>) -> MemResult<InitOutcome> {
    let config_path = dir.join(CONFIG_FILE);
    if config_path.exists() {
        // Opening validates config and store; nothing is rewritten. A host
        // joining a shared workspace brings its own mem.toml: its folder
        // still needs the first-party plugins.
        let joining = !dir.join(PLUGINS_DIR).exists();
        let ws = open(dir, SessionStart::Quick)?;
        if joining && let Some(plugins) = ws.service.plugins() {
            mem_bundled::install_first_party(plugins.as_ref(), false)?;
        }
        return Ok(InitOutcome {
            path: dir.to_path_buf(),
            created: false,
        });
    }
    if dir.join(STORE_DIR).exists() {
        return Err(MemError::new(
            ErrorCode::StoreCorrupt,
            format!("{} holds a store but no {CONFIG_FILE}", dir.display()),
        )
        .with_hint("restore mem.toml from a backup; init will not overwrite an existing store"));
    }
    mkdir_private(dir)?;
    let default_name = dir
        .canonicalize()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().to_string()))
        .unwrap_or_else(|| "default".into());
    let text = WorkspaceConfig::template(name.unwrap_or(&default_name));
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&config_path)
        .map_err(|e| MemError::io(&format!("cannot create {}", config_path.display()), &e))?;
    std::io::Write::write_all(&mut file, text.as_bytes())
        .and_then(|_| file.sync_all())
        .map_err(|e| MemError::io(&format!("cannot write {}", config_path.display()), &e))?;
    let ws = open(dir, SessionStart::Quick)?;
    // An empty workspace's tallies are counted at once: its writes keep
    // them from the first.
    ws.service.ensure_tallies()?;
    // A new workspace starts with the first-party plugins its mem.toml names.
    if let Some(plugins) = ws.service.plugins() {
        mem_bundled::install_first_party(plugins.as_ref(), false)?;
    }
    Ok(InitOutcome {
        path: dir.to_path_buf(),
        created: true,
    })
}

/// An open workspace: its folder and service.
pub struct Workspace {
    pub dir: PathBuf,
    pub service: Arc<Service>,
    /// A shared store's folder lock (the embedded store holds its own):
    /// the folder's index and plugins are one process's.
    _folder_lock: Option<fs::File>,
}

/// Who holds a workspace open, for the `STORE_LOCKED` of another process.
const HOLDER_FILE: &str = "holder";

impl Drop for Workspace {
    fn drop(&mut self) {
        self.release_holder();
    }
}

impl Workspace {
    fn release_holder(&self) {
        let _ = fs::remove_file(self.dir.join(HOLDER_FILE));
    }

    /// Gives the workspace up as the process exits: no longer its holder,
    /// its memory left to the operating system (see
    /// [`crate::client::Client::finish_and_exit`]; only after its state was
    /// saved). Locks are released when the process ends.
    pub fn close_leaking(self: Box<Self>) {
        self.release_holder();
        std::mem::forget(self);
    }
}

/// Notes this process as the holder (its pid and command line).
fn note_holder(dir: &Path) {
    let args: Vec<String> = std::env::args().collect();
    let line = format!(
        "pid {} since {}: {}",
        std::process::id(),
        mem_core::time::to_rfc3339(&mem_core::time::now()),
        args.join(" ")
    );
    let _ = fs::write(dir.join(HOLDER_FILE), line);
}

/// `STORE_LOCKED` naming the process that holds the workspace (when it is
/// not a server the CLI could talk to).
pub fn explain_lock(dir: &Path, e: MemError) -> MemError {
    match current_holder(dir) {
        Some(holder) => MemError::new(
            ErrorCode::StoreLocked,
            format!("the workspace is in use by another mem-host process ({})", holder.trim()),
        )
        .with_hint("wait for that command to finish (or stop it); a running `mem-host serve` is reached automatically")
        .with_details(e.details),
        None => e,
    }
}

/// The holder's note, once it names a live process: a holder that has
/// just taken the lock writes its note a moment later, over the note of
/// the one before, so a stale or missing note is waited for briefly.
fn current_holder(dir: &Path) -> Option<String> {
    for _ in 0..20 {
        if let Ok(note) = fs::read_to_string(dir.join(HOLDER_FILE)) {
            let note = note.trim().to_string();
            let pid = note
                .strip_prefix("pid ")
                .and_then(|r| r.split_whitespace().next())
                .and_then(|p| p.parse::<u32>().ok());
            let alive = match pid {
                Some(pid) if pid == std::process::id() => false,
                Some(pid) => {
                    !Path::new("/proc").is_dir() || Path::new(&format!("/proc/{pid}")).exists()
                }
                None => false,
            };
            if alive {
                return Some(note);
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    None
}

/// Opens an initialised workspace. `start`: how the embedding model's
/// sessions are made, for the queries this process will embed.
pub fn open(dir: &Path, start: SessionStart) -> MemResult<Workspace> {
    if !dir.join(CONFIG_FILE).exists() {
        return Err(MemError::new(
            ErrorCode::WorkspaceNotFound,
            format!("no workspace at {}", dir.display()),
        )
        .with_hint(
            "create one with `mem-host init` (or point MEM_HOME / --workspace at an existing one)",
        )
        .with_details(serde_json::json!({ "path": dir.display().to_string() })));
    }
    let config = WorkspaceConfig::load(dir)?;
    let store_dir = dir.join(STORE_DIR);
    mkdir_private(&store_dir)?;
    let (store, folder_lock): (Arc<dyn Store>, _) = match config.store.backend {
        StoreBackend::Sled => (Arc::new(SledStore::open(&store_dir)?), None),
        StoreBackend::Postgres => {
            let lock = lock_folder(&store_dir)?;
            (Arc::new(open_shared(&config)?), Some(lock))
        }
    };
    note_holder(dir);
    // Sweep blobs a crash left between writing content and committing
    // (a shared store spares those younger than its grace period).
    store.gc_blobs()?;
    // The search index is derived state beside the store; opening it
    // replays what it missed (or rebuilds it when it is missing or damaged).
    // One embedder (loaded on first use) serves the index and the plugins'
    // `embed` capability.
    let (embedder, semantic_off) = match mem_models::active_files() {
        Ok(files) => (
            Some(Arc::new(mem_index::LazyEmbedder::new(files, start)) as Arc<dyn Embedder>),
            None,
        ),
        Err(reason) => (None, Some(reason)),
    };
    let index_dir = dir.join(INDEX_DIR);
    let index_embedder = embedder.clone();
    // The plugins' embedder answers texts the index embedded from its
    // vectors once the index is open (see `mem_index::KnownFirst`).
    let opened: Arc<OnceLock<Arc<mem_index::NativeIndex>>> = Arc::default();
    let plugin_embedder = embedder
        .map(|e| Arc::new(mem_index::KnownFirst::new(e, opened.clone())) as Arc<dyn Embedder>);
    let open_index: mem_service::recall::IndexOpener = Box::new(move || {
        let index = Arc::new(mem_index::NativeIndex::open(
            &index_dir,
            index_embedder.clone(),
            semantic_off.clone(),
        )?);
        let _ = opened.set(index.clone());
        Ok(index as Arc<dyn mem_core::index::SearchIndex>)
    });
    let plugins = Arc::new(WasmPluginHost::open(
        dir.join(PLUGINS_DIR),
        store.clone(),
        config.plugins.clone(),
        plugin_embedder,
    )?);
    // The index opens (and replays what it missed) on first use.
    let service = Service::new(store, config)
        .with_index_opener(open_index)
        .with_plugins(plugins as Arc<dyn mem_core::plugin::PluginHost>);
    Ok(Workspace {
        dir: dir.to_path_buf(),
        service: Arc::new(service),
        _folder_lock: folder_lock,
    })
}

/// Takes `store/LOCK` for this process (as the embedded store does), so a
/// second process on the folder reaches the running one over its socket.
fn lock_folder(store_dir: &Path) -> MemResult<fs::File> {
    let path = store_dir.join("LOCK");
    let file = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(&path)
        .map_err(|e| MemError::io(&format!("cannot open {}", path.display()), &e))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(fs::TryLockError::WouldBlock) => Err(mem_core::store::StoreError::Locked {
            path: store_dir.display().to_string(),
        }
        .into()),
        Err(fs::TryLockError::Error(e)) => Err(MemError::io("cannot lock the workspace", &e)),
    }
}

/// The value of the environment variable `name` that `field` names.
fn secret_from_env(field: &str, name: &str) -> MemResult<String> {
    match std::env::var(name) {
        Ok(v) if !v.is_empty() => Ok(v),
        _ => Err(MemError::new(
            ErrorCode::ConfigInvalid,
            format!("the environment variable {name} (mem.toml {field}) is not set"),
        )
        .with_hint(format!(
            "export {name} in the environment of every mem-host process of this workspace"
        ))
        .with_details(serde_json::json!({ "variable": name, "field": field }))),
    }
}

/// The shared store `[store]` and `[blobs]` describe, with its secrets
/// from the environment.
fn open_shared(config: &WorkspaceConfig) -> MemResult<PgStore> {
    let (st, bl) = (&config.store, &config.blobs);
    let url_env = st.url_env.as_deref().unwrap_or_default();
    let pg = PgOptions {
        url: secret_from_env("[store] url_env", url_env)?,
        schema: st.schema.clone().unwrap_or_else(|| "mem".into()),
        pool_size: st
            .pool_size
            .unwrap_or(mem_store_postgres::DEFAULT_POOL_SIZE),
        blob_grace: bl
            .sweep_grace_secs
            .map_or(mem_store_postgres::DEFAULT_BLOB_GRACE, Duration::from_secs),
    };
    let key = |field: &str, name: &Option<String>| {
        name.as_deref()
            .map(|n| secret_from_env(field, n))
            .transpose()
    };
    let s3 = S3Options {
        bucket: bl.bucket.clone().unwrap_or_default(),
        endpoint: bl.endpoint.clone(),
        region: bl.region.clone().unwrap_or_else(|| "us-east-1".into()),
        prefix: bl.prefix.clone().unwrap_or_default(),
        access_key_id: key("[blobs] access_key_env", &bl.access_key_env)?,
        secret_access_key: key("[blobs] secret_key_env", &bl.secret_key_env)?,
    };
    if let Err(e) = mem_store_postgres::check_schema(&pg.schema) {
        return Err(MemError::new(
            ErrorCode::ConfigInvalid,
            format!("mem.toml [store] schema: {e}"),
        )
        .with_hint("use lower-case letters, digits and _"));
    }
    Ok(PgStore::open(pg, s3)?)
}
