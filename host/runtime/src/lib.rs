//! The WebAssembly plugin runtime of mem-host (wasmtime components, capabilities, limits).
