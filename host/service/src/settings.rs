//! The one owner of `mem.toml`. It holds the running configuration, and
//! it alone edits the file for the owner's administrative operations
//! (plugin grants and removals): the edit keeps the file's comments, must
//! parse and validate before it replaces the file (atomically), and takes
//! effect in the running process at once.

use crate::config::{CONFIG_FILE, WorkspaceConfig};
use mem_core::{ErrorCode, MemError, MemResult};
use parking_lot::{Mutex, RwLock};
use std::path::PathBuf;
use std::sync::Arc;

#[derive(Debug)]
pub(crate) struct Settings {
    /// `mem.toml`; `None` for a configuration that lives in memory only.
    file: Option<PathBuf>,
    current: RwLock<Arc<WorkspaceConfig>>,
    /// One edit at a time: read, change, validate, write, swap.
    editing: Mutex<()>,
}

fn invalid(e: impl std::fmt::Display) -> MemError {
    MemError::new(
        ErrorCode::ConfigInvalid,
        format!("mem.toml is invalid: {e}"),
    )
    .with_hint("fix mem.toml by hand first; the edit was not applied")
}

impl Settings {
    /// A configuration loaded from a workspace folder is backed by its
    /// `mem.toml`; a default one (tests, benches) lives in memory.
    pub fn new(config: WorkspaceConfig) -> Self {
        let file = (!config.base_dir.as_os_str().is_empty())
            .then(|| config.base_dir.join(CONFIG_FILE))
            .filter(|f| f.exists());
        Self {
            file,
            current: RwLock::new(Arc::new(config)),
            editing: Mutex::new(()),
        }
    }

    pub fn current(&self) -> Arc<WorkspaceConfig> {
        self.current.read().clone()
    }

    /// The settings document as written (comments kept).
    pub fn text(&self) -> MemResult<String> {
        match &self.file {
            Some(path) => std::fs::read_to_string(path)
                .map_err(|e| MemError::io(&format!("cannot read {}", path.display()), &e)),
            None => toml::to_string(self.current().as_ref()).map_err(invalid),
        }
    }

    /// Replaces the settings document with `text` (a bundle's) once it
    /// parses and validates here; otherwise nothing changes. This host's
    /// `[store]` and `[blobs]` stay: they say where the data is.
    pub fn replace(&self, text: &str) -> MemResult<Arc<WorkspaceConfig>> {
        let _one = self.editing.lock();
        let old = self.current();
        let text = crate::deployment::with_local_deployment(text, &self.text()?)?;
        let new = Arc::new(WorkspaceConfig::parse_in(&text, &old.base_dir)?);
        if let Some(path) = &self.file {
            write_atomically(path, text.as_bytes())?;
        }
        *self.current.write() = new.clone();
        Ok(new)
    }

    /// Applies `change` to the settings document and makes the result the
    /// running configuration. Nothing changes when `change` fails or the
    /// result does not validate.
    pub fn edit(
        &self,
        change: impl FnOnce(&mut toml_edit::DocumentMut) -> MemResult<()>,
    ) -> MemResult<Arc<WorkspaceConfig>> {
        let _one = self.editing.lock();
        let old = self.current();
        let text = match &self.file {
            Some(path) => std::fs::read_to_string(path)
                .map_err(|e| MemError::io(&format!("cannot read {}", path.display()), &e))?,
            None => toml::to_string(old.as_ref()).map_err(invalid)?,
        };
        let mut doc: toml_edit::DocumentMut = text.parse().map_err(invalid)?;
        change(&mut doc)?;
        let new_text = doc.to_string();
        let new = Arc::new(WorkspaceConfig::parse_in(&new_text, &old.base_dir)?);
        if let Some(path) = &self.file {
            write_atomically(path, new_text.as_bytes())?;
        }
        *self.current.write() = new.clone();
        Ok(new)
    }
}

/// Writes `bytes` beside `path` (owner-only, `0600`, like every data file
/// of a workspace), syncs, and renames over it: a crash leaves the old
/// file or the new one, never half of either.
fn write_atomically(path: &std::path::Path, bytes: &[u8]) -> MemResult<()> {
    use std::io::Write;
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let tmp = path.with_extension("toml.tmp");
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .and_then(|mut f| {
            // An existing temp file (a crash) keeps its mode: restrict it.
            f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
            f.write_all(bytes)?;
            f.sync_all()
        })
        .and_then(|_| std::fs::rename(&tmp, path))
        .map_err(|e| MemError::io(&format!("cannot write {}", path.display()), &e))
}

/// The `[plugins.NAME]` table of `doc`, created when missing.
pub(crate) fn plugin_table<'d>(
    doc: &'d mut toml_edit::DocumentMut,
    name: &str,
) -> MemResult<&'d mut toml_edit::Table> {
    if !doc.contains_table("plugins") {
        doc["plugins"] = toml_edit::table();
    }
    let plugins = doc["plugins"]
        .as_table_mut()
        .ok_or_else(|| invalid("[plugins] is not a table"))?;
    plugins.set_implicit(true);
    if !plugins.contains_key(name) {
        plugins.insert(name, toml_edit::table());
    }
    plugins[name]
        .as_table_mut()
        .ok_or_else(|| invalid(format!("[plugins.{name}] is not a table")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_edit_keeps_comments_and_takes_effect_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let text = WorkspaceConfig::template("w");
        std::fs::write(dir.path().join(CONFIG_FILE), &text).unwrap();
        let settings = Settings::new(WorkspaceConfig::load(dir.path()).unwrap());
        settings
            .edit(|doc| {
                doc["limits"]["max_memory_chars"] = toml_edit::value(100);
                Ok(())
            })
            .unwrap();
        assert_eq!(settings.current().limits.max_memory_chars, 100);
        let after = std::fs::read_to_string(dir.path().join(CONFIG_FILE)).unwrap();
        assert!(after.contains("# Longest memory content"), "comments kept");
        assert!(after.contains("max_memory_chars = 100"));
    }

    #[test]
    fn an_invalid_edit_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let text = WorkspaceConfig::template("w");
        std::fs::write(dir.path().join(CONFIG_FILE), &text).unwrap();
        let settings = Settings::new(WorkspaceConfig::load(dir.path()).unwrap());
        let e = settings
            .edit(|doc| {
                doc["memory"]["default_confidence"] = toml_edit::value(7.0);
                Ok(())
            })
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::ConfigInvalid);
        assert_eq!(
            std::fs::read_to_string(dir.path().join(CONFIG_FILE)).unwrap(),
            text
        );
        assert_eq!(settings.current().memory.default_confidence, 0.6);
    }
}
