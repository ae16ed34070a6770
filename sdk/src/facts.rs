//! Facts the host attaches to a relation detector's items as tags.
//!
//! The frozen v0.1.0 `item` record has no fields for times, names or
//! entities, so the host spells them as `key:value` tags (plain tags have
//! no `:` prefix of these keys):
//!
//! - `at:<unix ms>`: when the item happened (`event_at`, a file's `date`
//!   front matter, else its creation time);
//! - `name:<text>`: a file's name, or a memory's first line;
//! - `title:<text>`: a file's title;
//! - `person:<name>`, `place:<name>`: entities (processor output for a
//!   file, `person`/`people`/`place` attributes for a memory);
//! - `source:file` or `source:memory`.

use crate::types::Item;

/// Every value of the facts named `key`, in order.
pub fn values<'a>(item: &'a Item, key: &str) -> Vec<&'a str> {
    item.tags
        .iter()
        .filter_map(|t| t.strip_prefix(key)?.strip_prefix(':'))
        .filter(|v| !v.is_empty())
        .collect()
}

/// The first value of the fact `key`.
pub fn first<'a>(item: &'a Item, key: &str) -> Option<&'a str> {
    values(item, key).into_iter().next()
}

/// When the item happened, in unix milliseconds.
pub fn at(item: &Item) -> Option<i64> {
    first(item, "at")?.parse().ok()
}

/// The entities of `kind` (`person`, `place`), normalised for comparison:
/// lower case, inner whitespace collapsed.
pub fn entities(item: &Item, kind: &str) -> Vec<String> {
    let mut out: Vec<String> = values(item, kind)
        .into_iter()
        .map(|v| {
            v.split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .to_lowercase()
        })
        .filter(|v| !v.is_empty())
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Builds an item for tests and examples: `facts` are `(key, value)` pairs.
pub fn item(id: &str, text: &str, facts: &[(&str, &str)]) -> Item {
    Item {
        id: id.to_string(),
        kind: "note".to_string(),
        role: None,
        text: text.to_string(),
        path: "/".to_string(),
        tags: facts.iter().map(|(k, v)| format!("{k}:{v}")).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facts_are_read_from_prefixed_tags() {
        let i = item(
            "a",
            "x",
            &[
                ("at", "1700000000000"),
                ("person", " Ada  Lovelace"),
                ("person", "ada lovelace"),
                ("place", ""),
            ],
        );
        assert_eq!(at(&i), Some(1_700_000_000_000));
        assert_eq!(entities(&i, "person"), vec!["ada lovelace".to_string()]);
        assert!(entities(&i, "place").is_empty());
        let plain = Item {
            tags: vec!["attendee".into(), "at:soon".into()],
            ..i
        };
        assert!(values(&plain, "at").contains(&"soon"));
        assert_eq!(at(&plain), None);
    }
}
