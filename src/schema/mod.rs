//! Schema-encoded keys and values: Confluent's wire format (byte 0 = 0, a 4-byte big-endian
//! schema id, then an Avro binary body, a Protobuf body after its message indexes, or JSON
//! Schema JSON), shown to readers as JSON and taken from writers as JSON.
//!
//! [`Registry`] holds the schemas a mount knows, by global id and by subject, fed by the
//! records of the registry's own `_schemas` topic ([`Registry::apply_record`]) or by schemas
//! fetched some other way ([`Registry::insert`]). It knows nothing of files, topics on disk or
//! FUSE: the fs core and the append path ask it to decode and encode bytes.

mod avro;
mod json;
mod protobuf;
mod state;
#[cfg(test)]
mod tests;
mod text;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use crate::util::sync::RwLockExt;
use state::{Compiled, State};

/// The registry's own topic, as Confluent Schema Registry and Karapace name it.
pub const SCHEMAS_TOPIC: &str = "_schemas";

/// The byte that starts every value in Confluent's wire format.
pub const WIRE_MAGIC: u8 = 0;

/// The schema languages of the registry (`schemaType`; absent means Avro).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    Avro,
    Protobuf,
    Json,
}

/// A schema's reference to another subject's version (`references` of a registry schema).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reference {
    pub name: String,
    pub subject: String,
    pub version: u32,
}

/// Why a key or value is shown raw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    /// Not in the wire format (no magic byte 0, or shorter than 5 bytes): shown raw, no log.
    NotWire,
    /// The id is not (or no longer) known.
    UnknownId(u32),
    /// The id is known, the bytes do not decode with its schema (the reason says where).
    Bad { id: u32, reason: String },
}

/// Why JSON written by a client was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EncodeError {
    /// The JSON does not match the subject's latest schema; the reason names the field.
    Invalid { id: u32, reason: String },
}

/// The schemas a mount knows. Shared by every thread of a mount (`Arc<Registry>`).
#[derive(Default)]
pub struct Registry {
    state: RwLock<State>,
    generation: AtomicU64,
}

impl Registry {
    pub fn new() -> Registry {
        Registry::default()
    }

    /// Applies one record of the `_schemas` topic, key and value as stored (a `None` value is
    /// a tombstone). Records that are not schemas (`CONFIG`, `MODE`, `NOOP`...) or do not
    /// parse are ignored.
    pub fn apply_record(&self, key: Option<&[u8]>, value: Option<&[u8]>) {
        let Some(change) = state::parse_record(key, value) else {
            return;
        };
        if self.state.write_guard().apply(change) {
            self.generation.fetch_add(1, Ordering::Release);
        }
    }

    /// Adds a schema known by its id from elsewhere (the registry's REST API), optionally
    /// as the given subject's version.
    pub fn insert(
        &self,
        id: u32,
        subject: Option<(&str, u32)>,
        kind: Kind,
        schema: &str,
        references: &[Reference],
    ) {
        let entry = state::Entry::new(kind, schema, references.to_vec());
        let changed = {
            let mut st = self.state.write_guard();
            match subject {
                Some((subject, version)) => st.add_version(subject, version, id, entry),
                None => st.pin(id, entry),
            }
        };
        if changed {
            self.generation.fetch_add(1, Ordering::Release);
        }
    }

    /// Counts every change of the known schemas (what a rendering depends on).
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// The schema id of `bytes` when they are in the wire format.
    pub fn wire_id(bytes: &[u8]) -> Option<u32> {
        match bytes {
            [WIRE_MAGIC, a, b, c, d, ..] => Some(u32::from_be_bytes([*a, *b, *c, *d])),
            _ => None,
        }
    }

    /// Whether the id is known (the tests ask; a decode answers the rest).
    #[cfg(test)]
    pub fn knows(&self, id: u32) -> bool {
        self.state.read_guard().knows(id)
    }

    /// The schema language of a known id.
    pub fn kind(&self, id: u32) -> Option<Kind> {
        self.state.read_guard().kind(id)
    }

    /// The compiled schema of an id, compiled on first use (a failure is kept until the
    /// schemas change, as a reference it lacked may come later).
    fn compiled(&self, id: u32) -> Result<Option<Arc<Compiled>>, String> {
        {
            let st = self.state.read_guard();
            if let Some(c) = st.cached(id) {
                return c.map(Some);
            }
            // An unknown id (binary values whose first byte is 0) takes no write lock.
            if !st.knows(id) {
                return Ok(None);
            }
        }
        self.state.write_guard().compile(id)
    }

    /// Decodes wire-format `bytes` and appends their compact JSON text (no newline) to `out`,
    /// returning the schema id. On an error `out` is left as it was.
    pub fn decode_into(&self, bytes: &[u8], out: &mut Vec<u8>) -> Result<u32, DecodeError> {
        let id = Registry::wire_id(bytes).ok_or(DecodeError::NotWire)?;
        let compiled = self
            .compiled(id)
            .map_err(|reason| DecodeError::Bad { id, reason })?
            .ok_or(DecodeError::UnknownId(id))?;
        let start = out.len();
        let res = match &*compiled {
            Compiled::Avro(a) => a.decode(&bytes[5..], out),
            Compiled::Protobuf(p) => p.decode(&bytes[5..], out),
            Compiled::Json(_) => json::JsonSchema::decode(&bytes[5..], out),
        };
        res.map(|()| id).map_err(|reason| {
            out.truncate(start);
            DecodeError::Bad { id, reason }
        })
    }

    /// The latest (not deleted) version's schema id of a subject, if any.
    pub fn latest_id(&self, subject: &str) -> Option<u32> {
        self.state.read_guard().latest_id(subject)
    }

    /// Encodes JSON `text` with the subject's latest schema into the wire format.
    /// `Ok(None)`: the subject has no schema (store the bytes as they are).
    pub fn encode(&self, subject: &str, text: &[u8]) -> Result<Option<Vec<u8>>, EncodeError> {
        match self.latest_id(subject) {
            Some(id) => self.encode_with(id, text).map(Some),
            None => Ok(None),
        }
    }

    /// The schema ids of a subject's (not deleted) versions, the latest first.
    pub fn subject_ids(&self, subject: &str) -> Vec<u32> {
        self.state.read_guard().subject_ids(subject)
    }

    /// Encodes JSON `text` with schema `id` into the wire format.
    pub fn encode_with(&self, id: u32, text: &[u8]) -> Result<Vec<u8>, EncodeError> {
        let invalid = |reason: String| EncodeError::Invalid { id, reason };
        let compiled = self
            .compiled(id)
            .map_err(|e| invalid(format!("the schema does not compile: {e}")))?
            .ok_or_else(|| invalid("the schema is not known".into()))?;
        let mut out = Vec::with_capacity(text.len() + 8);
        out.push(WIRE_MAGIC);
        out.extend_from_slice(&id.to_be_bytes());
        match &*compiled {
            Compiled::Avro(a) => {
                let v: serde_json::Value =
                    serde_json::from_slice(text).map_err(|e| invalid(format!("not JSON: {e}")))?;
                a.encode(&v, &mut out).map_err(|m| invalid(m.to_string()))?;
            }
            Compiled::Protobuf(p) => p.encode(text, &mut out).map_err(invalid)?,
            Compiled::Json(j) => j.encode(text, &mut out).map_err(invalid)?,
        }
        Ok(out)
    }
}
/// The subject of a topic's values or keys (TopicNameStrategy).
pub fn subject_for(topic: &str, key: bool) -> String {
    format!("{topic}-{}", if key { "key" } else { "value" })
}
