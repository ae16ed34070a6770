//! Runs the built component through the real mem-host runtime.
//! Build it first: `cargo build --release --target wasm32-wasip2`.

use mem_core::plugin::{Capability, World};
use mem_plugin_harness::Harness;

#[test]
fn cases_through_the_real_runtime() {
    let wasm = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target/wasm32-wasip2/release/csv_processor.wasm");
    assert!(
        wasm.is_file(),
        "build the plugin first: cargo build --release --target wasm32-wasip2"
    );
    let h = Harness::new().unwrap();
    h.install_built(
        &wasm,
        "csv",
        World::Processor,
        &[Capability::Log, Capability::Config],
    )
    .unwrap();
    let cases = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cases");
    assert_eq!(h.check_cases("csv", cases).unwrap(), 2);
}
