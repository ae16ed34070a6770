//! The plugin seam: what the service layer needs from the WebAssembly
//! plugin runtime. Implemented by `mem-runtime`.
