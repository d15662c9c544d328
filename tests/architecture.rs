//! The repository's map against the repository: every Rust module and BPF source of the two
//! crates (`src/`, `lab/src/`) is named in docs/ARCHITECTURE.md's Layout section, and the README stays a page a user reads.
//! No VM, no root: plain file reads.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

/// The README is the user's first screen and a short reference; the rest lives in docs/.
const README_MAX_LINES: usize = 250;
const LAYOUT_HEADING: &str = "## Layout";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every file under `dir`, as paths relative to `base` with `/` separators.
fn files_under(dir: &Path, base: &Path, out: &mut Vec<String>) {
    let entries = fs::read_dir(dir).unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            files_under(&path, base, out);
        } else {
            let rel = path.strip_prefix(base).expect("under base");
            out.push(rel.to_string_lossy().replace('\\', "/"));
        }
    }
}

/// Where the crates' sources live.
const SOURCE_DIRS: [&str; 2] = ["src", "lab/src"];

/// The files the layout list must name: every `.rs` under the source directories, and the C
/// sources and headers of src/bpf/.
fn sources() -> Vec<String> {
    let root = root();
    let mut all = Vec::new();
    for dir in SOURCE_DIRS {
        files_under(&root.join(dir), &root, &mut all);
    }
    let mut wanted: Vec<String> = all
        .into_iter()
        .filter(|p| {
            p.ends_with(".rs")
                || (p.starts_with("src/bpf/") && (p.ends_with(".c") || p.ends_with(".h")))
        })
        .collect();
    wanted.sort();
    wanted
}

/// The Layout section of ARCHITECTURE.md: from its heading to the next `## ` heading.
fn layout_section(doc: &str) -> &str {
    let start = doc
        .find(&format!("\n{LAYOUT_HEADING}\n"))
        .unwrap_or_else(|| panic!("docs/ARCHITECTURE.md has no '{LAYOUT_HEADING}' section"));
    let body = &doc[start + 1 + LAYOUT_HEADING.len()..];
    body.find("\n## ").map_or(body, |end| &body[..end])
}

/// Every `code span` of a markdown text. A file counts as mentioned only as a whole span, so a
/// directory such as `src/trace/` names no file in it.
fn code_spans(text: &str) -> BTreeSet<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

/// A file is mentioned when a code span holds its whole path from the repository root
/// (`src/bpf/main.bpf.c`): a path from src/ would make `main.rs` name two files.
fn unmentioned(files: &[String], spans: &BTreeSet<&str>) -> Vec<String> {
    files
        .iter()
        .filter(|f| !spans.contains(f.as_str()))
        .cloned()
        .collect()
}

#[test]
fn architecture_layout_names_every_source_file() {
    let doc = fs::read_to_string(root().join("docs/ARCHITECTURE.md"))
        .expect("docs/ARCHITECTURE.md is readable");
    let files = sources();
    assert!(
        files.iter().any(|f| f == "src/lib.rs") && files.iter().any(|f| f == "src/bpf/intf.h"),
        "the walk of src/ found neither src/lib.rs nor src/bpf/intf.h: {files:?}"
    );
    let missing = unmentioned(&files, &code_spans(layout_section(&doc)));
    assert!(
        missing.is_empty(),
        "docs/ARCHITECTURE.md's {LAYOUT_HEADING} section does not name these files (add a line \
         with the path in backticks, e.g. `src/x.rs`: what it holds):\n  {}",
        missing.join("\n  ")
    );
}

#[test]
fn architecture_layout_names_no_file_that_is_gone() {
    let doc = fs::read_to_string(root().join("docs/ARCHITECTURE.md"))
        .expect("docs/ARCHITECTURE.md is readable");
    let files = sources();
    let stale: Vec<&str> = code_spans(layout_section(&doc))
        .into_iter()
        .filter(|span| {
            SOURCE_DIRS
                .iter()
                .any(|d| span.starts_with(&format!("{d}/")))
                && !span.ends_with('/')
        })
        .filter(|span| !files.iter().any(|f| f == span))
        .collect();
    assert!(
        stale.is_empty(),
        "docs/ARCHITECTURE.md's {LAYOUT_HEADING} section names files that are not in the \
         source directories (renamed or removed?):\n  {}",
        stale.join("\n  ")
    );
}

#[test]
fn readme_is_at_most_a_user_page_long() {
    let readme = fs::read_to_string(root().join("README.md")).expect("README.md is readable");
    let lines = readme.lines().count();
    assert!(
        lines <= README_MAX_LINES,
        "README.md has {lines} lines, more than {README_MAX_LINES}: move reference material to docs/"
    );
}

#[test]
fn a_file_is_mentioned_only_by_its_whole_path() {
    let files = vec!["src/main.rs".to_string(), "src/trace/event.rs".to_string()];
    let spans = code_spans("`main.rs`, `src/trace/` and `trace/event.rs`; `src/main.rs` x");
    assert_eq!(
        unmentioned(&files, &spans),
        vec!["src/trace/event.rs".to_string()]
    );
}
