//! The comparable view of a text: its words, numbers, polarity, and
//! whether its numbers belong to a series or a dated log.

use std::collections::BTreeSet;

use crate::sketch::Sketch;
use crate::words::{class, is_number};

pub(crate) const NEGATIONS: &[&str] = &[
    "not",
    "no",
    "never",
    "don't",
    "doesn't",
    "isn't",
    "aren't",
    "cannot",
    "can't",
    "won't",
    "shouldn't",
    "mustn't",
    "without",
    "nor",
    "didn't",
    "wasn't",
];

/// Words that carry neither subject nor claim (auxiliaries, intensifiers).
pub(crate) const FILLER: &[&str] = &[
    "is",
    "are",
    "was",
    "were",
    "be",
    "been",
    "being",
    "do",
    "does",
    "did",
    "really",
    "still",
    "also",
    "very",
    "now",
    "currently",
    "just",
];

/// A word right before a number that makes it a position in a series
/// (`note 2`, `step 3`, `day 4`), not a quantity.
const SERIES_LABELS: &[&str] = &[
    "note", "notes", "item", "step", "part", "chapter", "section", "page", "episode", "entry",
    "day", "week", "session", "round", "lap", "attempt", "try", "visit", "issue", "ticket", "task",
    "number", "no", "nr", "id",
];

/// A word right after a number that makes it a counter (`5 times`).
const COUNTER_UNITS: &[&str] = &["times", "time", "th", "x"];

/// Words that date a text: it logs when something happened.
const TEMPORAL: &[&str] = &[
    "today",
    "yesterday",
    "tomorrow",
    "tonight",
    "morning",
    "afternoon",
    "evening",
    "night",
    "ago",
    "am",
    "pm",
    "o'clock",
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "january",
    "february",
    "march",
    "april",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// The comparable view of a text.
#[derive(Debug, Clone)]
pub struct Profile {
    /// Words and numbers in order, lower case.
    tokens: Vec<String>,
    /// Stems of the content words (no stopwords, filler, negations or numbers).
    terms: BTreeSet<String>,
    /// Numbers in order of appearance, each once.
    pub numbers: Vec<String>,
    /// An odd number of negations.
    pub negated: bool,
    /// Its numbers are positions in a series, counters or times of a log.
    pub series: bool,
    /// Its content words and opposite words, for the overlap.
    pub sketch: Sketch,
}

fn is_negation(w: &str) -> bool {
    class(w).negation
}

pub(crate) fn is_content(w: &str) -> bool {
    class(w).is_content(w)
}

/// A crude stem, enough to match `runs` with `run` and `uses` with `use`.
pub(crate) fn stem(w: &str) -> &str {
    let w = w.strip_suffix("'s").unwrap_or(w);
    match w.strip_suffix('s') {
        Some(s) if s.chars().count() >= 3 && !s.ends_with('s') => s,
        _ => w,
    }
}

/// Whether a raw token is a time or a date (`10:00`, `2026-03-01`, `3/4`).
fn is_clock_or_date(raw: &str) -> bool {
    let b = raw.as_bytes();
    b.windows(3).any(|w| {
        w[0].is_ascii_digit() && matches!(w[1], b':' | b'-' | b'/') && w[2].is_ascii_digit()
    })
}

/// Whether a number token is an ordinal (`1st`, `22nd`, `3rd`, `4th`).
fn is_ordinal(n: &str) -> bool {
    let digits = n.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let suffix = &n[digits.len()..];
    !digits.is_empty()
        && digits.chars().all(|c| c.is_ascii_digit())
        && matches!(suffix, "st" | "nd" | "rd" | "th")
}

/// Calls `each` with the lower-case words and numbers of `text`, in order;
/// returns whether one of them is a time or a date. A number keeps its
/// inner punctuation (`16.2`, `10:00`, `2026-03-01`), so it compares whole.
/// One buffer serves every word: a candidate is read without allocating.
pub(crate) fn each_token(text: &str, mut each: impl FnMut(&str)) -> bool {
    let mut dated = false;
    let mut lower = String::new();
    for raw in text.split_whitespace() {
        let raw = raw.trim_matches(|c: char| !(c.is_alphanumeric() || c == '#'));
        if raw.is_empty() {
            continue;
        }
        lower.clear();
        if raw.is_ascii() {
            lower.push_str(raw);
            lower.make_ascii_lowercase();
        } else {
            lower.push_str(&raw.to_lowercase());
        }
        if is_number(&lower) {
            dated |= is_clock_or_date(&lower);
            // `#3` is a position: keep the mark for the series check.
            each(&lower);
            continue;
        }
        for w in lower.split(|c: char| !(c.is_alphanumeric() || c == '\'')) {
            let w = w.trim_matches('\'');
            if !w.is_empty() {
                each(w);
            }
        }
    }
    dated
}

pub fn profile(text: &str) -> Profile {
    let mut tokens = Vec::new();
    let dated = each_token(text, |w| tokens.push(w.to_string()));
    let negated = tokens.iter().filter(|w| is_negation(w)).count() % 2 == 1;
    let mut numbers: Vec<String> = Vec::new();
    let mut seen = BTreeSet::new();
    let mut series = dated;
    for (i, w) in tokens.iter().enumerate() {
        if !is_number(w) {
            series |= TEMPORAL.contains(&w.as_str());
            continue;
        }
        let before = i.checked_sub(1).and_then(|j| tokens.get(j));
        let after = tokens.get(i + 1);
        series |= w.starts_with('#')
            || is_ordinal(w)
            || before.is_some_and(|b| SERIES_LABELS.contains(&b.as_str()))
            || after.is_some_and(|a| COUNTER_UNITS.contains(&a.as_str()));
        let n = w.trim_start_matches('#').to_string();
        if seen.insert(n.clone()) {
            numbers.push(n);
        }
    }
    let terms = tokens
        .iter()
        .filter(|w| is_content(w))
        .map(|w| stem(w).to_string())
        .collect();
    let sketch = Sketch::of_tokens(tokens.iter().map(String::as_str));
    Profile {
        tokens,
        terms,
        numbers,
        negated,
        series,
        sketch,
    }
}

impl Profile {
    /// Opposite words: the one this text has, the one `other` has.
    pub fn opposite_to(&self, other: &Profile) -> Option<(&'static str, &'static str)> {
        self.sketch.opposite_to(&other.sketch)
    }

    fn terms_without(&self, opposite: Option<(&str, &str)>) -> BTreeSet<String> {
        match opposite {
            Some((x, y)) => {
                let (x, y) = (stem(x), stem(y));
                self.terms
                    .iter()
                    .filter(|w| w.as_str() != x && w.as_str() != y)
                    .cloned()
                    .collect()
            }
            None => self.terms.clone(),
        }
    }

    /// Content words only this text has, and only `other` has, apart from
    /// the opposite words.
    pub fn residual(
        &self,
        other: &Profile,
        opposite: Option<(&str, &str)>,
    ) -> (Vec<String>, Vec<String>) {
        let (a, b) = (self.terms_without(opposite), other.terms_without(opposite));
        (
            a.difference(&b).cloned().collect(),
            b.difference(&a).cloned().collect(),
        )
    }

    /// Stems of the content words (numbers aside): the subject and predicate.
    pub fn stems(&self) -> &BTreeSet<String> {
        &self.terms
    }

    /// This text's side of a polarity difference with `other`: its opposite
    /// word (`broken`), its negation and what it negates (`not run`,
    /// `cannot`), or the word the other side negates (`runs`).
    pub fn polarity_part(&self, other: &Profile, opposite: Option<(&str, &str)>) -> String {
        if let Some((mine, _)) = opposite {
            return mine.to_string();
        }
        let own = self.own_words(other);
        if !own.is_empty() && !own.iter().all(|w| is_negation(w)) {
            return join(&own);
        }
        if self.negated {
            // Only a negation differs (`cannot` against `can`); when the
            // other side says nothing of its own, name what is negated.
            let mut part = own;
            if other.own_words(self).is_empty()
                && let Some(next) = self
                    .tokens
                    .iter()
                    .skip_while(|w| !is_negation(w))
                    .find(|w| is_content(w))
            {
                part.push(next);
            }
            return join(&part);
        }
        // The other side negates one of our words: that word.
        other
            .tokens
            .iter()
            .skip_while(|w| !is_negation(w))
            .find(|w| is_content(w))
            .and_then(|negated| {
                self.tokens
                    .iter()
                    .find(|w| stem(w) == stem(negated))
                    .cloned()
            })
            .unwrap_or_else(|| "(affirmed)".to_string())
    }

    /// Words of this text (negations included) whose stems `other` lacks.
    fn own_words(&self, other: &Profile) -> Vec<&String> {
        let other_stems: BTreeSet<&str> = other.tokens.iter().map(|w| stem(w)).collect();
        self.tokens
            .iter()
            .filter(|w| {
                let c = class(w);
                !c.stopword && !c.filler && !is_number(w) && !other_stems.contains(stem(w))
            })
            .collect()
    }

    /// The same numbers, in any order.
    pub fn same_numbers(&self, other: &Profile) -> bool {
        let set = |p: &Profile| p.numbers.iter().cloned().collect::<BTreeSet<_>>();
        set(self) == set(other)
    }

    /// Numbers only this text has, and only `other` has.
    pub fn number_difference(&self, other: &Profile) -> (String, String) {
        let only = |a: &Profile, b: &Profile| {
            let v: Vec<&String> = a
                .numbers
                .iter()
                .filter(|n| !b.numbers.contains(n))
                .collect();
            join(&v)
        };
        (only(self, other), only(other, self))
    }
}

fn join(words: &[&String]) -> String {
    words
        .iter()
        .map(|w| w.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_keep_their_punctuation() {
        let p = profile("Postgres 16.2 at 10:00, see #3.");
        assert_eq!(p.numbers, vec!["16.2", "10:00", "3"]);
        assert!(p.series);
    }

    #[test]
    fn series_counters_and_dates_are_recognised() {
        assert!(profile("garden note 2 about tomatoes").series);
        assert!(profile("the 3rd attempt").series);
        assert!(profile("I visited Paris 5 times").series);
        assert!(profile("I ran 5 km this morning").series);
        assert!(profile("Deployed on 2026-03-01").series);
        assert!(!profile("Staging uses Postgres 16").series);
        assert!(!profile("The API allows 100 requests per minute").series);
    }

    #[test]
    fn polarity_parts_name_the_claim() {
        let a = profile("The staging database runs Postgres");
        let b = profile("The staging database does not run Postgres");
        assert_eq!(a.polarity_part(&b, None), "runs");
        assert_eq!(b.polarity_part(&a, None), "not run");
        let c = profile("Ana can drive the van");
        let d = profile("Ana cannot drive the van");
        assert_eq!(c.polarity_part(&d, None), "can");
        assert_eq!(d.polarity_part(&c, None), "cannot");
    }

    #[test]
    fn stems_match_inflections() {
        assert_eq!(stem("runs"), "run");
        assert_eq!(stem("uses"), "use");
        assert_eq!(stem("class"), "class");
        assert_eq!(stem("bus"), "bus");
    }
}
