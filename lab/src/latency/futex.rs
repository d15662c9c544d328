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
    use std::thread;

    #[test]
    fn wait_returns_at_once_on_a_stale_value() {
        let word = AtomicU32::new(1);
        assert!(!wait(&word, 0));
    }

    #[test]
    fn wake_reaches_a_sleeper() {
        let word = AtomicU32::new(0);
        thread::scope(|s| {
            s.spawn(|| {
                while word.load(Ordering::Acquire) == 0 {
                    wait(&word, 0);
                }
            });
            thread::sleep(std::time::Duration::from_millis(20));
            word.store(1, Ordering::Release);
            wake_one(&word);
        });
    }
}
