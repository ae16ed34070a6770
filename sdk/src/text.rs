//! Text helpers plugins share: decoding, line numbering, Markdown lines,
//! word splitting.

/// Decodes bytes as UTF-8 (invalid sequences replaced), dropping a BOM.
pub fn decode(bytes: &[u8]) -> String {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    String::from_utf8_lossy(bytes).into_owned()
}

/// Lines with their 1-based numbers; a trailing `\r` is removed.
pub fn numbered_lines(text: &str) -> impl Iterator<Item = (u32, &str)> {
    text.lines().enumerate().map(|(i, l)| {
        (
            u32::try_from(i + 1).unwrap_or(u32::MAX),
            l.strip_suffix('\r').unwrap_or(l),
        )
    })
}

/// A Markdown ATX heading (`## Title`): its level and title.
pub fn heading(line: &str) -> Option<(usize, String)> {
    let t = line.trim_start();
    let level = t.chars().take_while(|c| *c == '#').count();
    if !(1..=6).contains(&level) || !t[level..].starts_with(' ') {
        return None;
    }
    Some((
        level,
        t[level..].trim().trim_end_matches('#').trim().to_string(),
    ))
}

/// The text of a bullet line (`- x`, `* x`, `+ x`, `1. x`, `1) x`), and its indent.
pub fn bullet(line: &str) -> Option<(usize, String)> {
    let indent = line.len() - line.trim_start().len();
    let t = line.trim_start();
    for marker in ["- ", "* ", "+ "] {
        if let Some(rest) = t.strip_prefix(marker) {
            return Some((indent, rest.trim().to_string()));
        }
    }
    let digits = t.chars().take_while(|c| c.is_ascii_digit()).count();
    if digits > 0 && digits <= 3 {
        let rest = &t[digits..];
        if let Some(r) = rest.strip_prefix(". ").or_else(|| rest.strip_prefix(") ")) {
            return Some((indent, r.trim().to_string()));
        }
    }
    None
}

/// The kind marker an exporter writes on its own line after an entry whose
/// kind the format's importer would not guess (a `fact` in AGENTS.md), so
/// export → import keeps kinds: an HTML comment, invisible where the
/// Markdown renders and plain to an agent reading the text.
pub fn kind_marker(kind: &str) -> String {
    format!("{KIND_MARKER_OPEN}{kind}{KIND_MARKER_CLOSE}")
}

const KIND_MARKER_OPEN: &str = "<!-- mem:kind=";
const KIND_MARKER_CLOSE: &str = " -->";

/// An entry's text without its trailing kind marker (on the last line or
/// a line of its own), and the kind the marker names. A marker whose kind
/// is empty or holds spaces is text, not a marker.
pub fn take_kind_marker(text: &str) -> (&str, Option<&str>) {
    let t = text.trim_end();
    let Some(rest) = t.strip_suffix(KIND_MARKER_CLOSE) else {
        return (text, None);
    };
    let Some(at) = rest.rfind(KIND_MARKER_OPEN) else {
        return (text, None);
    };
    let kind = &rest[at + KIND_MARKER_OPEN.len()..];
    if kind.is_empty() || kind.chars().any(|c| c.is_whitespace() || c == '>') {
        return (text, None);
    }
    (rest[..at].trim_end(), Some(kind))
}

/// Lower-case alphanumeric words (Unicode-aware), in order, duplicates kept.
pub fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .map(|w| w.trim_matches('\''))
        .filter(|w| !w.is_empty())
        .map(|w| w.to_lowercase())
}

/// Common English words that carry no topic.
pub const STOPWORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "been", "but", "by", "for", "from", "has", "have",
    "in", "into", "it", "its", "of", "on", "or", "so", "that", "the", "their", "then", "there",
    "these", "this", "to", "was", "were", "will", "with", "we", "our", "you", "your", "i", "me",
    "my",
];

pub fn is_stopword(word: &str) -> bool {
    STOPWORDS.contains(&word)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode_strips_bom_and_replaces_invalid() {
        assert_eq!(decode(b"\xEF\xBB\xBFhi"), "hi");
        assert_eq!(decode(b"a\xFFb"), "a\u{FFFD}b");
    }

    #[test]
    fn lines_are_one_based_without_cr() {
        let v: Vec<_> = numbered_lines("a\r\nb\n").collect();
        assert_eq!(v, vec![(1, "a"), (2, "b")]);
    }

    #[test]
    fn headings_and_bullets() {
        assert_eq!(heading("## Style ##"), Some((2, "Style".into())));
        assert_eq!(heading("#hashtag"), None);
        assert_eq!(bullet("  - item "), Some((2, "item".into())));
        assert_eq!(bullet("12) twelve"), Some((0, "twelve".into())));
        assert_eq!(bullet("-x"), None);
    }

    #[test]
    fn kind_markers_round_trip_and_only_trailing_ones_count() {
        let text = format!("Uses pnpm\n{}", kind_marker("fact"));
        assert_eq!(take_kind_marker(&text), ("Uses pnpm", Some("fact")));
        let inline = format!("Uses pnpm {}\n", kind_marker("task_state"));
        assert_eq!(take_kind_marker(&inline), ("Uses pnpm", Some("task_state")));
        let middle = format!("{} then text", kind_marker("fact"));
        assert_eq!(take_kind_marker(&middle), (middle.as_str(), None));
        assert_eq!(
            take_kind_marker("a <!-- mem:kind= -->"),
            ("a <!-- mem:kind= -->", None)
        );
        assert_eq!(take_kind_marker("a <!-- mem:kind=x y -->").1, None);
    }

    #[test]
    fn words_lowercase_and_split() {
        let v: Vec<_> = words("Can't run, the CLI-tool!").collect();
        assert_eq!(v, vec!["can't", "run", "the", "cli", "tool"]);
    }
}
