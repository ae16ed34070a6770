//! Workspace bundles on every surface: `bundle.export` and
//! `bundle.import` are the owner's (`admin`), `bundle.verify` reads a
//! bundle only. The archive streams where a surface can stream (the CLI,
//! REST); the JSON forms carry it base64 (the CLI's socket to a server).

use super::fields;
use crate::access::Scope;
use crate::bundle::{self, ExportReport, ImportReport, VerifyReport};
use crate::door::{Caller, Operation, Replay};
use base64::Engine;
use mem_bundle::Limits;
use mem_core::{ErrorCode, MemError, MemResult, VPath};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};

/// `bundle.export`: the workspace, or what lies under `scope`, as one archive.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExportBundle {
    /// Only what lies under this path (default: everything).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "fields::opt_path")]
    pub scope: Option<String>,
}

impl Operation for ExportBundle {
    const NAME: &'static str = "bundle.export";
    const SCOPE: Scope = Scope::Admin;
    const REPLAY: Replay = Replay::None;
    type Output = ExportReport;

    fn run(self, c: &Caller<'_>) -> MemResult<ExportReport> {
        let mut bytes = Vec::new();
        let mut report = c.export_bundle(&self, &mut bytes)?;
        report.bundle_base64 = Some(base64::engine::general_purpose::STANDARD.encode(&bytes));
        Ok(report)
    }
}

/// `bundle.import`: a bundle into this empty workspace, all or nothing.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ImportBundle {
    /// The archive, base64 (JSON callers); a raw upload streams it instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "fields::opt_base64")]
    pub content_base64: Option<String>,
}

impl Operation for ImportBundle {
    const NAME: &'static str = "bundle.import";
    const SCOPE: Scope = Scope::Admin;
    const REPLAY: Replay = Replay::None;
    type Output = ImportReport;

    fn replayed(out: &ImportReport) -> bool {
        out.replayed
    }

    fn run(self, c: &Caller<'_>) -> MemResult<ImportReport> {
        let bytes = archive(self.content_base64.as_deref())?;
        c.import_bundle(&mut &bytes[..])
    }
}

/// `bundle.verify`: checks a bundle without importing it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VerifyBundle {
    /// The archive, base64 (JSON callers); a raw upload streams it instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "fields::opt_base64")]
    pub content_base64: Option<String>,
}

impl Operation for VerifyBundle {
    const NAME: &'static str = "bundle.verify";
    const SCOPE: Scope = Scope::Read;
    const REPLAY: Replay = Replay::None;
    type Output = VerifyReport;

    fn run(self, c: &Caller<'_>) -> MemResult<VerifyReport> {
        let bytes = archive(self.content_base64.as_deref())?;
        c.verify_bundle(&mut &bytes[..])
    }
}

fn archive(b64: Option<&str>) -> MemResult<Vec<u8>> {
    let bytes = match b64 {
        Some(text) => fields::decode_base64("content_base64", text)?,
        None => Vec::new(),
    };
    if bytes.is_empty() {
        return Err(MemError::new(ErrorCode::BadRequest, "no bundle was sent")
            .with_hint("send the archive `mem-host export` wrote, as the body (or content_base64)")
            .with_details(serde_json::json!({ "field": "content_base64" })));
    }
    Ok(bytes)
}

impl Caller<'_> {
    /// Writes the bundle to `out` as it is made.
    pub fn export_bundle(
        &self,
        req: &ExportBundle,
        out: &mut dyn Write,
    ) -> MemResult<ExportReport> {
        let svc = self.admin()?;
        let scope = req.scope.as_deref().map(VPath::parse).transpose()?;
        let contents = svc.bundle_contents(scope.as_ref())?;
        let store = svc.store();
        let created_at = mem_core::time::to_rfc3339(&mem_core::time::now());
        let written = mem_bundle::write(out, &contents, &created_at, &mut |sha| {
            store.open_blob(sha)?.ok_or_else(|| {
                MemError::new(ErrorCode::StoreCorrupt, format!("blob {sha} is not stored"))
                    .with_details(serde_json::json!({ "sha256": sha }))
            })
        })?;
        Ok(ExportReport {
            bundle: written.manifest_sha256,
            sha256: written.sha256,
            bytes: written.bytes,
            format_version: written.manifest.format_version,
            scope: written.manifest.scope,
            counts: written.manifest.counts,
            bundle_base64: None,
        })
    }

    /// Imports the bundle `input` streams into this workspace.
    pub fn import_bundle(&self, input: &mut dyn Read) -> MemResult<ImportReport> {
        self.admin()?.import_bundle(input, &Limits::default())
    }

    /// Checks the bundle `input` streams.
    pub fn verify_bundle(&self, input: &mut dyn Read) -> MemResult<VerifyReport> {
        self.require(Scope::Read)?;
        bundle::verify(input, &Limits::default())
    }
}
