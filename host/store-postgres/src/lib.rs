//! mem-store-postgres: the shared backend of [`mem_core::store::Store`].
//!
//! Several stateless `mem-host serve` processes serve one workspace:
//! records, logs and blob reference counts live in PostgreSQL (one schema
//! per workspace, see `schema`), blob bytes in an S3-compatible object
//! store (content-addressed, see `blobs`). The key decision is in
//! `commit`: every commit of a workspace takes one transaction-scoped
//! advisory lock, so conditional batches are atomic across hosts (also on
//! absent keys) and log sequence numbers become visible strictly in order,
//! which lets every host's index follow the event log with a plain
//! `read_log(after = watermark)`. The trait is synchronous; calls cross
//! into the store's own async runtime through `bridge`, which works from
//! any thread. Other hosts' commits are announced by LISTEN/NOTIFY
//! (`listen`), so a follower wakes at once instead of polling.

mod blobs;
mod bridge;
mod commit;
mod errors;
mod listen;
mod options;
mod schema;
mod store;
pub mod testing;

pub use options::{DEFAULT_BLOB_GRACE, DEFAULT_POOL_SIZE, PgOptions, S3Options, check_schema};
pub use schema::SCHEMA_VERSION;
pub use store::PgStore;

#[cfg(test)]
mod tests;
