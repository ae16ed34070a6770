//! Host-owned records. These are the public documents too: their JSON
//! Schemas in `schemas/` are generated from these types.

mod event;
mod file;
mod memory;
mod source;
mod timeline;

pub use event::Event;
pub use file::{FileRecord, FolderRecord, IndexStatus};
pub use memory::{
    BUILTIN_KINDS, Difference, Feedback, FeedbackAction, Governance, Lifecycle, Memory, Provenance,
    Relation, Tombstone,
};
pub use source::{MAX_SOURCE_METADATA_BYTES, MAX_SOURCE_TEXT_CHARS, SourceMetadata};
pub use timeline::{
    ContentTime, PlacedTime, PositionSource, TimeSource, TimelinePlace, file_place, file_time,
    memory_time,
};
