//! Turning a surface's JSON (a REST body, MCP tool arguments, a CLI's
//! request over the socket) into an operation's request type, with one
//! error shape for every surface. The JSON is first checked against the
//! operation's own published schema (tailored to the workspace), so the
//! schema a client validates against is exactly what the door enforces.

use super::{Caller, Operation};
use crate::Service;
use mem_core::{ErrorCode, MemError, MemResult};
use parking_lot::Mutex;
use schemars::generate::SchemaSettings;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// Compiled request schemas, per operation, for one workspace's settings.
#[derive(Default)]
pub(crate) struct Shapes {
    validators: Mutex<HashMap<&'static str, Arc<jsonschema::Validator>>>,
}

impl std::fmt::Debug for Shapes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Shapes")
    }
}

/// The request schema of `O`, inlined and tailored: what surfaces publish.
pub fn request_schema<O: schemars::JsonSchema>(config: &crate::WorkspaceConfig) -> Value {
    let mut g = SchemaSettings::draft2020_12()
        .with(|s| s.inline_subschemas = true)
        .into_generator();
    let mut schema = g.root_schema_for::<O>().to_value();
    crate::ops::fields::tailor(&mut schema, config);
    schema
}

impl Service {
    fn validator<O: Operation>(&self) -> MemResult<Arc<jsonschema::Validator>> {
        if let Some(v) = self.shapes.validators.lock().get(O::NAME) {
            return Ok(v.clone());
        }
        let schema = request_schema::<O>(&self.config());
        let v = jsonschema::options()
            .should_validate_formats(true)
            .build(&schema)
            .map_err(|e| {
                MemError::internal(format!("the schema of {} does not compile: {e}", O::NAME))
            })?;
        let v = Arc::new(v);
        self.shapes.validators.lock().insert(O::NAME, v.clone());
        Ok(v)
    }
}

impl Caller<'_> {
    /// `args` as the request of `O`, checked against its schema first.
    pub fn decode<O: Operation>(&self, mut args: Value) -> MemResult<O> {
        // Who may ask comes before what was asked: a caller without the
        // scope learns nothing from a validation error.
        self.require(O::SCOPE)?;
        whole_numbers(&mut args);
        let validator = self.svc.validator::<O>()?;
        if let Some(e) = validator.iter_errors(&args).next() {
            let config = self.svc.config();
            let schema = request_schema::<O>(&config);
            return Err(field_error(&schema, &config, &e)
                .unwrap_or_else(|| coded(&schema, &e, shape_error(O::NAME, &e))));
        }
        decode_args(O::NAME, args)
    }
}

/// A field whose rule has a code of its own (a path breaks `bad_path`, a
/// kind names an `unknown_memory_type`) is answered with that code and the
/// rule's own words, not a regular expression.
fn field_error(
    schema: &Value,
    config: &crate::WorkspaceConfig,
    e: &jsonschema::ValidationError<'_>,
) -> Option<MemError> {
    let at = e.schema_path.to_string();
    let (parent, keyword) = at.rsplit_once('/')?;
    let node = schema.pointer(parent)?;
    let value = e.instance.as_str()?;
    let field = e.instance_path.to_string();
    let with_field = |err: MemError| {
        let mut details = err.details.clone();
        if let Some(d) = details.as_object_mut() {
            d.insert("field".into(), field.clone().into());
        }
        err.with_details(details)
    };
    if node.get("x-mem-check").and_then(Value::as_str) == Some("path") {
        return mem_core::VPath::parse(value).err().map(with_field);
    }
    if node.get("x-mem-check").and_then(Value::as_str) == Some("period") {
        return crate::recall::period::parse_period(value)
            .err()
            .map(with_field);
    }
    if keyword == "enum" && node.get("x-mem-enum").and_then(Value::as_str) == Some("types") {
        return config.types.registry.resolve(value).err().map(with_field);
    }
    None
}

/// A part of a request that is a document of its own (a handoff) marks its
/// schema with `x-mem-code`: a break anywhere inside it carries that code,
/// and an unexpected field is named by its own pointer.
fn coded(schema: &Value, e: &jsonschema::ValidationError<'_>, err: MemError) -> MemError {
    let at = e.schema_path.to_string();
    let mut prefix = String::new();
    let mut code = None;
    for seg in at.split('/').skip(1) {
        prefix.push('/');
        prefix.push_str(seg);
        if let Some(c) = schema
            .pointer(&prefix)
            .and_then(|n| n.get("x-mem-code"))
            .and_then(|c| serde_json::from_value::<ErrorCode>(c.clone()).ok())
        {
            code = Some(c);
        }
    }
    let Some(code) = code else {
        return err;
    };
    let mut field = err
        .details
        .get("field")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    if let jsonschema::error::ValidationErrorKind::AdditionalProperties { unexpected } = &e.kind
        && let Some(name) = unexpected.first()
    {
        field = format!("{field}/{name}");
    }
    let mut details = err.details.clone();
    if let Some(d) = details.as_object_mut() {
        d.insert("field".into(), field.clone().into());
    }
    MemError::new(code, format!("{field}: {}", said(e)))
        .with_hint(code.default_hint())
        .with_details(details)
}

/// Longest rendering of a schema break in a message: the validator quotes
/// the offending value whole, which may be a megabyte of content.
const MAX_SAID_CHARS: usize = 300;

/// A schema break in words, the quoted value cut to [`MAX_SAID_CHARS`].
fn said(e: &jsonschema::ValidationError<'_>) -> String {
    let text = e.to_string();
    match text.char_indices().nth(MAX_SAID_CHARS) {
        Some((at, _)) => format!(
            "{}… ({} characters in all)",
            &text[..at],
            text.chars().count()
        ),
        None => text,
    }
}

/// The first way `args` breaks the schema, as the error a client acts on.
fn shape_error(operation: &str, e: &jsonschema::ValidationError<'_>) -> MemError {
    let mut field = e.instance_path.to_string();
    if let jsonschema::error::ValidationErrorKind::Required { property } = &e.kind {
        field = format!("{field}/{}", property.as_str().unwrap_or_default());
    }
    let keyword = e
        .schema_path
        .to_string()
        .rsplit('/')
        .next()
        .unwrap_or_default()
        .to_string();
    if field == "/confirm" {
        return MemError::new(
            ErrorCode::ConfirmationRequired,
            format!("{operation} erases content for good and needs confirm: true"),
        )
        .with_hint("send confirm: true if you mean it (and a reason)")
        .with_details(serde_json::json!({ "operation": operation, "field": "confirm" }));
    }
    let at = if field.is_empty() {
        "the request".to_string()
    } else {
        field.clone()
    };
    MemError::bad_request(format!(
        "invalid request for {operation}: {at}: {}",
        said(e)
    ))
    .with_hint(format!(
        "correct {at}; {operation}'s schema is in /v1/openapi.json and the MCP tool's input schema"
    ))
    .with_details(serde_json::json!({
        "operation": operation,
        "field": field,
        "rule": keyword,
    }))
}

/// Decodes `args` as `T`. A whole number written as a float (`2.0`) is an
/// integer, as JSON Schema counts it, so it is accepted where an integer
/// is expected.
pub fn decode_args<T: DeserializeOwned>(operation: &str, mut args: Value) -> MemResult<T> {
    whole_numbers(&mut args);
    serde_json::from_value(args).map_err(|e| {
        MemError::bad_request(format!("invalid request for {operation}: {e}"))
            .with_hint(format!(
                "send the fields {operation} documents (its JSON Schema in /v1/openapi.json, or the MCP tool's input schema)"
            ))
            .with_details(serde_json::json!({ "operation": operation }))
    })
}

/// Rewrites floats without a fraction (`2.0`) as integers, everywhere in
/// `v`; a float field still accepts the integer.
fn whole_numbers(v: &mut Value) {
    match v {
        Value::Number(n) if n.is_f64() => {
            if let Some(f) = n.as_f64()
                && f.fract() == 0.0
                && f.is_finite()
            {
                if f >= 0.0 && f < u64::MAX as f64 {
                    *v = Value::from(f as u64);
                } else if f < 0.0 && f >= i64::MIN as f64 {
                    *v = Value::from(f as i64);
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(whole_numbers),
        Value::Object(o) => o.values_mut().for_each(whole_numbers),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mem_core::ErrorCode;

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Req {
        n: u64,
        f: f64,
        #[serde(default)]
        neg: Option<i64>,
    }

    #[test]
    fn whole_floats_are_integers_and_fractions_are_not() {
        let r: Req = decode_args("t", serde_json::json!({"n": 2.0, "f": 3, "neg": -4.0})).unwrap();
        assert_eq!((r.n, r.f, r.neg), (2, 3.0, Some(-4)));
        let e = decode_args::<Req>("t", serde_json::json!({"n": 2.5, "f": 1})).unwrap_err();
        assert_eq!(e.code, ErrorCode::BadRequest);
        assert!(!e.hint.is_empty());
    }

    #[test]
    fn unknown_fields_name_the_field() {
        let e = decode_args::<Req>("t", serde_json::json!({"n": 1, "f": 1, "zz": 1})).unwrap_err();
        assert!(e.message.contains("zz"), "{}", e.message);
    }
}
