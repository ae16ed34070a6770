//! What a word is to the comparison, found with one lookup.
//!
//! Every candidate's every word is classified on each call (a hundred
//! candidates a write); scanning the stopword, filler, negation and
//! opposite lists word by word was most of the detector's time.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::OnceLock;

use mem_plugin_sdk::text::STOPWORDS;

use crate::profile::{FILLER, NEGATIONS};
use crate::sketch::OPPOSITES;

/// The lists a word is on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Class {
    pub stopword: bool,
    pub filler: bool,
    pub negation: bool,
    /// Bit `2k` (`2k + 1`): the word is the first (second) of `OPPOSITES[k]`.
    pub marks: u64,
}

/// FNV-1a over a word's bytes: cheap for short words, and the table's
/// keys are fixed (no input chooses what collides in it).
pub(crate) struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        self.0 = bytes.iter().fold(self.0, |h, &b| {
            (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
        });
    }
}

type Table = HashMap<&'static str, Class, BuildHasherDefault<Fnv>>;

fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t = Table::default();
        for w in STOPWORDS {
            t.entry(w).or_default().stopword = true;
        }
        for w in FILLER {
            t.entry(w).or_default().filler = true;
        }
        for w in NEGATIONS {
            t.entry(w).or_default().negation = true;
        }
        for (k, (x, y)) in OPPOSITES.iter().enumerate() {
            t.entry(x).or_default().marks |= 1 << (2 * k);
            t.entry(y).or_default().marks |= 1 << (2 * k + 1);
        }
        t
    })
}

impl Class {
    /// Whether `word`, of this class, carries subject or claim: not a
    /// stopword, filler, negation or number.
    pub fn is_content(self, word: &str) -> bool {
        !self.stopword && !self.filler && !self.negation && !is_number(word)
    }
}

pub(crate) fn is_number(w: &str) -> bool {
    w.bytes().any(|b| b.is_ascii_digit())
}

/// The lists `word` (lower case) is on; none for most words.
pub(crate) fn class(word: &str) -> Class {
    table().get(word).copied().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_word_is_on_every_list_that_names_it() {
        // `no` is a negation and the second word of yes/no.
        let no = class("no");
        assert!(no.negation && !no.stopword && !no.filler);
        assert!(class("the").stopword);
        let yes_no = OPPOSITES.iter().position(|p| *p == ("yes", "no")).unwrap();
        assert_eq!(no.marks, 1 << (2 * yes_no + 1));
        // `avoid` is the second word of two pairs.
        assert_eq!(class("avoid").marks.count_ones(), 2);
        assert!(class("still").filler);
        assert_eq!(class("kubernetes"), Class::default());
    }

    #[test]
    fn the_lookup_agrees_with_the_lists() {
        for w in STOPWORDS.iter().chain(FILLER).chain(NEGATIONS) {
            let c = class(w);
            assert_eq!(c.stopword, STOPWORDS.contains(w), "{w}");
            assert_eq!(c.filler, FILLER.contains(w), "{w}");
            assert_eq!(c.negation, NEGATIONS.contains(w), "{w}");
        }
    }
}
