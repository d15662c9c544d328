//! chaos.sh's wakeq_books: over the whole run (one monitor window from before the first tune to
//! after the drain) every wakequeue shard's books balance, enqueued == ran + left, and none still
//! holds a task.

use crate::harness::GuestRun;
use crate::records::Verdicts;

pub fn judge(run: &GuestRun, v: &mut Verdicts) {
    let r = &run.records;
    let Some(rc) = r.kv("chaos_books_rc") else {
        return;
    };
    let Some(m) = r.mon_or_fail("chaos_books", v, "wakeq_books") else {
        return;
    };
    let (mut n, mut e, mut ran, mut left, mut depth) = (0, 0, 0, 0, 0);
    let (mut bad, mut per) = (String::new(), String::new());
    for (l, llc) in &m.llcs {
        for (i, s) in &llc.shards {
            n += 1;
            (e, ran, left, depth) = (e + s.enqueued, ran + s.ran, left + s.left, depth + s.depth);
            per += &format!(" {l}/{i}:{}={}+{}+{}", s.enqueued, s.ran, s.left, s.depth);
            if s.enqueued != s.ran + s.left || s.depth != 0 {
                bad += &format!(" {l}/{i}");
            }
        }
    }
    let d = format!(
        "over the whole run (monitor rc={}, secs={}): {n} shards, enqueued={e} ran={ran} left={left} depth={depth}; per llc/shard enqueued=ran+left+depth:{}",
        rc.s("rc"),
        m.secs,
        if per.is_empty() { " none" } else { &per }
    );
    if n == 0 || e == 0 {
        v.fail(
            "wakeq_books",
            format!("the wakequeue queued nothing, the books were not exercised: {d}"),
        );
    } else if bad.is_empty() {
        v.pass("wakeq_books", d);
    } else {
        v.fail(
            "wakeq_books",
            format!("unbalanced or not drained:{bad}; {d}"),
        );
    }
}
