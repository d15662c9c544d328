//! The named configurations a bench compares: EEVDF (nothing loaded), scx_sis under a set of
//! policy flags (optionally with a `scx_sis trace` session running), or another sched_ext
//! scheduler binary run as-is.

use std::path::Path;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use scx_sis::bpf_intf::sis_tunables;
use scx_sis::policy::parse_flags;
use scx_sis::policy::tunables;

/// What a configuration loads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Target {
    /// No sched_ext scheduler: the kernel's EEVDF, the baseline of every ratio.
    Eevdf,
    /// scx_sis with these policy flags on top of the defaults (every other tunable reset), and
    /// with `trace`, a `scx_sis trace` session recording every task while it is measured.
    Sis {
        flags: Vec<String>,
        // Left out of the JSON when false, so that plans without a trace read as before.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        trace: bool,
    },
    /// Another sched_ext scheduler binary, run with these arguments.
    Peer {
        path: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        args: Vec<String>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigSpec {
    pub name: String,
    #[serde(flatten)]
    pub target: Target,
    /// `--aa`: this configuration is a second copy of the one named, run as if it were
    /// another, so that comparing the two shows what the noise alone makes of an A/B.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aa_of: Option<String>,
}

impl ConfigSpec {
    pub fn kind(&self) -> &'static str {
        match self.target {
            Target::Eevdf => "eevdf",
            Target::Sis { .. } => "sis",
            Target::Peer { .. } => "peer",
        }
    }

    /// How the configuration is set up, for the report.
    pub fn describe(&self) -> String {
        match &self.target {
            Target::Eevdf => "no sched_ext scheduler (the kernel's EEVDF)".into(),
            Target::Sis { flags, trace } => {
                let mut d = if flags.is_empty() {
                    "scx_sis defaults".to_string()
                } else {
                    format!("scx_sis {}", flags.join(" "))
                };
                if *trace {
                    d.push_str(&format!(
                        ", with `scx_sis {}` recording every task for the whole time it is \
                         measured (the reader runs too: its CPU time is part of the overhead)",
                        TRACE_READER_ARGS.join(" ")
                    ));
                }
                d
            }
            Target::Peer { path, args } if args.is_empty() => format!("{path} (as-is)"),
            Target::Peer { path, args } => format!("{path} {}", args.join(" ")),
        }
    }
}

pub const BASELINE: &str = "eevdf";

/// The pseudo-flag of a configuration's flags that runs a trace session beside it; taken out
/// before the policy flags are parsed (scx_sis has no such policy flag: tracing is
/// `scx_sis trace`'s, a process of its own).
pub const TRACE_FLAG: &str = "--trace";

/// The trace reader's arguments after `scx_sis`: longer than any measurement (the bench stops
/// it with SIGINT), its file thrown away (the bench wants its cost, not its records).
pub const TRACE_READER_ARGS: &[&str] = &["trace", "--duration", "3600", "-o", "/dev/null"];

/// The built-in configurations of the default set, in report order: name and scx_sis flags.
pub const BUILTIN: &[(&str, &str)] = &[
    ("all-on", ""),
    ("prev-bias-off", "--prev-bias off"),
    ("sis-util-off", "--sis-util off"),
    ("sis-util-linear", "--sis-util linear"),
    ("sis-util-quadratic", "--sis-util quadratic"),
    ("wakeq-1", "--wakeq on --wakeq-shards 1"),
    ("wakeq-n", "--wakeq on"),
    ("plain", "--preset plain"),
];

/// Built-in configurations run only when named in --configs. trace-on measures the tracer,
/// not a placement policy, and would add a ninth of the default bench's time (plus the
/// reader's JSON after each repeat) to every run of it.
pub const ON_REQUEST: &[(&str, &str)] = &[("trace-on", TRACE_FLAG)];

/// The configurations of a scaling run (`--cpus`) unless `--configs` says otherwise.
pub const SCALING_DEFAULT: &[&str] = &["all-on", "sis-util-off"];

/// The complete tunables of a configuration: the defaults with its flags applied.
pub fn tunables_for(flags: &[String]) -> Result<sis_tunables> {
    Ok(tunables::apply(&tunables::defaults(), &parse_flags(flags)?))
}

fn split_flags(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_string).collect()
}

/// A configuration's flags string as a target: `--trace` (anywhere, any number of times) taken
/// out, the rest checked as scx_sis policy flags.
pub fn sis_target(s: &str) -> Result<Target> {
    let mut flags = split_flags(s);
    let before = flags.len();
    flags.retain(|f| f != TRACE_FLAG);
    let trace = flags.len() != before;
    if let Some(f) = flags.iter().find(|f| f.starts_with("--trace")) {
        bail!("{f}: the trace pseudo-flag is a bare {TRACE_FLAG}");
    }
    parse_flags(&flags)?;
    Ok(Target::Sis { flags, trace })
}

/// The suffix of `--aa`'s second copy of a configuration.
pub const AA_SUFFIX: &str = "-aa";

/// `--peer`'s `[NAME=]PATH [ARGS ...]`: (name if given, path, arguments). The arguments are split
/// on whitespace, as the shell would split an unquoted list.
pub fn parse_peer(s: &str) -> Result<(Option<String>, String, Vec<String>)> {
    let mut words = s.split_whitespace();
    let first = words
        .next()
        .with_context(|| format!("--peer '{s}': expected [NAME=]PATH [--flag ...]"))?;
    let args: Vec<String> = words.map(str::to_string).collect();
    match first.split_once('=') {
        Some((name, path)) if !name.contains('/') => {
            if !valid_name(name) || path.is_empty() {
                bail!(
                    "--peer '{s}': expected NAME=PATH with NAME letters, digits, '-', '_' or '.'"
                );
            }
            Ok((Some(name.to_string()), path.to_string(), args))
        }
        _ => Ok((None, first.to_string(), args)),
    }
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 40
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '@'))
}

/// `NAME=FLAGS` of `--config`.
pub fn parse_user_config(s: &str) -> Result<ConfigSpec> {
    let (name, flags) = s
        .split_once('=')
        .with_context(|| format!("--config '{s}': expected NAME=\"--flag value ...\""))?;
    let name = name.trim();
    if !valid_name(name) {
        bail!("--config '{s}': the name must be letters, digits, '-', '_' or '.'");
    }
    let target = sis_target(flags).with_context(|| format!("--config {name}"))?;
    Ok(ConfigSpec {
        name: name.to_string(),
        target,
        aa_of: None,
    })
}

/// The configurations to run: `selected` (built-in and --config names; the default set when
/// None), then every --config and --peer not named there. EEVDF comes first unless `scaling`;
/// scx_sis configurations stay together so that one daemon serves them all.
pub fn resolve(
    selected: Option<&[String]>,
    user: &[String],
    peers: &[String],
    scaling: bool,
) -> Result<Vec<ConfigSpec>> {
    let spec = |name: &str, target| ConfigSpec {
        name: name.to_string(),
        target,
        aa_of: None,
    };
    let mut known: Vec<ConfigSpec> = vec![spec(BASELINE, Target::Eevdf)];
    for (n, f) in BUILTIN.iter().chain(ON_REQUEST) {
        known.push(spec(n, sis_target(f).expect("built-in flags parse")));
    }
    let mut extra = Vec::new();
    for s in user {
        let c = parse_user_config(s)?;
        if known.iter().any(|k| k.name == c.name) {
            bail!(
                "--config {}: that name is already taken (built-in or repeated)",
                c.name
            );
        }
        known.push(c.clone());
        extra.push(c);
    }
    for p in peers {
        let (given, path, args) = parse_peer(p)?;
        let name = match given {
            Some(name) => {
                if known.iter().any(|k| k.name == name) {
                    bail!("--peer {name}: that name is already taken");
                }
                name
            }
            None => {
                let base = Path::new(&path)
                    .file_name()
                    .and_then(|n| n.to_str())
                    .filter(|n| valid_name(n))
                    .with_context(|| format!("--peer {p}: not a usable file name"))?;
                let mut name = base.to_string();
                let mut i = 2;
                while known.iter().any(|k| k.name == name) {
                    name = format!("{base}-{i}");
                    i += 1;
                }
                name
            }
        };
        let c = spec(&name, Target::Peer { path, args });
        known.push(c.clone());
        extra.push(c);
    }

    let names: Vec<String> = match selected {
        Some(list) => list.iter().map(|s| s.trim().to_string()).collect(),
        None if scaling => SCALING_DEFAULT.iter().map(|s| s.to_string()).collect(),
        None => std::iter::once(BASELINE)
            .chain(BUILTIN.iter().map(|(n, _)| *n))
            .map(str::to_string)
            .collect(),
    };
    let mut out: Vec<ConfigSpec> = Vec::new();
    for n in names.iter().filter(|n| !n.is_empty()) {
        let c = known.iter().find(|k| &k.name == n).with_context(|| {
            let all: Vec<&str> = known.iter().map(|k| k.name.as_str()).collect();
            format!("unknown configuration '{n}' (known: {})", all.join(", "))
        })?;
        if !out.iter().any(|o| o.name == c.name) {
            out.push(c.clone());
        }
    }
    for c in extra {
        if !out.iter().any(|o| o.name == c.name) {
            out.push(c);
        }
    }
    if !scaling && !out.iter().any(|c| c.target == Target::Eevdf) {
        out.insert(0, known[0].clone());
    }
    if out.is_empty() {
        bail!("no configuration to run");
    }
    // Stable: keeps the given order inside each kind.
    out.sort_by_key(|c| match c.target {
        Target::Eevdf => 0,
        Target::Sis { .. } => 1,
        Target::Peer { .. } => 2,
    });
    Ok(out)
}

/// `--aa`: a second copy of the configuration `of` right after it, named `of` + AA_SUFFIX.
pub fn add_aa(configs: &mut Vec<ConfigSpec>, of: &str) -> Result<()> {
    let i = configs.iter().position(|c| c.name == of).with_context(|| {
        let all: Vec<&str> = configs.iter().map(|c| c.name.as_str()).collect();
        format!(
            "--aa {of}: not among the configurations run ({})",
            all.join(", ")
        )
    })?;
    let name = format!("{of}{AA_SUFFIX}");
    if configs.iter().any(|c| c.name == name) {
        bail!("--aa {of}: a configuration is named {name} already");
    }
    let twin = ConfigSpec {
        name,
        target: configs[i].target.clone(),
        aa_of: Some(of.to_string()),
    };
    configs.insert(i + 1, twin);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use scx_sis::policy::{Curve, Switch};

    fn names(c: &[ConfigSpec]) -> Vec<&str> {
        c.iter().map(|c| c.name.as_str()).collect()
    }

    #[test]
    fn defaults_are_eevdf_then_every_builtin() {
        let c = resolve(None, &[], &[], false).unwrap();
        assert_eq!(c.len(), 1 + BUILTIN.len());
        assert_eq!(c[0].target, Target::Eevdf);
        assert_eq!(c[1].name, "all-on");
        assert_eq!(c.last().unwrap().name, "plain");
    }

    #[test]
    fn selection_adds_eevdf_and_extras_and_groups_by_kind() {
        let sel = vec!["plain".to_string(), "all-on".into()];
        let user = vec!["wq2=--wakeq on --wakeq-shards 2".to_string()];
        let peers = vec!["/opt/scx/scx_bpfland".to_string()];
        let c = resolve(Some(&sel), &user, &peers, false).unwrap();
        assert_eq!(
            names(&c),
            ["eevdf", "plain", "all-on", "wq2", "scx_bpfland"]
        );
        assert_eq!(
            c[3].target,
            Target::Sis {
                flags: vec![
                    "--wakeq".into(),
                    "on".into(),
                    "--wakeq-shards".into(),
                    "2".into()
                ],
                trace: false,
            }
        );
        assert_eq!(c[4].kind(), "peer");
        assert_eq!(c[4].describe(), "/opt/scx/scx_bpfland (as-is)");
    }

    #[test]
    fn peers_take_a_name_and_arguments() {
        let peers = vec![
            "bpfland-perf=/opt/scx/scx_bpfland -m performance".to_string(),
            "/opt/scx/scx_lavd --performance".to_string(),
        ];
        let c = resolve(Some(&[]), &[], &peers, false).unwrap();
        assert_eq!(names(&c), ["eevdf", "bpfland-perf", "scx_lavd"]);
        assert_eq!(
            c[1].target,
            Target::Peer {
                path: "/opt/scx/scx_bpfland".into(),
                args: vec!["-m".into(), "performance".into()]
            }
        );
        assert_eq!(c[1].describe(), "/opt/scx/scx_bpfland -m performance");
        assert_eq!(
            c[2].target,
            Target::Peer {
                path: "/opt/scx/scx_lavd".into(),
                args: vec!["--performance".into()]
            }
        );
        // A path with '=' in a directory is a path, not a name.
        let (name, path, _) = parse_peer("/a=b/scx_x").unwrap();
        assert_eq!((name, path.as_str()), (None, "/a=b/scx_x"));
        assert!(parse_peer("").is_err());
        assert!(parse_peer("b!d=/x").is_err());
        assert!(resolve(None, &[], &["eevdf=/bin/true".into()], false).is_err());
        // A plan written before peers had arguments reads the same.
        let old = r#"{"name":"scx_lavd","kind":"peer","path":"/x/scx_lavd"}"#;
        let back: ConfigSpec = serde_json::from_str(old).unwrap();
        assert_eq!(serde_json::to_string(&back).unwrap(), old);
    }

    #[test]
    fn aa_adds_a_twin_right_after_its_original() {
        let sel: Vec<String> = ["eevdf", "all-on", "wakeq-1"].map(String::from).to_vec();
        let mut c = resolve(Some(&sel), &[], &[], false).unwrap();
        add_aa(&mut c, "all-on").unwrap();
        assert_eq!(names(&c), ["eevdf", "all-on", "all-on-aa", "wakeq-1"]);
        assert_eq!(
            (c[2].target.clone(), c[2].aa_of.as_deref()),
            (c[1].target.clone(), Some("all-on"))
        );
        assert!(add_aa(&mut c, "all-on").is_err(), "twice");
        assert!(add_aa(&mut c, "plain").is_err(), "not run");
        add_aa(&mut c, BASELINE).unwrap();
        assert_eq!(names(&c)[..2], ["eevdf", "eevdf-aa"]);
    }

    #[test]
    fn trace_pseudo_flag_is_taken_out_before_the_policy_flags() {
        let sis = |flags: &[&str], trace| Target::Sis {
            flags: flags.iter().map(|f| f.to_string()).collect(),
            trace,
        };
        assert_eq!(sis_target("--trace").unwrap(), sis(&[], true));
        assert_eq!(sis_target("").unwrap(), sis(&[], false));
        // Anywhere among the flags, and repeated: still one trace.
        assert_eq!(
            sis_target("--wakeq on --trace --wakeq-shards 1 --trace").unwrap(),
            sis(&["--wakeq", "on", "--wakeq-shards", "1"], true)
        );
        let c = parse_user_config("wq-traced=--trace --wakeq on").unwrap();
        assert_eq!(c.target, sis(&["--wakeq", "on"], true));
        assert!(c
            .describe()
            .starts_with("scx_sis --wakeq on, with `scx_sis trace"));
        // The rest is still checked as policy flags; no value or other spelling of --trace.
        for bad in [
            "x=--trace --wakeq maybe",
            "x=--trace=on",
            "x=--trace on",
            "x=--traced",
        ] {
            assert!(parse_user_config(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn trace_on_runs_only_when_named_and_beside_the_other_sis_configs() {
        let c = resolve(None, &[], &[], false).unwrap();
        assert!(!names(&c).contains(&"trace-on"), "not in the default set");
        let sel: Vec<String> = ["eevdf", "all-on", "trace-on", "plain"]
            .map(String::from)
            .to_vec();
        let c = resolve(Some(&sel), &[], &[], false).unwrap();
        assert_eq!(names(&c), ["eevdf", "all-on", "trace-on", "plain"]);
        assert_eq!(
            c[2].target,
            Target::Sis {
                flags: vec![],
                trace: true
            }
        );
        assert!(c[2]
            .describe()
            .contains("scx_sis trace --duration 3600 -o /dev/null"));
        assert_eq!(c[1].describe(), "scx_sis defaults");
        assert!(resolve(None, &["trace-on=--trace".into()], &[], false).is_err());
    }

    #[test]
    fn a_plan_without_trace_reads_and_writes_as_before() {
        let old = r#"{"name":"wq","kind":"sis","flags":["--wakeq","on"]}"#;
        let c: ConfigSpec = serde_json::from_str(old).unwrap();
        assert_eq!(c.aa_of, None);
        assert_eq!(
            c.target,
            Target::Sis {
                flags: vec!["--wakeq".into(), "on".into()],
                trace: false
            }
        );
        assert_eq!(serde_json::to_string(&c).unwrap(), old);
        let t = resolve(Some(&["trace-on".into()]), &[], &[], false).unwrap();
        let json = serde_json::to_string(&t[1]).unwrap();
        assert_eq!(
            json,
            r#"{"name":"trace-on","kind":"sis","flags":[],"trace":true}"#
        );
        assert_eq!(serde_json::from_str::<ConfigSpec>(&json).unwrap(), t[1]);
    }

    #[test]
    fn scaling_defaults_have_no_eevdf() {
        let c = resolve(None, &[], &[], true).unwrap();
        assert_eq!(names(&c), ["all-on", "sis-util-off"]);
    }

    #[test]
    fn rejects_unknown_duplicate_and_invalid() {
        let e = resolve(Some(&["nope".into()]), &[], &[], false).unwrap_err();
        assert!(
            e.to_string().contains("unknown configuration 'nope'"),
            "{e}"
        );
        assert!(resolve(None, &["plain=--prev-bias off".into()], &[], false).is_err());
        assert!(resolve(None, &["x=--prev-bias maybe".into()], &[], false).is_err());
        assert!(resolve(None, &["x=--stats-interval 2".into()], &[], false).is_err());
        assert!(resolve(None, &["no-equals-sign".into()], &[], false).is_err());
        assert!(resolve(None, &["bad name=--wakeq on".into()], &[], false).is_err());
    }

    #[test]
    fn peers_with_the_same_file_name_get_distinct_names() {
        let peers = vec!["/a/scx_lavd".to_string(), "/b/scx_lavd".to_string()];
        let c = resolve(Some(&[]), &[], &peers, false).unwrap();
        assert_eq!(names(&c), ["eevdf", "scx_lavd", "scx_lavd-2"]);
    }

    #[test]
    fn every_config_is_fully_specified() {
        // wakeq-n after wakeq-1 must not keep 1 shard; plain must not stay on afterwards.
        let wq1 = tunables_for(&split_flags("--wakeq on --wakeq-shards 1")).unwrap();
        let wqn = tunables_for(&split_flags("--wakeq on")).unwrap();
        let plain = tunables_for(&split_flags("--preset plain")).unwrap();
        let all = tunables_for(&[]).unwrap();
        assert_eq!((wq1.wakeq, wq1.wakeq_shards), (1, 1));
        assert_eq!((wqn.wakeq, wqn.wakeq_shards), (1, 0));
        assert_eq!(plain.plain, 1);
        assert_eq!(all.plain, 0);
        let p = parse_flags(&split_flags("--prev-bias off --sis-util linear")).unwrap();
        assert_eq!(p.prev_bias, Some(Switch::Off));
        assert_eq!(p.sis_util, Some(Curve::Linear));
    }
}
