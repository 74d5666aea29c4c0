//! What an append file stores of JSON written to a topic with a subject: the subject's
//! latest schema's wire format (see [`Schemas`]).

use super::{AppendHandle, Batch};
use crate::error::{Error, Result};
use crate::record::RecordInput;
use crate::schema::{EncodeError, subject_for};
use crate::schemas::Schemas;

impl AppendHandle {
    /// Lines of a topic whose values have a subject: each line is JSON in the form shown,
    /// stored as the subject's latest schema's wire format; every line is encoded before
    /// anything is appended (a line that does not match fails the write with EINVAL). The
    /// schemas are those `subject_schemas` just read, once for the write.
    pub(super) fn append_encoded_lines(
        &mut self,
        schemas: &Schemas,
        head: &[u8],
        lines: &[u8],
        ts: i64,
    ) -> Result<()> {
        let topic = self.topic_name().to_string();
        let mut values = Vec::new();
        for part in [head, lines] {
            if part.is_empty() {
                continue;
            }
            let body = part.strip_suffix(b"\n").unwrap_or(part);
            for line in body.split(|&b| b == b'\n') {
                let n = values.len() + 1;
                match schemas.store_known(&topic, false, line) {
                    Ok(Some(v)) => values.push(v),
                    Ok(None) => values.push(line.to_vec()),
                    Err(EncodeError::Invalid { id, reason }) => {
                        return Err(Error::InvalidRecord(format!(
                            "append line {n}: does not match schema {id} of {}: {reason}",
                            subject_for(&topic, false)
                        )));
                    }
                }
            }
        }
        let records: Vec<RecordInput<'_>> = values
            .iter()
            .map(|v| RecordInput {
                key: None,
                value: Some(v),
                headers: &[],
                timestamp: ts,
            })
            .collect();
        self.append(Batch::Records(&records))
    }
}

/// A key or value given as JSON in a JSON line, stored as its topic's subject says.
pub(super) fn encode_json(
    schemas: &Schemas,
    topic: &str,
    key: bool,
    v: &serde_json::Value,
) -> std::result::Result<Option<Vec<u8>>, String> {
    if !schemas.has_subject(topic, key) {
        return Ok(None);
    }
    let text = serde_json::to_vec(v).map_err(|e| e.to_string())?;
    schemas.store_known(topic, key, &text).map_err(|e| match e {
        EncodeError::Invalid { id, reason } => format!(
            "does not match schema {id} of {}: {reason}",
            subject_for(topic, key)
        ),
    })
}
