//! The crate's layers point one way. Each top-level module of `shared/src` is declared in one
//! table below; a module may use its own layer and those below it, never one above, and no two
//! top-level modules may reach each other (a cycle) whatever their layers.
//!
//! The test reads the source itself: every `crate::module` path outside `#[cfg(test)]` code.
//! It reads every crate's files too: no two files of a crate use each other, directly or in a
//! loop (`file_loops`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, lowest first. A new top-level module is added here, in the layer it belongs to.
const LAYERS: &[(&str, &[&str])] = &[
    ("values", &["fields", "ids", "money", "time"]),
    (
        "infrastructure",
        &[
            "aws",
            "telemetry",
            "vault",
            "store",
            "config",
            "signature",
            "egress",
        ],
    ),
    (
        "domains",
        &[
            "review",
            "delivery",
            "contacts",
            "orgs",
            "consequences",
            "integrations",
            "payments",
            "messages",
            "calls",
            "bank",
            "ledger",
            "deals",
            "leads",
        ],
    ),
    ("effects", &["effects"]),
    ("operations", &["ops"]),
    ("commands", &["commands"]),
    ("edges", &["http", "webhook", "serve", "admin"]),
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS
        .iter()
        .position(|(_, modules)| modules.contains(&module))
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("shared/src is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Names `crate::` may reach that are no module of the table: the crate root's re-exports.
const ROOT_ITEMS: &[&str] = &["DateTime", "Utc"];

/// The code of a file without its test modules and its comment lines: a `tests.rs` file is all
/// test code; elsewhere each `#[cfg(test)] mod … { … }` is cut out to its closing brace.
fn production_code(path: &Path) -> String {
    if path.file_name().is_some_and(|n| n == "tests.rs") {
        return String::new();
    }
    let text = std::fs::read_to_string(path).expect("a source file is readable");
    let mut code = String::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find("#[cfg(test)]") {
        code.push_str(&rest[..at]);
        let after = &rest[at..];
        let Some(open) = after.find('{') else {
            rest = "";
            break;
        };
        let mut depth = 0usize;
        let mut end = after.len();
        for (i, c) in after[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        rest = &after[end..];
    }
    code.push_str(rest);
    code.lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The module path of a file under `src`: `bank/import/mod.rs` is `bank::import`.
fn module_path(relative: &Path) -> Vec<String> {
    let mut parts: Vec<String> = relative
        .components()
        .map(|c| {
            c.as_os_str()
                .to_string_lossy()
                .trim_end_matches(".rs")
                .to_owned()
        })
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// The top-level modules `super::` paths reach from the module at `path`: a chain that climbs to
/// the crate root names the module after it.
fn super_modules(code: &str, path: &[String]) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for (at, _) in code.match_indices("super::") {
        if code[..at].ends_with("super::") {
            continue;
        }
        let mut rest = &code[at..];
        let mut climbs = 0;
        while let Some(r) = rest.strip_prefix("super::") {
            climbs += 1;
            rest = r;
        }
        if climbs >= path.len() {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            found.insert(name);
        }
    }
    found.retain(|m| !m.is_empty());
    found
}

/// The top-level modules a piece of code names: `crate::x::...` and `crate::{x, y::z}`.
fn named_modules(code: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let ident = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0;
            let mut item = String::new();
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        found.insert(ident(&item));
                        item.clear();
                        continue;
                    }
                    _ => {}
                }
                if depth == 0 || c != '{' {
                    item.push(c);
                }
            }
            found.insert(ident(&item));
        } else {
            found.insert(ident(rest));
        }
    }
    found.retain(|m| !m.is_empty() && m != "self");
    found
}

/// Which top-level module uses which, from the source.
fn imports() -> BTreeMap<String, BTreeMap<String, BTreeSet<String>>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&root, &mut files);
    let mut graph: BTreeMap<String, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for file in files {
        let relative = file.strip_prefix(&root).expect("under src");
        let first = relative.components().next().expect("a path");
        let module = first
            .as_os_str()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .to_owned();
        if module == "lib" {
            continue;
        }
        let entry = graph.entry(module.clone()).or_default();
        let code = production_code(&file);
        let mut used_names = named_modules(&code);
        // A `super::` climb to the root from an inline module (`mod serde_millis { super::x }`)
        // reads like one to an item of the root: only the table's modules count.
        let climbs = super_modules(&code, &module_path(relative));
        used_names.extend(climbs.into_iter().filter(|m| layer_of(m).is_some()));
        for used in used_names {
            if used != module {
                entry
                    .entry(used)
                    .or_default()
                    .insert(relative.display().to_string());
            }
        }
    }
    graph
}

#[test]
fn every_module_has_a_layer_and_uses_none_above_its_own() {
    let graph = imports();
    let mut wrong = Vec::new();
    for (module, uses) in &graph {
        let Some(own) = layer_of(module) else {
            wrong.push(format!("{module}: not in the table of layers"));
            continue;
        };
        for (used, files) in uses {
            let files = files.iter().cloned().collect::<Vec<_>>().join(", ");
            match layer_of(used) {
                Some(layer) if layer > own => wrong.push(format!(
                    "{module} ({}) uses {used} ({}) in {files}",
                    LAYERS[own].0, LAYERS[layer].0,
                )),
                None if !ROOT_ITEMS.contains(&used.as_str()) => wrong.push(format!(
                    "{module} uses crate::{used}, which is no module of the table, in {files}"
                )),
                _ => {}
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "layers point one way:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn no_two_top_level_modules_reach_each_other() {
    let graph = imports();
    let reaches = |from: &str| -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.to_owned()];
        while let Some(next) = todo.pop() {
            for used in graph.get(&next).into_iter().flat_map(|u| u.keys()) {
                if seen.insert(used.clone()) {
                    todo.push(used.clone());
                }
            }
        }
        seen
    };
    let mut cycles = Vec::new();
    for module in graph.keys() {
        if reaches(module).contains(module) {
            let through: Vec<_> = graph[module]
                .keys()
                .filter(|used| reaches(used).contains(module))
                .cloned()
                .collect();
            cycles.push(format!(
                "{module} -> {} -> ... -> {module}",
                through.join(" | ")
            ));
        }
    }
    assert!(cycles.is_empty(), "import cycles:\n{}", cycles.join("\n"));
}

#[test]
fn the_reader_climbs_super_paths_to_the_root_and_skips_test_modules() {
    let root_file = vec!["http".to_owned()];
    let nested = vec!["bank".to_owned(), "import".to_owned(), "cursor".to_owned()];
    assert_eq!(
        super_modules("use super::payments::X;", &root_file),
        BTreeSet::from(["payments".to_owned()])
    );
    let inside = "use super::super::monobank::Y;";
    assert!(
        super_modules(inside, &nested).is_empty(),
        "stays inside bank"
    );
    let dir = std::env::temp_dir().join(format!("layers-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("m.rs");
    std::fs::write(
        &file,
        "use crate::a::X;\n#[cfg(test)]\nmod tests { use crate::b::Y; }\nuse crate::c::Z; // crate::d\n",
    )
    .unwrap();
    let found = named_modules(&production_code(&file));
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(
        found,
        BTreeSet::from(["a".to_owned(), "c".to_owned(), "d".to_owned()]),
        "a test module is skipped, the code after it is read"
    );
}

#[test]
fn the_reader_finds_paths_and_groups() {
    let code = "use crate::store::{Item, Store};\nuse crate::{ids::OrgId, money};\nlet x = crate::time::format(now);";
    let found = named_modules(code);
    let expected: BTreeSet<String> = ["store", "ids", "money", "time"]
        .into_iter()
        .map(String::from)
        .collect();
    assert_eq!(found, expected);
}

/// Every `use` of a file's production code expanded to its paths (`use a::{b, c::{d}}` is
/// `a::b` and `a::c::d`), and every path written inline from `crate::`, `super::` or `self::`.
/// A `pub use` is a module's face (what it shows of its rooms), not a use of them: left out.
fn used_paths(code: &str) -> Vec<Vec<String>> {
    fn expand(prefix: &[String], tree: &str, out: &mut Vec<Vec<String>>) {
        let tree = tree.trim();
        let (head, group) = match tree.find('{') {
            Some(open) => (
                &tree[..open],
                Some(&tree[open + 1..tree.rfind('}').unwrap_or(tree.len())]),
            ),
            None => (tree, None),
        };
        let mut path = prefix.to_vec();
        path.extend(
            head.split("::")
                .map(|s| s.split_whitespace().next().unwrap_or("").to_owned())
                .filter(|s| !s.is_empty()),
        );
        let Some(group) = group else {
            out.push(path);
            return;
        };
        let (mut depth, mut item) = (0, String::new());
        for c in group.chars() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    expand(&path, &std::mem::take(&mut item), out);
                    continue;
                }
                _ => {}
            }
            item.push(c);
        }
        if !item.trim().is_empty() {
            expand(&path, &item, out);
        }
    }
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("use ") {
        let before = rest[..at].trim_end();
        let statement = &rest[at + 4..];
        let end = statement.find(';').unwrap_or(statement.len());
        let starts_line = before.is_empty() || before.ends_with(['\n', ';', '{', '}']);
        if starts_line && !before.ends_with("pub") && !before.ends_with(')') {
            expand(&[], &statement[..end], &mut out);
        }
        rest = &statement[end.min(statement.len())..];
    }
    for root in ["crate::", "super::", "self::"] {
        for (at, _) in code.match_indices(root) {
            let before = code[..at].chars().last();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let path: Vec<String> = code[at..]
                .split("::")
                .map(|s| {
                    s.chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect::<String>()
                })
                .take_while(|s| !s.is_empty())
                .collect();
            out.push(path);
        }
    }
    out
}

/// The files of one crate's `src` that use each other in a loop: each loop's files. A folder's
/// own file (`mod.rs`, `lib.rs`, `main.rs`) is the folder: its rooms may use what it declares
/// and it theirs. Every other file is a room of its own, `x.rs` beside a folder `x/` too.
fn file_loops(src: &Path) -> Vec<Vec<String>> {
    let mut files = Vec::new();
    sources(src, &mut files);
    let module_of = |file: &Path| -> Vec<String> {
        let mut path = module_path(file.strip_prefix(src).expect("under src"));
        if path.len() == 1 && (path[0] == "lib" || path[0] == "main") {
            path.clear();
        }
        path
    };
    let modules: BTreeMap<Vec<String>, PathBuf> =
        files.iter().map(|f| (module_of(f), f.clone())).collect();
    let is_face = |file: &Path| {
        file.file_name()
            .is_some_and(|n| n == "mod.rs" || n == "lib.rs" || n == "main.rs")
    };
    let mut edges: BTreeMap<PathBuf, BTreeSet<PathBuf>> = BTreeMap::new();
    for file in &files {
        let own = module_of(file);
        let code = production_code(file);
        let children: BTreeSet<String> = code
            .lines()
            .filter_map(|l| {
                l.trim()
                    .strip_prefix("mod ")
                    .or_else(|| l.trim().strip_prefix("pub mod "))
            })
            .map(|l| l.trim_end_matches(';').trim().to_owned())
            .collect();
        let mut paths = used_paths(&code);
        // A declared room named inline (`routes::all()`), with no `use` (a `pub use` is
        // the folder's face, as above).
        let inline: String = code
            .lines()
            .filter(|l| !l.trim_start().starts_with("pub use "))
            .collect::<Vec<_>>()
            .join("\n");
        for child in &children {
            let named = format!("{child}::");
            for (at, _) in inline.match_indices(&named) {
                let before = inline[..at].chars().last();
                if !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                    paths.push(vec![child.clone()]);
                }
            }
        }
        let mut targets = BTreeSet::new();
        for path in paths {
            let mut absolute = match path.first().map(String::as_str) {
                Some("crate") => Vec::new(),
                Some("self") => own.clone(),
                Some("super") => own.clone(),
                Some(first) if children.contains(first) => own.clone(),
                _ => continue,
            };
            let mut segments = path.iter().peekable();
            if matches!(path[0].as_str(), "crate" | "self") {
                segments.next();
            }
            while segments.peek().is_some_and(|s| *s == "super") {
                segments.next();
                absolute.pop();
            }
            absolute.extend(segments.cloned());
            let found = (0..=absolute.len())
                .rev()
                .find_map(|n| modules.get(&absolute[..n]));
            if let Some(target) = found.filter(|t| *t != file) {
                let (a, b) = (module_of(file), module_of(target));
                let nested = |outer: &[String], inner: &[String]| inner.starts_with(outer);
                let through_face =
                    (is_face(target) && nested(&b, &a)) || (is_face(file) && nested(&a, &b));
                if !through_face {
                    targets.insert(target.clone());
                }
            }
        }
        edges.insert(file.clone(), targets);
    }
    let reaches = |from: &PathBuf| -> BTreeSet<PathBuf> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.clone()];
        while let Some(next) = todo.pop() {
            for used in edges.get(&next).into_iter().flatten() {
                if seen.insert(used.clone()) {
                    todo.push(used.clone());
                }
            }
        }
        seen
    };
    let mut loops: BTreeSet<Vec<String>> = BTreeSet::new();
    for file in &files {
        let from = reaches(file);
        if from.contains(file) {
            let mut members: Vec<String> = from
                .iter()
                .filter(|other| reaches(other).contains(file))
                .map(|f| f.strip_prefix(src).unwrap_or(f).display().to_string())
                .collect();
            members.sort();
            loops.insert(members);
        }
    }
    loops.into_iter().collect()
}

#[test]
fn no_two_files_of_a_crate_use_each_other_directly_or_in_a_loop() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut crates = vec![
        root.join("shared/src"),
        root.join("mcp/src"),
        root.join("lambda/src"),
    ];
    for entry in std::fs::read_dir(root.join("functions")).expect("functions/ is readable") {
        crates.push(entry.expect("a directory entry").path().join("src"));
    }
    let mut found = Vec::new();
    for src in crates.iter().filter(|s| s.is_dir()) {
        for files in file_loops(src) {
            found.push(format!("{}: {}", src.display(), files.join(" → ")));
        }
    }
    assert!(
        found.is_empty(),
        "files that use each other:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_file_loop_check_sees_a_loop_and_a_folders_face_is_no_loop() {
    let dir = std::env::temp_dir().join(format!("layers-{}", std::process::id()));
    let write = |path: &str, text: &str| {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("lib.rs", "mod a;\nmod b;\nmod c;\npub use a::A;\n");
    write("a.rs", "use crate::b::B;\npub struct A;\n");
    write("b.rs", "use super::{c::{C}};\npub struct B;\n");
    write(
        "c/mod.rs",
        "mod d;\npub struct C(crate::a::A);\nuse d::D;\n",
    );
    write("c/d.rs", "use super::C;\npub struct D;\n");
    let loops = file_loops(&dir);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(
        loops,
        vec![vec!["a.rs".to_owned(), "b.rs".into(), "c/mod.rs".into()]]
    );
}
