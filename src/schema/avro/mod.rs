//! Avro schemas (the 1.12 specification's JSON form) parsed into a tree the decoder and the
//! encoder walk: named types (records, enums, fixed) live in an arena so that a record may
//! refer to itself. Logical types the shown form depends on (date, timestamp-millis/micros,
//! decimal) are nodes of their own; any other logical type is its underlying type.

mod decode;
mod encode;

use std::collections::HashMap;

use serde_json::{Map, Value};

/// How deep values may nest (records, arrays, maps, unions) before a body is refused.
pub(super) const MAX_DEPTH: usize = 100;

/// The most digits a decimal may have: a schema's `precision` beyond it makes the logical
/// type invalid (its values are their underlying type), so that a hostile precision or scale
/// never makes a value's text (or the bytes written) that long.
pub(super) const MAX_DECIMAL_PRECISION: u32 = 1_000;

/// A parsed schema: the root type and the named types it (and its references) declare.
pub(super) struct Avro {
    root: Node,
    named: Vec<Named>,
    /// Which named types take no bytes at all (records of such, fixed of size 0).
    empty: Vec<bool>,
}

#[derive(Clone, Debug)]
enum Node {
    Null,
    Boolean,
    Int,
    Long,
    Float,
    Double,
    Bytes,
    String,
    Named(usize),
    Array(Box<Node>),
    Map(Box<Node>),
    Union(Vec<Node>),
    Date,
    TimestampMillis,
    TimestampMicros,
    /// A decimal over bytes (`fixed: None`) or over a fixed type (its index in the arena).
    Decimal {
        precision: u32,
        scale: u32,
        fixed: Option<usize>,
    },
}

#[derive(Debug)]
enum Named {
    /// A name declared and not yet parsed (a record's own fields may refer to it).
    Pending(String),
    Record {
        name: String,
        fields: Vec<Field>,
    },
    Enum {
        name: String,
        symbols: Vec<String>,
    },
    Fixed {
        name: String,
        size: usize,
    },
}

#[derive(Debug)]
struct Field {
    name: String,
    node: Node,
    default: Option<Value>,
}

impl Named {
    fn name(&self) -> &str {
        match self {
            Named::Pending(n)
            | Named::Record { name: n, .. }
            | Named::Enum { name: n, .. }
            | Named::Fixed { name: n, .. } => n,
        }
    }
}

/// Parses schemas: the referenced ones first (their named types become known), the root last.
#[derive(Default)]
pub(super) struct Parser {
    named: Vec<Named>,
    names: HashMap<String, usize>,
}

impl Parser {
    /// Parses a referenced schema's text: only its named types are kept.
    pub(super) fn reference(&mut self, text: &str) -> Result<(), String> {
        let json: Value = serde_json::from_str(text).map_err(|e| format!("reference: {e}"))?;
        self.node(&json, "", 0).map(|_| ())
    }

    pub(super) fn finish(mut self, text: &str) -> Result<Avro, String> {
        let json: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
        let root = self.node(&json, "", 0)?;
        if let Some(n) = self.named.iter().find(|n| matches!(n, Named::Pending(_))) {
            return Err(format!("type {} is not defined", n.name()));
        }
        Ok(Avro {
            root,
            empty: empty_types(&self.named),
            named: self.named,
        })
    }

    fn node(&mut self, json: &Value, ns: &str, depth: usize) -> Result<Node, String> {
        if depth > MAX_DEPTH {
            return Err("schema nested too deeply".into());
        }
        match json {
            Value::String(name) => self.by_name(name, ns),
            Value::Array(branches) => {
                let mut nodes = Vec::with_capacity(branches.len());
                for b in branches {
                    let node = self.node(b, ns, depth + 1)?;
                    if matches!(node, Node::Union(_)) {
                        return Err("a union directly inside a union".into());
                    }
                    nodes.push(node);
                }
                Ok(Node::Union(nodes))
            }
            Value::Object(obj) => self.complex(obj, ns, depth),
            other => Err(format!("not a schema: {other}")),
        }
    }

    fn by_name(&self, name: &str, ns: &str) -> Result<Node, String> {
        Ok(match name {
            "null" => Node::Null,
            "boolean" => Node::Boolean,
            "int" => Node::Int,
            "long" => Node::Long,
            "float" => Node::Float,
            "double" => Node::Double,
            "bytes" => Node::Bytes,
            "string" => Node::String,
            _ => {
                let full = full_name(name, ns);
                let idx = self
                    .names
                    .get(&full)
                    .or_else(|| self.names.get(name))
                    .ok_or_else(|| format!("unknown type {name}"))?;
                Node::Named(*idx)
            }
        })
    }

    fn complex(
        &mut self,
        obj: &Map<String, Value>,
        ns: &str,
        depth: usize,
    ) -> Result<Node, String> {
        let ty = obj.get("type").ok_or("a schema object without \"type\"")?;
        let node = match ty.as_str() {
            Some("record" | "error") => self.record(obj, ns, depth)?,
            Some("enum") => {
                let (name, _) = self.declare(obj, ns)?;
                let symbols = obj
                    .get("symbols")
                    .and_then(Value::as_array)
                    .ok_or("an enum without symbols")?
                    .iter()
                    .map(|s| {
                        s.as_str()
                            .map(str::to_owned)
                            .ok_or("a symbol is not a string")
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                self.define(name, |name| Named::Enum { name, symbols })
            }
            Some("fixed") => {
                let (name, _) = self.declare(obj, ns)?;
                let size = obj
                    .get("size")
                    .and_then(Value::as_u64)
                    .ok_or("a fixed without size")?;
                let size = usize::try_from(size).map_err(|_| "fixed size too large")?;
                self.define(name, |name| Named::Fixed { name, size })
            }
            Some("array") => {
                let items = obj.get("items").ok_or("an array without items")?;
                Node::Array(Box::new(self.node(items, ns, depth + 1)?))
            }
            Some("map") => {
                let values = obj.get("values").ok_or("a map without values")?;
                Node::Map(Box::new(self.node(values, ns, depth + 1)?))
            }
            _ => self.node(ty, ns, depth + 1)?,
        };
        Ok(self.logical(obj, node))
    }

    fn record(&mut self, obj: &Map<String, Value>, ns: &str, depth: usize) -> Result<Node, String> {
        let (name, inner_ns) = self.declare(obj, ns)?;
        let idx = self.named.len();
        self.names.insert(name.clone(), idx);
        self.named.push(Named::Pending(name.clone()));
        let mut fields = Vec::new();
        let list = obj
            .get("fields")
            .and_then(Value::as_array)
            .ok_or("a record without fields")?;
        for f in list {
            let fname = f
                .get("name")
                .and_then(Value::as_str)
                .ok_or("a field without name")?;
            let fty = f
                .get("type")
                .ok_or_else(|| format!("field {fname} has no type"))?;
            let node = self.node(fty, &inner_ns, depth + 1)?;
            if fields.iter().any(|f: &Field| f.name == fname) {
                return Err(format!("field {fname} twice"));
            }
            fields.push(Field {
                name: fname.to_owned(),
                node,
                default: f.get("default").cloned(),
            });
        }
        self.named[idx] = Named::Record { name, fields };
        Ok(Node::Named(idx))
    }

    /// A named type's full name and the namespace its own names resolve in.
    fn declare(&self, obj: &Map<String, Value>, ns: &str) -> Result<(String, String), String> {
        let name = obj
            .get("name")
            .and_then(Value::as_str)
            .ok_or("a named type without name")?;
        let ns = match obj.get("namespace").and_then(Value::as_str) {
            Some(own) if !name.contains('.') => own,
            _ => ns,
        };
        let full = full_name(name, ns);
        if self.names.contains_key(&full) {
            return Err(format!("type {full} defined twice"));
        }
        let inner = full.rsplit_once('.').map_or("", |(n, _)| n).to_owned();
        Ok((full, inner))
    }

    fn define(&mut self, name: String, make: impl FnOnce(String) -> Named) -> Node {
        let idx = self.named.len();
        self.names.insert(name.clone(), idx);
        self.named.push(make(name));
        Node::Named(idx)
    }

    /// The node a `logicalType` makes of its underlying type; an unknown or invalid one is
    /// ignored, as the specification says.
    fn logical(&self, obj: &Map<String, Value>, node: Node) -> Node {
        let Some(logical) = obj.get("logicalType").and_then(Value::as_str) else {
            return node;
        };
        match (logical, &node) {
            ("date", Node::Int) => Node::Date,
            ("timestamp-millis", Node::Long) => Node::TimestampMillis,
            ("timestamp-micros", Node::Long) => Node::TimestampMicros,
            ("decimal", Node::Bytes | Node::Named(_)) => {
                let fixed = match node {
                    Node::Named(i) => match &self.named[i] {
                        Named::Fixed { .. } => Some(i),
                        _ => return node,
                    },
                    _ => None,
                };
                let int = |k| {
                    obj.get(k)
                        .and_then(Value::as_u64)
                        .and_then(|v| u32::try_from(v).ok())
                };
                match (int("precision"), int("scale").unwrap_or(0)) {
                    (Some(precision), scale)
                        if precision > 0
                            && precision <= MAX_DECIMAL_PRECISION
                            && scale <= precision =>
                    {
                        Node::Decimal {
                            precision,
                            scale,
                            fixed,
                        }
                    }
                    _ => node,
                }
            }
            _ => node,
        }
    }
}

fn full_name(name: &str, ns: &str) -> String {
    if name.contains('.') || ns.is_empty() {
        name.to_owned()
    } else {
        format!("{ns}.{name}")
    }
}

impl Avro {
    /// The name of a union branch in Avro's JSON encoding.
    fn branch_name<'a>(&'a self, node: &Node) -> &'a str {
        match node {
            Node::Null => "null",
            Node::Boolean => "boolean",
            Node::Int | Node::Date => "int",
            Node::Long | Node::TimestampMillis | Node::TimestampMicros => "long",
            Node::Float => "float",
            Node::Double => "double",
            Node::Bytes | Node::Decimal { fixed: None, .. } => "bytes",
            Node::String => "string",
            Node::Array(_) => "array",
            Node::Map(_) => "map",
            Node::Union(_) => "union",
            Node::Named(i) | Node::Decimal { fixed: Some(i), .. } => self.named[*i].name(),
        }
    }

    /// Whether a value of this type can take no bytes at all (so a count of them is not
    /// bounded by the bytes left).
    fn can_be_empty(&self, node: &Node) -> bool {
        takes_no_bytes(node, &self.empty)
    }
}

/// Which named types take no bytes, found once per schema: a type named twice at every level
/// would otherwise be walked an exponential number of times. A record that holds itself
/// always takes bytes (its values end only through a union or an array).
fn empty_types(named: &[Named]) -> Vec<bool> {
    let mut empty = vec![false; named.len()];
    loop {
        let mut changed = false;
        for (i, n) in named.iter().enumerate() {
            let now = match n {
                Named::Record { fields, .. } => {
                    fields.iter().all(|f| takes_no_bytes(&f.node, &empty))
                }
                Named::Fixed { size, .. } => *size == 0,
                _ => false,
            };
            if now && !empty[i] {
                empty[i] = true;
                changed = true;
            }
        }
        if !changed {
            return empty;
        }
    }
}

fn takes_no_bytes(node: &Node, empty: &[bool]) -> bool {
    match node {
        Node::Null => true,
        Node::Named(i) | Node::Decimal { fixed: Some(i), .. } => empty[*i],
        _ => false,
    }
}

/// `[null, T]` or `[T, null]`: shown as T's value or null.
fn nullable(branches: &[Node]) -> Option<usize> {
    match branches {
        [Node::Null, t] if !matches!(t, Node::Null) => Some(1),
        [t, Node::Null] if !matches!(t, Node::Null) => Some(0),
        _ => None,
    }
}
