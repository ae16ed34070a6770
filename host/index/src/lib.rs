//! Native recall hot path of mem-host: tantivy BM25, usearch vectors, ONNX embeddings.
