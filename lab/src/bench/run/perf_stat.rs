//! `perf stat` around a workload: its command line (the events it counts, in CSV to a file) and
//! the parsing of that file into counts. Software events are always counted; hardware ones only
//! where the PMU has them.

/// What perf stat counts: the software events every kernel has, and the hardware ones that
/// placement moves first on real machines (cache behaviour). A PMU without them (QEMU TCG
/// emulates none) makes perf print `<not supported>` for those and count the rest.
pub const PERF_EVENTS: &str =
    "cpu-migrations,context-switches,cycles,instructions,LLC-loads,LLC-load-misses";
/// The hardware events of PERF_EVENTS, as perf names them.
pub const HW_EVENTS: &[&str] = &["cycles", "instructions", "LLC-loads", "LLC-load-misses"];

/// `perf stat -x, -o FILE -e EVENTS -- CMD...`
pub fn command(out_file: &str, cmd: &[String]) -> Vec<String> {
    let mut v: Vec<String> = [
        "perf",
        "stat",
        "-x,",
        "-o",
        out_file,
        "-e",
        PERF_EVENTS,
        "--",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    v.extend(cmd.iter().cloned());
    v
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PerfCounts {
    pub migrations: Option<u64>,
    pub context_switches: Option<u64>,
    pub cycles: Option<u64>,
    pub instructions: Option<u64>,
    pub llc_loads: Option<u64>,
    pub llc_misses: Option<u64>,
    /// Events perf stat said `<not supported>` for.
    pub unsupported: Vec<String>,
}

/// The counts of `perf stat -x,` output: "value,unit,event,run time,percent,..." lines;
/// "<not counted>" / "<not supported>" give None. Comments (#) and blank lines are skipped.
pub fn parse(text: &str) -> PerfCounts {
    let mut c = PerfCounts::default();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let f: Vec<&str> = line.split(',').collect();
        if f.len() < 3 {
            continue;
        }
        let value = f[0].trim().parse::<u64>().ok().or_else(|| {
            // Some perf versions print counts as floats ("761.00").
            f[0].trim()
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v >= 0.0)
                .map(|v| v.round() as u64)
        });
        // The event may carry modifiers ("cpu-migrations:u") or a PMU ("cpu_core/cycles/").
        let event = f[2].trim().split(':').next().unwrap_or("");
        let event = event
            .trim_end_matches('/')
            .rsplit('/')
            .next()
            .unwrap_or(event);
        if f[0].contains("not supported") {
            c.unsupported.push(event.to_string());
        }
        match event {
            "cpu-migrations" | "migrations" => c.migrations = value,
            "context-switches" | "cs" => c.context_switches = value,
            "cycles" | "cpu-cycles" => c.cycles = value,
            "instructions" => c.instructions = value,
            "LLC-loads" => c.llc_loads = value,
            "LLC-load-misses" => c.llc_misses = value,
            _ => {}
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perf_stat_csv() {
        let text = "# started on Sat Nov 30 04:10:00 2024\n\n\
                    761,,cpu-migrations,12424066187,100.00,,\n\
                    8576,,context-switches,12424066187,100.00,,\n";
        let c = parse(text);
        assert_eq!(c.migrations, Some(761));
        assert_eq!(c.context_switches, Some(8576));
    }

    #[test]
    fn perf_stat_modifiers_floats_and_not_counted() {
        let text = "12.00,,cpu-migrations:u,100,100.00,,\n\
                    <not counted>,,context-switches:u,0,0.00,,\n";
        let c = parse(text);
        assert_eq!(c.migrations, Some(12));
        assert_eq!(c.context_switches, None);
        assert!(c.unsupported.is_empty(), "not counted is not unsupported");
        assert_eq!(parse(""), PerfCounts::default());
        assert_eq!(parse("garbage\n1,2\n"), PerfCounts::default());
    }

    #[test]
    fn hardware_counters_and_a_pmu_without_them() {
        let hw = "761,,cpu-migrations,100,100.00,,\n\
                  8576,,context-switches,100,100.00,,\n\
                  123456789,,cycles,100,100.00,,\n\
                  234567890,,cpu_core/instructions/,100,100.00,1.90,insn per cycle\n\
                  1000,,LLC-loads,100,50.00,,\n\
                  90,,LLC-load-misses:u,100,50.00,9.00,of all LL-cache accesses\n";
        let c = parse(hw);
        assert_eq!(
            (c.cycles, c.instructions, c.llc_loads, c.llc_misses),
            (Some(123456789), Some(234567890), Some(1000), Some(90))
        );
        // QEMU TCG: the software counts stand, the hardware ones are named unsupported.
        let tcg = "761,,cpu-migrations,100,100.00,,\n\
                   8576,,context-switches,100,100.00,,\n\
                   <not supported>,,cycles,0,100.00,,\n\
                   <not supported>,,instructions,0,100.00,,\n\
                   <not supported>,,LLC-loads,0,100.00,,\n\
                   <not supported>,,LLC-load-misses,0,100.00,,\n";
        let c = parse(tcg);
        assert_eq!((c.migrations, c.cycles), (Some(761), None));
        assert_eq!(c.unsupported, HW_EVENTS);
    }
}
