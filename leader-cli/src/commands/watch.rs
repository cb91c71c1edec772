//! `leader watch NAME`: the state, then one line per change of holder, until Ctrl-C or
//! SIGTERM (exit 0). Polls at `--interval`; where the backend notifies releases, a release
//! wakes it at once.

use std::sync::mpsc::Sender;
use std::time::{Duration, SystemTime};

use leader::backend::Backend;
use leader::{AnyBackend, LeaderElector, LeaderState};
use serde::Serialize;

use crate::error::CliError;
use crate::output::{self, LockJson, Out};
use crate::session::Session;
use crate::signal::{Wake, Wakeups};

/// One line of `watch --json`.
#[derive(Debug, Serialize)]
struct WatchLine<'a> {
    /// When the change was seen (RFC 3339 UTC).
    at: String,
    /// `initial` (the first line), `held` (a new holder or a new token) or `freed`.
    event: &'static str,
    #[serde(flatten)]
    lock: LockJson<'a>,
}

/// What a change is about: the holder and its token (renewals change neither).
fn holder(state: &LeaderState) -> Option<(&str, u64)> {
    state
        .leader()
        .map(|lease| (lease.leader_id.as_str(), lease.fencing_token))
}

pub(crate) fn run(
    session: &Session,
    name: &str,
    interval: Duration,
    json: bool,
    out: &mut Out,
) -> Result<(), CliError> {
    let (elector, name) = session.lock(name)?;
    let wakeups = Wakeups::on_interrupt()?;
    // The first read must work: an unreachable backend is an error, not a blank watch.
    let mut last = elector.state(name).map_err(|err| session.error(err))?;
    print(out, "initial", &last, json)?;
    listen_for_releases(&elector, name, wakeups.sender());
    loop {
        if wakeups.wait(interval) == Wake::Stop {
            return Ok(());
        }
        let state = match elector.state(name) {
            Ok(state) => state,
            // A blip while watching is reported and the watch goes on; a permanent failure ends it.
            Err(err) if err.is_transient() => {
                eprintln!("leader: warning: {}", session.render(&session.error(err)));
                continue;
            }
            Err(err) => return Err(session.error(err)),
        };
        if holder(&state) != holder(&last) {
            let event = if state.leader().is_some() {
                "held"
            } else {
                "freed"
            };
            print(out, event, &state, json)?;
        }
        last = state;
    }
}

fn print(
    out: &mut Out,
    event: &'static str,
    state: &LeaderState,
    json: bool,
) -> Result<(), CliError> {
    let now = SystemTime::now();
    let at = output::timestamp(now);
    if json {
        return out.json(&WatchLine {
            at,
            event,
            lock: LockJson::new(state, now),
        });
    }
    let what = match state.leader() {
        Some(lease) => format!(
            "held by {} (token {}), expires in {}",
            lease.leader_id,
            lease.fencing_token,
            output::expires_in(lease, now)
        ),
        None => "free".to_owned(),
    };
    out.text(&format!("{at}  {}  {what}", state.lock_name()))
}

/// Where the backend notifies releases, a thread forwards each release of the lock to the
/// watch loop, so that a freed lock shows at once rather than at the next poll.
fn listen_for_releases(elector: &LeaderElector<AnyBackend>, name: &str, wake: Sender<Wake>) {
    let Ok(key) = elector.observed_key(name) else {
        return;
    };
    let backend = elector.backend().clone();
    if backend.release_events().is_none() {
        return;
    }
    let spawned = std::thread::Builder::new()
        .name("release-events".into())
        .spawn(move || {
            while let Some(events) = backend.release_events() {
                // Listen again at once; a release between two listens is still seen by the poll.
                if events
                    .listen(key.as_str())
                    .wait_timeout(Duration::from_secs(60))
                    && wake.send(Wake::Released).is_err()
                {
                    return;
                }
            }
        });
    // Without the thread the watch still polls.
    drop(spawned);
}
