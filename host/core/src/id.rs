//! Record identifiers: a type prefix plus a ULID, so ids sort by creation
//! time (cursor pagination walks them in order) and say what they name.

use std::sync::Mutex;
use ulid::{Generator, Ulid};

/// Process-wide generator: ids made within one millisecond still increase,
/// so creation order equals id order (list pagination depends on it).
static GENERATOR: Mutex<Generator> = Mutex::new(Generator::new());

pub const MEMORY: &str = "mem";
pub const FILE: &str = "file";
pub const ANNOTATION: &str = "ann";

/// A new id such as `mem_01JD...`.
pub fn new_id(prefix: &str) -> String {
    let ulid = match GENERATOR.lock() {
        // Overflow of the random part within one millisecond is practically
        // impossible; a plain ULID is still unique.
        Ok(mut generator) => generator.generate().unwrap_or_else(|_| Ulid::new()),
        Err(_) => Ulid::new(),
    };
    format!("{prefix}_{}", ulid.to_string().to_lowercase())
}

/// True when `id` looks like an id of the given prefix.
pub fn has_prefix(id: &str, prefix: &str) -> bool {
    id.len() == prefix.len() + 27
        && id.starts_with(prefix)
        && id.as_bytes()[prefix.len()] == b'_'
        && id[prefix.len() + 1..]
            .bytes()
            .all(|b| b.is_ascii_alphanumeric())
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

    #[test]
    fn ids_made_in_the_same_millisecond_still_increase() {
        let ids: Vec<String> = (0..1000).map(|_| new_id(MEMORY)).collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
    }
}
