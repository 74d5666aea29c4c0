//! Kafka's checkpoint text files (`recovery-point-offset-checkpoint` and friends): a version
//! line `0`, a count line, then `topic partition offset` lines. Written to `.tmp`, fsynced,
//! renamed over the target, parent directory fsynced.

use std::collections::BTreeMap;
use std::io;
use std::path::Path;

pub type Offsets = BTreeMap<(String, u32), i64>;

/// Writes `content` to `path` atomically and durably (never writing through a symlink).
pub fn write_atomic(path: &Path, content: &[u8]) -> io::Result<()> {
    crate::os::safe_fs::write_atomic(path, content)
}

pub fn format(offsets: &Offsets) -> String {
    let mut s = format!("0\n{}\n", offsets.len());
    for ((t, p), o) in offsets {
        s.push_str(&format!("{t} {p} {o}\n"));
    }
    s
}

pub fn write(path: &Path, offsets: &Offsets) -> io::Result<()> {
    write_atomic(path, format(offsets).as_bytes())
}

/// Reads a checkpoint file; a missing or empty file is an empty map.
pub fn read(path: &Path) -> io::Result<Offsets> {
    let text = match crate::os::safe_fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Offsets::new()),
        Err(e) => return Err(e),
    };
    parse(&text).map_err(|m| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{m} in checkpoint file {}", path.display()),
        )
    })
}

pub fn parse(text: &str) -> Result<Offsets, String> {
    let mut out = Offsets::new();
    let mut lines = text.lines();
    let Some(version) = lines.next() else {
        return Ok(out);
    };
    if version.trim() != "0" {
        return Err(format!(
            "Unrecognised version:{version}, expected version: 0"
        ));
    }
    let count: usize = lines
        .next()
        .ok_or("missing entry count")?
        .trim()
        .parse()
        .map_err(|_| "malformed entry count".to_string())?;
    for line in lines.by_ref().take(count) {
        let parts: Vec<&str> = line.split_whitespace().collect();
        if parts.len() != 3 {
            return Err(format!("Malformed line: {line}"));
        }
        let p: u32 = parts[1]
            .parse()
            .map_err(|_| format!("Malformed line: {line}"))?;
        let o: i64 = parts[2]
            .parse()
            .map_err(|_| format!("Malformed line: {line}"))?;
        out.insert((parts[0].to_string(), p), o);
    }
    if out.len() != count {
        return Err(format!(
            "Expected [{count}] entries, but found only [{}]",
            out.len()
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafka_format_round_trip_and_errors() {
        let mut m = Offsets::new();
        m.insert(("orders".into(), 0), 1532);
        m.insert(("orders".into(), 1), 1498);
        assert_eq!(format(&m), "0\n2\norders 0 1532\norders 1 1498\n");
        assert_eq!(parse("0\n2\norders 0 1532\norders\t1  1498\n").unwrap(), m);
        assert!(parse("1\n0\n").is_err());
        assert!(parse("0\n3\norders 0 1\n").is_err());
        assert!(parse("0\n1\norders x 1\n").is_err());
        assert_eq!(parse("").unwrap().len(), 0);
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("cp");
        write(&p, &m).unwrap();
        assert_eq!(read(&p).unwrap(), m);
        assert!(!d.path().join("cp.tmp").exists());
    }
}
