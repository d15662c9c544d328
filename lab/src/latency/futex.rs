//! The two futex operations the workload needs: a direct wake of one sleeper
//! costs one syscall, without the mutex a Condvar would add to both sides.

use std::ptr;
use std::sync::atomic::AtomicU32;

/// Sleeps while `word` holds `expected`. True if the thread slept and was
/// woken (or, rarely, spuriously); false if `word` already held another value
/// or a signal interrupted the call. Callers re-check `word` either way.
pub fn wait(word: &AtomicU32, expected: u32) -> bool {
    // SAFETY: `word` is a live, aligned u32 for the whole call; a null
    // timeout means "no timeout".
    let ret = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            expected,
            ptr::null::<libc::timespec>(),
        )
    };
    ret == 0
}

/// Wakes at most one thread sleeping on `word`.
pub fn wake_one(word: &AtomicU32) {
    // SAFETY: as in `wait`; FUTEX_WAKE only reads the address as a key.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            1u32,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;
    use std::sync::mpsc::{self, RecvTimeoutError};
    use std::sync::Arc;
    use std::thread;
    use std::time::{Duration, Instant};

    /// Runs `body` on a thread of its own and returns its result, failing the test if that takes
    /// longer than `limit`: a futex wait that is never woken would otherwise hang the test run.
    fn within<T: Send + 'static>(limit: Duration, body: impl FnOnce() -> T + Send + 'static) -> T {
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || {
            let _ = tx.send(body());
        });
        match rx.recv_timeout(limit) {
            Ok(v) => v,
            Err(RecvTimeoutError::Timeout) => panic!("still blocked after {limit:?}"),
            Err(RecvTimeoutError::Disconnected) => panic!("the test's thread panicked"),
        }
    }

    /// Is thread `tid` of this process sleeping (state S in its /proc stat)?
    fn asleep(tid: libc::pid_t) -> bool {
        let stat =
            std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).unwrap_or_default();
        // After the comm's closing parenthesis, the state is the first field.
        stat.rfind(')')
            .and_then(|i| stat[i + 1..].split_whitespace().next())
            == Some("S")
    }

    #[test]
    fn wait_returns_at_once_on_a_stale_value() {
        let slept = within(Duration::from_secs(5), || wait(&AtomicU32::new(1), 0));
        assert!(!slept);
    }

    /// What the wakelat workload relies on: a thread asleep in `wait` is woken by `wake_one`,
    /// and resumes within a wakeup's latency (more than nothing, far less than a second).
    #[test]
    fn wake_reaches_a_sleeper() {
        let latency = within(Duration::from_secs(5), || {
            let word = Arc::new(AtomicU32::new(0));
            let (tid_tx, tid_rx) = mpsc::channel();
            let sleeper = thread::spawn({
                let word = Arc::clone(&word);
                move || {
                    // SAFETY: gettid has no preconditions.
                    let _ = tid_tx.send(unsafe { libc::gettid() });
                    let mut woken = false;
                    while word.load(Ordering::Acquire) == 0 {
                        woken |= wait(&word, 0);
                    }
                    (woken, Instant::now())
                }
            });
            let tid = tid_rx.recv().expect("the sleeper's thread id");
            // Woken only once it sleeps: nothing else it does between sending its id and the
            // futex can put it to sleep, so a wake that came first would test nothing.
            while !asleep(tid) {
                thread::sleep(Duration::from_millis(1));
            }
            let t0 = Instant::now();
            word.store(1, Ordering::Release);
            wake_one(&word);
            let (woken, resumed) = sleeper.join().expect("the sleeper's result");
            assert!(
                woken,
                "the sleeper saw the new value without its wait being woken"
            );
            resumed.duration_since(t0)
        });
        assert!(
            latency > Duration::ZERO && latency < Duration::from_secs(1),
            "from wake_one to the sleeper running again: {latency:?}"
        );
    }
}
