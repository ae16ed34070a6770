//! Turning path and query parameters into an operation's JSON request,
//! typed by the operation's own schema: `limit=5` becomes a number,
//! `parents=true` a boolean, `tags=a&tags=b` a list.

use crate::error::ApiError;
use mem_core::MemError;
use mem_service::door::OpEntry;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The JSON type a parameter is read as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ParamType {
    String,
    Integer,
    Number,
    Boolean,
    /// Repeated parameters (`tags=a&tags=b`) of strings.
    Array,
}

/// The parameter types of an operation's fields.
pub(crate) fn param_types(op: &OpEntry) -> BTreeMap<String, ParamType> {
    let schema = inline_input(op);
    let mut out = BTreeMap::new();
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (name, p) in props {
            out.insert(name.clone(), type_of(p));
        }
    }
    out
}

/// The operation's request schema with every definition inlined.
fn inline_input(op: &OpEntry) -> Value {
    op.request_schema(&mem_service::WorkspaceConfig::default())
}

fn type_of(schema: &Value) -> ParamType {
    let types: Vec<&str> = match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if types.contains(&"array") {
        ParamType::Array
    } else if types.contains(&"integer") {
        ParamType::Integer
    } else if types.contains(&"number") {
        ParamType::Number
    } else if types.contains(&"boolean") {
        ParamType::Boolean
    } else {
        ParamType::String
    }
}

/// One raw parameter value as JSON of its type; a value that does not
/// parse stays a string, and the operation's decoding names the field.
fn typed(t: ParamType, raw: &str) -> Value {
    match t {
        ParamType::Integer => raw
            .parse::<i64>()
            .map(Value::from)
            .or_else(|_| raw.parse::<u64>().map(Value::from))
            .or_else(|_| {
                raw.parse::<f64>()
                    .ok()
                    .and_then(serde_json::Number::from_f64)
                    .map(Value::Number)
                    .ok_or(())
            })
            .unwrap_or_else(|_| Value::String(raw.into())),
        ParamType::Number => raw
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map(Value::Number)
            .unwrap_or_else(|| Value::String(raw.into())),
        ParamType::Boolean => match raw {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            _ => Value::String(raw.into()),
        },
        ParamType::String | ParamType::Array => Value::String(raw.into()),
    }
}

/// Adds the query string's parameters to `args`. Unknown names are kept
/// (the operation refuses them by name).
pub(crate) fn add_query(
    args: &mut Map<String, Value>,
    types: &BTreeMap<String, ParamType>,
    query: Option<&str>,
) -> Result<(), ApiError> {
    let Some(q) = query else { return Ok(()) };
    for (k, v) in form_urlencoded::parse(q.as_bytes()) {
        let t = types.get(k.as_ref()).copied().unwrap_or(ParamType::String);
        if t == ParamType::Array {
            let list = args
                .entry(k.to_string())
                .or_insert_with(|| Value::Array(Vec::new()));
            if let Value::Array(a) = list {
                a.push(Value::String(v.to_string()));
            }
            continue;
        }
        if args.contains_key(k.as_ref()) {
            return Err(ApiError(
                MemError::bad_request(format!("query parameter {k:?} is given twice"))
                    .with_hint("give each parameter once"),
            ));
        }
        args.insert(k.to_string(), typed(t, &v));
    }
    Ok(())
}

/// Adds a path parameter; a body field of the same name must agree.
pub(crate) fn add_path(
    args: &mut Map<String, Value>,
    types: &BTreeMap<String, ParamType>,
    name: &str,
    raw: &str,
) -> Result<(), ApiError> {
    let t = types.get(name).copied().unwrap_or(ParamType::String);
    let v = typed(t, raw);
    match args.get(name) {
        Some(existing) if *existing != v => Err(ApiError(
            MemError::bad_request(format!(
                "{name} is given in the path and, differently, in the request"
            ))
            .with_hint(format!("leave {name} out of the body: the path names it")),
        )),
        _ => {
            args.insert(name.to_string(), v);
            Ok(())
        }
    }
}

/// Adds the `Idempotency-Key` header as the request's `idempotency_key`
/// (an alias of the field); both given must agree.
pub(crate) fn add_key(args: &mut Map<String, Value>, header: Option<&str>) -> Result<(), ApiError> {
    let Some(h) = header else { return Ok(()) };
    match args.get("idempotency_key") {
        Some(Value::String(b)) if b != h => Err(ApiError(
            MemError::bad_request(
                "the Idempotency-Key header and the body's idempotency_key differ",
            )
            .with_hint("send the key once"),
        )),
        _ => {
            args.insert("idempotency_key".into(), Value::String(h.to_string()));
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mem_service::door::entry;

    #[test]
    fn query_values_take_their_field_types() {
        let op = entry::<mem_service::ListMemories>();
        let types = param_types(&op);
        let mut args = Map::new();
        add_query(&mut args, &types, Some("limit=5&path=%2Fa&lifecycle=all")).unwrap();
        assert_eq!(args["limit"], 5);
        assert_eq!(args["path"], "/a");
        let put = entry::<mem_service::ops::files::PutFileRequest>();
        let types = param_types(&put);
        let mut args = Map::new();
        add_query(&mut args, &types, Some("tags=a&tags=b&replace=true&wait=2")).unwrap();
        assert_eq!(args["tags"], serde_json::json!(["a", "b"]));
        assert_eq!(args["replace"], true);
        assert_eq!(
            args["wait"], "2",
            "a bad boolean stays text for the decoder to name"
        );
    }

    #[test]
    fn the_path_and_the_body_must_agree() {
        let op = entry::<mem_service::ops::memories::Archive>();
        let types = param_types(&op);
        let mut args = Map::new();
        args.insert("id".into(), "mem_a".into());
        assert!(add_path(&mut args, &types, "id", "mem_b").is_err());
        assert!(add_path(&mut args, &types, "id", "mem_a").is_ok());
        assert!(add_key(&mut args, Some("k")).is_ok());
        assert!(add_key(&mut args, Some("other")).is_err());
    }
}
