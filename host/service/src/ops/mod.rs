//! Every operation a surface can ask for: one request type and one
//! response type each, with the checks of what the caller may do. The
//! business rules they call live in the area modules (`files`,
//! `memories`, `gate`, `recall`, ...), unchecked and crate-private.
//!
//! Adding an operation: its request type and `Operation` impl here, one
//! line in `door::registry`, one line in each surface's table.

pub mod admin;
pub mod bundles;
pub mod fields;
pub mod file_details;
pub mod files;
pub mod govern;
pub mod memories;
pub mod navigation;
pub mod plugins;
pub mod recall;
pub mod related;
pub mod tasks;
pub mod timeline;
pub mod web;

fn yes() -> bool {
    true
}
