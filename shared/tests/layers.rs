//! The crate's layers point one way. Each top-level module of `shared/src` is declared in one
//! table below; a module may use its own layer and those below it, never one above, and no two
//! top-level modules may reach each other (a cycle) whatever their layers.
//!
//! The test reads the source itself: every `crate::module` path outside `#[cfg(test)]` code.

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
            "contacts",
            "orgs",
            "consequences",
            "integrations",
            "payments",
            "messages",
            "calls",
            "bank",
            "ledger",
        ],
    ),
    ("effects", &["effects"]),
    ("edges", &["http", "webhook", "serve", "admin", "ops"]),
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

/// The code of a file without its test modules: a `tests.rs` file is all test code, and in any
/// other file everything from the first `#[cfg(test)]` on is (our test modules close a file).
fn production_code(path: &Path) -> String {
    if path.file_name().is_some_and(|n| n == "tests.rs") {
        return String::new();
    }
    let text = std::fs::read_to_string(path).expect("a source file is readable");
    let code = match text.find("#[cfg(test)]") {
        Some(at) => &text[..at],
        None => &text[..],
    };
    code.lines()
        .map(|line| match line.find("//") {
            Some(at) => &line[..at],
            None => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
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
        for used in named_modules(&production_code(&file)) {
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
            match layer_of(used) {
                Some(layer) if layer > own => wrong.push(format!(
                    "{module} ({}) uses {used} ({}) in {}",
                    LAYERS[own].0,
                    LAYERS[layer].0,
                    files.iter().cloned().collect::<Vec<_>>().join(", ")
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
fn the_reader_finds_paths_and_groups() {
    let code = "use crate::store::{Item, Store};\nuse crate::{ids::OrgId, money};\nlet x = crate::time::format(now);";
    let found = named_modules(code);
    let expected: BTreeSet<String> = ["store", "ids", "money", "time"]
        .into_iter()
        .map(String::from)
        .collect();
    assert_eq!(found, expected);
}
