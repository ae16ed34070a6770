//! Plain text: blank-line separated paragraphs, packed up to the size cap.

use mem_plugin_sdk::text::numbered_lines;
use mem_plugin_sdk::types::*;

use crate::{pack, paragraphs};

pub(crate) fn process(text: &str, max_chars: usize) -> Processed {
    let lines: Vec<(u32, &str)> = numbered_lines(text).collect();
    let mut p = Processed::empty();
    p.chunks = pack(paragraphs(&lines), max_chars, &[], "paragraph");
    p.tags = hashtags(lines.iter().map(|(_, l)| *l));
    p
}

/// `#word` tags (a `#` at the start of a word followed by a letter), lower-cased.
pub(crate) fn hashtags<'a>(lines: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut tags = Vec::new();
    for line in lines {
        let mut prev = ' ';
        let chars: Vec<char> = line.chars().collect();
        for (i, &c) in chars.iter().enumerate() {
            if c == '#'
                && prev.is_whitespace()
                && chars.get(i + 1).is_some_and(|n| n.is_alphabetic())
            {
                let tag: String = chars[i + 1..]
                    .iter()
                    .take_while(|c| c.is_alphanumeric() || **c == '-' || **c == '_' || **c == '/')
                    .collect();
                tags.push(tag.to_lowercase());
            }
            prev = c;
        }
    }
    tags
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paragraphs_with_line_ranges() {
        let p = process("first para\nstill first\n\n\nsecond #Ops\n", 30);
        assert_eq!(p.chunks.len(), 2);
        assert_eq!(p.chunks[0].lines, LineRange::new(1, 2));
        assert_eq!(p.chunks[1].lines, LineRange::new(5, 5));
        assert_eq!(p.tags, vec!["ops".to_string()]);
    }

    #[test]
    fn hashtags_skip_headings_and_anchors() {
        let t = hashtags(["# Title", "see a#b and #rust-lang, #2"].into_iter());
        assert_eq!(t, vec!["rust-lang".to_string()]);
    }
}
