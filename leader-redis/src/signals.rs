//! Signals and the blocking connections.
//!
//! A blocking call waits for the server in a socket read with a timeout (the response
//! timeout). Linux never restarts such a read after a signal handler has run on the
//! waiting thread, even under `SA_RESTART`: the read fails with `EINTR`, and the redis
//! client reports it as an I/O error with the command's answer unread. For a renewal that
//! is a lost lease, for a release an unknown outcome — caused by nothing but a signal,
//! and any process that spawns children or watches a signal (tokio's signal and process
//! drivers do) has handlers installed.
//!
//! Resending the command is not a remedy: the server has run it, and a release or a
//! record write run twice answers differently the second time. So the waiting thread
//! blocks the asynchronous signals for the duration of one call and restores its mask
//! after it: a process-wide signal goes to another thread meanwhile, and one aimed at
//! this thread runs its handler as the call returns (at the latest after the response
//! timeout). Signals raised by a fault of the thread itself (`SIGSEGV`, `SIGBUS`,
//! `SIGFPE`, `SIGILL`, `SIGTRAP`, `SIGSYS`) and `SIGABRT` stay unblocked. The cost is two
//! system calls per call, against a network round trip. The backend's own background
//! thread (the release listener) keeps them blocked for its whole life.

/// Runs `call` with the asynchronous signals blocked on this thread.
pub(crate) fn uninterrupted<T>(call: impl FnOnce() -> T) -> T {
    let _mask = imp::Blocked::now();
    call()
}

/// Blocks the asynchronous signals on this thread for the rest of its life (a thread of
/// the backend's own, which runs no user code).
pub(crate) fn block_for_this_thread() {
    std::mem::forget(imp::Blocked::now());
}

#[cfg(unix)]
mod imp {
    use nix::sys::signal::{SigSet, SigmaskHow, Signal, pthread_sigmask};

    /// The signals blocked, and the mask to restore when dropped.
    pub(super) struct Blocked {
        previous: Option<SigSet>,
    }

    impl Blocked {
        pub(super) fn now() -> Self {
            let mut blocked = SigSet::all();
            for fault in [
                Signal::SIGSEGV,
                Signal::SIGBUS,
                Signal::SIGFPE,
                Signal::SIGILL,
                Signal::SIGTRAP,
                Signal::SIGSYS,
                Signal::SIGABRT,
            ] {
                blocked.remove(fault);
            }
            let mut previous = SigSet::empty();
            // It fails only for a bad `how`; then nothing was blocked and nothing is restored.
            let previous =
                pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&blocked), Some(&mut previous))
                    .ok()
                    .map(|()| previous);
            Blocked { previous }
        }
    }

    impl Drop for Blocked {
        fn drop(&mut self) {
            if let Some(previous) = &self.previous {
                // Restores the thread's own mask, as it was before the call.
                let _ = pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(previous), None);
            }
        }
    }
}

/// No `EINTR` from socket reads elsewhere: nothing to block.
#[cfg(not(unix))]
mod imp {
    pub(super) struct Blocked;

    impl Blocked {
        pub(super) fn now() -> Self {
            Blocked
        }
    }
}

#[cfg(all(test, unix))]
#[allow(clippy::unwrap_used)]
mod tests {
    use nix::sys::signal::{SigSet, SigmaskHow, Signal, pthread_sigmask};

    fn mask() -> SigSet {
        let mut current = SigSet::empty();
        pthread_sigmask(SigmaskHow::SIG_BLOCK, None, Some(&mut current)).unwrap();
        current
    }

    #[test]
    fn a_call_runs_with_signals_blocked_and_the_mask_is_restored_after_it() {
        std::thread::spawn(|| {
            let before = mask();
            assert!(!before.contains(Signal::SIGUSR1));
            let during = super::uninterrupted(mask);
            assert!(during.contains(Signal::SIGUSR1));
            assert!(during.contains(Signal::SIGCHLD));
            assert!(!during.contains(Signal::SIGSEGV));
            assert_eq!(mask(), before);
        })
        .join()
        .unwrap();
    }
}
