//! mem-bundle: one archive that carries a workspace to another machine.
//!
//! A bundle is a tar stream compressed with zstd. Its first entry is a
//! versioned manifest naming every other entry with its size and SHA-256,
//! and every record with its SHA-256, so a reader checks an entry's
//! declared size against the manifest before reading a byte of it, and
//! its hash as it reads. The key decision: the reader never turns an
//! entry name into a file path. Names are matched against the few forms a
//! bundle has and the bytes go to memory or to a blob sink, so no entry can
//! write outside its target whatever its name or type; everything else
//! (links, directories, unknown names, duplicates) is refused.
//!
//! This crate knows the format only; what goes into a bundle and what an
//! import does with it are the service's rules.

mod error;
mod manifest;
mod read;
mod write;

pub use error::BundleError;
pub use manifest::{
    BlobInfo, Counts, EntryDigest, EntryName, Excluded, FORMAT, FORMAT_VERSION, MANIFEST_ENTRY,
    Manifest, RecordDigest, Source,
};
pub use read::{BlobSink, Bundle, Limits, Outcome, read};
pub use write::{Contents, LogPart, PluginPart, TablePart, Written, write};

#[cfg(test)]
mod tests;
