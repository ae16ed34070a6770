//! Where in a file a citation points: lines (`L10`, `L10-24`), or lines of
//! one page of a paged document (`p3:L10-24`, lines counted from the top of
//! the page). Evidence, handoff references, review excerpts and processed
//! chunks all speak this one form, parsed and printed here only.

use crate::plugin::LineRange;
use std::fmt;

/// The JSON Schema pattern of a locator: what [`Locator::parse`] accepts
/// but for the order of the ends (which no pattern can state).
pub const PATTERN: &str = "^(p[1-9][0-9]{0,8}:)?L[1-9][0-9]{0,8}(-[1-9][0-9]{0,8})?$";

/// The same shape without its anchors, for patterns that embed it.
pub const PATTERN_BODY: &str = "(p[1-9][0-9]{0,8}:)?L[1-9][0-9]{0,8}(-[1-9][0-9]{0,8})?";

/// A parsed locator: 1 <= start <= end, pages from 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Locator {
    pub page: Option<u32>,
    pub lines: LineRange,
}

impl Locator {
    pub fn lines(start: u32, end: u32) -> Self {
        Self {
            page: None,
            lines: LineRange::new(start, end),
        }
    }

    pub fn page(page: u32, lines: LineRange) -> Self {
        Self {
            page: Some(page),
            lines,
        }
    }

    /// `None` for anything but a well-formed locator with its ends in order.
    pub fn parse(s: &str) -> Option<Self> {
        Self::parse_shape(s).filter(|l| l.lines.start <= l.lines.end)
    }

    /// A well-formed locator whose ends may be in either order: what the
    /// schema's pattern admits, so a caller can tell "runs backwards" apart
    /// from "not a locator".
    pub fn parse_shape(s: &str) -> Option<Self> {
        let (page, lines) = match s.strip_prefix('p') {
            Some(rest) => {
                let (page, lines) = rest.split_once(':')?;
                (Some(number(page)?), lines)
            }
            None => (None, s),
        };
        let range = lines.strip_prefix('L')?;
        let (start, end) = match range.split_once('-') {
            Some((a, b)) => (number(a)?, number(b)?),
            None => {
                let n = number(range)?;
                (n, n)
            }
        };
        Some(Self {
            page,
            lines: LineRange::new(start, end),
        })
    }

    /// Whether 1-based line `n` (of the page, for a page locator) is cited.
    pub fn covers(&self, n: usize) -> bool {
        (self.lines.start as usize..=self.lines.end as usize).contains(&n)
    }
}

/// A positive decimal of at most nine digits, without sign or padding.
fn number(s: &str) -> Option<u32> {
    let ok = !s.is_empty() && s.len() <= 9 && s.bytes().all(|b| b.is_ascii_digit());
    s.parse::<u32>()
        .ok()
        .filter(|n| ok && *n >= 1 && !s.starts_with('0'))
}

impl fmt::Display for Locator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(p) = self.page {
            write!(f, "p{p}:")?;
        }
        f.write_str(&self.lines.locator())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn well_formed_locators_parse_and_print_back() {
        for s in ["L1", "L10-24", "p3:L10-24", "p1:L2"] {
            assert_eq!(Locator::parse(s).map(|l| l.to_string()).as_deref(), Some(s));
        }
        assert_eq!(Locator::parse("L7-7").unwrap().to_string(), "L7");
        assert_eq!(Locator::parse("p2:L3").unwrap().page, Some(2));
        let backwards = Locator::parse_shape("L9-3").unwrap();
        assert_eq!((backwards.lines.start, backwards.lines.end), (9, 3));
    }

    #[test]
    fn malformed_locators_are_refused() {
        for s in [
            "",
            "L",
            "L0",
            "L5-2",
            "10-20",
            "p0:L1",
            "p3:10",
            "px:L1",
            "L+1",
            "L01",
            "L1-",
            "p:L1",
            "L1234567890",
            "p3L1",
            "L1-L2",
        ] {
            assert_eq!(Locator::parse(s), None, "{s:?}");
        }
    }

    #[test]
    fn the_pattern_admits_what_the_parser_does_but_the_order_of_the_ends() {
        let re = regex::Regex::new(PATTERN).unwrap();
        let body = regex::Regex::new(&format!("^{PATTERN_BODY}$")).unwrap();
        for s in [
            "L1",
            "L10-24",
            "p3:L10-24",
            "L5-2",
            "L0",
            "p0:L1",
            "L01",
            "L1-L2",
            "px:L1",
            "",
        ] {
            let shaped = Locator::parse_shape(s).is_some();
            assert_eq!(re.is_match(s), shaped, "{s:?}");
            assert_eq!(body.is_match(s), shaped, "{s:?}");
        }
    }
}
