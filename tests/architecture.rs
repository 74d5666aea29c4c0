//! docs/architecture.md's table of where each rule lives, checked against the sources: every
//! name written as `Type::function` (or `function`, `Type`) before a file in parentheses,
//! `(log/segment/mod.rs)`, is declared in that file.

use std::path::Path;

/// The table's rows: its lines from the header under "## Where each rule lives" to the first
/// line that is not a row.
fn rule_rows(doc: &str) -> Vec<&str> {
    let start = doc
        .find("## Where each rule lives")
        .expect("docs/architecture.md has the table of rules");
    doc[start..]
        .lines()
        .skip_while(|l| !l.starts_with("| rule"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .collect()
}

/// Each file a cell names in parentheses, with the names written just before it: a run of
/// backticked names joined by ", ", " and " or " or ".
fn references(cell: &str) -> Vec<(Vec<&str>, &str)> {
    let mut out = Vec::new();
    let mut run: Vec<&str> = Vec::new();
    let mut rest = cell;
    while let Some(open) = rest.find('`') {
        let between = &rest[..open];
        if !matches!(between, ", " | " and " | " or " | ", and ") {
            run.clear();
        }
        let Some(len) = rest[open + 1..].find('`') else {
            break;
        };
        run.push(&rest[open + 1..open + 1 + len]);
        rest = &rest[open + len + 2..];
        if let Some(file) = rest.strip_prefix(" (") {
            let end = file
                .find(|c: char| !(c.is_ascii_alphanumeric() || "_/.".contains(c)))
                .unwrap_or(file.len());
            if file[..end].ends_with(".rs") {
                out.push((std::mem::take(&mut run), &file[..end]));
            }
        }
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Whether `word` stands in `text` preceded by `before` and followed by a character that
/// cannot continue a name.
fn declared(text: &str, before: &str, word: &str) -> bool {
    let needle = format!("{before}{word}");
    text.match_indices(&needle).any(|(i, _)| {
        let start_ok = !before.starts_with(is_ident)
            || i == 0
            || !is_ident(text[..i].chars().next_back().unwrap());
        let end_ok = text[i + needle.len()..]
            .chars()
            .next()
            .is_none_or(|c| !is_ident(c));
        start_ok && end_ok
    })
}

/// Whether the source declares `name`: a function, type, constant or module, or (for an
/// enum's variant or a struct's field) a line that starts with it.
fn declares(src: &str, name: &str) -> bool {
    [
        "fn ", "struct ", "enum ", "trait ", "type ", "const ", "static ", "mod ",
    ]
    .iter()
    .any(|kw| declared(src, kw, name))
        || src.lines().any(|l| {
            let l = l.trim_start();
            let l = l.strip_prefix("pub ").unwrap_or(l);
            l.strip_prefix(name)
                .is_some_and(|after| after.starts_with(['(', '{', ',', ':', ' ']))
        })
}

/// Whether the source has `Type`'s own impl block or declaration.
fn has_type(src: &str, ty: &str) -> bool {
    ["impl ", "for ", "struct ", "enum ", "trait "]
        .iter()
        .any(|kw| declared(src, kw, ty))
        || src.match_indices("impl<").any(|(i, _)| {
            let line = src[i..].lines().next().unwrap_or("");
            declared(line, "> ", ty)
        })
}

#[test]
fn every_name_in_the_rule_table_is_in_the_file_it_names() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap();
    let rows = rule_rows(&doc);
    assert!(rows.len() > 50, "{} rows", rows.len());
    let mut checked = 0;
    let mut stale = Vec::new();
    for row in rows {
        let cell = row.trim_end_matches(" |").rsplit(" | ").next().unwrap();
        for (names, file) in references(cell) {
            let path = root
                .join("src")
                .join(file.strip_prefix("src/").unwrap_or(file));
            let Ok(src) = std::fs::read_to_string(&path) else {
                stale.push(format!("{file}: no such file (for {names:?})"));
                continue;
            };
            for name in names {
                checked += 1;
                let parts: Vec<&str> = name.trim_end_matches("()").split("::").collect();
                let item = parts[parts.len() - 1];
                let owner = (parts.len() > 1)
                    .then(|| parts[parts.len() - 2])
                    .filter(|t| t.starts_with(|c: char| c.is_ascii_uppercase()));
                if !declares(&src, item) || owner.is_some_and(|t| !has_type(&src, t)) {
                    stale.push(format!("`{name}` is not in {file}"));
                }
            }
        }
    }
    assert!(checked > 200, "{checked} names checked");
    assert!(stale.is_empty(), "stale references:\n{}", stale.join("\n"));
}

#[test]
fn a_reference_is_the_run_of_names_before_a_file() {
    let cell = "`A::f`, `g` and `B` (x/y.rs: a note); `C::h` (z.rs), then `D` alone, `E` (w.rs)";
    assert_eq!(
        references(cell),
        vec![
            (vec!["A::f", "g", "B"], "x/y.rs"),
            (vec!["C::h"], "z.rs"),
            (vec!["E"], "w.rs"),
        ]
    );
    assert!(declares("impl X {\n    pub fn f(&self) {}\n}", "f"));
    assert!(!declares("fn ff() {}", "f"));
    assert!(declares("enum E {\n    Variant(u8),\n}", "Variant"));
    assert!(has_type("impl<'a> Batches<'a> {}", "Batches"));
    assert!(!has_type("impl Other {}", "Batches"));
}
