//! mem-store: the embedded backend of [`mem_core::store::Store`], on sled.
//!
//! One sled tree per table and per log, plus `blobs` and `blob_refs`.
//! Every commit is one sled transaction over all trees, serialized by a
//! process-local mutex so log sequence numbers are gap-free and readers
//! never see a later sequence number before an earlier one. An exclusive
//! lock file keeps a second process out (`STORE_LOCKED`), a schema version
//! in `meta` refuses newer stores, and a damaged store is reported as
//! `STORE_CORRUPT` rather than re-initialised. Blobs above 1 MiB live as
//! content-addressed files beside sled (see `blobs`), so storing or reading
//! one takes bounded memory.

mod blobs;
mod sled_store;

pub use blobs::INLINE_MAX;
pub use sled_store::{SCHEMA_VERSION, SledStore};
