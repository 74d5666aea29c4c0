//! Protobuf schemas (`.proto` text compiled at run time, or a base64 `FileDescriptorProto` as
//! Confluent's clients register them) and bodies: the message indexes after the id select
//! the message, the body shows as Google's JSON mapping (lowerCamelCase names, default values
//! left out, 64-bit integers as strings, enums by name, well-known types in their JSON forms).

use std::collections::HashMap;

use base64::Engine;
use prost_reflect::prost::Message;
use prost_reflect::{DescriptorPool, DynamicMessage, FileDescriptor, MessageDescriptor};
use protox::file::{ChainFileResolver, File, FileResolver, GoogleFileResolver};

/// The name the registry's schema is compiled under when it is `.proto` text.
const MAIN: &str = "topicfs-schema.proto";

/// How many message indexes a value may give (nesting depth of the message it names).
const MAX_INDEXES: usize = 64;

pub(super) struct Proto {
    file: FileDescriptor,
}

/// The files Confluent's clients and registry let a schema import without a reference
/// (besides Google's well-known types, `google/protobuf/*`): `confluent/*` (field tags and
/// rules, Confluent's decimal) and Google's common types `google/type/*`.
pub(super) const BUILTIN: &[(&str, &str)] = &[
    (
        "confluent/meta.proto",
        include_str!("protos/confluent/meta.proto"),
    ),
    (
        "confluent/type/decimal.proto",
        include_str!("protos/confluent/type/decimal.proto"),
    ),
    (
        "google/type/calendar_period.proto",
        include_str!("protos/google/type/calendar_period.proto"),
    ),
    (
        "google/type/color.proto",
        include_str!("protos/google/type/color.proto"),
    ),
    (
        "google/type/date.proto",
        include_str!("protos/google/type/date.proto"),
    ),
    (
        "google/type/datetime.proto",
        include_str!("protos/google/type/datetime.proto"),
    ),
    (
        "google/type/dayofweek.proto",
        include_str!("protos/google/type/dayofweek.proto"),
    ),
    (
        "google/type/decimal.proto",
        include_str!("protos/google/type/decimal.proto"),
    ),
    (
        "google/type/expr.proto",
        include_str!("protos/google/type/expr.proto"),
    ),
    (
        "google/type/fraction.proto",
        include_str!("protos/google/type/fraction.proto"),
    ),
    (
        "google/type/interval.proto",
        include_str!("protos/google/type/interval.proto"),
    ),
    (
        "google/type/latlng.proto",
        include_str!("protos/google/type/latlng.proto"),
    ),
    (
        "google/type/localized_text.proto",
        include_str!("protos/google/type/localized_text.proto"),
    ),
    (
        "google/type/money.proto",
        include_str!("protos/google/type/money.proto"),
    ),
    (
        "google/type/month.proto",
        include_str!("protos/google/type/month.proto"),
    ),
    (
        "google/type/phone_number.proto",
        include_str!("protos/google/type/phone_number.proto"),
    ),
    (
        "google/type/postal_address.proto",
        include_str!("protos/google/type/postal_address.proto"),
    ),
    (
        "google/type/quaternion.proto",
        include_str!("protos/google/type/quaternion.proto"),
    ),
    (
        "google/type/timeofday.proto",
        include_str!("protos/google/type/timeofday.proto"),
    ),
];

/// The files of [`BUILTIN`].
struct Builtin;

impl FileResolver for Builtin {
    fn open_file(&self, name: &str) -> Result<File, protox::Error> {
        match BUILTIN.iter().find(|(n, _)| *n == name) {
            Some((name, text)) => File::from_source(name, text),
            None => Err(protox::Error::file_not_found(name)),
        }
    }
}

/// The files a schema can import: its references by name, then Google's well-known types.
struct Files {
    files: HashMap<String, String>,
}

impl FileResolver for Files {
    fn open_file(&self, name: &str) -> Result<File, protox::Error> {
        let text = self
            .files
            .get(name)
            .ok_or_else(|| protox::Error::file_not_found(name))?;
        open(name, text)
    }
}

/// A file from registry text: a base64 `FileDescriptorProto`, or `.proto` source.
fn open(name: &str, text: &str) -> Result<File, protox::Error> {
    let trimmed = text.trim();
    if let Ok(raw) = base64::engine::general_purpose::STANDARD.decode(trimmed)
        && let Ok(mut fdp) = prost_reflect::prost_types::FileDescriptorProto::decode(raw.as_slice())
    {
        fdp.name = Some(name.to_owned());
        return Ok(File::from_file_descriptor_proto(fdp));
    }
    File::from_source(name, text)
}

impl Proto {
    /// Compiles `schema` with its references (`(import name, schema text)`).
    pub(super) fn compile(schema: &str, refs: Vec<(String, String)>) -> Result<Proto, String> {
        let mut files: HashMap<String, String> = refs.into_iter().collect();
        files.insert(MAIN.to_owned(), schema.to_owned());
        let mut chain = ChainFileResolver::new();
        chain.add(Files { files });
        chain.add(GoogleFileResolver::new());
        chain.add(Builtin);
        let mut compiler = protox::Compiler::with_file_resolver(chain);
        compiler.include_imports(true);
        compiler.open_file(MAIN).map_err(|e| e.to_string())?;
        let pool: DescriptorPool = compiler.descriptor_pool();
        let file = pool
            .get_file_by_name(MAIN)
            .ok_or("the schema's file is missing")?;
        Ok(Proto { file })
    }

    /// The message that message indexes name: the file's top-level message, then nested.
    fn message(&self, indexes: &[usize]) -> Result<MessageDescriptor, String> {
        let missing = || format!("no message at indexes {indexes:?}");
        let (&first, rest) = indexes.split_first().ok_or_else(missing)?;
        let mut msg = self.file.messages().nth(first).ok_or_else(missing)?;
        for &i in rest {
            let child = msg.child_messages().nth(i);
            msg = child.ok_or_else(missing)?;
        }
        Ok(msg)
    }

    /// Decodes the message indexes and body after the id; appends the JSON text.
    pub(super) fn decode(&self, buf: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
        let (indexes, body) = indexes(buf)?;
        let desc = self.message(&indexes)?;
        let msg = DynamicMessage::decode(desc, body).map_err(|e| e.to_string())?;
        let mut ser = serde_json::Serializer::new(out);
        serde::Serialize::serialize(&msg, &mut ser).map_err(|e| e.to_string())
    }

    /// Encodes JSON text as the file's first message: indexes `[0]` (one byte 0), the body.
    pub(super) fn encode(&self, text: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
        let desc = self.message(&[0])?;
        let mut de = serde_json::Deserializer::from_slice(text);
        let msg = DynamicMessage::deserialize(desc, &mut de).map_err(|e| e.to_string())?;
        de.end().map_err(|e| e.to_string())?;
        out.push(0);
        msg.encode(out).map_err(|e| e.to_string())
    }
}

fn varint(buf: &[u8], pos: &mut usize) -> Result<i64, String> {
    let mut v: u64 = 0;
    for shift in (0..64).step_by(7) {
        let &b = buf.get(*pos).ok_or("message indexes truncated")?;
        *pos += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Ok((v >> 1) as i64 ^ -((v & 1) as i64));
        }
    }
    Err("message index varint too long".into())
}

/// Confluent's message indexes: a zigzag varint count, then that many zigzag varint indexes;
/// a count of 0 means `[0]`. Returns them and the body after them.
fn indexes(buf: &[u8]) -> Result<(Vec<usize>, &[u8]), String> {
    let mut pos = 0;
    let count = varint(buf, &mut pos)?;
    if count == 0 {
        return Ok((vec![0], &buf[pos..]));
    }
    let count = usize::try_from(count)
        .ok()
        .filter(|&c| c <= MAX_INDEXES && c <= buf.len() - pos)
        .ok_or_else(|| format!("message index count {count} out of range"))?;
    let mut list = Vec::with_capacity(count);
    for _ in 0..count {
        let i = varint(buf, &mut pos)?;
        list.push(usize::try_from(i).map_err(|_| format!("negative message index {i}"))?);
    }
    Ok((list, &buf[pos..]))
}
