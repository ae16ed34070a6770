//! mem-core: the vocabulary every other mem-host crate speaks.
//!
//! It owns the domain types (files, folders, memories, events), the error
//! type with its stable codes, virtual-path rules, and the [`store::Store`]
//! trait. The key decision: the service layer depends on this crate only, so
//! no sled, tantivy or wasmtime type can reach business logic; backends
//! implement the traits defined here.

pub mod error;
pub mod hash;
pub mod id;
pub mod index;
pub mod locator;
pub mod model;
pub mod path;
pub mod plugin;
pub mod store;
#[cfg(feature = "conformance")]
pub mod store_conformance;
pub mod time;

pub use error::{ErrorCode, MemError, MemResult};
pub use path::VPath;
