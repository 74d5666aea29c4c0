//! JSON Schema: a body is JSON text, shown compact; JSON written is checked against the
//! schema's keywords that say what a value may be — `type`, `properties`, `required`,
//! `additionalProperties`, `items`, `enum`, `const`, `minimum`/`maximum` (and their
//! exclusive forms), `minLength`/`maxLength`, `minItems`/`maxItems`, `allOf`/`anyOf`/`oneOf`,
//! `not`, and `$ref`s: within the schema (`#/definitions/...`, `#/$defs/...`) and to the
//! schemas it references by name (`address.json`, `address.json#/definitions/zip`), whose own
//! local `$ref`s point into them. Other keywords (`pattern`, `format`...) are not checked.

use std::collections::HashMap;

use serde_json::{Map, Value};

/// How deep a value (or a chain of `$ref`s) may go.
const MAX_DEPTH: usize = 128;

/// How many (sub)schema checks one value may take, beyond [`STEPS_PER_BYTE`] per byte of its
/// text: combinators over `$ref`s to themselves would otherwise branch without end.
const MAX_STEPS: usize = 1 << 16;
const STEPS_PER_BYTE: usize = 16;

pub(super) struct JsonSchema {
    root: Value,
    /// The referenced schemas, by their reference's name (and by their `$id`).
    docs: HashMap<String, Value>,
}

impl JsonSchema {
    /// Parses a schema and the schemas it references (`(name, schema text)`).
    pub(super) fn parse(text: &str, refs: Vec<(String, String)>) -> Result<JsonSchema, String> {
        let root = document(text)?;
        let mut docs = HashMap::new();
        for (name, text) in refs {
            let doc = document(&text).map_err(|e| format!("reference {name}: {e}"))?;
            if let Some(id) = doc.get("$id").and_then(Value::as_str) {
                docs.entry(id.to_owned()).or_insert_with(|| doc.clone());
            }
            docs.insert(name, doc);
        }
        Ok(JsonSchema { root, docs })
    }

    /// The body as compact JSON text: its own text without the whitespace between tokens,
    /// so numbers stay digit for digit (an integer beyond 64 bits, `1.50`, `-0`).
    pub(super) fn decode(buf: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
        serde_json::from_slice::<serde::de::IgnoredAny>(buf).map_err(|e| e.to_string())?;
        let start = out.len();
        compact(buf, out).inspect_err(|_| out.truncate(start))
    }

    /// Checks JSON text against the schema and appends it compact (as written, but for the
    /// whitespace between tokens).
    pub(super) fn encode(&self, text: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
        let v: Value = serde_json::from_slice(text).map_err(|e| e.to_string())?;
        let mut steps = MAX_STEPS + STEPS_PER_BYTE * text.len();
        self.check(&self.root, &self.root, &v, 0, &mut steps)
            .map_err(|(path, what)| {
                if path.is_empty() {
                    format!("the value: {what}")
                } else {
                    format!("field {}: {what}", path_text(&path))
                }
            })?;
        compact(text, out)
    }

    /// The schema a (chain of) `$ref` points to, and the document it is in (where its own
    /// local `$ref`s point).
    fn resolve<'a>(
        &'a self,
        doc: &'a Value,
        schema: &'a Value,
    ) -> Result<(&'a Value, &'a Value), Failure> {
        let (mut doc, mut s) = (doc, schema);
        for _ in 0..MAX_DEPTH {
            let Some(r) = s.get("$ref").and_then(Value::as_str) else {
                return Ok((doc, s));
            };
            let (name, pointer) = r.split_once('#').unwrap_or((r, ""));
            if !name.is_empty() {
                doc = self
                    .docs
                    .get(name)
                    .ok_or_else(|| fail(format!("$ref {r}: {name} is not a reference")))?;
            }
            s = doc
                .pointer(pointer)
                .ok_or_else(|| fail(format!("$ref {r} not found")))?;
        }
        Err(fail("$ref chain too long"))
    }

    fn check(
        &self,
        doc: &Value,
        schema: &Value,
        v: &Value,
        depth: usize,
        steps: &mut usize,
    ) -> Result<(), Failure> {
        if depth > MAX_DEPTH || *steps == 0 {
            return Err(fail("nested too deeply, or too many checks"));
        }
        *steps -= 1;
        let (doc, schema) = self.resolve(doc, schema)?;
        let obj = match schema {
            Value::Bool(true) => return Ok(()),
            Value::Bool(false) => return Err(fail("no value is allowed here")),
            Value::Object(obj) => obj,
            _ => return Ok(()),
        };
        check_type(obj, v)?;
        check_values(obj, v)?;
        self.combinators(doc, obj, v, depth, steps)?;
        match v {
            Value::Object(map) => self.object(doc, obj, map, depth, steps),
            Value::Array(list) => {
                count(obj, list.len(), "minItems", "maxItems", "items")?;
                if let Some(items) = obj.get("items").filter(|i| i.is_object() || i.is_boolean()) {
                    for (n, item) in list.iter().enumerate() {
                        self.check(doc, items, item, depth + 1, steps)
                            .map_err(|e| at(e, format!("[{n}]")))?;
                    }
                }
                Ok(())
            }
            Value::String(s) => count(
                obj,
                s.chars().count(),
                "minLength",
                "maxLength",
                "characters",
            ),
            _ => Ok(()),
        }
    }

    fn combinators(
        &self,
        doc: &Value,
        obj: &Map<String, Value>,
        v: &Value,
        depth: usize,
        steps: &mut usize,
    ) -> Result<(), Failure> {
        let list = |k: &str| obj.get(k).and_then(Value::as_array).map(Vec::as_slice);
        for s in list("allOf").unwrap_or_default() {
            self.check(doc, s, v, depth + 1, steps)?;
        }
        let any = list("anyOf").map(|l| {
            l.iter()
                .any(|s| self.check(doc, s, v, depth + 1, steps).is_ok())
        });
        let one = list("oneOf").map(|l| {
            l.iter()
                .filter(|s| self.check(doc, s, v, depth + 1, steps).is_ok())
                .count()
        });
        if *steps == 0 {
            return Err(fail("too many checks"));
        }
        if any == Some(false) {
            return Err(fail("matches none of anyOf"));
        }
        if let Some(n) = one.filter(|&n| n != 1) {
            return Err(fail(format!("matches {n} of oneOf, not exactly one")));
        }
        let not = obj
            .get("not")
            .map(|n| self.check(doc, n, v, depth + 1, steps).is_ok());
        if *steps == 0 {
            return Err(fail("too many checks"));
        }
        if not == Some(true) {
            return Err(fail("matches what \"not\" excludes"));
        }
        Ok(())
    }

    fn object(
        &self,
        doc: &Value,
        obj: &Map<String, Value>,
        map: &Map<String, Value>,
        depth: usize,
        steps: &mut usize,
    ) -> Result<(), Failure> {
        let props = obj.get("properties").and_then(Value::as_object);
        for name in obj
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(name) = name.as_str()
                && !map.contains_key(name)
            {
                return Err(at(fail("missing, and it is required"), name.to_owned()));
            }
        }
        let additional = obj.get("additionalProperties");
        for (k, fv) in map {
            let res = match (props.and_then(|p| p.get(k)), additional) {
                (Some(s), _) => self.check(doc, s, fv, depth + 1, steps),
                (None, Some(Value::Bool(false))) => Err(fail("not in the schema")),
                (None, Some(s @ Value::Object(_))) => self.check(doc, s, fv, depth + 1, steps),
                (None, _) => Ok(()),
            };
            res.map_err(|e| at(e, k.clone()))?;
        }
        Ok(())
    }
}

/// Appends valid JSON `text` without the whitespace outside its strings; refused when it
/// nests deeper than [`MAX_DEPTH`].
fn compact(text: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
    let (mut in_string, mut escaped, mut depth) = (false, false, 0usize);
    out.reserve(text.len());
    for &b in text {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
        } else if matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
            continue;
        } else if b == b'"' {
            in_string = true;
        } else if b == b'[' || b == b'{' {
            depth += 1;
            if depth > MAX_DEPTH {
                return Err(format!("nested deeper than {MAX_DEPTH} levels"));
            }
        } else if b == b']' || b == b'}' {
            depth = depth.saturating_sub(1);
        }
        out.push(b);
    }
    Ok(())
}

/// A schema document: an object or a boolean.
fn document(text: &str) -> Result<Value, String> {
    let doc: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    if !doc.is_object() && !doc.is_boolean() {
        return Err("a JSON Schema is an object or a boolean".into());
    }
    Ok(doc)
}

/// The path to the field (innermost first) and what is wrong.
type Failure = (Vec<String>, String);

fn fail(what: impl Into<String>) -> Failure {
    (Vec::new(), what.into())
}

fn at(mut f: Failure, seg: String) -> Failure {
    f.0.push(seg);
    f
}

fn path_text(path: &[String]) -> String {
    let mut s = String::new();
    for seg in path.iter().rev() {
        if !seg.starts_with('[') && !s.is_empty() {
            s.push('.');
        }
        s.push_str(seg);
    }
    s
}

fn type_matches(ty: &str, v: &Value) -> bool {
    match ty {
        "null" => v.is_null(),
        "boolean" => v.is_boolean(),
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "number" => v.is_number(),
        "integer" => v.is_i64() || v.is_u64() || v.as_f64().is_some_and(|f| f.fract() == 0.0),
        _ => true,
    }
}

fn check_type(obj: &Map<String, Value>, v: &Value) -> Result<(), Failure> {
    let ok = match obj.get("type") {
        Some(Value::String(t)) => type_matches(t, v),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .any(|t| type_matches(t, v)),
        _ => true,
    };
    if ok {
        Ok(())
    } else {
        Err(fail(format!("{v} is not of type {}", obj["type"])))
    }
}

fn check_values(obj: &Map<String, Value>, v: &Value) -> Result<(), Failure> {
    if let Some(list) = obj.get("enum").and_then(Value::as_array)
        && !list.iter().any(|e| e == v || num_eq(e, v))
    {
        return Err(fail(format!(
            "{v} is not one of {}",
            Value::Array(list.clone())
        )));
    }
    if let Some(c) = obj.get("const")
        && c != v
        && !num_eq(c, v)
    {
        return Err(fail(format!("{v} is not {c}")));
    }
    let Some(x) = v.as_f64() else { return Ok(()) };
    let bound = |k: &str| obj.get(k).and_then(Value::as_f64);
    let checks = [
        ("minimum", bound("minimum").is_some_and(|m| x < m)),
        ("maximum", bound("maximum").is_some_and(|m| x > m)),
        (
            "exclusiveMinimum",
            bound("exclusiveMinimum").is_some_and(|m| x <= m),
        ),
        (
            "exclusiveMaximum",
            bound("exclusiveMaximum").is_some_and(|m| x >= m),
        ),
    ];
    match checks.iter().find(|(_, broken)| *broken) {
        Some((k, _)) => Err(fail(format!("{v} is out of range ({k} {})", obj[*k]))),
        None => Ok(()),
    }
}

fn num_eq(a: &Value, b: &Value) -> bool {
    matches!((a.as_f64(), b.as_f64()), (Some(x), Some(y)) if x == y)
}

fn count(
    obj: &Map<String, Value>,
    n: usize,
    min: &str,
    max: &str,
    what: &str,
) -> Result<(), Failure> {
    let n = n as u64;
    if let Some(m) = obj.get(min).and_then(Value::as_u64)
        && n < m
    {
        return Err(fail(format!("{n} {what}, fewer than {min} {m}")));
    }
    if let Some(m) = obj.get(max).and_then(Value::as_u64)
        && n > m
    {
        return Err(fail(format!("{n} {what}, more than {max} {m}")));
    }
    Ok(())
}
