//! The loading thread's priority while the kernel verifies and enables the scheduler.
//!
//! Until the scheduler attaches, the machine runs on the kernel's own class, where the loading
//! thread is one task among the load's: the verifier's work in our `bpf()` call, and the enable
//! that follows, are stretched by every runnable task on its CPU, so a start or a restart (after a
//! CPU hotplug) under load takes many times its idle time while the machine runs without the
//! scheduler. Raised to the highest nice for that window only, the thread takes most of its CPU
//! from nice-0 tasks without the RT class's power to starve them; it returns to its own nice once
//! the scheduler attached, so the daemon runs as the user started it.

/// The nice the loading thread takes: the highest, which only root may set (and the daemon is
/// root).
const LOAD_NICE: libc::c_int = -20;

/// The calling thread at `LOAD_NICE` until dropped, then back at the nice it had.
pub(crate) struct LoadPriority {
    /// The thread's nice before; None when it could not be read or raised (nothing to undo).
    before: Option<libc::c_int>,
}

impl LoadPriority {
    /// Raise the calling thread's priority, if it is not already as high. A refusal (no
    /// CAP_SYS_NICE) is not an error: the load only takes longer.
    pub(crate) fn raise() -> Self {
        let before = thread_nice().filter(|&n| n > LOAD_NICE && set_thread_nice(LOAD_NICE));
        Self { before }
    }
}

impl Drop for LoadPriority {
    fn drop(&mut self) {
        if let Some(nice) = self.before {
            set_thread_nice(nice);
        }
    }
}

/// The calling thread's nice. On Linux, PRIO_PROCESS with id 0 names the calling thread, not its
/// process: each thread is a task with its own nice.
fn thread_nice() -> Option<libc::c_int> {
    // getpriority returns -1 both as a nice and as an error; errno tells them apart.
    unsafe { *libc::__errno_location() = 0 };
    let nice = unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
    (nice != -1 || unsafe { *libc::__errno_location() } == 0).then_some(nice)
}

/// Set the calling thread's nice; whether the kernel took it.
fn set_thread_nice(nice: libc::c_int) -> bool {
    unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, nice) == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_gets_its_own_nice_back() {
        // On a thread of its own, so the test runner's threads keep theirs.
        std::thread::spawn(|| {
            let before = thread_nice().expect("getpriority");
            {
                let _raised = LoadPriority::raise();
                let during = thread_nice().expect("getpriority");
                // As root the thread is raised; otherwise the kernel refused and nothing changed.
                assert!(during == LOAD_NICE || during == before, "nice {during}");
            }
            assert_eq!(thread_nice(), Some(before));
        })
        .join()
        .unwrap();
    }
}
