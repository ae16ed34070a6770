//! Record identifiers: a type prefix plus a ULID, so ids sort by creation
//! time (cursor pagination walks them in order) and say what they name.

use ulid::Ulid;

pub const MEMORY: &str = "mem";
pub const FILE: &str = "file";

/// A new id such as `mem_01JD...`.
pub fn new_id(prefix: &str) -> String {
    format!("{prefix}_{}", Ulid::new().to_string().to_lowercase())
}

/// True when `id` looks like an id of the given prefix.
pub fn has_prefix(id: &str, prefix: &str) -> bool {
    id.len() == prefix.len() + 27
        && id.starts_with(prefix)
        && id.as_bytes()[prefix.len()] == b'_'
        && id[prefix.len() + 1..].bytes().all(|b| b.is_ascii_alphanumeric())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_prefixed_and_sortable() {
        let a = new_id(MEMORY);
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = new_id(MEMORY);
        assert!(has_prefix(&a, MEMORY));
        assert!(!has_prefix(&a, FILE));
        assert!(a < b);
    }
}
