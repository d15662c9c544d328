//! The tunables as users read them: every field as its flag spells it (`tune --show`, the
//! daemon's change log, the lab's configurations), one line of them, and what differs between two
//! sets. The trace, which no flag sets, is shown as its state and filter.

use crate::bpf_intf::sis_tunables;
use crate::policy;

/// Every tunable as (name, value as users write it): the policy table's, then the trace.
pub fn fields(t: &sis_tunables) -> Vec<(&'static str, String)> {
    let mut all = policy::flag_values(t);
    all.push(("trace", describe_trace(t)));
    all
}

/// The trace's state: off, or on with its filter (set by `scx_sis trace`, not by flags).
pub(super) fn describe_trace(t: &sis_tunables) -> String {
    if t.trace == 0 {
        return "off".to_string();
    }
    let comm = comm_of(&t.trace_comm);
    match (t.trace_tgid, comm.is_empty()) {
        (0, true) => "on".to_string(),
        (0, false) => format!("on(comm {comm})"),
        (tgid, true) => format!("on(pid {tgid})"),
        (tgid, false) => format!("on(pid {tgid} comm {comm})"),
    }
}

/// A NUL-padded comm as text.
pub fn comm_of(raw: &[std::os::raw::c_char]) -> String {
    let bytes: Vec<u8> = raw
        .iter()
        .map(|&c| c as u8)
        .take_while(|&c| c != 0)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// One line naming every tunable's value.
pub fn describe(t: &sis_tunables) -> String {
    fields(t)
        .into_iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// "name: old -> new" for every tunable that differs.
pub fn changes(old: &sis_tunables, new: &sis_tunables) -> Vec<String> {
    fields(old)
        .into_iter()
        .zip(fields(new))
        .filter(|((_, a), (_, b))| a != b)
        .map(|((k, a), (_, b))| format!("{k}: {a} -> {b}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::tunables::tests::policy;
    use crate::policy::tunables::{apply, defaults};

    #[test]
    fn changes_name_only_what_differs() {
        let old = defaults();
        let new = apply(
            &old,
            &policy(&["--prev-bias", "off", "--sis-util", "linear"]),
        );
        assert_eq!(
            changes(&old, &new),
            vec!["prev-bias: on -> off", "sis-util: quadratic -> linear"]
        );
        assert!(changes(&old, &old).is_empty());
    }

    #[test]
    fn describe_uses_flag_spelling() {
        let text = describe(&defaults());
        assert!(
            text.contains("prev-bias=on") && text.contains("sis-util=quadratic"),
            "{text}"
        );
    }
}
