//! docs/architecture.md checked against the sources: in its table of where each rule lives,
//! every name written as `Type::function` (or `function`, `Type`) before a file in
//! parentheses, `(log/segment/mod.rs)`, is declared in that file; and the top-level modules of
//! src/ import one another one way, in the order its "Imports one way" gives.

use std::collections::BTreeMap;
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

/// A top-level module (a file or a folder of src/) -> the top-level modules its code names,
/// each with the first place that names it.
type Imports = BTreeMap<String, BTreeMap<String, String>>;

/// The top-level modules `text` names: `crate::x...` and each path of `crate::{x, y::z}`,
/// comment lines aside (a doc link is no import); modules are the lower-case names.
fn named_modules(text: &str) -> Vec<String> {
    let code: String = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .map(|l| l.split(" // ").next().unwrap_or(l))
        .collect::<Vec<_>>()
        .join("\n");
    let mut out = Vec::new();
    for (at, _) in code.match_indices("crate::") {
        if code[..at].ends_with(|c: char| is_ident(c)) {
            continue;
        }
        let rest = &code[at + "crate::".len()..];
        let paths: Vec<&str> = match rest.strip_prefix('{') {
            Some(group) => group[..group.find('}').unwrap_or(group.len())]
                .split(',')
                .collect(),
            None => vec![rest],
        };
        for path in paths {
            let name: String = path
                .trim_start()
                .chars()
                .take_while(|&c| is_ident(c))
                .collect();
            // `crate::Error` is the crate root's re-export, no module.
            if name.starts_with(|c: char| c.is_ascii_lowercase()) {
                out.push(name);
            }
        }
    }
    out
}

/// What the files at `path` (a file, or a folder and all under it) of module `top` name.
fn scan(path: &Path, top: &str, imports: &mut Imports, src: &Path) {
    if path.is_dir() {
        for entry in std::fs::read_dir(path).unwrap() {
            scan(&entry.unwrap().path(), top, imports, src);
        }
    } else if path.extension().is_some_and(|e| e == "rs") {
        let text = std::fs::read_to_string(path).unwrap();
        let place = path.strip_prefix(src).unwrap().display().to_string();
        let of = imports.entry(top.to_string()).or_default();
        for name in named_modules(&text).into_iter().filter(|n| n != top) {
            of.entry(name).or_insert_with(|| place.clone());
        }
    }
}

/// Every top-level module of src/ (lib.rs and main.rs, which declare and call them, aside).
fn imports(src: &Path) -> Imports {
    let mut imports = Imports::new();
    for entry in std::fs::read_dir(src).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap();
        let top = name.strip_suffix(".rs").unwrap_or(name).to_string();
        if top != "lib" && top != "main" {
            scan(&path, &top, &mut imports, src);
        }
    }
    imports
}

/// A cycle among the modules, as `a -> b (where) -> ... -> a`, if there is one.
fn find_cycle(imports: &Imports) -> Option<String> {
    fn visit<'a>(
        m: &'a str,
        imports: &'a Imports,
        path: &mut Vec<&'a str>,
        done: &mut Vec<&'a str>,
    ) -> Option<String> {
        if let Some(at) = path.iter().position(|p| *p == m) {
            let mut cycle = path[at..].to_vec();
            cycle.push(m);
            let steps: Vec<String> = cycle
                .windows(2)
                .map(|w| format!("{} -> {} ({})", w[0], w[1], imports[w[0]][w[1]]))
                .collect();
            return Some(steps.join(", "));
        }
        if done.contains(&m) {
            return None;
        }
        path.push(m);
        for next in imports.get(m).into_iter().flat_map(|i| i.keys()) {
            if let Some(cycle) = visit(next, imports, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        done.push(m);
        None
    }
    let (mut path, mut done) = (Vec::new(), Vec::new());
    imports
        .keys()
        .find_map(|m| visit(m, imports, &mut path, &mut done))
}

/// The rows of docs/architecture.md's "Imports one way", highest first: each row's modules.
fn documented_order(doc: &str) -> Vec<Vec<&str>> {
    let start = doc
        .find("## Imports one way")
        .expect("docs/architecture.md has the import order");
    doc[start..]
        .lines()
        .skip_while(|l| !l.starts_with("```"))
        .skip(1)
        .take_while(|l| !l.starts_with("```"))
        .map(|l| l.split_whitespace().collect())
        .collect()
}

#[test]
fn top_level_modules_import_one_way_in_the_documented_order() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let imports = imports(&root.join("src"));
    assert!(imports.len() > 20, "{} modules", imports.len());
    if let Some(cycle) = find_cycle(&imports) {
        panic!("an import cycle among the top-level modules of src/: {cycle}");
    }
    let doc = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap();
    let rows = documented_order(&doc);
    let row_of = |m: &str| rows.iter().position(|r| r.contains(&m));
    let mut wrong = Vec::new();
    for (m, named) in &imports {
        let Some(mine) = row_of(m) else {
            wrong.push(format!("{m} is not in the order"));
            continue;
        };
        for (n, place) in named {
            if row_of(n).is_none_or(|row| row <= mine) {
                wrong.push(format!("{m} imports {n} ({place}), not below it"));
            }
        }
    }
    for m in rows.iter().flatten() {
        if !imports.contains_key(*m) {
            wrong.push(format!("{m} is in the order but not in src/"));
        }
    }
    assert!(wrong.is_empty(), "the import order:\n{}", wrong.join("\n"));
}

#[test]
fn a_use_names_the_modules_it_imports_and_a_cycle_is_found() {
    let text = "use crate::log::X;\n// [`crate::fs`]\nuse crate::{a::B, c};\nlet x = crate::d::f(); // crate::e\nmy_crate::g crate::Error";
    assert_eq!(named_modules(text), ["log", "a", "c", "d"]);
    let mut imports = Imports::new();
    for (from, to) in [("a", "b"), ("b", "c"), ("c", "a"), ("d", "a")] {
        imports
            .entry(from.into())
            .or_default()
            .insert(to.into(), format!("{from}.rs"));
    }
    assert_eq!(
        find_cycle(&imports).unwrap(),
        "a -> b (a.rs), b -> c (b.rs), c -> a (c.rs)"
    );
    imports.get_mut("c").unwrap().clear();
    assert_eq!(find_cycle(&imports), None);
}

#[test]
fn lib_rs_lists_the_modules_in_the_documented_order() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap();
    let rows = documented_order(&doc);
    let row_of = |m: &str| rows.iter().position(|r| r.contains(&m));
    let lib = std::fs::read_to_string(root.join("src/lib.rs")).unwrap();
    let layers: String = lib
        .lines()
        .take_while(|l| l.starts_with("//!"))
        .skip_while(|l| !l.starts_with("//! The layers"))
        .collect();
    // Each module where lib.rs's list first names it, in the list's order.
    let mut seen = Vec::new();
    for name in layers.split('`').skip(1).step_by(2) {
        if let Some(row) = row_of(name).filter(|_| !seen.iter().any(|(n, _)| *n == name)) {
            seen.push((name, row));
        }
    }
    assert_eq!(seen.len(), rows.iter().flatten().count(), "{seen:?}");
    for pair in seen.windows(2) {
        assert!(
            pair[0].1 <= pair[1].1,
            "lib.rs lists {:?} before {:?}",
            pair[0],
            pair[1]
        );
    }
}
