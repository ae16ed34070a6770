//! `person`: relates items that name the same people (`person` facts:
//! processor entities of a file, `person`/`people` attributes of a
//! memory). Score: 0.5 + 0.5 × the Jaccard similarity of the two sets of
//! people, so one shared person among many scores lower than the same
//! pair of people. At most `max_relations` (10) per subject, best first,
//! ties by id.

use mem_plugin_sdk::types::*;
use mem_plugin_sdk::{RelationDetector, config, facts};

pub struct Person;

/// Same-person relations from `subject`.
pub fn related(subject: &Item, candidates: &[Item], max: usize) -> Vec<Relation> {
    let mine = facts::entities(subject, "person");
    if mine.is_empty() {
        return Vec::new();
    }
    let mut out: Vec<Relation> = candidates
        .iter()
        .filter(|c| c.id != subject.id)
        .filter_map(|c| {
            let theirs = facts::entities(c, "person");
            let shared: Vec<&str> = mine
                .iter()
                .filter(|p| theirs.contains(p))
                .map(String::as_str)
                .collect();
            if shared.is_empty() {
                return None;
            }
            let union = mine.len() + theirs.len() - shared.len();
            let jaccard = shared.len() as f32 / union as f32;
            Some(Relation {
                kind: "same_person".into(),
                target: c.id.clone(),
                score: 0.5 + 0.5 * jaccard,
                reason: format!("both name {}", shared.join(", ")),
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

impl RelationDetector for Person {
    fn detect(subject: Item, candidates: Vec<Item>) -> Result<Vec<Relation>, PluginError> {
        Ok(related(
            &subject,
            &candidates,
            config::get_or("max_relations", 10usize),
        ))
    }
}

mem_plugin_sdk::export_plugin!(relation_detector: Person);

#[cfg(test)]
mod tests {
    use super::*;
    use facts::item;

    #[test]
    fn a_shared_person_relates_items_whatever_their_wording() {
        let s = item(
            "a",
            "1:1 notes",
            &[("person", "Grace Hopper"), ("person", "Alan Kay")],
        );
        let c = item("b", "Hiring plan", &[("person", "grace hopper")]);
        let r = related(&s, &[c], 10);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].kind, "same_person");
        assert_eq!(r[0].reason, "both name grace hopper");
        assert!((r[0].score - 0.75).abs() < 1e-6, "{}", r[0].score);
    }

    #[test]
    fn different_people_or_no_people_are_not_related() {
        let s = item("a", "Call with Grace", &[("person", "Grace Hopper")]);
        let other = item("b", "Call with Ada", &[("person", "Ada Lovelace")]);
        let nobody = item("c", "Grace Hopper biography notes", &[]);
        assert!(related(&s, &[other, nobody], 10).is_empty());
        let none = item("d", "x", &[]);
        assert!(related(&none, &[s], 10).is_empty());
    }

    #[test]
    fn the_same_people_rank_above_one_shared_person() {
        let s = item("a", "x", &[("person", "ada"), ("person", "bob")]);
        let both = item("both", "x", &[("person", "bob"), ("person", "ada")]);
        let one = item("one", "x", &[("person", "ada"), ("person", "carol")]);
        let r = related(&s, &[one, both, s.clone()], 10);
        let ids: Vec<&str> = r.iter().map(|r| r.target.as_str()).collect();
        assert_eq!(ids, ["both", "one"]);
        assert_eq!(related(&s, std::slice::from_ref(&s), 10).len(), 0);
        assert_eq!(r[0].score, 1.0);
    }
}
