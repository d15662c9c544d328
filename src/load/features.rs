//! Which kernel interfaces this kernel offers, for the startup report. The BPF
//! side picks the same ones through the compat macros of scx/compat.bpf.h.

use scx_utils::compat::ksym_exists;

/// (what, kfunc used on this kernel, whether it is the compat fallback)
fn probes() -> Vec<(&'static str, &'static str, bool)> {
    let pick = |what, new: &'static str, old: &'static str| {
        if ksym_exists(new).unwrap_or(false) {
            (what, new, false)
        } else {
            (what, old, true)
        }
    };
    vec![
        pick("insert", "scx_bpf_dsq_insert", "scx_bpf_dispatch"),
        pick(
            "vtime insert",
            "__scx_bpf_dsq_insert_vtime",
            "scx_bpf_dsq_insert_vtime/dispatch_vtime",
        ),
        pick("consume", "scx_bpf_dsq_move_to_local", "scx_bpf_consume"),
        pick(
            "set vtime",
            "scx_bpf_task_set_dsq_vtime",
            "p->scx.dsq_vtime write",
        ),
    ]
}

/// One line: e.g. "kernel interfaces: insert=scx_bpf_dispatch (compat fallback), ...".
pub fn report() -> String {
    let items: Vec<String> = probes()
        .into_iter()
        .map(|(what, used, fallback)| {
            format!(
                "{what}={used}{}",
                if fallback { " (compat fallback)" } else { "" }
            )
        })
        .collect();
    format!("kernel interfaces: {}", items.join(", "))
}
