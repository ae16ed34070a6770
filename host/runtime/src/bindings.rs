//! Host-side bindings of every supported `mem:plugin` WIT version.
//!
//! One module per released WIT version (only `0.1.0` so far). A released
//! version is frozen: a new one goes beside it, the runtime keeps serving
//! the old one, and [`SUPPORTED_WIT_VERSIONS`] lists both (tested below).
//! Within a version the shared interfaces (`types` and the host imports)
//! are generated once, in `host`, and every world module reuses them, so
//! one implementation of the host imports serves all five worlds.

/// WIT package versions this runtime can run, newest first.
pub const SUPPORTED_WIT_VERSIONS: &[&str] = &["0.1.0"];

/// The WIT version a plugin built today targets.
pub const CURRENT_WIT_VERSION: &str = "0.1.0";

pub mod v0_1_0 {
    /// The host imports (`log`, `config`, `kv`, `embed`) and the `types` interface.
    pub mod host {
        wasmtime::component::bindgen!({
            path: "../../wit/v0.1.0",
            world: "mem:plugin/host@0.1.0",
        });
    }

    macro_rules! world {
        ($module:ident, $world:literal) => {
            pub mod $module {
                wasmtime::component::bindgen!({
                    path: "../../wit/v0.1.0",
                    world: $world,
                    with: {
                        "mem:plugin/types@0.1.0": crate::bindings::v0_1_0::host::mem::plugin::types,
                        "mem:plugin/log@0.1.0": crate::bindings::v0_1_0::host::mem::plugin::log,
                        "mem:plugin/config@0.1.0": crate::bindings::v0_1_0::host::mem::plugin::config,
                        "mem:plugin/kv@0.1.0": crate::bindings::v0_1_0::host::mem::plugin::kv,
                        "mem:plugin/embed@0.1.0": crate::bindings::v0_1_0::host::mem::plugin::embed,
                    },
                });
            }
        };
    }

    world!(processor, "mem:plugin/processor@0.1.0");
    world!(relation_detector, "mem:plugin/relation-detector@0.1.0");
    world!(policy, "mem:plugin/policy@0.1.0");
    world!(selector, "mem:plugin/selector@0.1.0");
    world!(adapter, "mem:plugin/adapter@0.1.0");

    pub use host::mem::plugin::types;
}

/// Whether a plugin built against WIT `version` can run here.
pub fn is_supported(version: &str) -> bool {
    SUPPORTED_WIT_VERSIONS.contains(&version)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compatibility_table() {
        assert!(is_supported("0.1.0"));
        assert!(SUPPORTED_WIT_VERSIONS.contains(&CURRENT_WIT_VERSION));
        assert!(
            !is_supported("0.2.0"),
            "0.x minor versions are not compatible"
        );
        assert!(!is_supported("1.0.0"));
        // The contract on disk is the one compiled in.
        let worlds = include_str!("../../../wit/v0.1.0/worlds.wit");
        assert!(worlds.contains(&format!("package mem:plugin@{CURRENT_WIT_VERSION};")));
    }
}
