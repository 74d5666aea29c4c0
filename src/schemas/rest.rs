//! Schemas from a registry's REST API (`schema.registry.url`), where its `_schemas` topic is
//! not reachable (a managed registry): Confluent's `GET /schemas/ids/{id}` for an id met in a
//! value, `GET /subjects/{subject}/versions/latest` for a subject written to, and the
//! versions a schema references. Answers go into the mount's [`Registry`]; what was asked is
//! remembered, so a record never waits for the registry more than once a while, and each
//! request is bounded by a short timeout.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::Value;

use crate::schema::{Kind, Reference, Registry};
use crate::util::sync::MutexExt;

/// How a mount reaches a registry's REST API (`-o schema.registry.*`, or the same keys in
/// the client config file).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RestConfig {
    /// `schema.registry.url`: one or more base URLs, tried in turn.
    pub urls: Vec<String>,
    /// `schema.registry.basic.auth.user.info`: `user:password`.
    pub basic_auth: Option<String>,
    /// `schema.registry.ssl.ca.location`: a PEM file of the CAs to trust (else the system's).
    pub ca_location: Option<PathBuf>,
}

impl RestConfig {
    /// Takes a `schema.registry.*` key; false when `key` is not one.
    pub fn set(&mut self, key: &str, value: &str) -> bool {
        match key {
            "schema.registry.url" => {
                self.urls = value
                    .split([',', ';'])
                    .map(|u| u.trim().trim_end_matches('/').to_string())
                    .filter(|u| !u.is_empty())
                    .collect();
            }
            "schema.registry.basic.auth.user.info" => self.basic_auth = Some(value.to_string()),
            "schema.registry.ssl.ca.location" => self.ca_location = Some(PathBuf::from(value)),
            _ => return false,
        }
        true
    }
}

/// How long one request may take, and how long an answer (or a failure) is kept before the
/// registry is asked again.
const TIMEOUT: Duration = Duration::from_secs(3);
const KEEP_UNKNOWN: Duration = Duration::from_secs(30);
const KEEP_LATEST: Duration = Duration::from_secs(30);
/// How many ids not found may be asked within [`KEEP_UNKNOWN`]: values that only look like
/// the wire format (binary values whose first byte is 0, each with an "id" of its own) would
/// otherwise ask the registry once per record. Past it, an id is asked once the window lets.
const MAX_UNKNOWN: usize = 16;
/// References followed from one schema, at most, its references' own included (a cycle or a
/// deep chain stops there).
const MAX_REFERENCES: usize = 64;

/// A registry's REST API, as the mount asks it.
pub struct Rest {
    agent: ureq::Agent,
    urls: Vec<String>,
    authorization: Option<String>,
    /// Ids asked for and not found (or the registry did not answer): when.
    unknown: Mutex<HashMap<u32, Instant>>,
    /// Subjects whose latest version was asked for: when.
    latest: Mutex<HashMap<String, Instant>>,
}

impl Rest {
    pub fn new(config: &RestConfig) -> Result<Rest, String> {
        use ureq::tls::{Certificate, RootCerts, TlsConfig, TlsProvider};
        let mut tls = TlsConfig::builder().provider(TlsProvider::NativeTls);
        if let Some(ca) = &config.ca_location {
            let pem = std::fs::read(ca)
                .map_err(|e| format!("schema.registry.ssl.ca.location {}: {e}", ca.display()))?;
            let certs: Vec<Certificate<'static>> = ureq::tls::parse_pem(&pem)
                .filter_map(|item| match item {
                    Ok(ureq::tls::PemItem::Certificate(c)) => Some(Ok(c)),
                    Ok(_) => None,
                    Err(e) => Some(Err(e)),
                })
                .collect::<Result<_, _>>()
                .map_err(|e| format!("schema.registry.ssl.ca.location {}: {e}", ca.display()))?;
            if certs.is_empty() {
                return Err(format!(
                    "schema.registry.ssl.ca.location {}: no certificate",
                    ca.display()
                ));
            }
            tls = tls.root_certs(RootCerts::new_with_certs(&certs));
        }
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(TIMEOUT))
            .http_status_as_error(false)
            .tls_config(tls.build())
            .build()
            .into();
        let authorization = config.basic_auth.as_ref().map(|u| {
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(u)
            )
        });
        Ok(Rest {
            agent,
            urls: config.urls.clone(),
            authorization,
            unknown: Mutex::new(HashMap::new()),
            latest: Mutex::new(HashMap::new()),
        })
    }

    /// GET `path` of the first URL that answers: Ok(Some(json)) for 200, Ok(None) for 404.
    fn get(&self, path: &str) -> Result<Option<Value>, String> {
        let mut last = String::from("no schema.registry.url");
        for url in &self.urls {
            let mut req = self
                .agent
                .get(format!("{url}{path}"))
                .header("Accept", "application/vnd.schemaregistry.v1+json");
            if let Some(a) = &self.authorization {
                req = req.header("Authorization", a);
            }
            match req.call() {
                Ok(mut resp) => match resp.status().as_u16() {
                    200 => {
                        let body = resp
                            .body_mut()
                            .with_config()
                            .limit(16 << 20)
                            .read_to_string()
                            .map_err(|e| format!("{url}{path}: {e}"))?;
                        return serde_json::from_str(&body)
                            .map(Some)
                            .map_err(|e| format!("{url}{path}: not JSON: {e}"));
                    }
                    404 => return Ok(None),
                    status => last = format!("{url}{path}: HTTP {status}"),
                },
                Err(e) => last = format!("{url}{path}: {e}"),
            }
        }
        Err(last)
    }

    /// Asks for schema `id` (unless asked lately without an answer) and puts it into
    /// `registry`; true when it is known now.
    pub fn fetch_id(&self, registry: &Registry, id: u32) -> bool {
        {
            let mut unknown = self.unknown.guard();
            unknown.retain(|_, at| at.elapsed() < KEEP_UNKNOWN);
            if unknown.contains_key(&id) || unknown.len() >= MAX_UNKNOWN {
                return false;
            }
        }
        let found = match self.get(&format!("/schemas/ids/{id}")) {
            Ok(Some(v)) => self.insert(registry, id, None, &v),
            Ok(None) => false,
            Err(e) => {
                log::warn!("schema registry: {e}");
                false
            }
        };
        if !found {
            self.unknown.guard().insert(id, Instant::now());
        }
        found
    }

    /// Asks for the latest version of `subject` (once a while) and puts it into `registry`.
    pub fn fetch_latest(&self, registry: &Registry, subject: &str) {
        if recently(&self.latest, &subject.to_string(), KEEP_LATEST) {
            return;
        }
        self.latest
            .guard()
            .insert(subject.to_string(), Instant::now());
        let path = format!("/subjects/{}/versions/latest", path_segment(subject));
        match self.get(&path) {
            Ok(Some(v)) => {
                let id = v["id"].as_u64().and_then(|i| u32::try_from(i).ok());
                let version = v["version"].as_u64().and_then(|i| u32::try_from(i).ok());
                if let (Some(id), Some(version)) = (id, version) {
                    self.insert(registry, id, Some((subject, version)), &v);
                }
            }
            Ok(None) => {}
            Err(e) => log::warn!("schema registry: {e}"),
        }
    }

    /// Puts one answer (`schema`, `schemaType`, `references`) into `registry`, with the
    /// versions it references first.
    fn insert(
        &self,
        registry: &Registry,
        id: u32,
        subject: Option<(&str, u32)>,
        v: &Value,
    ) -> bool {
        let Some(schema) = v["schema"].as_str() else {
            return false;
        };
        let kind = match v["schemaType"].as_str() {
            None | Some("AVRO") => Kind::Avro,
            Some("PROTOBUF") => Kind::Protobuf,
            Some("JSON") => Kind::Json,
            Some(other) => {
                log::warn!("schema registry: schema {id} is of an unknown type {other:?}");
                return false;
            }
        };
        let references = references(v);
        let mut asked = HashSet::new();
        for r in &references {
            self.fetch_reference(registry, r, &mut asked);
        }
        registry.insert(id, subject, kind, schema, &references);
        true
    }

    /// A referenced version: `GET /subjects/{subject}/versions/{version}`, after the
    /// versions it references in turn (Confluent's answers name only a schema's direct
    /// references); each version once, at most [`MAX_REFERENCES`] of them.
    fn fetch_reference(
        &self,
        registry: &Registry,
        r: &Reference,
        asked: &mut HashSet<(String, u32)>,
    ) {
        if asked.len() >= MAX_REFERENCES || !asked.insert((r.subject.clone(), r.version)) {
            return;
        }
        let path = format!(
            "/subjects/{}/versions/{}",
            path_segment(&r.subject),
            r.version
        );
        match self.get(&path) {
            Ok(Some(v)) => {
                for nested in &references(&v) {
                    self.fetch_reference(registry, nested, asked);
                }
                if let Some(id) = v["id"].as_u64().and_then(|i| u32::try_from(i).ok())
                    && let (Some(schema), kind) = (v["schema"].as_str(), kind_of(&v))
                {
                    registry.insert(
                        id,
                        Some((&r.subject, r.version)),
                        kind,
                        schema,
                        &references(&v),
                    );
                }
            }
            Ok(None) => log::warn!("schema registry: no {}", path),
            Err(e) => log::warn!("schema registry: {e}"),
        }
    }
}

fn kind_of(v: &Value) -> Kind {
    match v["schemaType"].as_str() {
        Some("PROTOBUF") => Kind::Protobuf,
        Some("JSON") => Kind::Json,
        _ => Kind::Avro,
    }
}

fn references(v: &Value) -> Vec<Reference> {
    v["references"]
        .as_array()
        .map(|refs| {
            refs.iter()
                .filter_map(|r| {
                    Some(Reference {
                        name: r["name"].as_str()?.to_string(),
                        subject: r["subject"].as_str()?.to_string(),
                        version: u32::try_from(r["version"].as_u64()?).ok()?,
                    })
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Whether `key` was asked within `keep`.
fn recently<K: std::hash::Hash + Eq>(
    asked: &Mutex<HashMap<K, Instant>>,
    key: &K,
    keep: Duration,
) -> bool {
    asked.guard().get(key).is_some_and(|at| at.elapsed() < keep)
}

/// A subject as one segment of a URL path (percent-escaped but unreserved characters).
fn path_segment(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}
