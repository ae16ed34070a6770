//! The structured errors a plugin call ends in: what failed, which limit
//! applied, and what the owner or the plugin's author can do about it.

use mem_core::plugin::{Capability, FailureReason, PluginManifest, ResolvedLimits};
use mem_core::{ErrorCode, MemError};

use crate::state::Denial;

pub(super) fn internal(context: &str, e: impl std::fmt::Display) -> MemError {
    MemError::internal(format!("{context}: {e}"))
}

/// `plugin_failed`, with the reason and the limit that applied.
pub(super) fn failed(
    manifest: &PluginManifest,
    reason: FailureReason,
    message: &str,
    limits: &ResolvedLimits,
) -> MemError {
    let name = &manifest.name;
    let hint = match reason {
        FailureReason::Deadline => format!(
            "the call ran past {} ms; if the input is legitimately large raise [plugins.{name}.limits] timeout_ms in mem.toml, otherwise report the plugin to its author",
            limits.timeout_ms
        ),
        FailureReason::Memory => format!(
            "the call needed more than {} MiB; raise [plugins.{name}.limits] memory_mib in mem.toml if that is expected",
            limits.memory_bytes / (1024 * 1024)
        ),
        FailureReason::Output => format!(
            "the plugin returned more than {} KiB or an invalid result; raise [plugins.{name}.limits] output_kib if its output is legitimate, otherwise report it to its author",
            limits.output_bytes / 1024
        ),
        FailureReason::Trap => format!(
            "the plugin crashed; `mem-host plugin inspect {name}` shows repeated failures; report it to its author"
        ),
        FailureReason::Error => "the plugin rejected this input; see the message".to_string(),
    };
    let code = if reason == FailureReason::Error {
        ErrorCode::PluginRejected
    } else {
        ErrorCode::PluginFailed
    };
    MemError::new(
        code,
        format!(
            "plugin '{name}' {} failed ({}): {message}",
            manifest.version,
            reason.as_str()
        ),
    )
    .with_hint(hint)
    .with_details(serde_json::json!({
        "plugin": name,
        "version": manifest.version,
        "reason": reason.as_str(),
    }))
}

pub(super) fn capability_denied(manifest: &PluginManifest, denial: Denial) -> MemError {
    let name = &manifest.name;
    let cap = denial.capability;
    let (message, hint) = if denial.requested {
        (
            format!(
                "plugin '{name}' {} needs capability '{cap}', which this workspace has not granted",
                manifest.version
            ),
            if cap == Capability::Fs {
                format!("run `mem-host plugin grant {name} fs --path /folder/to/expose`")
            } else {
                format!("run `mem-host plugin grant {name} {cap}`")
            },
        )
    } else {
        (
            format!(
                "plugin '{name}' {} used capability '{cap}' without requesting it in its manifest",
                manifest.version
            ),
            format!(
                "the plugin's author must add \"{cap}\" to capabilities in manifest.json; after reinstalling, run `mem-host plugin grant {name} {cap}`"
            ),
        )
    };
    MemError::new(ErrorCode::CapabilityDenied, message)
        .with_hint(hint)
        .with_details(serde_json::json!({
            "plugin": name,
            "version": manifest.version,
            "capability": cap.as_str(),
            "requested": denial.requested,
        }))
}
