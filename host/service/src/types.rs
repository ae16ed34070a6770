//! Typed memory (memdsl): domain types declared in workspace schema files,
//! each compiling to a runtime role that decides how recall and `check`
//! treat its memories. The built-in kinds are types too.
//!
//! A schema file is JSON:
//! ```json
//! {"namespace": "coding",
//!  "types": [{"name": "project_rule", "role": "constraint",
//!             "description": "A rule every change must follow",
//!             "fields": {"deny_any": {"required": true}, "severity": {"enum": ["must", "should"]}},
//!             "capabilities": ["check"]}]}
//! ```
//! Fields are memory attributes; a typed memory may carry only declared
//! fields, must carry the required ones, and values must be allowed ones.

use mem_core::model::BUILTIN_KINDS;
use mem_core::{ErrorCode, MemError, MemResult};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::BTreeMap;
use std::path::Path;

/// Runtime roles, in the order recall ranks their authority. `constraint`,
/// `guidance` and `assertion` are claims about a state (two can
/// contradict); an `occurrence` records one event (a run, a meeting, a
/// note), so two never contradict however alike they read.
pub const ROLES: &[&str] = &[
    "constraint",
    "guidance",
    "assertion",
    "occurrence",
    "question",
    "symbol",
];

/// Capabilities a type may declare.
pub const CAPABILITIES: &[&str] = &[
    // Its memories are evaluated by `check` (constraints with guards).
    "check",
    // A newer memory of the type may supersede an older one.
    "supersede",
];

/// Attribute names `check` reads on a constraint: newline-separated
/// phrases, or regexes prefixed `re:`.
pub const GUARD_WHEN_ANY: &str = "when_any";
pub const GUARD_DENY_ANY: &str = "deny_any";

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FieldSpec {
    #[serde(default)]
    pub required: bool,
    /// Allowed values (empty: any).
    #[serde(default, rename = "enum", skip_serializing_if = "Vec::is_empty")]
    pub allowed: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// A loaded type, as `types` lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TypeDef {
    /// `observation` for a built-in kind, `namespace.name` for a domain type.
    pub name: String,
    pub role: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Declared fields; a built-in kind accepts any attributes.
    pub fields: BTreeMap<String, FieldSpec>,
    pub capabilities: Vec<String>,
    pub builtin: bool,
    /// Schema file it came from (domain types).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SchemaFile {
    namespace: String,
    types: Vec<SchemaType>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SchemaType {
    name: String,
    role: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    fields: BTreeMap<String, FieldSpec>,
    #[serde(default)]
    capabilities: Vec<String>,
}

/// Every type a workspace knows, by name.
#[derive(Debug, Clone, PartialEq)]
pub struct TypeRegistry {
    types: BTreeMap<String, TypeDef>,
}

impl Default for TypeRegistry {
    fn default() -> Self {
        let types = BUILTIN_KINDS
            .iter()
            .map(|k| {
                let def = TypeDef {
                    name: (*k).to_string(),
                    role: builtin_role(k).to_string(),
                    description: None,
                    fields: BTreeMap::new(),
                    capabilities: Vec::new(),
                    builtin: true,
                    source: None,
                };
                ((*k).to_string(), def)
            })
            .collect();
        Self { types }
    }
}

/// The role a built-in kind plays.
fn builtin_role(kind: &str) -> &'static str {
    match kind {
        "decision" | "preference" => "guidance",
        "observation" | "note" => "occurrence",
        "task_state" | "artifact" => "symbol",
        // A binding rule (an AGENTS.md "never ..."): lands in MUST.
        "rule" => "constraint",
        _ => "assertion",
    }
}

fn schema_error(file: &str, msg: String) -> MemError {
    MemError::new(
        ErrorCode::ConfigInvalid,
        format!("type schema {file}: {msg}"),
    )
    .with_hint("fix the schema file named in mem.toml [types] files")
    .with_details(json!({ "file": file }))
}

fn valid_ident(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.starts_with(|c: char| c.is_ascii_lowercase())
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

impl TypeRegistry {
    /// Built-in kinds (with the owner's `roles` overrides) plus the domain
    /// types of `files` (relative to `base`).
    pub fn load(
        base: &Path,
        files: &[String],
        roles: &BTreeMap<String, String>,
    ) -> MemResult<Self> {
        let mut reg = Self::default();
        reg.override_roles(roles)?;
        for file in files {
            let path = base.join(file);
            let text = std::fs::read_to_string(&path)
                .map_err(|e| schema_error(file, format!("cannot read {}: {e}", path.display())))?;
            reg.add_schema(file, &text)?;
        }
        Ok(reg)
    }

    /// Adds the types of one schema document; duplicate names are refused.
    pub fn add_schema(&mut self, file: &str, text: &str) -> MemResult<()> {
        let schema: SchemaFile = serde_json::from_str(text)
            .map_err(|e| schema_error(file, format!("not a type schema: {e}")))?;
        if !valid_ident(&schema.namespace) {
            return Err(schema_error(
                file,
                format!(
                    "namespace {:?} must be lowercase letters, digits, _",
                    schema.namespace
                ),
            ));
        }
        for t in schema.types {
            if !valid_ident(&t.name) {
                return Err(schema_error(
                    file,
                    format!(
                        "type name {:?} must be lowercase letters, digits, _",
                        t.name
                    ),
                ));
            }
            let name = format!("{}.{}", schema.namespace, t.name);
            if !ROLES.contains(&t.role.as_str()) {
                return Err(schema_error(
                    file,
                    format!(
                        "{name}: unknown role {:?} (roles: {})",
                        t.role,
                        ROLES.join(", ")
                    ),
                ));
            }
            if let Some(c) = t
                .capabilities
                .iter()
                .find(|c| !CAPABILITIES.contains(&c.as_str()))
            {
                return Err(schema_error(
                    file,
                    format!(
                        "{name}: unknown capability {c:?} (capabilities: {})",
                        CAPABILITIES.join(", ")
                    ),
                ));
            }
            if let Some(prev) = self.types.get(&name) {
                return Err(schema_error(
                    file,
                    format!(
                        "type {name} is defined twice (also in {})",
                        prev.source.as_deref().unwrap_or("built-ins")
                    ),
                ));
            }
            self.types.insert(
                name.clone(),
                TypeDef {
                    name,
                    role: t.role,
                    description: t.description,
                    fields: t.fields,
                    capabilities: t.capabilities,
                    builtin: false,
                    source: Some(file.to_string()),
                },
            );
        }
        Ok(())
    }

    /// `[types] roles`: a built-in kind plays another role in this
    /// workspace (a domain type declares its own in its schema).
    pub fn override_roles(&mut self, roles: &BTreeMap<String, String>) -> MemResult<()> {
        for (kind, role) in roles {
            let bad = |msg: String| {
                MemError::new(
                    ErrorCode::ConfigInvalid,
                    format!("mem.toml is invalid: {msg}"),
                )
                .with_hint("[types] roles maps a built-in kind to one of the roles")
                .with_details(json!({ "key": format!("types.roles.{kind}") }))
            };
            if !ROLES.contains(&role.as_str()) {
                return Err(bad(format!(
                    "types.roles.{kind}: unknown role {role:?} (roles: {})",
                    ROLES.join(", ")
                )));
            }
            match self.types.get_mut(kind) {
                Some(def) if def.builtin => def.role = role.clone(),
                _ => {
                    return Err(bad(format!(
                        "types.roles.{kind}: not a built-in kind ({}); a domain type declares its role in its schema",
                        BUILTIN_KINDS.join(", ")
                    )));
                }
            }
        }
        Ok(())
    }

    /// The role of a memory of `kind` (a built-in kind or a domain type):
    /// the one table lanes, the selection chain and `check` read. `None`
    /// for a kind the workspace does not know (a file chunk's kind).
    pub fn role_of(&self, kind: &str) -> Option<&str> {
        self.types.get(kind).map(|d| d.role.as_str())
    }

    /// The kind a memory of `role` gets when its writer only knows the
    /// role (an adapter entry): a built-in kind playing it here, in
    /// [`BUILTIN_KINDS`] order, else a domain type playing it that
    /// requires no field. `None` when nothing plays the role.
    pub fn kind_with_role(&self, role: &str) -> Option<&str> {
        let builtin = BUILTIN_KINDS
            .iter()
            .filter_map(|k| self.types.get(*k))
            .find(|d| d.role == role);
        builtin
            .or_else(|| {
                self.types.values().find(|d| {
                    !d.builtin && d.role == role && d.fields.values().all(|f| !f.required)
                })
            })
            .map(|d| d.name.as_str())
    }

    pub fn all(&self) -> impl Iterator<Item = &TypeDef> {
        self.types.values()
    }

    /// The type of `kind`, or `unknown_memory_type` listing what exists.
    pub fn resolve(&self, kind: &str) -> MemResult<&TypeDef> {
        self.types.get(kind).ok_or_else(|| {
            let known: Vec<&str> = self.types.keys().map(String::as_str).collect();
            MemError::new(
                ErrorCode::UnknownMemoryType,
                format!("unknown memory type {kind:?}"),
            )
            .with_hint(format!(
                "use one of: {} (`mem-host types` lists them with their fields)",
                known.join(", ")
            ))
            .with_details(json!({ "kind": kind, "known": known }))
        })
    }

    /// Checks a memory's attributes against its type: every problem, not
    /// just the first, so one correction fixes the write.
    pub fn violations(&self, def: &TypeDef, attributes: &BTreeMap<String, String>) -> Vec<String> {
        if def.builtin {
            return Vec::new();
        }
        let mut out = Vec::new();
        for (name, spec) in &def.fields {
            match attributes.get(name) {
                None if spec.required => out.push(format!("missing required field {name:?}")),
                Some(v) if !spec.allowed.is_empty() && !spec.allowed.contains(v) => {
                    out.push(format!(
                        "field {name:?} is {v:?}; allowed: {}",
                        spec.allowed.join(", ")
                    ))
                }
                _ => {}
            }
        }
        for name in attributes.keys() {
            if !def.fields.contains_key(name) {
                out.push(format!(
                    "field {name:?} is not declared by type {}",
                    def.name
                ));
            }
        }
        out
    }

    /// [`Self::violations`] as a structured error.
    pub fn validate(&self, def: &TypeDef, attributes: &BTreeMap<String, String>) -> MemResult<()> {
        let problems = self.violations(def, attributes);
        if problems.is_empty() {
            return Ok(());
        }
        Err(MemError::bad_request(format!(
            "memory does not match type {}: {}",
            def.name,
            problems.join("; ")
        ))
        .with_hint("pass the type's fields with --attr NAME=VALUE; `mem-host types` shows them")
        .with_details(json!({ "type": def.name, "violations": problems })))
    }
}

impl crate::Service {
    /// The role of a memory of `kind` (built-in kind or domain type) in
    /// this workspace: see [`TypeRegistry::role_of`].
    pub fn role_of(&self, kind: &str) -> Option<String> {
        self.config()
            .types
            .registry
            .role_of(kind)
            .map(str::to_string)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CODING: &str = r#"{"namespace":"coding","types":[
        {"name":"project_rule","role":"constraint","capabilities":["check"],
         "fields":{"deny_any":{"required":true},"severity":{"enum":["must","should"]}}}]}"#;

    #[test]
    fn a_role_finds_a_builtin_kind_before_a_domain_type() {
        let mut reg = TypeRegistry::default();
        assert_eq!(reg.kind_with_role("constraint"), Some("rule"));
        assert_eq!(reg.kind_with_role("guidance"), Some("decision"));
        assert_eq!(reg.kind_with_role("question"), None);
        reg.add_schema(
            "q.json",
            r#"{"namespace":"t","types":[{"name":"open_q","role":"question"},
               {"name":"strict_q","role":"question","fields":{"x":{"required":true}}}]}"#,
        )
        .unwrap();
        // A type whose fields an adapter cannot fill is never picked.
        assert_eq!(reg.kind_with_role("question"), Some("t.open_q"));
    }

    #[test]
    fn builtin_kinds_have_roles() {
        let reg = TypeRegistry::default();
        assert_eq!(reg.resolve("decision").unwrap().role, "guidance");
        assert_eq!(reg.resolve("fact").unwrap().role, "assertion");
        assert_eq!(reg.role_of("preference"), Some("guidance"));
        assert_eq!(reg.role_of("text/markdown"), None);
        assert_eq!(reg.resolve("observation").unwrap().role, "occurrence");
        assert_eq!(
            reg.resolve("nope").unwrap_err().code,
            ErrorCode::UnknownMemoryType
        );
    }

    #[test]
    fn owner_overrides_a_builtin_role_but_not_a_domain_type() {
        let mut reg = TypeRegistry::default();
        reg.add_schema("coding.json", CODING).unwrap();
        let mut roles = BTreeMap::new();
        roles.insert("decision".to_string(), "constraint".to_string());
        reg.override_roles(&roles).unwrap();
        assert_eq!(reg.role_of("decision"), Some("constraint"));
        roles.insert("coding.project_rule".into(), "guidance".into());
        assert_eq!(
            reg.override_roles(&roles).unwrap_err().code,
            ErrorCode::ConfigInvalid
        );
        let law: BTreeMap<String, String> = [("fact".to_string(), "law".to_string())].into();
        assert!(
            reg.override_roles(&law)
                .unwrap_err()
                .message
                .contains("unknown role")
        );
    }

    #[test]
    fn domain_types_validate_fields() {
        let mut reg = TypeRegistry::default();
        reg.add_schema("coding.json", CODING).unwrap();
        let def = reg.resolve("coding.project_rule").unwrap().clone();
        assert_eq!(def.role, "constraint");
        let mut attrs = BTreeMap::new();
        assert_eq!(reg.violations(&def, &attrs).len(), 1);
        attrs.insert("deny_any".into(), "rm -rf".into());
        attrs.insert("severity".into(), "maybe".into());
        attrs.insert("color".into(), "red".into());
        let v = reg.violations(&def, &attrs);
        assert_eq!(v.len(), 2, "{v:?}");
        attrs.insert("severity".into(), "must".into());
        attrs.remove("color");
        assert!(reg.validate(&def, &attrs).is_ok());
    }

    #[test]
    fn bad_schemas_are_refused() {
        let mut reg = TypeRegistry::default();
        reg.add_schema("a.json", CODING).unwrap();
        assert_eq!(
            reg.add_schema("b.json", CODING).unwrap_err().code,
            ErrorCode::ConfigInvalid
        );
        let bad_role = r#"{"namespace":"x","types":[{"name":"t","role":"law"}]}"#;
        assert!(
            reg.add_schema("c.json", bad_role)
                .unwrap_err()
                .message
                .contains("unknown role")
        );
        assert!(reg.add_schema("d.json", "{").is_err());
    }
}
