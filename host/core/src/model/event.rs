use crate::time::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One entry of the append-only change log: what happened to which record.
/// Derived state (search indexes) is rebuilt by replaying these.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Event {
    /// Assigned by the store; strictly increasing.
    #[serde(default)]
    pub seq: u64,
    pub at: Timestamp,
    /// e.g. `memory.created`, `memory.archived`, `file.moved`.
    pub action: String,
    /// The record the action touched.
    pub target: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_version: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor: Option<String>,
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub data: Value,
}
