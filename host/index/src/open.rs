//! Opening the lexical index's folder: the index, its catalog (from the
//! snapshot when it describes the last commit), and what an index written
//! by another version carries into the rebuild that replaces it.

use crate::SnapshotState;
use crate::catalog::{Catalog, Stamp, load_snapshot};
use crate::lexical::{Lexical, Opened};
use mem_core::index::IndexError;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The lexical index's folder under the index's.
const LEXICAL_DIR: &str = "lexical";
/// File of the catalog's snapshot, in the lexical index's folder (tantivy
/// leaves files it does not manage alone).
const CATALOG_FILE: &str = "mem-catalog.bin";
/// Where an index written with another version's schema waits, until the
/// rebuild that replaces it commits: its catalog's embedding digests
/// vouch for the vectors, so that rebuild embeds only what changed (at
/// 100k memories 6 s instead of 8 minutes of the model), even when the
/// process that set it aside exits before rebuilding.
const SET_ASIDE_DIR: &str = "lexical.earlier";

/// The catalog's snapshot file of the index under `index_dir`.
pub(crate) fn catalog_file(index_dir: &Path) -> PathBuf {
    index_dir.join(LEXICAL_DIR).join(CATALOG_FILE)
}

/// What opening the lexical folder gives [`crate::NativeIndex::open`].
pub(crate) struct OpenedLexical {
    pub lexical: Lexical,
    pub catalog: Catalog,
    /// The last commit's watermark (0 when it must be rebuilt).
    pub watermark: u64,
    /// Whether the index must be rebuilt from the store.
    pub rebuild: bool,
    /// Which commit the catalog and the file on disk describe.
    pub snapshot: SnapshotState,
    /// The set-aside index's digests, when it could be read.
    pub carried: Option<Carried>,
}

/// The embedding digest of each document of a set-aside index, and the
/// watermark of its last commit (vectors saved before it do not match).
pub(crate) struct Carried {
    pub digests: HashMap<u64, u64>,
    pub watermark: u64,
}

/// Opens (creating when absent) the lexical index under `index_dir`. An
/// index of another version's schema is set aside and a new one created;
/// a damaged one is recreated. Either way the new index must be rebuilt.
pub(crate) fn open_lexical(index_dir: &Path) -> Result<OpenedLexical, IndexError> {
    let dir = index_dir.join(LEXICAL_DIR);
    let set_aside = index_dir.join(SET_ASIDE_DIR);
    let snapshot_file = catalog_file(index_dir);
    let attempt = || -> Result<Option<(Lexical, Catalog, u64, SnapshotState)>, IndexError> {
        let lex = match Lexical::open(&dir)? {
            Opened::Current(lex) => lex,
            Opened::Earlier(_) => return Ok(None),
        };
        let wm = lex.watermark()?;
        let stamp = lex.commit_stamp()?;
        let (catalog, from_snapshot) = catalog_of(&lex, &snapshot_file, &stamp)?;
        let state = SnapshotState {
            current: stamp,
            saved: from_snapshot.then_some(stamp),
            saved_at: None,
        };
        Ok(Some((lex, catalog, wm, state)))
    };
    let recreate = |why: &str| -> Result<(Lexical, Catalog, SnapshotState), IndexError> {
        match std::fs::remove_dir_all(&dir) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(IndexError::Io(e.to_string()));
            }
            _ => {}
        }
        match attempt()? {
            Some((l, c, _, mut state)) => {
                state.saved = None;
                Ok((l, c, state))
            }
            None => Err(IndexError::Corrupt(format!(
                "the lexical index was {why} and could not be created again"
            ))),
        }
    };
    let (lexical, catalog, watermark, mut rebuild, snapshot) = match attempt() {
        Ok(Some((l, c, wm, state))) => (l, c, wm, false, state),
        Ok(None) => {
            // It replaces one set aside before and never rebuilt over
            // (an older version wrote this one since): this one describes
            // the vectors as they are.
            let set_aside_failed = |e: std::io::Error| {
                IndexError::Io(format!("cannot set the earlier lexical index aside: {e}"))
            };
            if set_aside.exists() {
                std::fs::remove_dir_all(&set_aside).map_err(set_aside_failed)?;
            }
            std::fs::rename(&dir, &set_aside).map_err(set_aside_failed)?;
            let (l, c, state) = recreate("written by another version")?;
            (l, c, 0, true, state)
        }
        // Derived state: recreate it and let the owner re-index.
        Err(IndexError::Corrupt(_)) => {
            let (l, c, state) = recreate("damaged")?;
            (l, c, 0, true, state)
        }
        Err(e) => return Err(e),
    };
    let carried = if set_aside.exists() {
        rebuild = true;
        carry(&set_aside)
    } else {
        None
    };
    Ok(OpenedLexical {
        lexical,
        catalog,
        watermark: if rebuild { 0 } else { watermark },
        rebuild,
        snapshot,
        carried,
    })
}

/// The catalog of `lex`, whose last commit is `stamp`: from the snapshot
/// file when it describes that commit (then `true`), else from every
/// document's stored fields.
fn catalog_of(
    lex: &Lexical,
    snapshot: &Path,
    stamp: &Stamp,
) -> Result<(Catalog, bool), IndexError> {
    Ok(match load_snapshot(snapshot, stamp) {
        Some(c) => (c, true),
        None => (Catalog::from_metas(lex.all_metas()?), false),
    })
}

/// The digests of the index set aside in `dir`, from its catalog's
/// snapshot when it describes the index's last commit, else from its
/// stored fields; `None` when it cannot be read (its documents are then
/// embedded again).
fn carry(dir: &Path) -> Option<Carried> {
    let read = || -> Result<Carried, IndexError> {
        let lex = match Lexical::open(dir)? {
            Opened::Current(l) | Opened::Earlier(l) => l,
        };
        let stamp = lex.commit_stamp()?;
        let (catalog, _) = catalog_of(&lex, &dir.join(CATALOG_FILE), &stamp)?;
        Ok(Carried {
            digests: catalog.iter().map(|(k, m)| (k, m.embed_sig())).collect(),
            watermark: lex.watermark()?,
        })
    };
    match read() {
        Ok(c) => Some(c),
        Err(e) => {
            tracing::warn!(error = %e, "the earlier lexical index is unreadable: its documents are embedded again");
            None
        }
    }
}

/// Removes the index set aside under `index_dir`, once the rebuild that
/// replaces it has committed. A failure only costs the next process a
/// rebuild (which keeps the vectors), so it is logged, not returned.
pub(crate) fn set_aside_gone(index_dir: &Path) {
    let dir = index_dir.join(SET_ASIDE_DIR);
    match std::fs::remove_dir_all(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => tracing::warn!(error = %e, "cannot remove the earlier lexical index"),
    }
}
