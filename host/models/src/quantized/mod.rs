//! The installed int8 graph rewritten so its matrix products run on int8
//! activations.
//!
//! The published model keeps each weight matrix as int8 with a scale per
//! column (`Cast` to float, `Mul` by the scale, then `MatMul`): ONNX
//! Runtime turns the weights back into floats at load and every product
//! runs in f32. Here each such product becomes ONNX Runtime's
//! `DynamicQuantizeMatMul` on the very same int8 weights and scales; the
//! activations are quantized to 8 bits on the fly (one range per pass), so
//! the products run on the CPU's integer dot-product instructions.
//! Measured on the 2-core dev machine (AVX-512 VNNI), one text a pass:
//! 97 → 222 texts/s a core on LoCoMo turns (34 tokens on average); the
//! vectors keep a cosine of 0.993 on average (0.966 at worst) with the
//! f32 products', and LoCoMo dev recall_any@10 was 83.9 against 83.8.
//!
//! The embedding tables (int8 with a scale per row, `Cast`, `Mul`, then
//! `Gather` of the tokens' rows) are gathered first: the tokens' int8 rows
//! and their scales, then turned into floats. The same products of the
//! same numbers, but a process whose session is not optimized (a CLI
//! query) no longer turns the whole 30,522-row table into floats on every
//! pass (see `find_gathers`).
//!
//! The rewrite works on the protobuf encoding itself: only the rewritten
//! nodes, the reshaped scales and one operator-set import are encoded
//! anew; every other byte of the file is copied as it was. The output
//! depends on nothing but the input, so its digest can be pinned.

use graph::{Node, Tensor, encode_node, int_attribute};
use std::collections::{HashMap, HashSet};
use wire::{parse, put_bytes, put_varint_field};

mod graph;
mod wire;

/// Why a graph could not be rewritten.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RewriteError {
    #[error("the model file is not a valid ONNX protobuf: {0}")]
    Malformed(&'static str),
    #[error("the model has no matrix product on int8 weights with a scale per column")]
    NothingToRewrite,
}

/// The operator set `DynamicQuantizeMatMul` belongs to.
const MS_DOMAIN: &str = "com.microsoft";
/// ONNX `TensorProto.DataType` values used here.
const FLOAT: u64 = 1;
const INT8: u64 = 3;

// Field numbers of onnx.proto's messages.
const MODEL_GRAPH: u32 = 7;
const MODEL_OPSET_IMPORT: u32 = 8;
const GRAPH_NODE: u32 = 1;
const GRAPH_INITIALIZER: u32 = 5;
const GRAPH_OUTPUT: u32 = 12;
const VALUE_INFO_NAME: u32 = 1;
const OPSET_DOMAIN: u32 = 1;
const OPSET_VERSION: u32 = 2;

/// Rewrites every `MatMul` whose second input is an int8 initializer
/// turned into floats by `Cast` and a per-column `Mul` (nothing else using
/// the floats) into `DynamicQuantizeMatMul` on the int8 weights, and
/// gathers the rows of int8 tables before they are turned into floats.
pub fn dynamic_quantized(model: &[u8]) -> Result<Vec<u8>, RewriteError> {
    let fields = parse(model)?;
    let mut graphs = fields.iter().filter(|f| f.number == MODEL_GRAPH);
    let graph = graphs
        .next()
        .ok_or(RewriteError::Malformed("no graph"))?
        .bytes()?;
    if graphs.next().is_some() {
        return Err(RewriteError::Malformed("more than one graph"));
    }
    let new_graph = rewrite_graph(graph)?;
    let mut out = Vec::with_capacity(model.len() + 64);
    let mut has_ms = false;
    for f in &fields {
        match f.number {
            MODEL_GRAPH => put_bytes(&mut out, MODEL_GRAPH, &new_graph),
            MODEL_OPSET_IMPORT => {
                has_ms |= parse(f.bytes()?)?
                    .iter()
                    .any(|o| o.number == OPSET_DOMAIN && o.bytes() == Ok(MS_DOMAIN.as_bytes()));
                out.extend_from_slice(f.raw);
            }
            _ => out.extend_from_slice(f.raw),
        }
    }
    if !has_ms {
        let mut opset = Vec::new();
        put_bytes(&mut opset, OPSET_DOMAIN, MS_DOMAIN.as_bytes());
        put_varint_field(&mut opset, OPSET_VERSION, 1);
        put_bytes(&mut out, MODEL_OPSET_IMPORT, &opset);
    }
    Ok(out)
}

/// A graph's nodes and initializers, each with the index of its field,
/// and how often each value is used.
struct Parsed<'a> {
    nodes: Vec<(usize, Node<'a>)>,
    inits: HashMap<String, (usize, Tensor<'a>)>,
    uses: HashMap<String, usize>,
    /// The node (index into `nodes`) that outputs each value.
    producer: HashMap<String, usize>,
}

impl<'a> Parsed<'a> {
    fn of(fields: &[wire::Field<'a>]) -> Result<Self, RewriteError> {
        let mut nodes: Vec<(usize, Node)> = Vec::new();
        let mut inits = HashMap::new();
        let mut uses: HashMap<String, usize> = HashMap::new();
        for (i, f) in fields.iter().enumerate() {
            match f.number {
                GRAPH_NODE => nodes.push((i, Node::parse(f.bytes()?)?)),
                GRAPH_INITIALIZER => {
                    let t = Tensor::parse(f.bytes()?)?;
                    inits.insert(t.name.clone(), (i, t));
                }
                // A graph output is a use nothing may take away.
                GRAPH_OUTPUT => {
                    for o in parse(f.bytes()?)? {
                        if o.number == VALUE_INFO_NAME {
                            *uses.entry(o.string()?).or_default() += 1;
                        }
                    }
                }
                _ => {}
            }
        }
        for (_, n) in &nodes {
            for input in &n.inputs {
                *uses.entry(input.clone()).or_default() += 1;
            }
        }
        let producer = nodes
            .iter()
            .enumerate()
            .flat_map(|(k, (_, n))| n.outputs.iter().map(move |o| (o.clone(), k)))
            .collect();
        Ok(Parsed {
            nodes,
            inits,
            uses,
            producer,
        })
    }

    fn used_once(&self, name: &str) -> bool {
        self.uses.get(name) == Some(&1)
    }

    /// The `Mul` and `Cast` (indices into `nodes`) that make `value` from
    /// an int8 initializer, and the initializers: `(mul, cast, int8, scale)`.
    /// The float values between them must be used by nothing else.
    fn dequantized(&self, value: &str) -> Option<(usize, usize, &Tensor<'a>, &Tensor<'a>)> {
        if !self.used_once(value) {
            return None;
        }
        let &mul = self.producer.get(value)?;
        let m = &self.nodes[mul].1;
        if !m.is("Mul") || m.inputs.len() != 2 || !self.used_once(&m.inputs[0]) {
            return None;
        }
        let &cast = self.producer.get(&m.inputs[0])?;
        let c = &self.nodes[cast].1;
        if !c.is("Cast") || c.int("to") != Some(FLOAT as i64) || c.inputs.len() != 1 {
            return None;
        }
        let (_, q) = self.inits.get(&c.inputs[0])?;
        let (_, s) = self.inits.get(&m.inputs[1])?;
        (q.data_type == INT8 && q.dims.len() == 2 && s.data_type == FLOAT)
            .then_some((mul, cast, q, s))
    }
}

/// What the rewrite puts in place of a graph's fields: new encodings (a
/// node may become several), or nothing.
#[derive(Default)]
struct Edits {
    replaced: HashMap<usize, Vec<Vec<u8>>>,
    dropped: HashSet<usize>,
}

fn rewrite_graph(graph: &[u8]) -> Result<Vec<u8>, RewriteError> {
    let fields = parse(graph)?;
    let parsed = Parsed::of(&fields)?;
    let mut edits = Edits::default();
    if !find_matmuls(&parsed, &mut edits) {
        return Err(RewriteError::NothingToRewrite);
    }
    find_gathers(&parsed, &mut edits);
    let mut out = Vec::with_capacity(graph.len());
    for (i, f) in fields.iter().enumerate() {
        if edits.dropped.contains(&i) {
            continue;
        }
        match edits.replaced.get(&i) {
            Some(all) => {
                for bytes in all {
                    put_bytes(&mut out, f.number, bytes);
                }
            }
            None => out.extend_from_slice(f.raw),
        }
    }
    Ok(out)
}

/// `MatMul(a, Mul(Cast(int8 [K, N]), scale [1, N] or [N]))` becomes
/// `DynamicQuantizeMatMul(a, int8, scale [N])`. The scale must be used by
/// nothing else (it is reshaped in place). Whether any was found.
fn find_matmuls(p: &Parsed, edits: &mut Edits) -> bool {
    let mut found = false;
    for (field, n) in &p.nodes {
        if !n.is("MatMul") || n.inputs.len() != 2 {
            continue;
        }
        let Some((mul, cast, w, s)) = p.dequantized(&n.inputs[1]) else {
            continue;
        };
        let columns = w.dims[1];
        let per_column = matches!(s.dims.as_slice(), [1, n] | [n] if *n == columns);
        if !per_column || !p.used_once(&s.name) {
            continue;
        }
        let inputs = [n.inputs[0].clone(), w.name.clone(), s.name.clone()];
        edits.replaced.insert(
            *field,
            vec![n.encode_as("DynamicQuantizeMatMul", MS_DOMAIN, &inputs)],
        );
        edits.dropped.insert(p.nodes[mul].0);
        edits.dropped.insert(p.nodes[cast].0);
        if let Some((field, t)) = p.inits.get(&s.name) {
            edits
                .replaced
                .insert(*field, vec![t.encode_with_dims(&[columns])]);
        }
        found = true;
    }
    found
}

/// `Gather(Mul(Cast(int8 [V, D]), scale [V, 1]), ids)` on axis 0 becomes
/// `Mul(Cast(Gather(int8, ids)), Gather(scale, ids))`: each element is the
/// same product of the same two numbers, but only the rows of the tokens
/// are turned into floats. Unoptimized, the table's 11.7 million elements
/// were turned into floats at every pass (~45 ms of a cold CLI query);
/// optimized (a server's sessions), ONNX Runtime folded them once at load.
fn find_gathers(p: &Parsed, edits: &mut Edits) {
    for (field, n) in &p.nodes {
        if !n.is("Gather") || n.inputs.len() != 2 || n.outputs.len() != 1 {
            continue;
        }
        if n.int("axis").unwrap_or(0) != 0 {
            continue;
        }
        let Some((mul, cast, q, s)) = p.dequantized(&n.inputs[0]) else {
            continue;
        };
        if !matches!(s.dims.as_slice(), [rows, 1] if *rows == q.dims[0]) {
            continue;
        }
        let (ids, out) = (n.inputs[1].as_str(), n.outputs[0].as_str());
        let name = |part: &str| format!("{out}/int8_rows/{part}");
        let (rows_q, rows_s, rows_f) = (name("q"), name("scale"), name("f"));
        let cast_to = int_attribute("to", FLOAT);
        edits.replaced.insert(
            *field,
            vec![
                encode_node(
                    &name("gather_q"),
                    "Gather",
                    &[&q.name, ids],
                    &[&rows_q],
                    &[],
                ),
                encode_node(
                    &name("gather_scale"),
                    "Gather",
                    &[&s.name, ids],
                    &[&rows_s],
                    &[],
                ),
                encode_node(&name("cast"), "Cast", &[&rows_q], &[&rows_f], &[cast_to]),
                encode_node(&name("mul"), "Mul", &[&rows_f, &rows_s], &[out], &[]),
            ],
        );
        edits.dropped.insert(p.nodes[mul].0);
        edits.dropped.insert(p.nodes[cast].0);
    }
}

#[cfg(test)]
mod tests {
    use super::graph::{TENSOR_DATA_TYPE, TENSOR_DIMS, TENSOR_NAME};
    use super::*;

    fn node(inputs: &[&str], outputs: &[&str], op: &str, attrs: &[Vec<u8>]) -> Vec<u8> {
        encode_node(&format!("{op}_{}", outputs[0]), op, inputs, outputs, attrs)
    }

    fn tensor(name: &str, dims: &[i64], data_type: u64, raw: &[u8]) -> Vec<u8> {
        let mut t = Vec::new();
        for d in dims {
            put_varint_field(&mut t, TENSOR_DIMS, *d as u64);
        }
        put_varint_field(&mut t, TENSOR_DATA_TYPE, data_type);
        put_bytes(&mut t, TENSOR_NAME, name.as_bytes());
        put_bytes(&mut t, 9, raw);
        t
    }

    /// `{v}` = `Cast({v}_q)` × `{v}_s`.
    fn dequantize(g: &mut Vec<u8>, v: &str) {
        let (q, f, s) = (format!("{v}_q"), format!("{v}_f"), format!("{v}_s"));
        let to_float = int_attribute("to", FLOAT);
        put_bytes(g, GRAPH_NODE, &node(&[&q], &[&f], "Cast", &[to_float]));
        put_bytes(g, GRAPH_NODE, &node(&[&f, &s], &[v], "Mul", &[]));
    }

    /// x @ dequantize(w) + the same weights dequantized for a second use.
    fn model(second_use_of_floats: bool) -> Vec<u8> {
        model_with(second_use_of_floats, false)
    }

    /// [`model`], and with `table` the rows `ids` of an int8 table
    /// dequantized with a scale per row.
    fn model_with(second_use_of_floats: bool, table: bool) -> Vec<u8> {
        let mut g = Vec::new();
        if table {
            dequantize(&mut g, "t");
            put_bytes(
                &mut g,
                GRAPH_NODE,
                &node(&["t", "ids"], &["e"], "Gather", &[]),
            );
            let table = tensor("t_q", &[3, 2], INT8, &[1, 2, 3, 4, 5, 6]);
            put_bytes(&mut g, GRAPH_INITIALIZER, &table);
            let scales = tensor("t_s", &[3, 1], FLOAT, &[0; 12]);
            put_bytes(&mut g, GRAPH_INITIALIZER, &scales);
        }
        dequantize(&mut g, "w");
        put_bytes(
            &mut g,
            GRAPH_NODE,
            &node(&["x", "w"], &["y"], "MatMul", &[]),
        );
        if second_use_of_floats {
            put_bytes(&mut g, GRAPH_NODE, &node(&["w"], &["z"], "Identity", &[]));
        }
        put_bytes(&mut g, 2, b"tiny");
        put_bytes(
            &mut g,
            GRAPH_INITIALIZER,
            &tensor("w_q", &[2, 3], INT8, &[1, 2, 3, 4, 5, 6]),
        );
        put_bytes(
            &mut g,
            GRAPH_INITIALIZER,
            &tensor("w_s", &[1, 3], FLOAT, &[0; 12]),
        );
        let mut out = Vec::new();
        put_bytes(&mut out, VALUE_INFO_NAME, b"y");
        put_bytes(&mut g, GRAPH_OUTPUT, &out);
        let mut m = Vec::new();
        put_varint_field(&mut m, 1, 8); // ir_version
        let mut opset = Vec::new();
        put_varint_field(&mut opset, OPSET_VERSION, 17);
        put_bytes(&mut m, MODEL_OPSET_IMPORT, &opset);
        put_bytes(&mut m, MODEL_GRAPH, &g);
        m
    }

    fn graph_of(model: &[u8]) -> Vec<u8> {
        parse(model)
            .unwrap()
            .iter()
            .find(|f| f.number == MODEL_GRAPH)
            .unwrap()
            .bytes()
            .unwrap()
            .to_vec()
    }

    #[test]
    fn a_dequantized_matmul_becomes_one_dynamic_quantize_matmul_on_the_int8_weights() {
        let out = dynamic_quantized(&model(false)).unwrap();
        let graph = graph_of(&out);
        let fields = parse(&graph).unwrap();
        let nodes = nodes_of(&graph);
        assert_eq!(nodes.len(), 1, "Cast and Mul are gone");
        let n = &nodes[0];
        assert_eq!(n.op_type, "DynamicQuantizeMatMul");
        assert_eq!(n.domain, MS_DOMAIN);
        assert_eq!(n.inputs, ["x", "w_q", "w_s"]);
        assert_eq!(n.outputs, ["y"]);
        let scale = fields
            .iter()
            .filter(|f| f.number == GRAPH_INITIALIZER)
            .map(|f| Tensor::parse(f.bytes().unwrap()).unwrap())
            .find(|t| t.name == "w_s")
            .unwrap();
        assert_eq!(scale.dims, [3], "the scales are one per column");
        assert_eq!(scale.data_type, FLOAT);
        let imports: Vec<Vec<u8>> = parse(&out)
            .unwrap()
            .iter()
            .filter(|f| f.number == MODEL_OPSET_IMPORT)
            .map(|f| f.bytes().unwrap().to_vec())
            .collect();
        assert_eq!(imports.len(), 2);
        assert!(
            parse(&imports[1])
                .unwrap()
                .iter()
                .any(|f| f.bytes() == Ok(MS_DOMAIN.as_bytes()))
        );
        // Everything else is byte for byte the input's.
        assert!(graph.windows(4).any(|w| w == b"tiny"));
        assert_eq!(
            dynamic_quantized(&model(false)).unwrap(),
            out,
            "deterministic"
        );
    }

    fn names(v: &[String]) -> Vec<&str> {
        v.iter().map(|s| s.as_str()).collect()
    }

    fn nodes_of(graph: &[u8]) -> Vec<Node<'_>> {
        parse(graph)
            .unwrap()
            .iter()
            .filter(|f| f.number == GRAPH_NODE)
            .map(|f| Node::parse(f.bytes().unwrap()).unwrap())
            .collect()
    }

    #[test]
    fn an_int8_tables_rows_are_gathered_before_they_are_turned_into_floats() {
        let out = dynamic_quantized(&model_with(false, true)).unwrap();
        let graph = graph_of(&out);
        let nodes = nodes_of(&graph);
        let ops: Vec<(&str, Vec<&str>, Vec<&str>)> = nodes
            .iter()
            .map(|n| (n.op_type.as_str(), names(&n.inputs), names(&n.outputs)))
            .collect();
        let (q, s, f) = ("e/int8_rows/q", "e/int8_rows/scale", "e/int8_rows/f");
        assert_eq!(
            ops[..4],
            [
                ("Gather", vec!["t_q", "ids"], vec![q]),
                ("Gather", vec!["t_s", "ids"], vec![s]),
                ("Cast", vec![q], vec![f]),
                ("Mul", vec![f, s], vec!["e"]),
            ],
            "the table's Cast and Mul are gone, its rows gathered first"
        );
        assert_eq!(nodes[2].int("to"), Some(FLOAT as i64));
        assert_eq!(ops[4].0, "DynamicQuantizeMatMul");
        assert_eq!(nodes.len(), 5);
        let scales = parse(&graph)
            .unwrap()
            .iter()
            .filter(|f| f.number == GRAPH_INITIALIZER)
            .map(|f| Tensor::parse(f.bytes().unwrap()).unwrap())
            .find(|t| t.name == "t_s")
            .unwrap();
        assert_eq!(scales.dims, [3, 1], "the row scales are kept as they were");
        assert_eq!(dynamic_quantized(&model_with(false, true)).unwrap(), out);
    }

    #[test]
    fn weights_whose_floats_are_used_elsewhere_are_left_alone() {
        assert_eq!(
            dynamic_quantized(&model(true)),
            Err(RewriteError::NothingToRewrite)
        );
    }

    #[test]
    fn truncated_or_garbage_bytes_are_refused_not_panicked_on() {
        let m = model(false);
        for cut in [1, 7, m.len() / 2, m.len() - 1] {
            assert!(dynamic_quantized(&m[..cut]).is_err(), "cut at {cut}");
        }
        assert!(dynamic_quantized(&[0xff; 32]).is_err());
        assert!(dynamic_quantized(b"").is_err());
    }
}
