//! The repository's map against the repository: docs/ARCHITECTURE.md's code map describes every
//! folder that holds sources of the two crates (`src/`, `lab/src/`, the BPF side in `src/bpf/`
//! included) and names no folder that is gone, the library's modules and the lab bench's folders
//! import only the layers below their own, and the README and the map stay pages one reads; the README links to docs/usage.md
//! rather than repeating its lines, and scripts/test.sh's header, the one description of what the
//! suite runs, names each of its steps. No VM, no root: plain file reads.

use std::collections::{BTreeMap, BTreeSet};
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
/// (`tests/vm/guest/`). A name alone (`svg/`) is part of its parent's description, held to the
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
        // A command's environment (`VAR=value cargo test`) is not the step.
        let mut words = line
            .split_whitespace()
            .skip_while(|w| w.split_once('=').is_some_and(|(k, _)| is_env_name(k)));
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

/// A shell variable's name: letters, digits and `_`, not starting with a digit.
fn is_env_name(k: &str) -> bool {
    k.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
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
    for option in ["--quick", "--long", "--matrix", "--help"] {
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

/// The library's top modules (`src/lib.rs`), bottom layer first. A module imports only modules
/// of the layers below its own, never one of its own layer or above, so no two modules import
/// each other, however indirectly. A new module takes its place here, or the test fails.
const LAYERS: [&[&str]; 6] = [
    // The generated BPF interface, and the pieces that stand alone.
    &["bpf_intf", "bpf_skel", "chart", "verdict"],
    // What a user chooses, and how it reaches BPF.
    &["policy"],
    // The programs' edges: exit statuses, the kernel's answers, the instance, its pins.
    &["process"],
    &["stats"],
    &["ab"],
    // The trace's session and the daemon (which reads ab's marker).
    &["trace", "load"],
];

/// The lab bench's folders (`lab/src/bench/`), bottom layer first: the model every stage speaks
/// of, the workloads' families, then the stages in the order a bench goes through them. A
/// folder imports only folders of the layers below its own, as `crate::bench::NAME` (how the
/// bench writes an import across folders); the driver, `lab/src/bench/mod.rs`, is above them
/// all. A new folder takes its place here, or the test fails.
const BENCH_LAYERS: [&[&str]; 7] = [
    // A workload by name, its sizing, the run record, the metrics.
    &["model"],
    // A module per family of built-in workloads, the custom ones, the registry.
    &["workloads"],
    &["plan"],
    // The files a bench saves.
    &["record"],
    &["run"],
    &["judge"],
    &["report"],
];
const BENCH: &str = "lab/src/bench";
const BENCH_PATH: &str = "crate::bench::";

/// The top modules `src/lib.rs` declares (`pub mod NAME;`).
fn library_modules(lib_rs: &str) -> BTreeSet<String> {
    lib_rs
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub mod ")?.strip_suffix(';'))
        .map(|m| m.trim().to_string())
        .collect()
}

/// `src` as code alone: each comment, string literal and char literal becomes a space, so that a
/// `crate::` in a doc comment or a message is not taken for an import.
fn code_only(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let rest = &b[i..];
        let skip = if rest.starts_with(b"//") {
            rest.iter().position(|&c| c == b'\n').unwrap_or(rest.len())
        } else if rest.starts_with(b"/*") {
            // Block comments nest in Rust.
            let (mut depth, mut j) = (0, 0);
            while j < rest.len() {
                if rest[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if rest[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            j
        } else if let Some(len) = raw_string_len(rest) {
            len
        } else if rest[0] == b'"' {
            let mut j = 1;
            while j < rest.len() && rest[j] != b'"' {
                j += if rest[j] == b'\\' { 2 } else { 1 };
            }
            j + 1
        } else if rest[0] == b'\'' && rest.get(1) == Some(&b'\\') {
            // An escape: the closing quote follows the escaped character ('\'', '\u{..}').
            rest.iter()
                .skip(3)
                .position(|&c| c == b'\'')
                .map_or(1, |p| p + 4)
        } else if rest[0] == b'\'' && rest.get(2) == Some(&b'\'') {
            3
        } else {
            0
        };
        if skip == 0 {
            out.push(b[i]);
            i += 1;
        } else {
            out.push(b' ');
            i = (i + skip).min(b.len());
        }
    }
    // Each span removed starts and ends at an ASCII delimiter, so what is left is whole UTF-8.
    String::from_utf8(out).expect("spans removed whole")
}

/// The length of a raw string literal (`r"..."`, `r#"..."#`) at the start of `s`, if one is.
fn raw_string_len(s: &[u8]) -> Option<usize> {
    let hashes = s
        .strip_prefix(b"r")?
        .iter()
        .take_while(|&&c| c == b'#')
        .count();
    if s.get(1 + hashes) != Some(&b'"') {
        return None;
    }
    let close: Vec<u8> = std::iter::once(b'"')
        .chain(std::iter::repeat_n(b'#', hashes))
        .collect();
    let body = 2 + hashes;
    let end = s[body..].windows(close.len()).position(|w| w == close)?;
    Some(body + end + close.len())
}

/// The leading identifier of `s`, after any whitespace.
fn ident(s: &str) -> &str {
    let s = s.trim_start();
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// The first path segment of every item of a `use crate::{...}` group whose body starts `s`
/// (after the `{`): `a` and `b` for `a::x, b::{y, z}}`.
fn group_heads(s: &str) -> Vec<&str> {
    let (mut depth, mut start, mut heads) = (0, 0, Vec::new());
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                heads.push(ident(&s[start..i]));
                break;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                heads.push(ident(&s[start..i]));
                start = i + 1;
            }
            _ => {}
        }
    }
    heads.retain(|h| !h.is_empty());
    heads
}

/// The top-level names a source file reaches through `crate::` (and `$crate::` in a macro), in
/// a `use` or inline.
fn crate_paths(src: &str) -> BTreeSet<&str> {
    paths_under(src, "crate::")
}

/// The names a source file reaches right after `prefix` (`crate::`, `crate::bench::`), in a
/// `use` or inline.
fn paths_under<'a>(src: &'a str, prefix: &str) -> BTreeSet<&'a str> {
    let mut names = BTreeSet::new();
    for (i, _) in src.match_indices(prefix) {
        let before = src[..i].chars().next_back();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let after = &src[i + prefix.len()..];
        match after.strip_prefix('{') {
            Some(group) => names.extend(group_heads(group)),
            None => {
                names.insert(ident(after));
            }
        }
    }
    names
}

/// Every `.rs` file under `dir`, recursively.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = fs::read_dir(dir).unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Imports between the modules of `dir` (`src`), each its file `NAME.rs` and its folder `NAME/`,
/// as paths after `prefix` (`crate::`): (importer, imported) -> the files that import.
fn module_imports(
    dir: &str,
    prefix: &str,
    modules: &BTreeSet<String>,
) -> BTreeMap<(String, String), BTreeSet<String>> {
    let src = root().join(dir);
    let mut imports: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for module in modules {
        let mut files = Vec::new();
        let file = src.join(format!("{module}.rs"));
        if file.is_file() {
            files.push(file);
        }
        if src.join(module).is_dir() {
            rust_files(&src.join(module), &mut files);
        }
        assert!(!files.is_empty(), "{dir}/{module} has no source");
        for file in files {
            let code = code_only(&fs::read_to_string(&file).expect("a source file"));
            for name in paths_under(&code, prefix) {
                if name != module && modules.contains(name) {
                    let rel = file.strip_prefix(root()).expect("under the root");
                    imports
                        .entry((module.clone(), name.to_string()))
                        .or_default()
                        .insert(rel.to_string_lossy().into_owned());
                }
            }
        }
    }
    imports
}

/// The imports that break `layers`, one line each: an import of a module of the importer's own
/// layer or above, or of a module no layer names.
fn layer_breaks<'a>(
    imports: impl IntoIterator<Item = (&'a str, &'a str, String)>,
    layers: &[&[&str]],
) -> Vec<String> {
    let layer = |m: &str| layers.iter().position(|l| l.contains(&m));
    imports
        .into_iter()
        .filter_map(|(from, to, files)| match (layer(from), layer(to)) {
            (Some(f), Some(t)) if t < f => None,
            (Some(f), Some(t)) => Some(format!(
                "{from} (layer {f}) imports {to} (layer {t}, {}) in {files}",
                if t == f { "its own" } else { "above it" }
            )),
            _ => Some(format!(
                "{from} imports {to} in {files}, and LAYERS lacks one of them"
            )),
        })
        .collect()
}

/// Fails unless `layers` (the constant `name`) names each of `found` once and nothing else, and
/// `found` holds `sample` (so the listing read something); `what` says what `found` is.
fn assert_layered(
    found: &BTreeSet<String>,
    sample: &str,
    layers: &[&[&str]],
    name: &str,
    what: &str,
) {
    assert!(
        found.contains(sample),
        "{sample} is not among {what}: {found:?}"
    );
    let all = layers.concat();
    let set: BTreeSet<String> = all.iter().map(|m| m.to_string()).collect();
    assert_eq!(all.len(), set.len(), "{name} names one twice");
    assert_eq!(
        found, &set,
        "tests/architecture.rs's {name} must name {what}, each once"
    );
}

/// Fails unless the scan of `imports` found `sample` (so it read the sources at all) and no
/// import breaks `layers`; `what` names the importers, `fix` says what to do about a break.
fn assert_below(
    imports: &BTreeMap<(String, String), BTreeSet<String>>,
    layers: &[&[&str]],
    sample: (&str, &str),
    what: &str,
    fix: &str,
) {
    assert!(
        imports.contains_key(&(sample.0.into(), sample.1.into())),
        "the import scan missed {}'s imports of {}: {imports:?}",
        sample.0,
        sample.1
    );
    let breaks = layer_breaks(
        imports.iter().map(|((from, to), files)| {
            let files: Vec<&str> = files.iter().map(String::as_str).collect();
            (from.as_str(), to.as_str(), files.join(", "))
        }),
        layers,
    );
    assert!(
        breaks.is_empty(),
        "{what} imports one that is not below it: {fix}:\n  {}",
        breaks.join("\n  ")
    );
}

#[test]
fn every_library_module_has_a_layer() {
    let modules = library_modules(&read("src/lib.rs"));
    assert_layered(
        &modules,
        "load",
        &LAYERS,
        "LAYERS",
        "the modules src/lib.rs declares",
    );
}

#[test]
fn library_modules_import_only_layers_below_their_own() {
    let imports = module_imports("src", "crate::", &library_modules(&read("src/lib.rs")));
    let fix = "move what it needs down a layer, or the module up (tests/architecture.rs's LAYERS)";
    assert_below(
        &imports,
        &LAYERS,
        ("load", "process"),
        "a library module",
        fix,
    );
}

#[test]
fn imports_are_read_from_code_alone() {
    let src = r##"
//! Uses crate::doc_comment.
use crate::a::x;
use crate::{b::y, c::{self, z},
    d,
};
use super::crate_like;
/* crate::block /* nested */ crate::block2 */
fn f() {
    let _ = "crate::in_a_string";
    let _ = r#"crate::in_a_raw "string""#;
    let _ = '"';
    let _ = crate::e::call('\'', '"', "crate::after_chars");
    my_crate::f::g();
    $crate::h::i
}
"##;
    assert_eq!(
        crate_paths(&code_only(src)),
        ["a", "b", "c", "d", "e", "h"].into()
    );
}

#[test]
fn a_cycle_breaks_the_layers() {
    let layers: [&[&str]; 3] = [&["low"], &["mid", "peer"], &["high"]];
    let imports = [
        ("mid", "low", "m.rs"),
        ("high", "mid", "h.rs"),
        ("mid", "high", "m2.rs"),
        ("mid", "peer", "m3.rs"),
        ("new", "low", "n.rs"),
    ];
    assert_eq!(
        layer_breaks(imports.map(|(a, b, f)| (a, b, f.to_string())), &layers),
        [
            "mid (layer 1) imports high (layer 2, above it) in m2.rs",
            "mid (layer 1) imports peer (layer 1, its own) in m3.rs",
            "new imports low in n.rs, and LAYERS lacks one of them",
        ]
    );
}

/// The folders of `lab/src/bench/`.
fn bench_folders() -> BTreeSet<String> {
    let entries = fs::read_dir(root().join(BENCH)).expect("reading lab/src/bench");
    entries
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.is_dir())
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn every_bench_folder_has_a_layer() {
    let what = format!("the folders of {BENCH}");
    assert_layered(
        &bench_folders(),
        "run",
        &BENCH_LAYERS,
        "BENCH_LAYERS",
        &what,
    );
}

#[test]
fn bench_folders_import_only_layers_below_their_own() {
    let imports = module_imports(BENCH, BENCH_PATH, &bench_folders());
    let fix = "move what it needs down a layer, or have the driver (bench/mod.rs) hand it over \
               (tests/architecture.rs's BENCH_LAYERS)";
    assert_below(
        &imports,
        &BENCH_LAYERS,
        ("run", "plan"),
        "a bench folder",
        fix,
    );
}

#[test]
fn bench_imports_are_read_after_their_prefix() {
    let src = "use crate::bench::model::x;\nuse crate::bench::{plan::Plan, run::{a, b}};\n\
               fn f() { crate::bench::judge::g(); crate::benchmark::h(); crate::report::i(); }";
    assert_eq!(
        paths_under(src, BENCH_PATH),
        ["judge", "model", "plan", "run"].into()
    );
}
