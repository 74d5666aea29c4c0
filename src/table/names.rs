//! How a record key is shown as a file name under `<topic>/table/`, and back.
//!
//! A key is shown as it is when it is a usable, unambiguous file name: not empty, UTF-8, not
//! `.` or `..`, and without `/`, NUL or `%`. Any other key is shown percent-escaped: each `%`,
//! `/`, NUL and each byte that is not part of a UTF-8 character becomes `%XX` (two upper-case
//! hex digits), and the dots of `.` and `..` become `%2E`; the empty key is `%`. Every name
//! opens exactly one key, and only the name a key is shown by opens it (`%61` is not `a`).

use std::fmt::Write;

/// The longest name a directory entry can have (Linux's NAME_MAX).
pub const NAME_MAX: usize = 255;

/// Whether `key` is shown as it is.
fn plain(key: &str) -> bool {
    !key.is_empty() && key != "." && key != ".." && !key.contains(['/', '\0', '%'])
}

/// The file name `key` is shown by.
pub fn key_to_name(key: &[u8]) -> String {
    if let Ok(s) = std::str::from_utf8(key)
        && plain(s)
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

/// The key a file name shows, if it is the name of one.
pub fn name_to_key(name: &str) -> Option<Vec<u8>> {
    if !name.contains('%') {
        return plain(name).then(|| name.as_bytes().to_vec());
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
    (key_to_name(&key) == name).then_some(key)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn escaped_keys_names() {
        let cases: [(&[u8], &str); 11] = [
            (b"user-1", "user-1"),
            (b"a/b", "a%2Fb"),
            (b"%x", "%25x"),
            (b"50%", "50%25"),
            (b".", "%2E"),
            (b"..", "%2E%2E"),
            (b"...", "..."),
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
        for name in ["%61", "%2f", "%2", "%G0", "a%", "%%", ".", ".."] {
            assert_eq!(name_to_key(name), None, "{name:?}");
        }
    }

    proptest! {
        #[test]
        fn escaped_keys_round_trip_arbitrary_bytes(key in proptest::collection::vec(any::<u8>(), 0..40)) {
            let name = key_to_name(&key);
            prop_assert!(!name.contains('/') && !name.contains('\0'));
            prop_assert!(name != "." && name != ".." && !name.is_empty());
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
