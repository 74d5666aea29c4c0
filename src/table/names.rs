//! How a record key is shown as a file name under `<topic>/table/`, and back.
//!
//! A key is shown as it is when it is a usable, unambiguous file name: not empty, UTF-8, not
//! starting with `.`, and without `/`, NUL or `%`. Any other key is shown percent-escaped:
//! each `%`, `/`, NUL and each byte that is not part of a UTF-8 character becomes `%XX` (two
//! upper-case hex digits), a leading `.` becomes `%2E` (both dots of `..`); the empty key is
//! `%`. Names starting with `.` are never keys (an editor's swap and temporary files: the
//! mount holds them). Every name opens exactly one key, and only the name a key is shown by
//! opens it (`%61` is not `a`).

use std::fmt::Write;

/// The longest name a directory entry can have (Linux's NAME_MAX).
pub const NAME_MAX: usize = 255;

/// Whether `key` is shown as it is (`dot`: a leading `.` is escaped, as in `table/`).
fn plain(key: &str, dot: bool) -> bool {
    !key.is_empty()
        && key != "."
        && key != ".."
        && !(dot && key.starts_with('.'))
        && !key.contains(['/', '\0', '%'])
}

/// The file name `key` is shown by in `table/`.
pub fn key_to_name(key: &[u8]) -> String {
    to_name(key, true)
}

/// The key a file name of `table/` shows, if it is the name of one.
pub fn name_to_key(name: &str) -> Option<Vec<u8>> {
    from_name(name, true)
}

/// The name of a consumer group's directory (`groups/<G>`): as a key's, but a group id
/// starting with `.` (not `.` or `..`) is shown as it is.
pub fn group_to_name(id: &[u8]) -> String {
    to_name(id, false)
}

/// The group id a name of `groups/` shows ([`group_to_name`] undone).
pub fn name_to_group(name: &str) -> Option<Vec<u8>> {
    from_name(name, false)
}

fn to_name(key: &[u8], dot: bool) -> String {
    if let Ok(s) = std::str::from_utf8(key)
        && plain(s, dot)
    {
        return s.to_string();
    }
    if key.is_empty() {
        return "%".to_string();
    }
    if key == b"." || key == b".." {
        return "%2E".repeat(key.len());
    }
    let mut out = String::with_capacity(key.len() + 8);
    let key = match key.strip_prefix(b".").filter(|_| dot) {
        Some(rest) => {
            out.push_str("%2E");
            rest
        }
        None => key,
    };
    for chunk in key.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '%' | '/' | '\0' => write!(out, "%{:02X}", c as u32).unwrap(),
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            write!(out, "%{b:02X}").unwrap();
        }
    }
    out
}

fn from_name(name: &str, dot: bool) -> Option<Vec<u8>> {
    if !name.contains('%') {
        return plain(name, dot).then(|| name.as_bytes().to_vec());
    }
    if name == "%" {
        return Some(Vec::new());
    }
    let bytes = name.as_bytes();
    let mut key = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3)?;
            let hex = std::str::from_utf8(hex).ok()?;
            if !hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'A'..=b'F').contains(&b))
            {
                return None;
            }
            key.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            key.push(bytes[i]);
            i += 1;
        }
    }
    // Only the canonical name of a key opens it.
    (to_name(&key, dot) == name).then_some(key)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn group_names_keep_a_leading_dot() {
        assert_eq!(group_to_name(b"...x"), "...x");
        assert_eq!(name_to_group("...x").as_deref(), Some(&b"...x"[..]));
        assert_eq!(group_to_name(b".."), "%2E%2E");
        assert_eq!(name_to_group("%2E.x"), None);
    }

    #[test]
    fn escaped_keys_names() {
        let cases: [(&[u8], &str); 12] = [
            (b"user-1", "user-1"),
            (b"a/b", "a%2Fb"),
            (b"%x", "%25x"),
            (b"50%", "50%25"),
            (b".", "%2E"),
            (b"..", "%2E%2E"),
            (b"...", "%2E.."),
            (b".k.swp", "%2Ek.swp"),
            (b"", "%"),
            (b"a\0b", "a%00b"),
            (b"\xff\xfeok", "%FF%FEok"),
            ("caf\u{e9}".as_bytes(), "caf\u{e9}"),
        ];
        for (key, name) in cases {
            assert_eq!(key_to_name(key), name, "{key:?}");
            assert_eq!(name_to_key(name).as_deref(), Some(key), "{name:?}");
        }
        // Names no key is shown by.
        for name in [
            "%61", "%2f", "%2", "%G0", "a%", "%%", ".", "..", ".k.swp", "...",
        ] {
            assert_eq!(name_to_key(name), None, "{name:?}");
        }
    }

    proptest! {
        #[test]
        fn escaped_keys_round_trip_arbitrary_bytes(key in proptest::collection::vec(any::<u8>(), 0..40)) {
            let name = key_to_name(&key);
            prop_assert!(!name.contains('/') && !name.contains('\0'));
            prop_assert!(!name.starts_with('.') && !name.is_empty());
            prop_assert_eq!(name_to_key(&name), Some(key));
        }

        #[test]
        fn escaped_keys_names_open_one_key(name in "[a-c%0-9A-F/.]{0,8}") {
            if let Some(key) = name_to_key(&name) {
                prop_assert_eq!(key_to_name(&key), name);
            }
        }
    }
}
