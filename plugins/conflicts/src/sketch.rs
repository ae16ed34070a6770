//! The cheap view of a text: the hashes of its content words' stems and
//! which opposite words it has. Enough for the word overlap, which every
//! relation needs; a candidate below it is passed over without building
//! its whole profile.

use std::hash::Hasher;

use crate::profile::{each_token, stem};
use crate::words::{Fnv, class};

/// Pairs of words that state opposite claims about one subject.
pub(crate) const OPPOSITES: &[(&str, &str)] = &[
    ("enable", "disable"),
    ("enabled", "disabled"),
    ("true", "false"),
    ("allow", "deny"),
    ("allowed", "denied"),
    ("always", "never"),
    ("on", "off"),
    ("yes", "no"),
    ("use", "avoid"),
    ("prefer", "avoid"),
    ("include", "exclude"),
    ("increase", "decrease"),
    ("before", "after"),
    ("works", "broken"),
    ("working", "broken"),
    ("works", "fails"),
    ("passes", "fails"),
    ("like", "dislike"),
    ("likes", "dislikes"),
    ("love", "hate"),
    ("loves", "hates"),
    ("likes", "hates"),
    ("required", "optional"),
    ("supported", "unsupported"),
    ("open", "closed"),
];

/// Content-word stems and opposite words of a text.
#[derive(Debug, Clone, Default)]
pub struct Sketch {
    /// Hashes of the content words' stems, sorted, each once.
    stems: Vec<u64>,
    /// Bit `2k` (`2k + 1`): the text has the first (second) word of
    /// `OPPOSITES[k]`.
    marks: u64,
}

/// FNV-1a: stable, and plenty for telling a text's few dozen words apart.
fn hash(word: &str) -> u64 {
    let mut h = Fnv::default();
    h.write(word.as_bytes());
    h.finish()
}

impl Sketch {
    /// The sketch of a text, read without keeping its words.
    pub fn of(text: &str) -> Sketch {
        let mut sketch = Sketch::default();
        each_token(text, |w| sketch.add(w));
        sketch.finish()
    }

    /// The sketch of words already split by the profile.
    pub fn of_tokens<'a>(tokens: impl IntoIterator<Item = &'a str>) -> Sketch {
        let mut sketch = Sketch::default();
        tokens.into_iter().for_each(|w| sketch.add(w));
        sketch.finish()
    }

    fn add(&mut self, word: &str) {
        let class = class(word);
        self.marks |= class.marks;
        if class.is_content(word) {
            self.stems.push(hash(stem(word)));
        }
    }

    fn finish(mut self) -> Sketch {
        self.stems.sort_unstable();
        self.stems.dedup();
        self
    }

    /// Whether the text has no content words (numbers alone, say).
    pub fn is_empty(&self) -> bool {
        self.stems.is_empty()
    }

    fn has(&self, bit: usize) -> bool {
        self.marks >> bit & 1 == 1
    }

    /// Opposite words: the one this text has, the one `other` has.
    pub fn opposite_to(&self, other: &Sketch) -> Option<(&'static str, &'static str)> {
        OPPOSITES.iter().enumerate().find_map(|(k, &(x, y))| {
            let (x_bit, y_bit) = (2 * k, 2 * k + 1);
            if self.has(x_bit) && other.has(y_bit) && !self.has(y_bit) && !other.has(x_bit) {
                Some((x, y))
            } else if self.has(y_bit) && other.has(x_bit) && !self.has(x_bit) && !other.has(y_bit) {
                Some((y, x))
            } else {
                None
            }
        })
    }

    /// Jaccard similarity of the content words; opposite words differ by
    /// design, so the rest is compared.
    pub fn similarity(&self, other: &Sketch) -> f32 {
        let skip = self
            .opposite_to(other)
            .map(|(x, y)| [hash(stem(x)), hash(stem(y))]);
        let kept = |h: u64| skip.is_none_or(|s| !s.contains(&h));
        let (a, b) = (&self.stems, &other.stems);
        let (mut i, mut j, mut shared, mut union) = (0, 0, 0usize, 0usize);
        while i < a.len() || j < b.len() {
            let (h, both) = match (a.get(i), b.get(j)) {
                (Some(&x), Some(&y)) if x == y => {
                    i += 1;
                    j += 1;
                    (x, true)
                }
                (Some(&x), Some(&y)) if x < y => {
                    i += 1;
                    (x, false)
                }
                (Some(&x), None) => {
                    i += 1;
                    (x, false)
                }
                (_, Some(&y)) => {
                    j += 1;
                    (y, false)
                }
                (None, None) => break,
            };
            if kept(h) {
                union += 1;
                shared += usize::from(both);
            }
        }
        if union == 0 {
            return 0.0;
        }
        shared as f32 / union as f32
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::profile;

    #[test]
    fn a_text_sketched_alone_sketches_as_its_profile_does() {
        for text in [
            "The staging DB runs Postgres 16.2 at 10:00, see #3.",
            "Ana doesn't like the new café's menu",
            "ΣΟΦΙΑ prefers tabs, never spaces",
            "16",
            "",
        ] {
            let (alone, of_profile) = (Sketch::of(text), profile(text).sketch);
            assert_eq!(alone.stems, of_profile.stems, "{text}");
            assert_eq!(alone.marks, of_profile.marks, "{text}");
        }
    }

    #[test]
    fn similarity_sets_the_opposite_words_aside() {
        let a = Sketch::of("The cache is enabled in staging");
        let b = Sketch::of("The cache is disabled in staging");
        assert_eq!(a.opposite_to(&b), Some(("enabled", "disabled")));
        assert_eq!(b.opposite_to(&a), Some(("disabled", "enabled")));
        assert_eq!(a.similarity(&b), 1.0);
        let c = Sketch::of("The cache runs in production");
        assert_eq!(a.opposite_to(&c), None);
        // cache, enabled, staging, run, production: one shared of five.
        assert!((a.similarity(&c) - 0.2).abs() < 1e-6);
        assert_eq!(Sketch::of("16").similarity(&Sketch::of("17")), 0.0);
    }
}
