//! Names in a Maildir. A delivered file's name (without its Maildir info, `:2,FLAGS`) is its
//! record's key; a group's records are named by partition and offset, `P-O`, which has no
//! `:` and is unique in the topic.

/// The Maildir info of a name: `:2,` and flags (ASCII letters), at its end.
fn split_info(name: &[u8]) -> (&[u8], Option<&[u8]>) {
    let Some(at) = name.windows(3).rposition(|w| w == b":2,") else {
        return (name, None);
    };
    let flags = &name[at + 3..];
    if flags.iter().all(u8::is_ascii_alphabetic) {
        (&name[..at], Some(flags))
    } else {
        (name, None)
    }
}

/// The key of the record a file delivered under `name` becomes: the name without its
/// Maildir info; a name that is the escaped form of a key (the rule of `table/`, as `a%2Fb`
/// for `a/b`) stands for that key, any other name is the key itself.
pub fn key_of(name: &[u8]) -> Vec<u8> {
    let (base, _) = split_info(name);
    std::str::from_utf8(base)
        .ok()
        .and_then(crate::table::names::name_to_key)
        .unwrap_or_else(|| base.to_vec())
}

/// The name of record `offset` of partition `p` in a group's maildir (`new/` shows it as it
/// is, `cur/` with `:2,` and its flags).
pub fn record_name(p: u32, offset: i64) -> String {
    format!("{p}-{offset}")
}

/// A name of a group's maildir: the record it names and the flags it carries (None in
/// `new/`'s form, without info).
pub fn parse_record_name(name: &[u8]) -> Option<(u32, i64, Option<String>)> {
    let (base, flags) = split_info(name);
    let base = std::str::from_utf8(base).ok()?;
    let (p, o) = base.split_once('-')?;
    let p: u32 = p.parse().ok()?;
    let o: i64 = o.parse().ok()?;
    if record_name(p, o) != base || o < 0 {
        return None;
    }
    let flags = flags.map(|f| String::from_utf8_lossy(f).into_owned());
    Some((p, o, flags))
}

/// Flags as Maildir keeps them: each once, in ASCII order.
pub fn canonical_flags(flags: &str) -> String {
    let mut f: Vec<char> = flags.chars().collect();
    f.sort_unstable();
    f.dedup();
    f.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_of_delivered_names() {
        assert_eq!(key_of(b"1700.M1P2.host"), b"1700.M1P2.host");
        assert_eq!(key_of(b"1700.M1P2.host:2,"), b"1700.M1P2.host");
        assert_eq!(key_of(b"1700.M1P2.host:2,FS"), b"1700.M1P2.host");
        // A colon that starts no info stays in the key.
        assert_eq!(key_of(b"a:b"), b"a:b");
        assert_eq!(key_of(b"a:2,x1"), b"a:2,x1");
        assert_eq!(key_of(b"a%2Fb"), b"a/b");
        assert_eq!(key_of(b"50%"), b"50%");
        assert_eq!(key_of(b"\xff"), b"\xff");
    }

    #[test]
    fn record_names_round_trip_and_are_canonical() {
        assert_eq!(record_name(3, 15), "3-15");
        assert_eq!(parse_record_name(b"3-15"), Some((3, 15, None)));
        assert_eq!(
            parse_record_name(b"3-15:2,FS"),
            Some((3, 15, Some("FS".into())))
        );
        assert_eq!(
            parse_record_name(b"3-15:2,"),
            Some((3, 15, Some("".into())))
        );
        for bad in [
            &b"03-15"[..],
            b"3-015",
            b"3-",
            b"-1",
            b"3--1",
            b"x-1",
            b"3-15:2,1",
        ] {
            assert_eq!(
                parse_record_name(bad),
                None,
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
        assert_eq!(canonical_flags("TSFS"), "FST");
    }
}
