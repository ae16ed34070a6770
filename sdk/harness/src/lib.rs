//! mem-plugin-harness
