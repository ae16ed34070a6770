//! `sequel`: relates items of one series: names that are the same but for
//! one step of a number (`notes 1` / `notes 2`, `part 1` / `part 2`,
//! `Q1 report` / `Q2 report`), a month (`2026-01 report` / `2026-02
//! report`, `jan` / `feb`) or a date a day to a week apart (daily or
//! weekly notes). The name is the item's `name` fact (a file's name
//! without its extension), else its `title`, else its first line. The
//! rest of the name must hold a word, so `1.md` / `2.md` are no series.
//! Only neighbours in a series relate (`part 1` and `part 3` do not): the
//! chain of sequels links the rest. At most `max_relations` (10).

use mem_plugin_sdk::types::*;
use mem_plugin_sdk::{RelationDetector, config, facts};

pub struct Sequel;

/// Names longer than this are cut: bounds the work per item.
const MAX_NAME_CHARS: usize = 200;
/// How far apart two dates of a daily or weekly series may be.
const MAX_DAY_STEP: i64 = 7;

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Word(String),
    Num(u64),
    /// Months since year 0 (`2026-01`).
    Month(i64),
    /// A month name without a year: 0..12.
    MonthName(i64),
    /// Days since 1970-01-01 (`2026-01-15`).
    Day(i64),
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// `days_from_civil`).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn month_name(word: &str) -> Option<i64> {
    if word.len() < 3 {
        return None;
    }
    MONTHS
        .iter()
        .position(|m| word.starts_with(m) && (word.len() == 3 || is_full_month(word)))
        .and_then(|i| i64::try_from(i).ok())
}

fn is_full_month(word: &str) -> bool {
    [
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
        "sept",
    ]
    .contains(&word)
}

/// The series tokens of a name: lower-case words and numbers, with
/// `YYYY-MM(-DD)` dates and month names as one token each.
fn tokens(name: &str) -> Vec<Token> {
    let name: String = name.chars().take(MAX_NAME_CHARS).collect();
    // Runs of letters or digits, each with the separator that follows it.
    let mut runs: Vec<(String, Option<char>)> = Vec::new();
    let mut cur = String::new();
    for ch in name.chars() {
        let continues = cur.chars().last().is_some_and(|l| {
            (l.is_alphabetic() && ch.is_alphabetic()) || (l.is_ascii_digit() && ch.is_ascii_digit())
        });
        if ch.is_alphanumeric() {
            if !cur.is_empty() && !continues {
                runs.push((std::mem::take(&mut cur), None));
            }
            cur.extend(ch.to_lowercase());
        } else if !cur.is_empty() {
            runs.push((std::mem::take(&mut cur), Some(ch)));
        }
    }
    if !cur.is_empty() {
        runs.push((cur, None));
    }
    let num = |s: &str| s.parse::<i64>().ok();
    let mut out = Vec::new();
    let mut i = 0;
    while i < runs.len() {
        let (run, sep) = &runs[i];
        let digits = run.chars().all(|c| c.is_ascii_digit());
        let dash = |j: usize| runs.get(j).is_some_and(|(_, s)| *s == Some('-'));
        let small = |j: usize, max: i64| {
            runs.get(j).and_then(|(r, _)| {
                (r.len() <= 2)
                    .then(|| num(r))
                    .flatten()
                    .filter(|v| (1..=max).contains(v))
            })
        };
        if digits
            && run.len() == 4
            && *sep == Some('-')
            && let (Some(y), Some(m)) = (num(run), small(i + 1, 12))
        {
            if dash(i + 1)
                && let Some(d) = small(i + 2, 31)
            {
                out.push(Token::Day(days_from_civil(y, m, d)));
                i += 3;
                continue;
            }
            out.push(Token::Month(y * 12 + m - 1));
            i += 2;
            continue;
        }
        if digits {
            match run.parse::<u64>() {
                Ok(n) => out.push(Token::Num(n)),
                Err(_) => out.push(Token::Word(run.clone())),
            }
        } else if let Some(m) = month_name(run) {
            out.push(Token::MonthName(m));
        } else {
            out.push(Token::Word(run.clone()));
        }
        i += 1;
    }
    out
}

/// How `b` follows `a` in a series: the step (positive when `b` is later)
/// and a score; `None` when they are not neighbours.
fn step(a: &Token, b: &Token) -> Option<(i64, f32)> {
    let (d, max, score) = match (a, b) {
        (Token::Num(x), Token::Num(y)) => {
            (i64::try_from(*y).ok()? - i64::try_from(*x).ok()?, 1, 0.9)
        }
        (Token::Month(x), Token::Month(y)) => (y - x, 1, 0.9),
        (Token::MonthName(x), Token::MonthName(y)) => {
            let d = (y - x).rem_euclid(12);
            (if d == 11 { -1 } else { d }, 1, 0.8)
        }
        (Token::Day(x), Token::Day(y)) => {
            let d = y - x;
            let gap = d.abs();
            (d, MAX_DAY_STEP, 0.9 - 0.05 * (gap.max(1) - 1) as f32)
        }
        _ => return None,
    };
    (d != 0 && d.abs() <= max).then_some((d, score))
}

/// The name a series is read from.
fn name_of(item: &Item) -> String {
    let raw = facts::first(item, "name")
        .or_else(|| facts::first(item, "title"))
        .map(str::to_string)
        .unwrap_or_else(|| item.text.lines().next().unwrap_or("").to_string());
    // A file extension is no part of the series: `notes-2.md` → `notes-2`.
    match raw.rsplit_once('.') {
        Some((stem, ext))
            if !stem.is_empty()
                && (1..=5).contains(&ext.len())
                && ext.chars().all(|c| c.is_ascii_alphanumeric())
                && !ext.chars().all(|c| c.is_ascii_digit()) =>
        {
            stem.to_string()
        }
        _ => raw,
    }
}

/// Whether `a` and `b` are neighbours in one series: the step and score.
fn neighbours(a: &[Token], b: &[Token]) -> Option<(i64, f32)> {
    if a.len() != b.len() {
        return None;
    }
    let differ: Vec<usize> = (0..a.len()).filter(|&i| a[i] != b[i]).collect();
    let [i] = differ.as_slice() else { return None };
    let named = a
        .iter()
        .enumerate()
        .any(|(j, t)| j != *i && matches!(t, Token::Word(w) if w.chars().count() >= 2));
    if !named {
        return None;
    }
    step(&a[*i], &b[*i])
}

/// Sequel relations from `subject`.
pub fn related(subject: &Item, candidates: &[Item], max: usize) -> Vec<Relation> {
    let name = name_of(subject);
    let mine = tokens(&name);
    let mut out: Vec<Relation> = candidates
        .iter()
        .filter(|c| c.id != subject.id)
        .filter_map(|c| {
            let theirs_name = name_of(c);
            let (d, score) = neighbours(&mine, &tokens(&theirs_name))?;
            let reason = if d > 0 {
                format!(
                    "'{}' follows '{}' in one series",
                    theirs_name.trim(),
                    name.trim()
                )
            } else {
                format!(
                    "'{}' follows '{}' in one series",
                    name.trim(),
                    theirs_name.trim()
                )
            };
            Some(Relation {
                kind: "sequel".into(),
                target: c.id.clone(),
                score,
                reason,
                difference: None,
            })
        })
        .collect();
    out.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.target.cmp(&b.target))
    });
    out.truncate(max);
    out
}

impl RelationDetector for Sequel {
    fn detect(subject: Item, candidates: Vec<Item>) -> Result<Vec<Relation>, PluginError> {
        Ok(related(
            &subject,
            &candidates,
            config::get_or("max_relations", 10usize),
        ))
    }
}

mem_plugin_sdk::export_plugin!(relation_detector: Sequel);

#[cfg(test)]
mod tests {
    use super::*;
    use facts::item;

    fn named(id: &str, name: &str) -> Item {
        item(id, "body text", &[("name", name)])
    }

    fn is_sequel(a: &str, b: &str) -> bool {
        !related(&named("a", a), &[named("b", b)], 10).is_empty()
    }

    #[test]
    fn number_quarter_part_and_date_series_are_sequels() {
        assert!(is_sequel("Q1 report", "Q2 report"));
        assert!(is_sequel("notes 1.md", "notes-2.md"));
        assert!(is_sequel("notes 3", "notes 2"));
        assert!(is_sequel("Design doc, part 1", "Design doc, part 2"));
        assert!(is_sequel("2026-01 report.pdf", "2026-02 report.pdf"));
        assert!(is_sequel("2025-12 report", "2026-01 report"));
        assert!(is_sequel("standup 2026-03-01.md", "standup 2026-03-02.md"));
        assert!(is_sequel("weekly 2026-03-02", "weekly 2026-03-09"));
        assert!(is_sequel("Budget January", "Budget February"));
        assert!(is_sequel("budget dec", "budget jan"));
    }

    #[test]
    fn other_names_gaps_and_bare_numbers_are_not_sequels() {
        assert!(!is_sequel("Q1 report", "Q3 report"));
        assert!(!is_sequel("Q1 report", "Q1 report"));
        assert!(!is_sequel("Q1 report", "Q2 budget"));
        assert!(!is_sequel("1.md", "2.md"));
        assert!(!is_sequel("notes 1", "notes 2 draft"));
        assert!(!is_sequel("standup 2026-03-01", "standup 2026-04-01"));
        assert!(!is_sequel("2026-01 report", "2026-01 summary"));
        assert!(!is_sequel("march plan", "marching plan"));
    }

    #[test]
    fn the_reason_names_the_order_and_memories_use_their_first_line() {
        let r = related(&named("a", "Q2 report"), &[named("b", "Q1 report")], 10);
        assert_eq!(r[0].reason, "'Q2 report' follows 'Q1 report' in one series");
        let s = item("m1", "Benchmark run 2\nall green", &[]);
        let c = item("m2", "Benchmark run 3\ntwo failures", &[]);
        let r = related(&s, &[c, s.clone()], 10);
        assert_eq!(r.len(), 1);
        assert_eq!(
            r[0].reason,
            "'Benchmark run 3' follows 'Benchmark run 2' in one series"
        );
    }

    #[test]
    fn dates_count_days_across_months() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(
            days_from_civil(2026, 3, 1) - days_from_civil(2026, 2, 28),
            1
        );
        assert_eq!(
            tokens("x 2026-02"),
            vec![Token::Word("x".into()), Token::Month(2026 * 12 + 1)]
        );
        assert_eq!(tokens("2026-13 x")[0], Token::Num(2026));
    }
}
