//! What the registry knows: each subject's versions and the schema of each global id, fed
//! by `_schemas` records, and the compiled schemas (compiled on first use).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use serde_json::Value;

use super::avro::{Avro, Parser};
use super::json::JsonSchema;
use super::protobuf::Proto;
use super::{Kind, Reference};

/// A reference's version that means the subject's latest (`-1` in the registry's records).
const LATEST: u32 = u32::MAX;

/// How deep references may chain.
const MAX_REFERENCE_DEPTH: usize = 32;

/// A schema as registered: its language, its text and what it references.
#[derive(Clone, PartialEq, Eq)]
pub(super) struct Entry {
    kind: Kind,
    schema: Arc<str>,
    refs: Vec<Reference>,
}

impl Entry {
    pub(super) fn new(kind: Kind, schema: &str, refs: Vec<Reference>) -> Entry {
        Entry {
            kind,
            schema: schema.into(),
            refs,
        }
    }
}

/// A schema ready to decode and encode with.
pub(super) enum Compiled {
    Avro(Avro),
    Protobuf(Proto),
    Json(JsonSchema),
}

struct Slot {
    entry: Entry,
    /// How many subject versions hold the id.
    holders: usize,
    /// Known from elsewhere than a subject (kept while the mount lives).
    pinned: bool,
}

/// One `_schemas` record's meaning.
pub(super) enum Change {
    Schema {
        subject: String,
        version: u32,
        id: u32,
        entry: Entry,
    },
    DeleteVersion {
        subject: String,
        version: u32,
    },
    /// Every version up to `up_to` (all of them when `None`).
    DeleteSubject {
        subject: String,
        up_to: Option<u32>,
    },
}

/// Reads a `_schemas` record: `None` for the key types that change no schema and for junk.
pub(super) fn parse_record(key: Option<&[u8]>, value: Option<&[u8]>) -> Option<Change> {
    let key: Value = serde_json::from_slice(key?).ok()?;
    let value: Option<Value> = value.and_then(|v| serde_json::from_slice(v).ok());
    let value = value.filter(|v| v.is_object());
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    let number = |v: &Value, k: &str| {
        v.get(k)
            .and_then(Value::as_u64)
            .and_then(|n| u32::try_from(n).ok())
    };
    let subject = value
        .as_ref()
        .and_then(|v| text(v, "subject"))
        .or_else(|| text(&key, "subject"))?;
    match key.get("keytype").and_then(Value::as_str)? {
        "SCHEMA" => {
            let version = number(&key, "version")?;
            let Some(v) = value.filter(|v| v.get("deleted") != Some(&Value::Bool(true))) else {
                return Some(Change::DeleteVersion { subject, version });
            };
            let kind = match v
                .get("schemaType")
                .and_then(Value::as_str)
                .unwrap_or("AVRO")
            {
                "AVRO" => Kind::Avro,
                "PROTOBUF" => Kind::Protobuf,
                "JSON" => Kind::Json,
                _ => return None,
            };
            let refs = v
                .get("references")
                .and_then(Value::as_array)
                .map(|list| list.iter().filter_map(reference).collect())
                .unwrap_or_default();
            Some(Change::Schema {
                subject,
                version: number(&v, "version").unwrap_or(version),
                id: number(&v, "id")?,
                entry: Entry::new(kind, v.get("schema")?.as_str()?, refs),
            })
        }
        "DELETE_SUBJECT" | "CLEAR_SUBJECT" => Some(Change::DeleteSubject {
            up_to: value.as_ref().and_then(|v| number(v, "version")),
            subject: text(value.as_ref()?, "subject").unwrap_or(subject),
        }),
        _ => None,
    }
}

fn reference(v: &Value) -> Option<Reference> {
    let version = v.get("version").and_then(Value::as_i64)?;
    Some(Reference {
        name: v.get("name")?.as_str()?.to_owned(),
        subject: v.get("subject")?.as_str()?.to_owned(),
        version: if version < 0 {
            LATEST
        } else {
            u32::try_from(version).ok()?
        },
    })
}

#[derive(Default)]
pub(super) struct State {
    subjects: HashMap<String, BTreeMap<u32, u32>>,
    ids: HashMap<u32, Slot>,
    compiled: HashMap<u32, Result<Arc<Compiled>, String>>,
}

impl State {
    /// Applies a change; whether anything changed.
    pub(super) fn apply(&mut self, change: Change) -> bool {
        match change {
            Change::Schema {
                subject,
                version,
                id,
                entry,
            } => self.add_version(&subject, version, id, entry),
            Change::DeleteVersion { subject, version } => self.release(&subject, version),
            Change::DeleteSubject { subject, up_to } => {
                let versions: Vec<u32> = match self.subjects.get(&subject) {
                    Some(vs) => vs
                        .range(..=up_to.unwrap_or(u32::MAX))
                        .map(|(v, _)| *v)
                        .collect(),
                    None => return false,
                };
                let mut changed = false;
                for v in versions {
                    changed |= self.release(&subject, v);
                }
                changed
            }
        }
    }

    pub(super) fn add_version(
        &mut self,
        subject: &str,
        version: u32,
        id: u32,
        entry: Entry,
    ) -> bool {
        let held = self.subjects.get(subject).and_then(|vs| vs.get(&version)) == Some(&id);
        if held && self.ids.get(&id).is_some_and(|s| s.entry == entry) {
            return false;
        }
        if !held {
            self.release(subject, version);
        }
        self.set_entry(id, entry);
        if !held {
            self.ids.get_mut(&id).expect("just set").holders += 1;
            self.subjects
                .entry(subject.to_owned())
                .or_default()
                .insert(version, id);
        }
        true
    }

    /// Adds an id that no subject version names here.
    pub(super) fn pin(&mut self, id: u32, entry: Entry) -> bool {
        if self
            .ids
            .get(&id)
            .is_some_and(|s| s.pinned && s.entry == entry)
        {
            return false;
        }
        self.set_entry(id, entry);
        self.ids.get_mut(&id).expect("just set").pinned = true;
        true
    }

    fn set_entry(&mut self, id: u32, entry: Entry) {
        let slot = self.ids.entry(id).or_insert_with(|| Slot {
            entry: entry.clone(),
            holders: 0,
            pinned: false,
        });
        if slot.entry != entry {
            slot.entry = entry;
            self.compiled.remove(&id);
        }
        // A schema that failed for want of a reference may compile now.
        self.compiled.retain(|_, c| c.is_ok());
    }

    fn release(&mut self, subject: &str, version: u32) -> bool {
        let Some(versions) = self.subjects.get_mut(subject) else {
            return false;
        };
        let Some(id) = versions.remove(&version) else {
            return false;
        };
        if versions.is_empty() {
            self.subjects.remove(subject);
        }
        if let Some(slot) = self.ids.get_mut(&id) {
            slot.holders -= 1;
            if slot.holders == 0 && !slot.pinned {
                self.ids.remove(&id);
                self.compiled.remove(&id);
            }
        }
        true
    }

    pub(super) fn knows(&self, id: u32) -> bool {
        self.ids.contains_key(&id)
    }

    pub(super) fn kind(&self, id: u32) -> Option<Kind> {
        self.ids.get(&id).map(|s| s.entry.kind)
    }

    pub(super) fn latest_id(&self, subject: &str) -> Option<u32> {
        self.subjects
            .get(subject)?
            .last_key_value()
            .map(|(_, id)| *id)
    }

    pub(super) fn subject_ids(&self, subject: &str) -> Vec<u32> {
        self.subjects
            .get(subject)
            .map(|vs| vs.values().rev().copied().collect())
            .unwrap_or_default()
    }

    pub(super) fn cached(&self, id: u32) -> Option<Result<Arc<Compiled>, String>> {
        self.compiled.get(&id).cloned()
    }

    /// The compiled schema of an id (`None`: not known), compiled now if it was not.
    pub(super) fn compile(&mut self, id: u32) -> Result<Option<Arc<Compiled>>, String> {
        if let Some(c) = self.cached(id) {
            return c.map(Some);
        }
        let Some(slot) = self.ids.get(&id) else {
            return Ok(None);
        };
        let res = self.build(&slot.entry).map(Arc::new);
        self.compiled.insert(id, res.clone());
        res.map(Some)
    }

    fn build(&self, entry: &Entry) -> Result<Compiled, String> {
        let mut refs = Vec::new();
        self.references(&entry.refs, &mut refs, &mut HashSet::new(), 0)?;
        Ok(match entry.kind {
            Kind::Avro => {
                let mut parser = Parser::default();
                for (_, text) in &refs {
                    parser.reference(text)?;
                }
                Compiled::Avro(parser.finish(&entry.schema)?)
            }
            Kind::Protobuf => Compiled::Protobuf(Proto::compile(&entry.schema, refs)?),
            Kind::Json => Compiled::Json(JsonSchema::parse(&entry.schema, refs)?),
        })
    }

    /// The referenced schemas, each once, those they reference before them:
    /// `(name, schema text)`.
    fn references(
        &self,
        refs: &[Reference],
        out: &mut Vec<(String, String)>,
        seen: &mut HashSet<(String, u32)>,
        depth: usize,
    ) -> Result<(), String> {
        if depth > MAX_REFERENCE_DEPTH {
            return Err("references nested too deeply".into());
        }
        for r in refs {
            if !seen.insert((r.subject.clone(), r.version)) {
                continue;
            }
            let versions = self.subjects.get(&r.subject);
            let id = match r.version {
                LATEST => versions
                    .and_then(|vs| vs.last_key_value())
                    .map(|(_, id)| id),
                v => versions.and_then(|vs| vs.get(&v)),
            };
            let slot = id.and_then(|id| self.ids.get(id)).ok_or_else(|| {
                format!(
                    "reference {} ({} version {}) is not known",
                    r.name, r.subject, r.version
                )
            })?;
            self.references(&slot.entry.refs, out, seen, depth + 1)?;
            out.push((r.name.clone(), slot.entry.schema.to_string()));
        }
        Ok(())
    }
}
