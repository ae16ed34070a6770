//! The parts of ONNX's `NodeProto`, `TensorProto` and `AttributeProto`
//! the rewrite reads and writes; every other field is kept as encoded.

use super::RewriteError;
use super::wire::{Value, parse, put_bytes, put_varint, put_varint_field, varint};

// Field numbers of onnx.proto's messages.
const NODE_INPUT: u32 = 1;
const NODE_OUTPUT: u32 = 2;
const NODE_NAME: u32 = 3;
const NODE_OP_TYPE: u32 = 4;
pub(super) const NODE_ATTRIBUTE: u32 = 5;
const NODE_DOMAIN: u32 = 7;
const ATTRIBUTE_NAME: u32 = 1;
const ATTRIBUTE_I: u32 = 3;
const ATTRIBUTE_TYPE: u32 = 20;
/// `AttributeProto.AttributeType.INT`.
const ATTRIBUTE_INT: u64 = 2;
pub(super) const TENSOR_DIMS: u32 = 1;
pub(super) const TENSOR_DATA_TYPE: u32 = 2;
pub(super) const TENSOR_NAME: u32 = 8;

/// A new node of the default domain.
pub(super) fn encode_node(
    name: &str,
    op: &str,
    inputs: &[&str],
    outputs: &[&str],
    attributes: &[Vec<u8>],
) -> Vec<u8> {
    let mut n = Vec::new();
    for i in inputs {
        put_bytes(&mut n, NODE_INPUT, i.as_bytes());
    }
    for o in outputs {
        put_bytes(&mut n, NODE_OUTPUT, o.as_bytes());
    }
    put_bytes(&mut n, NODE_NAME, name.as_bytes());
    put_bytes(&mut n, NODE_OP_TYPE, op.as_bytes());
    for a in attributes {
        put_bytes(&mut n, NODE_ATTRIBUTE, a);
    }
    n
}

/// An integer attribute (as `Cast`'s `to`).
pub(super) fn int_attribute(name: &str, value: u64) -> Vec<u8> {
    let mut a = Vec::new();
    put_bytes(&mut a, ATTRIBUTE_NAME, name.as_bytes());
    put_varint_field(&mut a, ATTRIBUTE_I, value);
    put_varint_field(&mut a, ATTRIBUTE_TYPE, ATTRIBUTE_INT);
    a
}

/// The parts of a `NodeProto` the rewrite reads; the rest is kept encoded.
#[derive(Default)]
pub(super) struct Node<'a> {
    pub inputs: Vec<String>,
    pub outputs: Vec<String>,
    pub name: Option<&'a [u8]>,
    pub op_type: String,
    pub domain: String,
    /// Integer attributes by name (`Cast`'s `to`, `Gather`'s `axis`).
    pub ints: Vec<(String, i64)>,
    /// Every field but inputs, outputs, name, op type and domain.
    pub rest: Vec<&'a [u8]>,
}

impl<'a> Node<'a> {
    pub fn parse(bytes: &'a [u8]) -> Result<Self, RewriteError> {
        let mut n = Node::default();
        for f in parse(bytes)? {
            match f.number {
                NODE_INPUT => n.inputs.push(f.string()?),
                NODE_OUTPUT => n.outputs.push(f.string()?),
                NODE_NAME => n.name = Some(f.bytes()?),
                NODE_OP_TYPE => n.op_type = f.string()?,
                NODE_DOMAIN => n.domain = f.string()?,
                _ => {
                    if f.number == NODE_ATTRIBUTE {
                        let attr = parse(f.bytes()?)?;
                        let name = attr.iter().find(|a| a.number == ATTRIBUTE_NAME);
                        let int = attr.iter().find(|a| a.number == ATTRIBUTE_I);
                        if let (Some(name), Some(int)) = (name, int) {
                            n.ints.push((name.string()?, int.varint()? as i64));
                        }
                    }
                    n.rest.push(f.raw);
                }
            }
        }
        Ok(n)
    }

    /// The integer attribute `name`, if set.
    pub fn int(&self, name: &str) -> Option<i64> {
        self.ints.iter().find(|(n, _)| n == name).map(|(_, v)| *v)
    }

    /// An operator of the default ONNX domain named `op`.
    pub fn is(&self, op: &str) -> bool {
        self.op_type == op && (self.domain.is_empty() || self.domain == "ai.onnx")
    }

    /// This node as `op` of `domain` on `inputs`, its outputs, name and
    /// other fields unchanged.
    pub fn encode_as(&self, op: &str, domain: &str, inputs: &[String]) -> Vec<u8> {
        let mut out = Vec::new();
        for i in inputs {
            put_bytes(&mut out, NODE_INPUT, i.as_bytes());
        }
        for o in &self.outputs {
            put_bytes(&mut out, NODE_OUTPUT, o.as_bytes());
        }
        if let Some(name) = self.name {
            put_bytes(&mut out, NODE_NAME, name);
        }
        put_bytes(&mut out, NODE_OP_TYPE, op.as_bytes());
        for raw in &self.rest {
            out.extend_from_slice(raw);
        }
        put_bytes(&mut out, NODE_DOMAIN, domain.as_bytes());
        out
    }
}

/// The parts of a `TensorProto` the rewrite reads.
#[derive(Default)]
pub(super) struct Tensor<'a> {
    pub name: String,
    pub dims: Vec<i64>,
    pub data_type: u64,
    /// Every field but the dimensions.
    pub rest: Vec<&'a [u8]>,
}

impl<'a> Tensor<'a> {
    pub fn parse(bytes: &'a [u8]) -> Result<Self, RewriteError> {
        let mut t = Tensor::default();
        for f in parse(bytes)? {
            match (f.number, f.value) {
                (TENSOR_DIMS, Value::Varint(v)) => t.dims.push(v as i64),
                (TENSOR_DIMS, Value::Bytes(packed)) => {
                    let mut pos = 0;
                    while pos < packed.len() {
                        t.dims.push(varint(packed, &mut pos)? as i64);
                    }
                }
                (TENSOR_DIMS, _) => return Err(RewriteError::Malformed("tensor dimensions")),
                _ => {
                    match f.number {
                        TENSOR_NAME => t.name = f.string()?,
                        TENSOR_DATA_TYPE => t.data_type = f.varint()?,
                        _ => {}
                    }
                    t.rest.push(f.raw);
                }
            }
        }
        Ok(t)
    }

    /// This tensor with `dims` (its data unchanged: same element count).
    pub fn encode_with_dims(&self, dims: &[i64]) -> Vec<u8> {
        let mut packed = Vec::new();
        for d in dims {
            put_varint(&mut packed, *d as u64);
        }
        let mut out = Vec::new();
        put_bytes(&mut out, TENSOR_DIMS, &packed);
        for raw in &self.rest {
            out.extend_from_slice(raw);
        }
        out
    }
}
