//! The repository's map against the repository: docs/ARCHITECTURE.md's code map describes every
//! folder that holds sources of the two crates (`src/`, `lab/src/`, the BPF side in `src/bpf/`
//! included) and names no folder that is gone, and the README and the map stay pages one reads;
//! the README links to docs/usage.md rather than repeating its lines, and scripts/test.sh's
//! header, the one description of what the suite runs, names each of its steps.
//! No VM, no root: plain file reads.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

/// The README is the user's first screen and a short reference; the rest lives in docs/.
const README_MAX_LINES: usize = 250;
/// A line this long or longer that the README and docs/usage.md both hold is text kept in two
/// places, which drift apart; shorter lines (a table's header, a heading) may repeat.
const SHARED_LINE_MIN: usize = 80;
/// ARCHITECTURE.md is a bird's-eye view; the details live beside the code.
const ARCHITECTURE_MAX_LINES: usize = 250;
const CODE_MAP_HEADING: &str = "## Code map";
const ENTRY_PREFIX: &str = "### ";

/// Where the crates' sources live.
const SOURCE_ROOTS: [&str; 2] = ["src", "lab/src"];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("reading {rel}: {e}"))
}

/// A source file: Rust, or the BPF side's C and headers.
fn is_source(path: &Path) -> bool {
    matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("rs" | "c" | "h")
    )
}

/// Every folder under `dir` (itself included) that directly holds a source file, as a path
/// relative to `base` with `/` separators and a trailing `/` (`src/bpf/`).
fn source_folders_under(dir: &Path, base: &Path, out: &mut BTreeSet<String>) {
    let entries = fs::read_dir(dir).unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            source_folders_under(&path, base, out);
        } else if is_source(&path) {
            let rel = dir.strip_prefix(base).expect("under base");
            out.insert(format!("{}/", rel.to_string_lossy().replace('\\', "/")));
        }
    }
}

/// The folders the code map must describe.
fn source_folders() -> BTreeSet<String> {
    let root = root();
    let mut folders = BTreeSet::new();
    for dir in SOURCE_ROOTS {
        source_folders_under(&root.join(dir), &root, &mut folders);
    }
    folders
}

/// The code map section: from its heading to the next `## ` heading.
fn code_map_section(doc: &str) -> &str {
    let start = doc
        .find(&format!("\n{CODE_MAP_HEADING}\n"))
        .unwrap_or_else(|| panic!("docs/ARCHITECTURE.md has no '{CODE_MAP_HEADING}' section"));
    let body = &doc[start + 1 + CODE_MAP_HEADING.len()..];
    body.find("\n## ").map_or(body, |end| &body[..end])
}

/// Every `code span` of a markdown text.
fn code_spans(text: &str) -> BTreeSet<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

/// One entry of the code map: the folder its heading names (the heading's first code span,
/// `src/bpf/`) and its text up to the next entry.
struct Entry<'a> {
    folder: &'a str,
    text: &'a str,
}

/// The code map's entries, in order. A heading without a code span names no folder and fails.
fn entries(section: &str) -> Vec<Entry<'_>> {
    let mut starts: Vec<usize> = section
        .match_indices(&format!("\n{ENTRY_PREFIX}"))
        .map(|(i, _)| i + 1)
        .collect();
    starts.push(section.len());
    starts
        .windows(2)
        .map(|w| {
            let text = &section[w[0]..w[1]];
            let heading = text.lines().next().unwrap_or_default();
            let folder = code_spans(heading).into_iter().next().unwrap_or_else(|| {
                panic!("the code map's entry '{heading}' names no folder in backticks")
            });
            Entry { folder, text }
        })
        .collect()
}

/// The folder a folder path sits in (`lab/src/bench/` for `lab/src/bench/plan/`), if any.
fn parent(folder: &str) -> Option<&str> {
    let trimmed = folder.strip_suffix('/')?;
    trimmed.rfind('/').map(|i| &trimmed[..=i])
}

/// A folder is described when an entry's heading names it, or when its parent's entry names it
/// in a code span, by its whole path or by its name alone (`svg/` in `src/trace/`'s entry).
fn described(folder: &str, entries: &[Entry<'_>]) -> bool {
    if entries.iter().any(|e| e.folder == folder) {
        return true;
    }
    let Some(parent) = parent(folder) else {
        return false;
    };
    let name = &folder[parent.len()..];
    entries.iter().filter(|e| e.folder == parent).any(|e| {
        code_spans(e.text)
            .iter()
            .any(|s| *s == name || *s == folder)
    })
}

/// The folders `wanted` that no entry describes.
fn undescribed(wanted: &BTreeSet<String>, entries: &[Entry<'_>]) -> Vec<String> {
    wanted
        .iter()
        .filter(|f| !described(f, entries))
        .cloned()
        .collect()
}

/// The folders the code map names by a path from the repository root: each entry's heading, and
/// every code span of the section that is a relative path ending in `/` with a `/` before it
/// (`lab/guest/`). A name alone (`svg/`) is part of its parent's description, held to the
/// check above; a heading or a full path is an address, and must lead somewhere.
fn named_paths<'a>(section: &'a str, entries: &[Entry<'a>]) -> BTreeSet<&'a str> {
    let mut paths: BTreeSet<&str> = entries.iter().map(|e| e.folder).collect();
    paths.extend(code_spans(section).into_iter().filter(|s| {
        s.ends_with('/')
            && s.trim_end_matches('/').contains('/')
            && !s.starts_with(['/', '.', '~'])
            && !s.contains(' ')
    }));
    paths
}

#[test]
fn the_code_map_describes_every_source_folder() {
    let doc = read("docs/ARCHITECTURE.md");
    let section = code_map_section(&doc);
    let wanted = source_folders();
    for sure in ["src/", "src/bpf/", "lab/src/"] {
        assert!(
            wanted.contains(sure),
            "the walk of the sources missed {sure}: {wanted:?}"
        );
    }
    let missing = undescribed(&wanted, &entries(section));
    assert!(
        missing.is_empty(),
        "docs/ARCHITECTURE.md's code map has no entry for these folders (add one headed \
         {ENTRY_PREFIX}`FOLDER/`: what the folder holds, its invariants, what it may and may not \
         use; or name a subfolder as `NAME/` in its parent's entry):\n  {}",
        missing.join("\n  ")
    );
}

#[test]
fn the_code_map_names_no_folder_that_is_gone() {
    let doc = read("docs/ARCHITECTURE.md");
    let section = code_map_section(&doc);
    let entries = entries(section);
    let gone: Vec<&str> = named_paths(section, &entries)
        .into_iter()
        .filter(|p| !root().join(p).is_dir())
        .collect();
    assert!(
        gone.is_empty(),
        "docs/ARCHITECTURE.md's code map names folders that do not exist (renamed or removed?):\n  {}",
        gone.join("\n  ")
    );
}

#[test]
fn readme_is_at_most_a_user_page_long() {
    let lines = read("README.md").lines().count();
    assert!(
        lines <= README_MAX_LINES,
        "README.md has {lines} lines, more than {README_MAX_LINES}: move reference material to docs/"
    );
}

/// The lines of `a`, `SHARED_LINE_MIN` characters or longer, that `b` holds too, each once.
fn shared_long_lines<'a>(a: &'a str, b: &str) -> Vec<&'a str> {
    let b: BTreeSet<&str> = b.lines().map(str::trim_end).collect();
    let shared: BTreeSet<&str> = a
        .lines()
        .map(str::trim_end)
        .filter(|l| l.chars().count() >= SHARED_LINE_MIN && b.contains(l))
        .collect();
    shared.into_iter().collect()
}

#[test]
fn readme_links_to_usage_rather_than_repeating_it() {
    let (readme, usage) = (read("README.md"), read("docs/usage.md"));
    let shared = shared_long_lines(&readme, &usage);
    assert!(
        shared.is_empty(),
        "README.md and docs/usage.md share {} line(s) of {SHARED_LINE_MIN}+ characters; keep the \
         text in usage.md and link to it from the README:\n  {}",
        shared.len(),
        shared.join("\n  ")
    );
}

#[test]
fn a_shared_line_counts_from_its_length() {
    let long = "x".repeat(SHARED_LINE_MIN);
    let short = "y".repeat(SHARED_LINE_MIN - 1);
    let a = format!("{long}\n{short}\n| status | meaning |\n{long}  \n");
    let b = format!("{short}\n{long}\n| status | meaning |\n");
    assert_eq!(shared_long_lines(&a, &b), [long.as_str()]);
}

#[test]
fn architecture_is_a_birds_eye_view() {
    let lines = read("docs/ARCHITECTURE.md").lines().count();
    assert!(
        lines <= ARCHITECTURE_MAX_LINES,
        "docs/ARCHITECTURE.md has {lines} lines, more than {ARCHITECTURE_MAX_LINES}: say it beside \
         the code (a module doc comment, a header's comment) and link to it"
    );
}

#[test]
fn a_folder_is_described_by_its_entry_or_by_name_in_its_parents() {
    let section = "\n### `src/`\nroot\n### `src/trace/`\nwith `svg/`, and `src/x/` named\n\
                   ### `lab/src/bench/`\nstages: plan, `run/`\n";
    let entries = entries(section);
    let wanted: BTreeSet<String> = [
        "src/",
        "src/trace/",
        "src/trace/svg/",
        "src/load/",
        "src/trace/svg/deep/",
        "lab/src/bench/plan/",
        "lab/src/bench/run/",
    ]
    .map(String::from)
    .into();
    // src/load/ has no entry and its parent's entry does not name it; a name counts only in
    // the parent's own entry and only as a code span.
    assert_eq!(
        undescribed(&wanted, &entries),
        ["lab/src/bench/plan/", "src/load/", "src/trace/svg/deep/"].map(String::from)
    );
    assert_eq!(
        named_paths(section, &entries),
        ["lab/src/bench/", "src/", "src/trace/", "src/x/"].into()
    );
}

/// scripts/test.sh's header (its comment lines after the shebang, up to the first line that is
/// not a comment) and the rest, the script itself.
fn test_sh() -> (String, String) {
    let script = read("scripts/test.sh");
    let mut lines = script.lines().skip(1).peekable();
    let mut header = String::new();
    while let Some(line) = lines.next_if(|l| l.starts_with('#')) {
        header.push_str(line);
        header.push('\n');
    }
    (header, lines.collect::<Vec<_>>().join("\n"))
}

/// The steps a shell script's lines run, as a header names them: a script by its path, cargo by
/// its subcommand (`cargo clippy`), a versioned tool without its version (`clang-format`).
fn steps(script: &str) -> BTreeSet<String> {
    let mut steps = BTreeSet::new();
    for line in script.lines().map(str::trim) {
        let line = line.strip_prefix("exec ").unwrap_or(line);
        let mut words = line.split_whitespace();
        let Some(first) = words.next() else { continue };
        if first.starts_with("scripts/") {
            steps.insert(first.to_string());
        } else if first == "cargo" {
            steps.extend(words.next().map(|sub| format!("cargo {sub}")));
        } else if first.starts_with("clang-format") {
            steps.insert("clang-format".to_string());
        }
    }
    steps
}

#[test]
fn test_sh_header_names_each_step_and_help_prints_it() {
    let (header, body) = test_sh();
    let unnamed: Vec<String> = steps(&body)
        .into_iter()
        .filter(|step| !header.contains(step.as_str()))
        .collect();
    assert!(
        unnamed.is_empty(),
        "scripts/test.sh runs steps its header does not name (the docs point to that header, so \
         name them there): {unnamed:?}"
    );
    for option in ["--long", "--matrix", "--help"] {
        assert!(
            header.contains(&format!("#   {option} ")),
            "the header lacks {option}"
        );
    }
    let out = std::process::Command::new("bash")
        .arg(root().join("scripts/test.sh"))
        .arg("--help")
        .output()
        .expect("running scripts/test.sh --help");
    assert!(out.status.success(), "scripts/test.sh --help failed");
    let printed = String::from_utf8(out.stdout).unwrap();
    let want: String = header
        .lines()
        .map(|l| {
            format!(
                "{}\n",
                l.strip_prefix("# ").unwrap_or(l.trim_start_matches('#'))
            )
        })
        .collect();
    assert_eq!(printed, want, "scripts/test.sh --help prints its header");
}

#[test]
fn steps_are_scripts_cargo_subcommands_and_tools() {
    let script = "scripts/setup.sh\nif x; then\n  exec cargo test --a\nfi\necho hi\n\
                  clang-format-19 --dry-run a.c\n# scripts/not-run.sh\ncargo clippy -q\n";
    let want: BTreeSet<String> = [
        "scripts/setup.sh",
        "cargo test",
        "clang-format",
        "cargo clippy",
    ]
    .map(String::from)
    .into();
    assert_eq!(steps(script), want);
}
