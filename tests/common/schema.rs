//! Confluent's own serdes as the oracle of schema-encoded values: tests/schema/oracle.py runs
//! confluent-kafka's serializers and deserializers (its mock registry holding the schemas).

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

/// Runs `oracle.py <mode>` with `input` as its JSON standard input; its JSON answer. Fails
/// (never skips) when python3 or confluent-kafka's serdes are missing.
pub fn oracle(mode: &str, input: Option<&Value>) -> Value {
    script_oracle("oracle.py", mode, input)
}

/// Runs `tests/schema/<script> <mode>` as [`oracle`] runs oracle.py.
pub fn script_oracle(script: &str, mode: &str, input: Option<&Value>) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/schema")
        .join(script);
    let mut child = Command::new("python3")
        .arg(&script)
        .arg(mode)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 runs (scripts/install-deps.sh installs it)");
    let mut stdin = child.stdin.take().unwrap();
    if let Some(v) = input {
        stdin.write_all(v.to_string().as_bytes()).unwrap();
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{} {mode} failed (are confluent-kafka's serdes installed?):\n{}",
        script.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("oracle.py prints JSON")
}

/// The bytes of a hex string.
pub fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// The hex string of bytes.
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}
