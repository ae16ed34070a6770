//! Index tests on real tantivy and usearch. Lane mechanics use a small
//! deterministic embedder (hashed words); the model tests load the real
//! all-MiniLM-L6-v2 installed by `mem-host model install` and fail, naming
//! that command, when it is absent.

use super::*;
use mem_core::index::{SearchFilters, SourceKind};

/// Hashed bag of words: texts sharing words get similar vectors.
pub(crate) struct WordHashEmbedder;

impl Embedder for WordHashEmbedder {
    fn model_id(&self) -> &str {
        "test-word-hash"
    }
    fn dimensions(&self) -> usize {
        64
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, IndexError> {
        Ok(texts
            .iter()
            .map(|t| {
                let mut v = vec![0f32; 64];
                for w in t
                    .to_lowercase()
                    .split(|c: char| !c.is_alphanumeric())
                    .filter(|w| w.len() > 2)
                {
                    v[(key_of(w) % 64) as usize] += 1.0;
                }
                let n = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
                v.iter().map(|x| x / n).collect()
            })
            .collect())
    }
}

pub(crate) fn doc(id: &str, text: &str, path: &str) -> IndexDoc {
    IndexDoc {
        doc_id: id.into(),
        record_id: id.into(),
        source: SourceKind::Memory,
        text: text.into(),
        path: path.into(),
        kind: "fact".into(),
        tags: vec![],
        agent_id: None,
        lifecycle: "active".into(),
        created_at_ms: 1_000,
        event_at_ms: None,
        locator: None,
        context: None,
    }
}

pub(crate) fn req(q: &str, filters: SearchFilters) -> SearchRequest {
    SearchRequest {
        query: q.into(),
        filters,
        limit: 10,
        semantic: true,
        period: None,
    }
}

pub(crate) fn ids(r: &SearchResponse) -> Vec<&str> {
    r.hits.iter().map(|h| h.doc_id.as_str()).collect()
}

/// The ids `r` finds, sorted (for filters, where rank is not the point).
pub(crate) fn sorted_ids(ix: &NativeIndex, r: &SearchRequest) -> Vec<String> {
    let mut v: Vec<String> = ix
        .search(r)
        .unwrap()
        .hits
        .into_iter()
        .map(|h| h.doc_id)
        .collect();
    v.sort();
    v
}

pub(crate) fn open_hashed(dir: &Path) -> NativeIndex {
    NativeIndex::open(dir, Some(Arc::new(WordHashEmbedder)), None).unwrap()
}

#[test]
fn both_lanes_find_and_report_ranks_and_matched_terms() {
    let tmp = tempfile::tempdir().unwrap();
    let ix = open_hashed(tmp.path());
    ix.upsert(vec![
        doc(
            "m1",
            "We deploy on Fridays only with a rollback plan",
            "/ops",
        ),
        doc("m2", "The cafeteria serves pasta on Mondays", "/food"),
        doc("m3", "Deployments need two reviewers", "/ops"),
    ])
    .unwrap();
    ix.commit(3).unwrap();
    let r = ix
        .search(&req("when do we deploy", SearchFilters::default()))
        .unwrap();
    assert_eq!(r.hits[0].doc_id, "m1", "{r:?}");
    // Stemming makes "Deployments" match too (and, shorter, rank first
    // lexically); the semantic lane lifts m1.
    assert!(r.hits[0].lexical_rank.is_some());
    assert!(
        r.hits
            .iter()
            .any(|h| h.doc_id == "m3" && h.lexical_rank == Some(1)),
        "{r:?}"
    );
    assert!(r.hits[0].semantic_rank.is_some());
    assert_eq!(r.hits[0].matched_terms, vec!["deploy".to_string()]);
    assert!(
        r.lanes.iter().all(|l| l.status == LaneStatus::Ok),
        "{:?}",
        r.lanes
    );
    assert_eq!(ix.watermark(), 3);
}

/// A secret (`m1`) and a public note (`m2`), committed at 1.
pub(crate) fn secret_and_public(dir: &Path) -> NativeIndex {
    let ix = open_hashed(dir);
    ix.upsert(vec![
        doc("m1", "secret launch code alpha", "/a"),
        doc("m2", "public notes", "/a"),
    ])
    .unwrap();
    ix.commit(1).unwrap();
    ix
}

#[test]
fn removed_records_leave_both_lanes_at_once_and_after_reopen() {
    let tmp = tempfile::tempdir().unwrap();
    {
        let ix = secret_and_public(tmp.path());
        ix.remove_record("m1").unwrap();
        ix.commit(2).unwrap();
        let r = ix
            .search(&req("secret launch code alpha", SearchFilters::default()))
            .unwrap();
        assert!(!ids(&r).contains(&"m1"), "{r:?}");
    }
    let ix = open_hashed(tmp.path());
    assert_eq!(ix.watermark(), 2);
    assert!(!ix.needs_rebuild());
    let r = ix
        .search(&req("secret launch code alpha", SearchFilters::default()))
        .unwrap();
    assert!(!ids(&r).contains(&"m1"), "{r:?}");
    assert_eq!(ix.stats().documents, 1);
    assert_eq!(ix.stats().vectors, 1);
}

#[test]
fn a_named_period_prefers_its_documents_without_filtering_the_rest() {
    use mem_core::index::Period;
    let tmp = tempfile::tempdir().unwrap();
    let ix = open_hashed(tmp.path());
    let may = mem_core::time::parse_rfc3339("2023-05-10T12:00:00Z").unwrap();
    let july = mem_core::time::parse_rfc3339("2023-07-10T12:00:00Z").unwrap();
    let mut in_may = doc("may", "the hiking trip to the falls", "/t");
    in_may.event_at_ms = Some(may.timestamp_millis());
    let mut in_july = doc("july", "the hiking trip to the falls", "/t");
    in_july.event_at_ms = Some(july.timestamp_millis());
    ix.upsert(vec![in_july, in_may]).unwrap();
    ix.commit(1).unwrap();
    let search = |period: Option<Period>| {
        let mut r = req("hiking trip falls", SearchFilters::default());
        r.period = period;
        ix.search(&r).unwrap()
    };
    let plain = search(None);
    assert!(plain.hits.iter().all(|h| !h.in_period), "{plain:?}");
    for period in [
        Period {
            text: "in May 2023".into(),
            from: Some("2023-05-01T00:00:00Z".parse().unwrap()),
            until: Some("2023-06-01T00:00:00Z".parse().unwrap()),
            month: None,
        },
        Period {
            text: "in May".into(),
            from: None,
            until: None,
            month: Some(5),
        },
    ] {
        let r = search(Some(period.clone()));
        assert_eq!(ids(&r), ["may", "july"], "{period:?}: {r:?}");
        assert!(r.hits[0].in_period && !r.hits[1].in_period);
        assert!(r.hits[0].score > r.hits[1].score);
    }
}

#[test]
fn filters_apply_in_both_lanes() {
    let tmp = tempfile::tempdir().unwrap();
    let ix = open_hashed(tmp.path());
    let mut archived = doc("m3", "rollback plan for the database", "/ops");
    archived.lifecycle = "archived".into();
    let mut tagged = doc("m4", "rollback plan drill", "/ops/drills");
    tagged.tags = vec!["drill".into()];
    tagged.agent_id = Some("claude".into());
    tagged.event_at_ms = Some(5_000);
    ix.upsert(vec![
        doc("m1", "rollback plan for deploys", "/ops"),
        doc("m2", "rollback plan", "/food"),
        archived,
        tagged,
    ])
    .unwrap();
    ix.commit(1).unwrap();
    let q = |f: SearchFilters| sorted_ids(&ix, &req("rollback plan", f));
    assert_eq!(q(SearchFilters::default()), ["m1", "m2", "m4"]);
    assert_eq!(
        q(SearchFilters {
            path: Some("/ops".into()),
            ..Default::default()
        }),
        ["m1", "m4"]
    );
    assert_eq!(
        q(SearchFilters {
            lifecycles: vec!["archived".into()],
            ..Default::default()
        }),
        ["m3"]
    );
    // A caller's path boundary: below any of these folders.
    assert_eq!(
        q(SearchFilters {
            within: vec!["/food".into(), "/nowhere".into()],
            ..Default::default()
        }),
        ["m2"]
    );
    assert_eq!(
        q(SearchFilters {
            tags: vec!["drill".into()],
            ..Default::default()
        }),
        ["m4"]
    );
    assert_eq!(
        q(SearchFilters {
            agent_id: Some("claude".into()),
            ..Default::default()
        }),
        ["m4"]
    );
    assert_eq!(
        q(SearchFilters {
            since_ms: Some(2_000),
            ..Default::default()
        }),
        ["m4"]
    );
    assert_eq!(
        q(SearchFilters {
            until_ms: Some(2_000),
            ..Default::default()
        }),
        ["m1", "m2"]
    );
    assert_eq!(
        q(SearchFilters {
            kinds: vec!["decision".into()],
            ..Default::default()
        }),
        Vec::<String>::new()
    );
    // The semantic lane alone honours the same filters.
    let r = ix
        .search(&req(
            "rollback plan",
            SearchFilters {
                path: Some("/food".into()),
                ..Default::default()
            },
        ))
        .unwrap();
    assert!(r.hits.iter().all(|h| h.doc_id == "m2"), "{r:?}");
}

/// The lexical lane says wanted lifecycles as the others excluded; every
/// subset of states, with and without another filter, finds exactly the
/// documents in those states (and a state it does not know finds none).
#[test]
fn every_set_of_lifecycles_finds_exactly_its_documents() {
    use mem_core::model::Lifecycle;
    let tmp = tempfile::tempdir().unwrap();
    let ix = NativeIndex::open(tmp.path(), None, None).unwrap();
    let docs: Vec<IndexDoc> = Lifecycle::ALL
        .iter()
        .flat_map(|l| {
            ["/a", "/b"].map(|path| {
                let mut d = doc(&format!("{}{path}", l.as_str()), "rollback plan", path);
                d.lifecycle = l.as_str().into();
                d
            })
        })
        .collect();
    ix.upsert(docs).unwrap();
    ix.commit(1).unwrap();
    let q = |lifecycles: Vec<String>, path: Option<&str>| {
        let f = SearchFilters {
            lifecycles,
            path: path.map(str::to_string),
            ..Default::default()
        };
        sorted_ids(&ix, &req("rollback", f))
    };
    for mask in 0u32..(1 << Lifecycle::ALL.len()) {
        let wanted: Vec<String> = Lifecycle::ALL
            .iter()
            .enumerate()
            .filter(|(i, _)| mask & (1 << i) != 0)
            .map(|(_, l)| l.as_str().to_string())
            .collect();
        // No lifecycle named means active.
        let states = if wanted.is_empty() {
            vec!["active".to_string()]
        } else {
            wanted.clone()
        };
        for path in [None, Some("/a")] {
            let mut expect: Vec<String> = states
                .iter()
                .flat_map(|l| ["/a", "/b"].map(|p| format!("{l}{p}")))
                .filter(|id| path.is_none_or(|p| id.ends_with(p)))
                .collect();
            expect.sort();
            assert_eq!(q(wanted.clone(), path), expect, "{wanted:?} {path:?}");
        }
    }
    assert!(q(vec!["bogus".into()], None).is_empty());
    assert_eq!(
        q(vec!["bogus".into(), "archived".into()], None),
        ["archived/a", "archived/b"]
    );
}

#[test]
fn kind_prefixes_select_a_family_of_mime_types_in_both_lanes() {
    let tmp = tempfile::tempdir().unwrap();
    let ix = open_hashed(tmp.path());
    let file = |id: &str, mime: &str| {
        let mut d = doc(id, "harbour lights at dusk", "/f");
        d.source = SourceKind::File;
        d.kind = mime.into();
        d
    };
    ix.upsert(vec![
        file("jpg", "image/jpeg"),
        file("png", "image/png"),
        file("pdf", "application/pdf"),
        file("md", "text/markdown"),
        // Sorts right after `image/`'s range: must stay out.
        file("odd", "image0/x"),
    ])
    .unwrap();
    ix.commit(1).unwrap();
    for semantic in [false, true] {
        let q = |prefixes: &[&str]| {
            let mut r = req(
                "harbour lights",
                SearchFilters {
                    kind_prefixes: prefixes.iter().map(|p| p.to_string()).collect(),
                    ..Default::default()
                },
            );
            r.semantic = semantic;
            sorted_ids(&ix, &r)
        };
        assert_eq!(q(&["image/"]), ["jpg", "png"], "semantic {semantic}");
        assert_eq!(q(&["text/", "application/pdf"]), ["md", "pdf"]);
        assert_eq!(q(&[]).len(), 5);
    }
}

#[test]
fn without_a_model_the_semantic_lane_is_unavailable_not_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let ix = NativeIndex::open(
        tmp.path(),
        None,
        Some("no model; run `mem-host model install`".into()),
    )
    .unwrap();
    ix.upsert(vec![doc("m1", "hello world", "/a")]).unwrap();
    ix.commit(1).unwrap();
    let r = ix.search(&req("hello", SearchFilters::default())).unwrap();
    assert_eq!(ids(&r), ["m1"]);
    let sem = r.lanes.iter().find(|l| l.lane == Lane::Semantic).unwrap();
    assert_eq!(sem.status, LaneStatus::Unavailable);
    assert!(sem.message.as_deref().unwrap().contains("model install"));
}

#[test]
fn a_damaged_lexical_index_is_recreated_and_flagged_for_rebuild() {
    let tmp = tempfile::tempdir().unwrap();
    {
        let ix = open_hashed(tmp.path());
        ix.upsert(vec![doc("m1", "hello", "/a")]).unwrap();
        ix.commit(7).unwrap();
    }
    std::fs::write(tmp.path().join("lexical/meta.json"), b"{not json").unwrap();
    let ix = open_hashed(tmp.path());
    assert!(ix.needs_rebuild());
    assert_eq!(ix.watermark(), 0);
    ix.clear().unwrap();
    ix.upsert(vec![doc("m1", "hello", "/a")]).unwrap();
    ix.commit(7).unwrap();
    assert!(!ix.needs_rebuild());
    assert_eq!(
        ids(&ix.search(&req("hello", SearchFilters::default())).unwrap()),
        ["m1"]
    );
}

#[test]
fn vectors_of_another_model_force_a_rebuild() {
    let tmp = tempfile::tempdir().unwrap();
    {
        let ix = NativeIndex::open(tmp.path(), None, None).unwrap();
        ix.upsert(vec![doc("m1", "hello", "/a")]).unwrap();
        ix.commit(4).unwrap();
    }
    // A model appears: its vectors do not exist yet.
    let ix = open_hashed(tmp.path());
    assert!(ix.needs_rebuild());
}

#[test]
fn upsert_replaces_by_doc_id_and_watermark_is_the_lower_lane() {
    let tmp = tempfile::tempdir().unwrap();
    let ix = open_hashed(tmp.path());
    ix.upsert(vec![doc("m1", "old words here", "/a")]).unwrap();
    ix.upsert(vec![doc("m1", "new phrasing entirely", "/a")])
        .unwrap();
    ix.commit(2).unwrap();
    assert!(
        ix.search(&req("old words", SearchFilters::default()))
            .unwrap()
            .hits
            .iter()
            .all(|h| h.lexical_rank.is_none())
    );
    assert_eq!(
        ids(&ix
            .search(&req("phrasing", SearchFilters::default()))
            .unwrap())[0],
        "m1"
    );
    assert_eq!(ix.stats().documents, 1);
    drop(ix);
    // Vectors lagging behind (e.g. a crash between the two saves): the
    // reported watermark is theirs, so the service replays from there.
    let state = tmp.path().join("vectors/vectors.json");
    let text = std::fs::read_to_string(&state)
        .unwrap()
        .replace("\"watermark\":2", "\"watermark\":1");
    std::fs::write(&state, text).unwrap();
    assert_eq!(open_hashed(tmp.path()).watermark(), 1);
}

/// The real model, or a failure naming the command that installs it.
fn real_embedder() -> OrtEmbedder {
    let files = mem_models::active_files().unwrap_or_else(|why| {
        panic!("this test needs the embedding model: {why}\n  set it up with: cargo run -p mem-host -- model install")
    });
    OrtEmbedder::load(&files).unwrap()
}

/// Queries embedded at once (searches under load) each get the very
/// vector they get alone: a text is embedded alone, whatever waits beside
/// it (the graph quantizes a pass's activations with one range).
#[test]
fn concurrent_queries_get_the_vector_they_get_alone() {
    let e = real_embedder();
    let topics = [
        "deploy", "garden", "invoice", "marathon", "lisbon", "backup",
    ];
    let queries: Vec<String> = (0..48)
        .map(|i| {
            let words = "when did we last talk about the".split(' ').take(1 + i % 7);
            let lead: Vec<&str> = words.collect();
            format!("{} {} {i}", lead.join(" "), topics[i % topics.len()])
        })
        .collect();
    let alone: Vec<Vec<f32>> = queries
        .iter()
        .map(|q| e.embed(&[q.as_str()]).unwrap().remove(0))
        .collect();
    std::thread::scope(|s| {
        for t in 0..8 {
            let (e, queries, alone) = (&e, &queries, &alone);
            s.spawn(move || {
                for i in (t..queries.len()).step_by(8) {
                    let got = e.embed(&[queries[i].as_str()]).unwrap().remove(0);
                    assert_eq!(got, alone[i], "query {i}: {:?}", queries[i]);
                }
            });
        }
    });
    let all: Vec<&str> = queries.iter().map(String::as_str).collect();
    assert_eq!(e.embed(&all).unwrap(), alone, "a batch is each text alone");
}

/// The graph made by the install (products on int8 activations) stays
/// close to the downloaded one it is made from (the same weights, f32
/// products): a rewrite that wired a product wrongly would not.
#[test]
fn the_made_graph_keeps_the_downloaded_graphs_vectors_close() {
    let files = mem_models::active_files().unwrap_or_else(|why| {
        panic!("this test needs the embedding model: {why}\n  set it up with: cargo run -p mem-host -- model install")
    });
    let downloaded = mem_models::EmbedderFiles {
        model: files.model.with_file_name("model.onnx"),
        ..files.clone()
    };
    assert_ne!(
        downloaded.model, files.model,
        "the active graph is the made one"
    );
    let made = OrtEmbedder::load(&files).unwrap();
    let f32_products = OrtEmbedder::load(&downloaded).unwrap();
    let texts = [
        "A man is eating food.",
        "We moved the deploy to Thursday after the rollback on Monday.",
        "Caroline went to the LGBTQ support group yesterday and felt welcomed.",
        "remember to renew the TLS certificate before it expires in March",
        "short",
        "The quarterly invoice for the Lisbon office was paid late again, \
         so finance asked us to set up a reminder two weeks before the due date.",
    ];
    let a = made.embed(&texts).unwrap();
    let b = f32_products.embed(&texts).unwrap();
    let sims: Vec<f32> = a.iter().zip(&b).map(|(x, y)| cos(x, y)).collect();
    let mean = sims.iter().sum::<f32>() / sims.len() as f32;
    assert!(
        sims.iter().all(|s| *s > 0.95) && mean > 0.985,
        "made vs downloaded graph cosines: {sims:?}"
    );
}

fn cos(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[test]
fn real_model_embeddings_are_normalized_and_semantic() {
    let e = real_embedder();
    let v = e
        .embed(&[
            "A man is eating food.",
            "A man is eating a piece of bread.",
            "The stock market fell sharply today.",
        ])
        .unwrap();
    assert_eq!(v.len(), 3);
    for x in &v {
        assert_eq!(x.len(), 384);
        assert!((cos(x, x) - 1.0).abs() < 1e-4);
    }
    assert!(
        cos(&v[0], &v[1]) > 0.6,
        "paraphrases are close: {}",
        cos(&v[0], &v[1])
    );
    assert!(
        cos(&v[0], &v[2]) < 0.2,
        "unrelated texts are far: {}",
        cos(&v[0], &v[2])
    );
}

#[test]
fn real_model_batching_and_padding_do_not_change_vectors() {
    let e = real_embedder();
    let long = "word ".repeat(400);
    let texts = [
        "short",
        "a somewhat longer sentence about deployments and rollbacks",
        long.as_str(),
    ];
    let batch = e.embed(&texts).unwrap();
    for (t, b) in texts.iter().zip(&batch) {
        let alone = e.embed(&[t]).unwrap().remove(0);
        assert!(
            cos(&alone, b) > 0.9999,
            "padding changed the vector of {:?}",
            &t[..t.len().min(20)]
        );
    }
}

/// Two unrelated memories, indexed with the real model.
fn puppy_and_budget(dir: &Path) -> NativeIndex {
    let ix = NativeIndex::open(dir, Some(Arc::new(real_embedder())), None).unwrap();
    ix.upsert(vec![
        doc(
            "m1",
            "Melanie adopted a puppy from the shelter last week",
            "/a",
        ),
        doc("m2", "The quarterly budget review is on Thursday", "/a"),
    ])
    .unwrap();
    ix.commit(1).unwrap();
    ix
}

#[test]
fn real_model_semantic_lane_finds_paraphrases_lexical_misses() {
    let tmp = tempfile::tempdir().unwrap();
    let ix = puppy_and_budget(tmp.path());
    let r = ix
        .search(&req("new dog", SearchFilters::default()))
        .unwrap();
    assert_eq!(r.hits[0].doc_id, "m1", "{r:?}");
    assert_eq!(r.hits[0].lexical_rank, None);
    assert_eq!(r.hits[0].semantic_rank, Some(1));
}

#[test]
fn matched_terms_of_an_early_hit_ignore_terms_that_start_later() {
    // "pod" first occurs after the document that only says "node": the
    // matched-terms probe must not seek its postings backwards (it once
    // panicked here).
    let tmp = tempfile::tempdir().unwrap();
    let ix = open_hashed(tmp.path());
    ix.upsert(vec![
        doc("m1", "the node restarted", "/ops"),
        doc("m2", "the pod and the node restarted", "/ops"),
    ])
    .unwrap();
    ix.commit(2).unwrap();
    let r = ix
        .search(&req("node pod", SearchFilters::default()))
        .unwrap();
    let m1 = r.hits.iter().find(|h| h.doc_id == "m1").unwrap();
    assert_eq!(m1.matched_terms, ["node"]);
    let m2 = r.hits.iter().find(|h| h.doc_id == "m2").unwrap();
    assert_eq!(m2.matched_terms.len(), 2, "{m2:?}");
}

#[test]
fn a_query_naming_the_agent_favours_its_memories() {
    let tmp = tempfile::tempdir().unwrap();
    let ix = open_hashed(tmp.path());
    let mut by_ana = doc("m1", "the release moves to friday", "/team");
    by_ana.agent_id = Some("ana".into());
    let mut by_bo = doc("m2", "the release moves to friday", "/team");
    by_bo.agent_id = Some("bo".into());
    ix.upsert(vec![by_bo, by_ana]).unwrap();
    ix.commit(2).unwrap();
    for q in ["what did Ana say about the release", "ana release"] {
        let mut r = req(q, SearchFilters::default());
        r.semantic = false;
        let r = ix.search(&r).unwrap();
        assert_eq!(ids(&r), ["m1", "m2"], "{q}");
    }
}

#[test]
fn real_model_semantic_neighbours_below_the_floor_are_not_evidence() {
    let tmp = tempfile::tempdir().unwrap();
    let ix = puppy_and_budget(tmp.path());
    let r = ix
        .search(&req(
            "lattice gauge theory of quantum chromodynamics",
            SearchFilters::default(),
        ))
        .unwrap();
    assert!(r.hits.is_empty(), "nearest is not evidence: {r:?}");
    let sem = r.lanes.iter().find(|l| l.lane == Lane::Semantic).unwrap();
    assert_eq!(sem.status, LaneStatus::Ok);
    assert_eq!(sem.candidates, 0);
    assert!(
        sem.message
            .as_deref()
            .is_some_and(|m| m.contains("2 nearest candidates were below cosine similarity")),
        "{sem:?}"
    );
    // A related query still reaches its memory through the semantic lane.
    let r = ix
        .search(&req("new dog", SearchFilters::default()))
        .unwrap();
    assert_eq!(ids(&r), ["m1"], "{r:?}");
}

/// Regression: usearch kept one search context per core and failed a graph
/// search that found none free, so under concurrent load the semantic lane
/// failed ("Reserve capacity ahead of searches!") and answers changed.
#[test]
fn concurrent_graph_searches_never_fail_the_semantic_lane() {
    let dir = tempfile::tempdir().expect("tempdir");
    let words = [
        "deploy", "rollback", "schema", "latency", "budget", "review", "cluster", "cache",
        "backup", "incident", "pager", "token", "proxy", "queue", "retry", "sprint",
    ];
    let docs: Vec<IndexDoc> = (0..vectors::EXACT_BELOW + 500)
        .map(|i| {
            let text = format!(
                "{} {} {} note {i}",
                words[i % words.len()],
                words[(i / 7) % words.len()],
                words[(i / 53) % words.len()]
            );
            doc(&format!("d{i}"), &text, "/bench")
        })
        .collect();
    let queries: Vec<String> = (0..words.len())
        .map(|i| format!("{} {}", words[i], words[(i + 5) % words.len()]))
        .collect();
    for reopen in [false, true] {
        let ix = open_hashed(dir.path());
        if !reopen {
            ix.upsert(docs.clone()).expect("upsert");
            ix.commit(1).expect("commit");
        }
        let alone: Vec<Vec<String>> = queries
            .iter()
            .map(|q| {
                let r = ix
                    .search(&req(q, SearchFilters::default()))
                    .expect("search");
                ids(&r).into_iter().map(String::from).collect()
            })
            .collect();
        std::thread::scope(|s| {
            for t in 0..16 {
                let (ix, queries, alone) = (&ix, &queries, &alone);
                s.spawn(move || {
                    for round in 0..10 {
                        let i = (t + round) % queries.len();
                        let r = ix
                            .search(&req(&queries[i], SearchFilters::default()))
                            .expect("search");
                        let semantic = r
                            .lanes
                            .iter()
                            .find(|l| l.lane == Lane::Semantic)
                            .expect("semantic lane");
                        assert_eq!(
                            semantic.status,
                            LaneStatus::Ok,
                            "reopened: {reopen}: {:?}",
                            semantic.message
                        );
                        assert_eq!(ids(&r), alone[i], "reopened: {reopen}");
                    }
                });
            }
        });
        drop(ix);
    }
}

/// Archived documents that match better never crowd active ones off a
/// page, a wider lifecycle ranks them in, and matched terms are those of
/// each kept hit (found after fusion, for the kept hits only).
#[test]
fn archived_matches_never_crowd_active_ones_off_a_page() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ix = NativeIndex::open(dir.path(), None, None).expect("open");
    let mut docs = Vec::new();
    // 120 strong archived matches, then 30 weaker active ones.
    for i in 0..120 {
        let mut d = doc(&format!("old{i}"), "harbour harbour harbour crane", "/a");
        d.lifecycle = "archived".into();
        docs.push(d);
    }
    for i in 0..30 {
        docs.push(doc(
            &format!("new{i}"),
            &format!("harbour and {} other words here", i),
            "/a",
        ));
    }
    ix.upsert(docs).expect("upsert");
    ix.commit(1).expect("commit");
    let mut r = req("harbour crane", SearchFilters::default());
    r.limit = 10;
    let active = ix.search(&r).expect("search");
    assert_eq!(active.hits.len(), 10, "the page is full");
    assert!(
        ids(&active).iter().all(|d| d.starts_with("new")),
        "{:?}",
        ids(&active)
    );
    assert!(active.hits.iter().all(|h| h.matched_terms == ["harbour"]));
    // Asking for archived ones too ranks them first, as the filter would.
    let all = ix
        .search(&req(
            "harbour crane",
            SearchFilters {
                lifecycles: vec!["active".into(), "archived".into()],
                ..Default::default()
            },
        ))
        .expect("search");
    assert!(
        ids(&all).iter().all(|d| d.starts_with("old")),
        "{:?}",
        ids(&all)
    );
    assert!(
        all.hits
            .iter()
            .all(|h| h.matched_terms == ["harbour", "crane"])
    );
    // A path filter over the same folder agrees.
    let scoped = ix
        .search(&req(
            "harbour crane",
            SearchFilters {
                path: Some("/a".into()),
                ..Default::default()
            },
        ))
        .expect("search");
    assert_eq!(ids(&scoped), ids(&active));
}

/// Drops `ix` the way a killed process leaves it: no deferred save.
pub(crate) fn kill(ix: NativeIndex) {
    ix.killed.store(true, Ordering::SeqCst);
    drop(ix);
}
