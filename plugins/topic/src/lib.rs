//! `topic`: relates items about the same topic by the cosine similarity
//! of their embeddings, computed by the host's native model through the
//! `embed` capability (no model, no relations: the detector reports
//! `unavailable`). Vectors are cached in the plugin's `kv` namespace by
//! model and text hash, so an item is embedded once, not once per
//! comparison; without `kv` the detector still works, only slower.
//!
//! Settings: `threshold` (0.55, cosine), `max_candidates` (64, compared
//! per call, in the host's order), `max_relations` (10), `batch` (32
//! texts per embed call).

use mem_plugin_sdk::types::*;
use mem_plugin_sdk::{RelationDetector, config, embed, kv};

pub struct Topic;

/// Characters of an item's text that are embedded: the model reads
/// about 256 tokens, so more only costs time.
const MAX_TEXT_CHARS: usize = 1000;

#[derive(Debug, Clone, Copy)]
pub struct Settings {
    pub threshold: f32,
    pub max_candidates: usize,
    pub max_relations: usize,
    pub batch: usize,
}

impl Settings {
    fn from_config() -> Self {
        Self {
            threshold: config::get_or("threshold", 0.55f32),
            max_candidates: config::get_or("max_candidates", 64usize),
            max_relations: config::get_or("max_relations", 10usize),
            batch: config::get_or("batch", 32usize).max(1),
        }
    }
}

fn text_of(item: &Item) -> String {
    item.text.chars().take(MAX_TEXT_CHARS).collect()
}

/// FNV-1a, 64 bits: a stable cache key for a text.
fn fnv(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

fn decode(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// One vector per text: cached ones from `kv`, the rest embedded in batches.
fn vectors(model: &str, texts: &[String], batch: usize) -> Result<Vec<Vec<f32>>, PluginError> {
    let keys: Vec<String> = texts
        .iter()
        .map(|t| format!("v:{model}:{:016x}", fnv(t)))
        .collect();
    let mut out: Vec<Option<Vec<f32>>> = keys
        .iter()
        .map(|k| kv::get(k).ok().flatten().map(|b| decode(&b)))
        .collect();
    let missing: Vec<usize> = (0..texts.len()).filter(|&i| out[i].is_none()).collect();
    for group in missing.chunks(batch) {
        let batch_texts: Vec<String> = group.iter().map(|&i| texts[i].clone()).collect();
        let got =
            embed::embed(&batch_texts).map_err(|e| PluginError::new("embed_failed", e.message))?;
        if got.len() != group.len() {
            return Err(PluginError::new(
                "embed_failed",
                "the host returned a vector count that does not match",
            ));
        }
        for (&i, v) in group.iter().zip(got) {
            let bytes: Vec<u8> = v.iter().flat_map(|f| f.to_le_bytes()).collect();
            // A full namespace only costs a recomputation next time.
            let _ = kv::set(&keys[i], &bytes);
            out[i] = Some(v);
        }
    }
    Ok(out.into_iter().map(Option::unwrap_or_default).collect())
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    if a.len() != b.len() || a.is_empty() {
        return 0.0;
    }
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb: f32 = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        (dot / (na * nb)).clamp(0.0, 1.0)
    }
}

/// Same-topic relations from `subject`.
pub fn related(
    subject: &Item,
    candidates: &[Item],
    s: Settings,
) -> Result<Vec<Relation>, PluginError> {
    let subject_text = text_of(subject);
    if subject_text.trim().is_empty() {
        return Ok(Vec::new());
    }
    let pool: Vec<&Item> = candidates
        .iter()
        .filter(|c| c.id != subject.id && !c.text.trim().is_empty())
        .take(s.max_candidates)
        .collect();
    if pool.is_empty() {
        return Ok(Vec::new());
    }
    let (model, _) = embed::model().map_err(|e| PluginError::new("unavailable", e.message))?;
    let mut texts = vec![subject_text];
    texts.extend(pool.iter().map(|c| text_of(c)));
    let vs = vectors(&model, &texts, s.batch)?;
    let Some((mine, theirs)) = vs.split_first() else {
        return Ok(Vec::new());
    };
    let mut out: Vec<Relation> = pool
        .iter()
        .zip(theirs)
        .filter_map(|(c, v)| {
            let sim = cosine(mine, v);
            (sim >= s.threshold).then(|| Relation {
                kind: "same_topic".into(),
                target: c.id.clone(),
                score: sim,
                reason: format!("similar meaning (cosine {sim:.2} by {model})"),
                difference: None,
            })
        })
        .collect();
    out.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.target.cmp(&b.target))
    });
    out.truncate(s.max_relations);
    Ok(out)
}

impl RelationDetector for Topic {
    fn detect(subject: Item, candidates: Vec<Item>) -> Result<Vec<Relation>, PluginError> {
        related(&subject, &candidates, Settings::from_config())
    }
}

mem_plugin_sdk::export_plugin!(relation_detector: Topic);

#[cfg(test)]
mod tests {
    use super::*;
    use mem_plugin_sdk::facts::item;
    use mem_plugin_sdk::native;

    /// A toy embedder: one dimension per topic word, so similarity is
    /// shared topic words (a stand-in for the ONNX model).
    fn toy(text: &str) -> Vec<f32> {
        const VOCAB: [&str; 8] = [
            "sled",
            "storage",
            "database",
            "backup",
            "hiring",
            "interview",
            "salary",
            "candidate",
        ];
        let t = text.to_lowercase();
        let mut v: Vec<f32> = VOCAB.iter().map(|w| t.matches(w).count() as f32).collect();
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
        v.iter_mut().for_each(|x| *x /= n);
        v
    }

    fn settings() -> Settings {
        Settings {
            threshold: 0.55,
            max_candidates: 64,
            max_relations: 10,
            batch: 2,
        }
    }

    fn with_toy() {
        native::reset();
        native::with(|h| h.embedder = Some(("toy", 8, toy)));
    }

    #[test]
    fn similar_texts_relate_and_unrelated_ones_do_not() {
        with_toy();
        let s = item("a", "We store data in sled; storage backups nightly", &[]);
        let near = item("b", "The sled database storage layout", &[]);
        let far = item("c", "Hiring: interview every candidate twice", &[]);
        let r = related(&s, &[far, near, s.clone()], settings()).unwrap();
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].target, "b");
        assert_eq!(r[0].kind, "same_topic");
        assert!(r[0].reason.contains("toy"));
    }

    #[test]
    fn vectors_are_cached_by_text_so_a_second_call_embeds_nothing() {
        with_toy();
        let s = item("a", "sled storage", &[]);
        let c = item("b", "sled storage database", &[]);
        related(&s, std::slice::from_ref(&c), settings()).unwrap();
        assert_eq!(native::with(|h| h.kv.len()), 2);
        // Without the embedder, cached vectors still answer.
        native::with(|h| h.embedder = Some(("toy", 8, |_| vec![0.0; 8])));
        let r = related(&s, &[c], settings()).unwrap();
        assert_eq!(r.len(), 1);
    }

    #[test]
    fn no_model_is_an_unavailable_error_and_empty_texts_are_skipped() {
        native::reset();
        let s = item("a", "sled storage", &[]);
        let e = related(&s, &[item("b", "sled", &[])], settings()).unwrap_err();
        assert_eq!(e.code, "unavailable");
        assert!(
            related(&s, &[item("b", "  ", &[])], settings())
                .unwrap()
                .is_empty()
        );
        assert!(
            related(&item("e", "", &[]), std::slice::from_ref(&s), settings())
                .unwrap()
                .is_empty()
        );
    }
}
