//! A search's filters as query clauses: exact terms and ranges over the
//! fields every document indexes, so they run inside the query.

use super::schema::Fields;
use crate::catalog::lifecycles_of;
use mem_core::index::SearchFilters;
use mem_core::model::Lifecycle;
use std::ops::Bound;
use tantivy::Term;
use tantivy::query::{BooleanQuery, Occur, Query, TermQuery};
use tantivy::schema::{Field, IndexRecordOption};

impl Fields {
    pub(super) fn filter_clauses(self, filters: &SearchFilters) -> Vec<(Occur, Box<dyn Query>)> {
        let f = self;
        let term = |field: Field, v: &str| -> Box<dyn Query> {
            Box::new(TermQuery::new(
                Term::from_field_text(field, v),
                IndexRecordOption::Basic,
            ))
        };
        let any = |field: Field, vals: &[String]| -> Box<dyn Query> {
            Box::new(BooleanQuery::new(
                vals.iter()
                    .map(|v| (Occur::Should, term(field, v)))
                    .collect(),
            ))
        };
        let mut c: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        if let Some(s) = filters.source {
            c.push((Occur::Must, term(f.source, s.as_str())));
        }
        if !filters.kinds.is_empty() {
            c.push((Occur::Must, any(f.kind, &filters.kinds)));
        }
        if !filters.kind_prefixes.is_empty() {
            // A prefix is the range [prefix, prefix with its last
            // character raised by one) of the raw `kind` terms.
            let ranges = filters
                .kind_prefixes
                .iter()
                .filter_map(|p| {
                    let mut chars: Vec<char> = p.chars().collect();
                    let last = chars.pop()?;
                    chars.push(char::from_u32(last as u32 + 1)?);
                    let end: String = chars.into_iter().collect();
                    let q: Box<dyn Query> = Box::new(tantivy::query::RangeQuery::new(
                        Bound::Included(Term::from_field_text(f.kind, p)),
                        Bound::Excluded(Term::from_field_text(f.kind, &end)),
                    ));
                    Some((Occur::Should, q))
                })
                .collect();
            c.push((Occur::Must, Box::new(BooleanQuery::new(ranges))));
        }
        if let Some(p) = &filters.path {
            c.push((Occur::Must, term(f.path_anc, p)));
        }
        if !filters.within.is_empty() {
            c.push((Occur::Must, any(f.path_anc, &filters.within)));
        }
        for t in &filters.tags {
            c.push((Occur::Must, term(f.tags, t)));
        }
        if let Some(a) = &filters.agent_id {
            c.push((Occur::Must, term(f.agent, a)));
        }
        if filters.since_ms.is_some() || filters.until_ms.is_some() {
            let lo = filters.since_ms.map_or(Bound::Unbounded, |v| {
                Bound::Included(Term::from_field_i64(f.time, v))
            });
            let hi = filters.until_ms.map_or(Bound::Unbounded, |v| {
                Bound::Included(Term::from_field_i64(f.time, v))
            });
            c.push((
                Occur::Must,
                Box::new(tantivy::query::RangeQuery::new(lo, hi)),
            ));
        }
        // Lifecycles are one of a closed set: the wanted ones are said as
        // the others excluded, a short list (most documents are active)
        // that the union skips through instead of being intersected with a
        // list of nearly every document.
        let wanted = lifecycles_of(filters);
        let known = |l: &String| Lifecycle::ALL.iter().any(|k| k.as_str() == l);
        if wanted.iter().all(known) {
            let others: Vec<String> = Lifecycle::ALL
                .iter()
                .map(|k| k.as_str().to_string())
                .filter(|k| !wanted.contains(k))
                .collect();
            if !others.is_empty() {
                c.push((Occur::MustNot, any(f.lifecycle, &others)));
            }
        } else {
            c.push((Occur::Must, any(f.lifecycle, &wanted)));
        }
        c
    }
}
