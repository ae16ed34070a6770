//! `event`: relates items that record one event: they happened close in
//! time (`at` facts within `window_minutes`, default 180) and share a
//! place entity. Time alone is not enough (two meetings in one afternoon
//! are different events), nor is place (two runs in one lab on different
//! days are different runs). Score: 0.5 for the shared place, plus up to
//! 0.5 for closeness in time. At most `max_relations` (10) per subject,
//! best first, ties by id.

use mem_plugin_sdk::types::*;
use mem_plugin_sdk::{RelationDetector, config, facts};

pub struct Event;

const MINUTE_MS: i64 = 60_000;

/// Same-event relations from `subject`, with the time window in minutes.
pub fn related(
    subject: &Item,
    candidates: &[Item],
    window_minutes: i64,
    max: usize,
) -> Vec<Relation> {
    let window = window_minutes.max(1).saturating_mul(MINUTE_MS);
    let (Some(at), places) = (facts::at(subject), facts::entities(subject, "place")) else {
        return Vec::new();
    };
    if places.is_empty() {
        return Vec::new();
    }
    let mut out: Vec<Relation> = candidates
        .iter()
        .filter(|c| c.id != subject.id)
        .filter_map(|c| {
            let gap = facts::at(c)?.abs_diff(at);
            let gap = i64::try_from(gap).ok().filter(|g| *g <= window)?;
            let theirs = facts::entities(c, "place");
            let shared: Vec<&String> = places.iter().filter(|p| theirs.contains(p)).collect();
            let place = shared.first()?;
            let closeness = 1.0 - (gap as f64 / window as f64);
            Some(Relation {
                kind: "same_event".into(),
                target: c.id.clone(),
                score: (0.5 + 0.5 * closeness) as f32,
                reason: format!("both at {place}, {} minutes apart", gap / MINUTE_MS),
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

impl RelationDetector for Event {
    fn detect(subject: Item, candidates: Vec<Item>) -> Result<Vec<Relation>, PluginError> {
        let window = config::get_or("window_minutes", 180i64);
        let max = config::get_or("max_relations", 10usize);
        Ok(related(&subject, &candidates, window, max))
    }
}

mem_plugin_sdk::export_plugin!(relation_detector: Event);

#[cfg(test)]
mod tests {
    use super::*;
    use facts::item;

    const DAY: i64 = 24 * 60 * MINUTE_MS;
    const T0: i64 = 1_780_000_000_000;

    fn at(ms: i64) -> String {
        ms.to_string()
    }

    #[test]
    fn a_meeting_and_its_minutes_an_hour_later_are_one_event() {
        let s = item(
            "a",
            "Design review with the storage team",
            &[("at", &at(T0)), ("place", "Room 4.2")],
        );
        let c = item(
            "b",
            "Minutes of the design review",
            &[("at", &at(T0 + 60 * MINUTE_MS)), ("place", "room  4.2")],
        );
        let r = related(&s, &[c], 180, 10);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].kind, "same_event");
        assert!(r[0].score > 0.5 && r[0].score < 1.0, "{}", r[0].score);
        assert!(r[0].reason.contains("room 4.2"), "{}", r[0].reason);
    }

    #[test]
    fn two_runs_on_different_days_in_one_lab_are_not_one_event() {
        let s = item("a", "Benchmark run", &[("at", &at(T0)), ("place", "lab")]);
        let c = item(
            "b",
            "Benchmark run",
            &[("at", &at(T0 + DAY)), ("place", "lab")],
        );
        assert!(related(&s, &[c], 180, 10).is_empty());
    }

    #[test]
    fn same_time_elsewhere_or_without_a_place_is_not_one_event() {
        let s = item("a", "Standup", &[("at", &at(T0)), ("place", "Berlin")]);
        let elsewhere = item("b", "Standup", &[("at", &at(T0)), ("place", "Lisbon")]);
        let nowhere = item("c", "Standup", &[("at", &at(T0))]);
        let untimed = item("d", "Standup", &[("place", "Berlin")]);
        assert!(related(&s, &[elsewhere, nowhere, untimed], 180, 10).is_empty());
        let placeless = item("e", "x", &[("at", &at(T0))]);
        assert!(related(&placeless, &[s], 180, 10).is_empty());
    }

    #[test]
    fn closer_is_better_and_the_subject_never_relates_to_itself() {
        let s = item("a", "x", &[("at", &at(T0)), ("place", "hq")]);
        let near = item(
            "near",
            "x",
            &[("at", &at(T0 - 5 * MINUTE_MS)), ("place", "hq")],
        );
        let far = item(
            "far",
            "x",
            &[("at", &at(T0 + 170 * MINUTE_MS)), ("place", "hq")],
        );
        let r = related(&s, &[far, s.clone(), near], 180, 10);
        let ids: Vec<&str> = r.iter().map(|r| r.target.as_str()).collect();
        assert_eq!(ids, ["near", "far"]);
        assert_eq!(
            related(
                &s,
                &r.iter().map(|_| s.clone()).collect::<Vec<_>>(),
                180,
                10
            )
            .len(),
            0
        );
    }
}
