//! Reading the period a query names ("in May 2023", "on 1 May, 2023",
//! "last week") so that memories from then rank higher.
//!
//! Agents ask about time in words far more often than they pass `--since`
//! and `--until`. A named period is a preference, not a filter: what was
//! told a little before or after still counts, and a query whose date is
//! only part of its meaning ("the budget we set in March") must still find
//! the budget. Only English month names and numeric dates are read; a query
//! without one is searched exactly as before.

use chrono::{Datelike, Duration, Months, NaiveDate, TimeZone, Utc};
use mem_core::index::Period;
use mem_core::time::Timestamp;
use regex::{Captures, Regex};
use std::sync::OnceLock;

/// Full month names and their usual abbreviations.
const MONTH: &str = "(january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)\\.?";
/// Full names only: a bare "Jan" or "Mar" is more often a name or a word.
const MONTH_FULL: &str =
    "(january|february|march|april|may|june|july|august|september|october|november|december)";
const ORDINAL: &str = "(?:st|nd|rd|th)?";

fn month_number(name: &str) -> Option<u32> {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    let n = match name.get(..3)? {
        "jan" => 1,
        "feb" => 2,
        "mar" => 3,
        "apr" => 4,
        "may" => 5,
        "jun" => 6,
        "jul" => 7,
        "aug" => 8,
        "sep" => 9,
        "oct" => 10,
        "nov" => 11,
        "dec" => 12,
        _ => return None,
    };
    Some(n)
}

/// The forms read, most precise first; each turns its match into a period.
struct Form {
    re: Regex,
    read: fn(&Captures, Timestamp) -> Option<Span>,
}

/// What a form found, before it is given the query's words.
enum Span {
    Dates(NaiveDate, NaiveDate),
    Month(u32),
}

fn num<T: std::str::FromStr>(c: &Captures, i: usize) -> Option<T> {
    c.get(i)?.as_str().parse().ok()
}

fn year(c: &Captures, i: usize) -> Option<i32> {
    num::<i32>(c, i).filter(|y| (1900..=2200).contains(y))
}

fn day(y: i32, m: u32, d: u32) -> Option<Span> {
    let start = NaiveDate::from_ymd_opt(y, m, d)?;
    Some(Span::Dates(start, start.succ_opt()?))
}

fn month(y: i32, m: u32) -> Option<Span> {
    let start = NaiveDate::from_ymd_opt(y, m, 1)?;
    Some(Span::Dates(
        start,
        start.checked_add_months(Months::new(1))?,
    ))
}

fn year_span(y: i32) -> Option<Span> {
    let start = NaiveDate::from_ymd_opt(y, 1, 1)?;
    Some(Span::Dates(
        start,
        start.checked_add_months(Months::new(12))?,
    ))
}

/// The relative forms' first word: `this` (else `last`).
fn this(c: &Captures) -> bool {
    c.get(1)
        .is_some_and(|w| w.as_str().eq_ignore_ascii_case("this"))
}

fn forms() -> &'static [Form] {
    static FORMS: OnceLock<Vec<Form>> = OnceLock::new();
    FORMS.get_or_init(|| {
        let form = |pattern: String, read: fn(&Captures, Timestamp) -> Option<Span>| Form {
            // The patterns are constants of this module, tested below.
            re: Regex::new(&format!("(?i){pattern}")).expect("a valid built-in pattern"),
            read,
        };
        vec![
            // 2023-05-01
            form(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b".into(), |c, _| {
                day(year(c, 1)?, num(c, 2)?, num(c, 3)?)
            }),
            // 1 May 2023, 1st of May, 2023
            form(
                format!(r"\b(\d{{1,2}}){ORDINAL}(?:\s+of)?\s+{MONTH},?\s+(\d{{4}})\b"),
                |c, _| day(year(c, 3)?, month_number(c.get(2)?.as_str())?, num(c, 1)?),
            ),
            // May 1, 2023
            form(
                format!(r"\b{MONTH}\s+(\d{{1,2}}){ORDINAL},?\s+(\d{{4}})\b"),
                |c, _| day(year(c, 3)?, month_number(c.get(1)?.as_str())?, num(c, 2)?),
            ),
            // May 2023, 2023-05
            form(format!(r"\b{MONTH},?\s+(\d{{4}})\b"), |c, _| {
                month(year(c, 2)?, month_number(c.get(1)?.as_str())?)
            }),
            form(r"\b(\d{4})-(\d{2})\b".into(), |c, _| {
                month(year(c, 1)?, num(c, 2)?)
            }),
            // on May 23, in May, early June: that month of any year.
            form(format!(r"\b{MONTH}\s+\d{{1,2}}{ORDINAL}\b"), |c, _| {
                Some(Span::Month(month_number(c.get(1)?.as_str())?))
            }),
            form(
                format!(r"\b(?:in|during|early|late|mid|of|around|throughout|last|this)\s+{MONTH_FULL}\b"),
                |c, _| Some(Span::Month(month_number(c.get(1)?.as_str())?)),
            ),
            // in 2023, photos from 2012
            form(r"\b(?:in|during|of|throughout|from)\s+(\d{4})\b".into(), |c, _| {
                year_span(year(c, 1)?)
            }),
            // Relative to now (UTC).
            form(r"\b(today|yesterday)\b".into(), |c, now| {
                let today = now.date_naive();
                let d = if c.get(1)?.as_str().eq_ignore_ascii_case("today") {
                    today
                } else {
                    today.pred_opt()?
                };
                Some(Span::Dates(d, d.succ_opt()?))
            }),
            form(r"\b(this|last)\s+week\b".into(), |c, now| {
                let today = now.date_naive();
                let monday = today - Duration::days(i64::from(today.weekday().num_days_from_monday()));
                Some(if this(c) {
                    Span::Dates(monday, today.succ_opt()?)
                } else {
                    Span::Dates(monday - Duration::days(7), monday)
                })
            }),
            form(r"\b(this|last)\s+month\b".into(), |c, now| {
                let first = NaiveDate::from_ymd_opt(now.year(), now.month(), 1)?;
                let m = if this(c) { first } else { first.pred_opt()? };
                month(m.year(), m.month())
            }),
            form(r"\b(this|last)\s+year\b".into(), |c, now| {
                year_span(if this(c) { now.year() } else { now.year() - 1 })
            }),
        ]
    })
}

fn midnight(d: NaiveDate) -> Option<Timestamp> {
    Utc.from_local_datetime(&d.and_hms_opt(0, 0, 0)?).single()
}

/// The first period `query` names (the most precise form wins), if any.
/// `now` anchors "yesterday", "last week" and the like.
pub fn period_in(query: &str, now: Timestamp) -> Option<Period> {
    forms().iter().find_map(|form| {
        form.re.captures_iter(query).find_map(|c| {
            let text = c.get(0)?.as_str().trim().to_string();
            Some(match (form.read)(&c, now)? {
                Span::Dates(from, until) => Period {
                    text,
                    from: Some(midnight(from)?),
                    until: Some(midnight(until)?),
                    month: None,
                },
                Span::Month(m) => Period {
                    text,
                    from: None,
                    until: None,
                    month: Some(m),
                },
            })
        })
    })
}

/// The forms a timeline period is written in, for hints and errors.
pub const PERIOD_FORMS: &str =
    "2012, 2012-03, 2012-03-04, or a range of them: 2012-03..2012-08, 2012-03-04..2012-03-09";
/// A date the timeline reads: a year, a month or a day.
const DATE_PATTERN: &str = "[0-9]{4}(-(0[1-9]|1[0-2])(-(0[1-9]|[12][0-9]|3[01]))?)?";
/// Longest period a timeline covers, in months (its answer lists months).
pub const MAX_PERIOD_MONTHS: u32 = 1200;

/// The JSON Schema pattern of a timeline period (what the door enforces;
/// [`parse_period`] reads exactly these strings).
pub fn period_pattern() -> String {
    format!("^{DATE_PATTERN}(\\.\\.{DATE_PATTERN})?$")
}

/// A calendar period of whole days, compared with an item's local time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatePeriod {
    /// As written.
    pub text: String,
    /// First day.
    pub from: NaiveDate,
    /// The day after the last (exclusive).
    pub until: NaiveDate,
}

impl DatePeriod {
    /// Whether a local wall-clock time falls in the period.
    pub fn contains(&self, t: chrono::NaiveDateTime) -> bool {
        let d = t.date();
        d >= self.from && d < self.until
    }

    /// The last day (inclusive).
    pub fn last_day(&self) -> NaiveDate {
        self.until.pred_opt().unwrap_or(self.until)
    }

    /// A dated recall period (UTC midnights) as whole days; `None` for a
    /// month of any year or a period without both ends.
    pub fn of_recall(p: &Period) -> Option<Self> {
        Some(Self {
            text: p.text.clone(),
            from: p.from?.date_naive(),
            until: p.until?.date_naive(),
        })
    }
}

fn period_error(text: &str, why: &str, unprocessable: bool) -> mem_core::MemError {
    use mem_core::{ErrorCode, MemError};
    let code = if unprocessable {
        ErrorCode::Unprocessable
    } else {
        ErrorCode::BadRequest
    };
    MemError::new(code, format!("period {text:?} {why}"))
        .with_hint(format!("write the period as {PERIOD_FORMS}"))
        .with_details(serde_json::json!({
            "field": "period",
            "accepted": ["YYYY", "YYYY-MM", "YYYY-MM-DD", "FROM..TO"],
        }))
}

/// One date of a period: its first day and the day after its last.
fn date_span(s: &str) -> Option<Result<(NaiveDate, NaiveDate), ()>> {
    let b = s.as_bytes();
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    let shape = match b.len() {
        4 => digits(0..4),
        7 => digits(0..4) && b[4] == b'-' && digits(5..7),
        10 => digits(0..4) && b[4] == b'-' && digits(5..7) && b[7] == b'-' && digits(8..10),
        _ => false,
    };
    if !shape {
        return None;
    }
    let y: i32 = s[0..4].parse().ok()?;
    let m: u32 = s.get(5..7).map_or(Some(1), |v| v.parse().ok())?;
    let d: u32 = s.get(8..10).map_or(Some(1), |v| v.parse().ok())?;
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return None;
    }
    let Some(start) = NaiveDate::from_ymd_opt(y, m, d) else {
        // 2012-02-30: the right shape, but no such day.
        return Some(Err(()));
    };
    let end = match b.len() {
        4 => start.checked_add_months(Months::new(12)),
        7 => start.checked_add_months(Months::new(1)),
        _ => start.succ_opt(),
    };
    Some(end.map(|e| (start, e)).ok_or(()))
}

/// Reads a timeline period: `2012`, `2012-03`, `2012-03-04`, or
/// `FROM..TO` of those (both ends included). A string of another shape is
/// `bad_request`; a well-formed one naming no such day, ending before it
/// starts or longer than [`MAX_PERIOD_MONTHS`] is `unprocessable`.
pub fn parse_period(text: &str) -> mem_core::MemResult<DatePeriod> {
    let (a, b) = match text.split_once("..") {
        Some((a, b)) => (a, Some(b)),
        None => (text, None),
    };
    let span = |s: &str| match date_span(s) {
        None => Err(period_error(text, "is not a period", false)),
        Some(Err(())) => Err(period_error(text, "names a day that does not exist", true)),
        Some(Ok(span)) => Ok(span),
    };
    let (from, first_end) = span(a)?;
    let until = match b {
        Some(b) => span(b)?.1,
        None => first_end,
    };
    if until <= from {
        return Err(period_error(text, "ends before it starts", true));
    }
    if from
        .checked_add_months(Months::new(MAX_PERIOD_MONTHS))
        .is_none_or(|limit| until > limit)
    {
        return Err(period_error(
            text,
            &format!("is longer than {MAX_PERIOD_MONTHS} months"),
            true,
        ));
    }
    Ok(DatePeriod {
        text: text.to_string(),
        from,
        until,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> Timestamp {
        // A Wednesday.
        "2026-12-02T10:00:00Z".parse().unwrap()
    }

    fn range(q: &str) -> Option<(String, String, String)> {
        let p = period_in(q, now())?;
        Some((
            p.text,
            p.from?.format("%Y-%m-%d").to_string(),
            p.until?.format("%Y-%m-%d").to_string(),
        ))
    }

    fn r(text: &str, from: &str, until: &str) -> Option<(String, String, String)> {
        Some((text.into(), from.into(), until.into()))
    }

    /// Each `(query, words naming the period, first day, day after)`.
    fn expect(cases: &[(&str, &str, &str, &str)]) {
        for &(query, text, from, until) in cases {
            assert_eq!(range(query), r(text, from, until), "{query}");
        }
    }

    #[test]
    fn dated_days_months_and_years() {
        expect(&[
            (
                "What painting did she show on October 13, 2023?",
                "October 13, 2023",
                "2023-10-13",
                "2023-10-14",
            ),
            (
                "what did Gina find on 1 February, 2023",
                "1 February, 2023",
                "2023-02-01",
                "2023-02-02",
            ),
            (
                "the 3rd of Dec. 2024 outage",
                "3rd of Dec. 2024",
                "2024-12-03",
                "2024-12-04",
            ),
            (
                "deploys on 2025-02-28",
                "2025-02-28",
                "2025-02-28",
                "2025-03-01",
            ),
            (
                "What setback did Melanie face in October 2023?",
                "October 2023",
                "2023-10-01",
                "2023-11-01",
            ),
            ("budget of dec 2023", "dec 2023", "2023-12-01", "2024-01-01"),
            ("report 2024-12", "2024-12", "2024-12-01", "2025-01-01"),
            (
                "how many photos from 2012",
                "from 2012",
                "2012-01-01",
                "2013-01-01",
            ),
            (
                "How many times did she go to the beach in 2023?",
                "in 2023",
                "2023-01-01",
                "2024-01-01",
            ),
        ]);
    }

    #[test]
    fn a_month_without_a_year_is_that_month_of_any_year() {
        for (q, m) in [
            ("When did Melanie go camping in June?", 6),
            ("what did we decide in march", 3),
            ("the offsite on May 23", 5),
            ("early September plans", 9),
        ] {
            let p = period_in(q, now()).unwrap_or_else(|| panic!("{q}"));
            assert_eq!((p.month, p.from, p.until), (Some(m), None, None), "{q}");
        }
    }

    #[test]
    fn relative_periods_are_anchored_to_now() {
        expect(&[
            (
                "what did I fix yesterday",
                "yesterday",
                "2026-12-01",
                "2026-12-02",
            ),
            (
                "notes from last week",
                "last week",
                "2026-11-23",
                "2026-11-30",
            ),
            (
                "this week's standups",
                "this week",
                "2026-11-30",
                "2026-12-03",
            ),
            (
                "decisions last month",
                "last month",
                "2026-11-01",
                "2026-12-01",
            ),
            (
                "goals for this year",
                "this year",
                "2026-01-01",
                "2027-01-01",
            ),
        ]);
        let jan: Timestamp = "2027-01-15T00:00:00Z".parse().unwrap();
        let p = period_in("last month", jan).unwrap();
        assert_eq!(p.from.unwrap().format("%Y-%m").to_string(), "2026-12");
    }

    #[test]
    fn words_that_only_look_like_dates_name_no_period() {
        for q in [
            "What pets may Joanna like?",
            "Did Jan approve the release?",
            "march the migration forward",
            "rollback plan for the database",
            "port 8080 and 2 replicas",
            "",
        ] {
            assert_eq!(period_in(q, now()), None, "{q}");
        }
    }

    #[test]
    fn timeline_periods_are_years_months_days_and_ranges_of_them() {
        let p = |t: &str| {
            let p = parse_period(t).unwrap_or_else(|e| panic!("{t}: {e:?}"));
            (p.from.to_string(), p.last_day().to_string())
        };
        let s = |a: &str, b: &str| (a.to_string(), b.to_string());
        assert_eq!(p("2012"), s("2012-01-01", "2012-12-31"));
        assert_eq!(p("2012-02"), s("2012-02-01", "2012-02-29"));
        assert_eq!(p("2012-03-04"), s("2012-03-04", "2012-03-04"));
        assert_eq!(p("2012-03..2012-08"), s("2012-03-01", "2012-08-31"));
        assert_eq!(p("2012-03-04..2012-03-09"), s("2012-03-04", "2012-03-09"));
        assert_eq!(p("2011..2012-01-15"), s("2011-01-01", "2012-01-15"));
        let jan = parse_period("2012-01").unwrap();
        assert!(jan.contains("2012-01-31T23:59:59".parse().unwrap()));
        assert!(!jan.contains("2012-02-01T00:00:00".parse().unwrap()));
    }

    #[test]
    fn bad_periods_are_refused_with_the_accepted_forms() {
        use mem_core::ErrorCode;
        let re = Regex::new(&period_pattern()).unwrap();
        for t in [
            "",
            "12",
            "2012-3",
            "2012-13",
            "2012-00",
            "2012-03-32",
            "2012/03",
            " 2012",
            "2012..",
            "..2012",
            "2012...2013",
            "2012..2013..2014",
            "last year",
            "2012-03-04T10:00",
            "２０１２",
        ] {
            let e = parse_period(t).expect_err(t);
            assert_eq!(e.code, ErrorCode::BadRequest, "{t}");
            assert!(e.hint.contains("2012-03..2012-08"), "{t}");
            assert!(!re.is_match(t), "the schema admits {t:?}");
        }
        for t in [
            "2012-02-30",
            "2013..2012",
            "2012-03-09..2012-03-04",
            "1900..2101",
        ] {
            let e = parse_period(t).expect_err(t);
            assert_eq!(e.code, ErrorCode::Unprocessable, "{t}");
            assert!(re.is_match(t), "the schema refuses {t:?}");
        }
        for t in ["2012", "2012-03..2012-08", "0001-01-01", "9999-12"] {
            assert!(re.is_match(t) && parse_period(t).is_ok(), "{t}");
        }
    }

    #[test]
    fn impossible_dates_fall_back_or_name_nothing() {
        // No 31 February: the month alone is still named.
        assert_eq!(
            range("31 February 2023"),
            r("February 2023", "2023-02-01", "2023-03-01")
        );
        assert_eq!(range("2023-13-45"), None);
        assert_eq!(range("in 9999"), None);
        assert_eq!(range("May 99999"), None);
    }
}
