//! csv-processor
