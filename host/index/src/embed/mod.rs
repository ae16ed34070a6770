//! The native embedder: a sentence-transformers model in ONNX run through
//! `ort` (ONNX Runtime loaded from an absolute library path, never fetched),
//! with the model's own `tokenizers` tokenizer. Pooling is the mean of the
//! token vectors over the attention mask, then L2 normalization — what
//! sentence-transformers does for all-MiniLM-L6-v2.

use mem_core::index::{Embedder, IndexError};
use ndarray::Array2;
use ort::session::Session;
use ort::session::builder::GraphOptimizationLevel;
use ort::value::Tensor;
use parking_lot::Mutex;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokenizers::{PaddingParams, PaddingStrategy, Tokenizer, TruncationParams};

// One text a forward pass. The graph quantizes its activations with one
// range per pass, so a text beside others would get a vector that depends
// on them (a query under load another than alone, a rebuild's vectors
// other than ingest's); alone, a text's vector is the same wherever it is
// embedded. Batching bought nothing here anyway: 222 texts/s a core alone,
// 217 in passes of 32 (length-sorted), on LoCoMo turns.
/// Longest input in tokens (sentence-transformers' setting for this model).
const MAX_TOKENS: usize = 256;
/// Most sessions a pool keeps (each holds its own copy of the weights,
/// about 90 MB for MiniLM).
const MAX_SESSIONS: usize = 4;

/// ONNX Runtime allows one environment per process; the first library
/// path wins.
static ENVIRONMENT: OnceLock<Result<(PathBuf, ort::environment::Environment), String>> =
    OnceLock::new();

fn environment(lib: &Path) -> Result<&'static ort::environment::Environment, IndexError> {
    let slot = ENVIRONMENT.get_or_init(|| {
        let builder = ort::init_from(lib)
            .map_err(|e| format!("cannot load ONNX Runtime from {}: {e}", lib.display()))?;
        let env = builder
            .with_name("mem-host")
            .build()
            .map_err(|e| format!("cannot start ONNX Runtime: {e}"))?;
        Ok((lib.to_path_buf(), env))
    });
    match slot {
        Ok((loaded, env)) if loaded == lib => Ok(env),
        Ok((loaded, _)) => Err(IndexError::ModelUnavailable(format!(
            "ONNX Runtime was already loaded from {} in this process",
            loaded.display()
        ))),
        Err(e) => Err(IndexError::ModelUnavailable(e.clone())),
    }
}

/// What to load (found by `mem-models`, which installs and verifies it).
pub use mem_models::EmbedderFiles;

pub struct OrtEmbedder {
    model_id: String,
    dimensions: usize,
    sessions: Pool,
    tokenizer: Tokenizer,
    input_names: Vec<String>,
}

/// One session per core, each running its graph on the calling thread
/// (one intra-op thread). Profiled at 100k memories: one session with two
/// intra-op threads made concurrent searches queue on its lock while its
/// pool threads spun, so the server stopped at about 95 searches/s on two
/// cores; with a session per core, concurrent queries embed side by side.
///
/// Only the first session is made at load; another is made when every
/// made one is busy. A CLI command embeds one query and loads one
/// session (each load reads the model, ~0.15 s).
struct Pool {
    sessions: Vec<OnceLock<Mutex<Session>>>,
    next: AtomicUsize,
    make: Box<dyn Fn() -> Result<Session, IndexError> + Send + Sync>,
    /// Held while a session is made, so two callers do not both make one.
    making: Mutex<()>,
}

impl Pool {
    /// How many sessions this machine gets: one per core, at most
    /// [`MAX_SESSIONS`].
    fn size() -> usize {
        std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .clamp(1, MAX_SESSIONS)
    }

    /// Runs `f` on a free session; makes one when every made one is busy
    /// and there is room, else waits for the next made one in turn.
    /// Sessions are made in order, so the made ones are the first `made`
    /// (at least one: the first is made at load).
    fn with<R>(&self, f: impl FnOnce(&mut Session) -> R) -> Result<R, IndexError> {
        let mut f = Some(f);
        if let Some(Some(out)) = self.try_with(|s| f.take().map(|f| f(s)))? {
            return Ok(out);
        }
        let f = f.ok_or_else(|| failed("an embedding pass ended without an answer"))?;
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        let session = self.sessions[start % self.made().max(1)]
            .get()
            .ok_or_else(|| unavailable("no embedding session was made"))?;
        Ok(f(&mut session.lock()))
    }

    /// Runs `f` on a free session (making one when every made one is busy
    /// and there is room); `None` when every session is busy.
    fn try_with<R>(&self, f: impl FnOnce(&mut Session) -> R) -> Result<Option<R>, IndexError> {
        let made = self.made();
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        for i in 0..made {
            if let Some(mut s) = self.sessions[(start + i) % made]
                .get()
                .and_then(Mutex::try_lock)
            {
                return Ok(Some(f(&mut s)));
            }
        }
        if let Some(slot) = self.sessions.get(made) {
            let _making = self.making.lock();
            if slot.get().is_none() {
                let _ = slot.set(Mutex::new((self.make)()?));
            }
            if let Some(mut s) = slot.get().and_then(Mutex::try_lock) {
                return Ok(Some(f(&mut s)));
            }
        }
        Ok(None)
    }

    /// How many sessions are made (a prefix of `sessions`).
    fn made(&self) -> usize {
        self.sessions
            .iter()
            .take_while(|s| s.get().is_some())
            .count()
    }
}

/// A forward pass's named input tensors.
type Inputs = Vec<(String, ort::value::DynTensor)>;

impl std::fmt::Debug for OrtEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OrtEmbedder")
            .field("model_id", &self.model_id)
            .finish()
    }
}

fn unavailable(e: impl std::fmt::Display) -> IndexError {
    IndexError::ModelUnavailable(e.to_string())
}

fn failed(e: impl std::fmt::Display) -> IndexError {
    IndexError::Embedding(e.to_string())
}

/// How much a session's creation spends on optimizing the graph. Measured
/// with the installed graph (int8 products, embedding rows gathered before
/// they are turned into floats) on the 2-core dev machine: optimized, a
/// session takes ~110 ms to create and embeds a short query in ~2 ms;
/// unoptimized, it is created in ~30 ms and a short query takes ~15 ms,
/// so one or two queries cost much less unoptimized.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SessionStart {
    /// For processes that embed many queries (a server, a batch).
    #[default]
    Optimized,
    /// For a command that embeds a query or two and exits.
    Quick,
}

impl OrtEmbedder {
    /// Loads with optimized sessions ([`SessionStart::Optimized`]).
    pub fn load(files: &EmbedderFiles) -> Result<Self, IndexError> {
        Self::load_with(files, SessionStart::Optimized)
    }

    pub fn load_with(files: &EmbedderFiles, start: SessionStart) -> Result<Self, IndexError> {
        let env = environment(&files.runtime_lib)?;
        let mut tokenizer = Tokenizer::from_file(&files.tokenizer).map_err(|e| {
            unavailable(format!(
                "cannot read tokenizer {}: {e}",
                files.tokenizer.display()
            ))
        })?;
        let mut padding = tokenizer
            .get_padding()
            .cloned()
            .unwrap_or_else(PaddingParams::default);
        padding.strategy = PaddingStrategy::BatchLongest;
        tokenizer.with_padding(Some(padding));
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: MAX_TOKENS,
                ..Default::default()
            }))
            .map_err(unavailable)?;
        let model = files.model.clone();
        let level = match start {
            SessionStart::Optimized => GraphOptimizationLevel::All,
            SessionStart::Quick => GraphOptimizationLevel::Disable,
        };
        let make = move || {
            Session::builder(env)
                .map_err(unavailable)?
                .with_optimization_level(level)
                .map_err(unavailable)?
                .with_intra_threads(1)
                .map_err(unavailable)?
                .with_inter_threads(1)
                .map_err(unavailable)?
                .commit_from_file(&model)
                .map_err(|e| unavailable(format!("cannot load model {}: {e}", model.display())))
        };
        let first = make()?;
        let input_names = first
            .inputs()
            .iter()
            .map(|i| i.name().to_string())
            .collect();
        let sessions: Vec<OnceLock<Mutex<Session>>> =
            (0..Pool::size()).map(|_| OnceLock::new()).collect();
        let _ = sessions[0].set(Mutex::new(first));
        Ok(Self {
            model_id: files.model_id.clone(),
            dimensions: files.dimensions,
            sessions: Pool {
                sessions,
                next: AtomicUsize::new(0),
                make: Box::new(make),
                making: Mutex::new(()),
            },
            tokenizer,
            input_names,
        })
    }

    /// One text's vector, embedded alone on a free session (or the next
    /// one in turn).
    fn embed_alone(&self, text: &str) -> Result<Vec<f32>, IndexError> {
        let (inputs, mask) = self.inputs(&[text])?;
        self.sessions
            .with(|session| self.run(session, inputs, &mask))??
            .pop()
            .ok_or_else(|| failed("an embedding pass returned no vector"))
    }

    /// The model's inputs for `texts` (tokenized, padded to the longest),
    /// and the attention mask pooling needs.
    fn inputs(&self, texts: &[&str]) -> Result<(Inputs, Array2<i64>), IndexError> {
        let enc = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(failed)?;
        let rows = enc.len();
        let cols = enc
            .iter()
            .map(|e| e.get_ids().len())
            .max()
            .unwrap_or(0)
            .max(1);
        let mut ids = Array2::<i64>::zeros((rows, cols));
        let mut mask = Array2::<i64>::zeros((rows, cols));
        let mut types = Array2::<i64>::zeros((rows, cols));
        for (r, e) in enc.iter().enumerate() {
            for (c, ((&i, &m), &t)) in e
                .get_ids()
                .iter()
                .zip(e.get_attention_mask())
                .zip(e.get_type_ids())
                .enumerate()
            {
                ids[[r, c]] = i64::from(i);
                mask[[r, c]] = i64::from(m);
                types[[r, c]] = i64::from(t);
            }
        }
        let mut inputs: Inputs = Vec::new();
        for name in &self.input_names {
            let arr = match name.as_str() {
                "input_ids" => ids.clone(),
                "attention_mask" => mask.clone(),
                "token_type_ids" => types.clone(),
                other => {
                    return Err(failed(format!(
                        "the model asks for an unknown input {other:?}"
                    )));
                }
            };
            inputs.push((
                name.clone(),
                Tensor::from_array(arr).map_err(failed)?.upcast(),
            ));
        }
        Ok((inputs, mask))
    }

    /// One forward pass on `session`: a sentence vector per input row.
    fn run(
        &self,
        session: &mut Session,
        inputs: Inputs,
        mask: &Array2<i64>,
    ) -> Result<Vec<Vec<f32>>, IndexError> {
        let outputs = session.run(inputs).map_err(failed)?;
        let (shape, data) = outputs[0].try_extract_tensor::<f32>().map_err(failed)?;
        let dims: Vec<usize> = shape.iter().map(|&d| d as usize).collect();
        self.pooled(&dims, data, mask)
    }

    /// Sentence vectors from the model's output: the mean of the token
    /// vectors over the attention mask (or the model's own pooled vectors),
    /// L2-normalized.
    fn pooled(
        &self,
        dims: &[usize],
        data: &[f32],
        mask: &Array2<i64>,
    ) -> Result<Vec<Vec<f32>>, IndexError> {
        let (rows, cols) = mask.dim();
        let mut out = Vec::with_capacity(rows);
        match dims {
            // Token vectors: mean over the attention mask.
            [b, s, h] if *b == rows && *s == cols && *h == self.dimensions => {
                for r in 0..rows {
                    let mut v = vec![0f32; *h];
                    let mut n = 0f32;
                    for c in 0..cols {
                        if mask[[r, c]] == 1 {
                            let base = (r * s + c) * h;
                            for (k, x) in v.iter_mut().enumerate() {
                                *x += data[base + k];
                            }
                            n += 1.0;
                        }
                    }
                    v.iter_mut().for_each(|x| *x /= n.max(1.0));
                    out.push(normalize(v));
                }
            }
            // Already pooled sentence vectors.
            [b, h] if *b == rows && *h == self.dimensions => {
                for r in 0..rows {
                    out.push(normalize(data[r * h..(r + 1) * h].to_vec()));
                }
            }
            other => {
                return Err(failed(format!(
                    "unexpected output shape {other:?} for {rows} inputs of {cols} tokens"
                )));
            }
        }
        Ok(out)
    }
}

fn normalize(mut v: Vec<f32>) -> Vec<f32> {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if n > 0.0 {
        v.iter_mut().for_each(|x| *x /= n);
    }
    v
}

impl Embedder for OrtEmbedder {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn dimensions(&self) -> usize {
        self.dimensions
    }

    /// Embeds each text alone, as many at once as the pool has sessions,
    /// returning vectors in input order.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, IndexError> {
        let workers = self.sessions.sessions.len().min(texts.len());
        if workers <= 1 {
            return texts.iter().map(|t| self.embed_alone(t)).collect();
        }
        // Large inputs (ingest): each session takes the next text.
        let next = AtomicUsize::new(0);
        let mut out: Vec<Option<Result<Vec<f32>, IndexError>>> =
            (0..texts.len()).map(|_| None).collect();
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..workers)
                .map(|_| {
                    s.spawn(|| {
                        let mut mine = Vec::new();
                        loop {
                            let i = next.fetch_add(1, Ordering::Relaxed);
                            let Some(text) = texts.get(i) else {
                                break mine;
                            };
                            mine.push((i, self.embed_alone(text)));
                        }
                    })
                })
                .collect();
            for (i, r) in handles
                .into_iter()
                .flat_map(|h| h.join().unwrap_or_default())
            {
                out[i] = Some(r);
            }
        });
        out.into_iter()
            .map(|r| r.unwrap_or_else(|| Err(failed("an embedding worker panicked"))))
            .collect()
    }
}

/// An embedder loaded on first use, so commands that never embed do not
/// pay for loading the model.
pub struct LazyEmbedder {
    files: EmbedderFiles,
    start: SessionStart,
    loaded: OnceLock<Result<OrtEmbedder, String>>,
}

impl std::fmt::Debug for LazyEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LazyEmbedder")
            .field("model_id", &self.files.model_id)
            .finish()
    }
}

impl LazyEmbedder {
    pub fn new(files: EmbedderFiles, start: SessionStart) -> Self {
        Self {
            files,
            start,
            loaded: OnceLock::new(),
        }
    }

    fn get(&self) -> Result<&OrtEmbedder, IndexError> {
        match self.loaded.get_or_init(|| {
            OrtEmbedder::load_with(&self.files, self.start).map_err(|e| e.to_string())
        }) {
            Ok(e) => Ok(e),
            Err(msg) => Err(IndexError::ModelUnavailable(msg.clone())),
        }
    }
}

impl Embedder for LazyEmbedder {
    fn model_id(&self) -> &str {
        &self.files.model_id
    }

    fn dimensions(&self) -> usize {
        self.files.dimensions
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, IndexError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        self.get()?.embed(texts)
    }
}
