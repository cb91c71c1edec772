//! `leader watch NAME`: the state, then one line per change (acquired, released,
//! expired), until Ctrl-C or SIGTERM (exit 0). Built on the library's observer: it reads at
//! `--interval`, and where the backend notifies releases a release is seen at once.

use std::time::{Duration, SystemTime};

use leader::{ChangeKind, LeaderChange, Shutdown};
use serde::Serialize;

use crate::error::CliError;
use crate::output::{self, LeaderJson, Out};
use crate::session::Session;
use crate::signal::{Wake, Wakeups};

/// One line of `watch --json`.
#[derive(Debug, Serialize)]
struct WatchLine<'a> {
    /// When the change was seen (RFC 3339 UTC).
    at: String,
    /// `initial` (the first line), `acquired`, `released` or `expired`.
    event: &'static str,
    name: &'a str,
    /// `held` or `free`, after the change.
    status: &'static str,
    /// The holder after the change (none once released or expired).
    leader: Option<LeaderJson<'a>>,
    /// The holder that went (a release or an expiry).
    #[serde(skip_serializing_if = "Option::is_none")]
    previous: Option<LeaderJson<'a>>,
}

pub(crate) fn run(
    session: &Session,
    name: &str,
    interval: Duration,
    json: bool,
    out: &mut Out,
) -> Result<(), CliError> {
    let (elector, name) = session.lock(name)?;
    let shutdown = Shutdown::new();
    stop_on_interrupt(Wakeups::on_interrupt()?, shutdown.clone());
    let changes = elector
        .observe(name)
        .map_err(|err| session.error(err))?
        .with_poll_interval(interval)
        .until(&shutdown);
    let mut seen_any = false;
    for change in changes {
        match change {
            Ok(change) => {
                seen_any = true;
                print(out, &change, json)?;
            }
            // The first read must work: an unreachable backend is an error, not a blank
            // watch. Later, a blip is reported and the watch goes on (the observer reads
            // again at the interval); a permanent failure ends it.
            Err(err) if seen_any && err.is_transient() => {
                eprintln!("leader: warning: {}", session.render(&session.error(err)));
            }
            Err(err) => return Err(session.error(err)),
        }
    }
    Ok(())
}

/// Ends the watch at the first Ctrl-C or SIGTERM: the observer returns within its slice.
fn stop_on_interrupt(wakeups: Wakeups, shutdown: Shutdown) {
    let spawned = std::thread::Builder::new()
        .name("interrupt".into())
        .spawn(move || {
            while wakeups.wait(Duration::from_secs(3600)) != Wake::Stop {}
            shutdown.trigger();
        });
    // Without the thread the first signal does nothing, the second ends the process.
    drop(spawned);
}

fn print(out: &mut Out, change: &LeaderChange, json: bool) -> Result<(), CliError> {
    let now = SystemTime::now();
    let at = output::timestamp(change.seen_at);
    let holds = matches!(change.kind, ChangeKind::Initial | ChangeKind::Acquired);
    let (current, previous) = match &change.holder {
        Some(lease) if holds => (Some(lease), None),
        Some(lease) => (None, Some(lease)),
        None => (None, None),
    };
    if json {
        return out.json(&WatchLine {
            at,
            event: change.kind.as_str(),
            name: &change.lock_name,
            status: if current.is_some() { "held" } else { "free" },
            leader: current.map(|lease| LeaderJson::new(lease, now)),
            previous: previous.map(|lease| LeaderJson::new(lease, now)),
        });
    }
    let what = match current {
        Some(lease) => format!("{change}, expires in {}", output::expires_in(lease, now)),
        None => change.to_string(),
    };
    out.text(&format!("{at}  {what}"))
}
