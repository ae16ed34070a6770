//! Finding, creating and opening a workspace folder, and wiring its
//! backends (sled store, native index, wasm plugin runtime) into a
//! [`Service`]. This is the only place that names concrete backends.

use mem_core::index::Embedder;
use mem_core::store::Store;
use mem_core::{ErrorCode, MemError, MemResult};
use mem_runtime::WasmPluginHost;
use mem_service::config::CONFIG_FILE;
use mem_service::{Service, WorkspaceConfig};
use mem_store::SledStore;
use std::fs;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

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
        // Opening validates config and store; nothing is rewritten.
        open(dir)?;
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
    let ws = open(dir)?;
    // A new workspace starts with the first-party plugins its mem.toml names.
    let plugins = ws.plugins.clone();
    mem_bundled::install_first_party(plugins.as_ref(), false)?;
    Ok(InitOutcome {
        path: dir.to_path_buf(),
        created: true,
    })
}

/// An open workspace: its folder, service and plugin runtime.
pub struct Workspace {
    pub dir: PathBuf,
    pub service: Service,
    /// The same runtime the service holds, for owner commands that manage
    /// plugins (install, grant) rather than call them.
    pub plugins: Arc<WasmPluginHost>,
}

/// Opens an initialised workspace.
pub fn open(dir: &Path) -> MemResult<Workspace> {
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
    let store = SledStore::open(&store_dir)?;
    // Sweep blobs a crash left between writing content and committing.
    store.gc_blobs()?;
    // The search index is derived state beside the store; opening it
    // replays what it missed (or rebuilds it when it is missing or damaged).
    // One embedder (loaded on first use) serves the index and the plugins'
    // `embed` capability.
    let (embedder, semantic_off) = match mem_index::models::active_files() {
        Ok(files) => (
            Some(Arc::new(mem_index::LazyEmbedder::new(files)) as Arc<dyn Embedder>),
            None,
        ),
        Err(reason) => (None, Some(reason)),
    };
    let index_dir = dir.join(INDEX_DIR);
    let index_embedder = embedder.clone();
    let open_index: mem_service::recall::IndexOpener = Box::new(move || {
        let index =
            mem_index::NativeIndex::open(&index_dir, index_embedder.clone(), semantic_off.clone())?;
        Ok(Arc::new(index) as Arc<dyn mem_core::index::SearchIndex>)
    });
    let store: Arc<dyn Store> = Arc::new(store);
    let plugins = Arc::new(WasmPluginHost::open(
        dir.join(PLUGINS_DIR),
        store.clone(),
        config.plugins.clone(),
        embedder,
    )?);
    // The index opens (and replays what it missed) on first use.
    let service = Service::new(store, config)
        .with_index_opener(open_index)
        .with_plugins(plugins.clone() as Arc<dyn mem_core::plugin::PluginHost>);
    Ok(Workspace {
        dir: dir.to_path_buf(),
        service,
        plugins,
    })
}
