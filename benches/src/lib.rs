//! Criterion benchmarks; see `memory.rs` and the README for how to run them.
//!
//! This library holds what the server benches share: interleaved medians, which stand up
//! to this machine's noise better than back-to-back criterion groups, because load from
//! elsewhere falls on every case of a round alike.

pub mod handoff;
pub mod postgres_floor;
pub mod redis_floor;

use std::time::{Duration, Instant};

use std::hint::black_box;

use leader_core::{
    AcquireOutcome, AcquireRequest, AsyncLockBackend, LeaderElectionOptions, LockBackend, LockName,
    OwnerToken, ReleaseRequest,
};

/// One measured case: its label and one cycle of it.
pub type Case<'a> = (&'static str, Box<dyn FnMut() + 'a>);

/// Runs every case once per round, rotating which case goes first, for `rounds` measured
/// rounds after `rounds / 10` warm-up rounds. Prints each case's median, its ratio to the
/// first case's (the floor) and the CPU this process spent on it under `group`, and
/// returns the medians in case order.
///
/// # Examples
///
/// ```
/// use leader_benches::{Case, interleaved};
///
/// let mut cases: Vec<Case<'_>> = vec![
///     ("floor: nothing", Box::new(|| {})),
///     ("one allocation", Box::new(|| drop(std::hint::black_box(vec![1u8])))),
/// ];
/// let medians = interleaved("example", 100, &mut cases);
/// assert_eq!(medians.len(), 2);
/// ```
pub fn interleaved(group: &str, rounds: usize, cases: &mut [Case<'_>]) -> Vec<Duration> {
    interleaved_with_cpu(group, rounds, cases)
        .into_iter()
        .map(|measured| measured.median)
        .collect()
}

/// One case of [`interleaved_with_cpu`]: its median time and the median CPU time this
/// process (every thread of it: the bench's, a driver's runtime, a backend's background
/// worker) spent on one cycle of it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measured {
    /// The median wall-clock time of a cycle.
    pub median: Duration,
    /// The median CPU time of this process over a cycle.
    pub cpu: Duration,
}

/// [`interleaved`], returning each case's CPU beside its median: where bench and server
/// share one core (`taskset -c 0`), a cycle takes at least the CPU both spend on it, so a
/// case's extra client CPU over the floor's is a measured limit of its ratio there.
///
/// # Examples
///
/// ```
/// use leader_benches::{Case, interleaved_with_cpu};
///
/// let mut cases: Vec<Case<'_>> = vec![
///     ("floor: nothing", Box::new(|| {})),
///     ("spin", Box::new(|| (0..10_000u64).for_each(|i| drop(std::hint::black_box(i))))),
/// ];
/// let measured = interleaved_with_cpu("example", 100, &mut cases);
/// assert!(measured[1].cpu >= measured[0].cpu);
/// ```
pub fn interleaved_with_cpu(group: &str, rounds: usize, cases: &mut [Case<'_>]) -> Vec<Measured> {
    let warmup = rounds / 10;
    let mut samples = vec![Vec::with_capacity(rounds); cases.len()];
    let mut cpu = vec![Vec::with_capacity(rounds); cases.len()];
    for round in 0..warmup + rounds {
        for offset in 0..cases.len() {
            let index = (round + offset) % cases.len();
            // Read outside the timed span: the clock is a system call.
            let cpu_before = process_cpu_time();
            let started = Instant::now();
            (cases[index].1)();
            let took = started.elapsed();
            let cpu_after = process_cpu_time();
            if round >= warmup {
                samples[index].push(took);
                if let (Some(before), Some(after)) = (cpu_before, cpu_after) {
                    cpu[index].push(after.saturating_sub(before));
                }
            }
        }
    }
    let median = |case: &mut Vec<Duration>| {
        case.sort();
        percentile(case, 50)
    };
    let measured: Vec<Measured> = samples
        .iter_mut()
        .zip(&mut cpu)
        .map(|(time, cpu)| Measured {
            median: median(time),
            cpu: median(cpu),
        })
        .collect();
    let floor = measured.first().map(|m| m.median).unwrap_or_default();
    for ((label, _), case) in cases.iter().zip(&measured) {
        let median = case.median;
        let ratio = median.as_secs_f64() / floor.as_secs_f64();
        let cpu = case.cpu.as_secs_f64() * 1e6;
        println!(
            "{group:<18} {label:<52} median {median:>10.3?}  {ratio:.2}x floor  client CPU {cpu:.1} us"
        );
    }
    measured
}

/// The limit that this process's own CPU sets on `case` ÷ `floor` where bench and server
/// share one core: the floor's cycle plus the case's extra client CPU, ÷ the floor's
/// cycle; with both CPU figures, for a goal line's `limit`.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use leader_benches::{Measured, client_cpu_limit};
///
/// let floor = Measured { median: Duration::from_micros(100), cpu: Duration::from_micros(20) };
/// let case = Measured { median: Duration::from_micros(115), cpu: Duration::from_micros(30) };
/// assert!(client_cpu_limit(case, floor).starts_with("the client's CPU, 30.0 us a cycle"));
/// ```
pub fn client_cpu_limit(case: Measured, floor: Measured) -> String {
    let extra = case.cpu.saturating_sub(floor.cpu);
    let on_one_core = (floor.median + extra).as_secs_f64() / floor.median.as_secs_f64();
    format!(
        "the client's CPU, {:.1} us a cycle against the raw calls' {:.1}: on one core, shared \
         with the server, that alone makes {on_one_core:.2}x",
        case.cpu.as_secs_f64() * 1e6,
        floor.cpu.as_secs_f64() * 1e6,
    )
}

/// The `p`-th percentile (0-100) of `sorted` samples; zero when there are none.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use leader_benches::percentile;
///
/// let sorted: Vec<Duration> = (1..=10).map(Duration::from_millis).collect();
/// assert_eq!(percentile(&sorted, 50), Duration::from_millis(6));
/// assert_eq!(percentile(&sorted, 100), Duration::from_millis(10));
/// assert_eq!(percentile(&[], 50), Duration::ZERO);
/// ```
pub fn percentile(sorted: &[Duration], p: usize) -> Duration {
    let index = (sorted.len() * p / 100).min(sorted.len().saturating_sub(1));
    sorted.get(index).copied().unwrap_or_default()
}

/// Prints one goal line of the performance issue and says whether it was met:
/// `goal <name>: <measured><unit> (goal <= <target><unit>) met` or `NOT met`. Every goal is
/// an upper bound (a ratio to a baseline of the same run, or a duration).
///
/// # Examples
///
/// ```
/// use leader_benches::goal;
///
/// assert!(goal("example ÷ floor", 1.5, 3.0, "x"));
/// assert!(!goal("example cycle", 412.0, 300.0, " ms"));
/// ```
pub fn goal(name: &str, measured: f64, target: f64, unit: &str) -> bool {
    goal_line(name, (measured, Bound::AtMost(target)), unit, None)
}

/// Like [`goal`], for a lower bound: `goal <name>: <measured><unit> (goal >= <target><unit>)`.
///
/// # Examples
///
/// ```
/// use leader_benches::goal_at_least;
///
/// assert!(goal_at_least("example throughput ÷ peer", 1.4, 1.3, "x"));
/// ```
pub fn goal_at_least(name: &str, measured: f64, target: f64, unit: &str) -> bool {
    goal_line(name, (measured, Bound::AtLeast(target)), unit, None)
}

/// Like [`goal`], for a goal that a limit measured in the same run may stop: a line that
/// is `NOT met` ends with `; limit: <limit>`, so that the reader sees on the goal's own
/// line what holds it back (a floor the design pays, the server's share of the time).
///
/// # Examples
///
/// ```
/// use leader_benches::goal_with_limit;
///
/// // Prints: goal example cycle: 412.00 ms (goal <= 300.00 ms) NOT met; limit: the
/// // server is busy for 380 ms of it
/// let limit = "the server is busy for 380 ms of it";
/// assert!(!goal_with_limit("example cycle", 412.0, 300.0, " ms", limit));
/// ```
pub fn goal_with_limit(name: &str, measured: f64, target: f64, unit: &str, limit: &str) -> bool {
    goal_line(name, (measured, Bound::AtMost(target)), unit, Some(limit))
}

/// Like [`goal_at_least`], with the limit of [`goal_with_limit`].
///
/// # Examples
///
/// ```
/// use leader_benches::goal_at_least_with_limit;
///
/// assert!(goal_at_least_with_limit("example rate ÷ peer", 0.97, 0.9, "x", "unused when met"));
/// ```
pub fn goal_at_least_with_limit(
    name: &str,
    measured: f64,
    target: f64,
    unit: &str,
    limit: &str,
) -> bool {
    goal_line(name, (measured, Bound::AtLeast(target)), unit, Some(limit))
}

/// Which side of its target a goal's measure must stay on.
#[derive(Clone, Copy)]
enum Bound {
    AtMost(f64),
    AtLeast(f64),
}

/// Prints a goal line (with its limit when it is not met) and says whether it was met.
fn goal_line(name: &str, (measured, bound): (f64, Bound), unit: &str, limit: Option<&str>) -> bool {
    let (met, sign, target) = match bound {
        Bound::AtMost(target) => (measured <= target, "<=", target),
        Bound::AtLeast(target) => (measured >= target, ">=", target),
    };
    let verdict = match (met, limit) {
        (true, _) => "met".to_owned(),
        (false, None) => "NOT met".to_owned(),
        (false, Some(limit)) => format!("NOT met; limit: {limit}"),
    };
    println!("goal {name}: {measured:.2}{unit} (goal {sign} {target:.2}{unit}) {verdict}");
    met
}

/// `a / b` as a ratio of two medians.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use leader_benches::ratio;
///
/// assert_eq!(ratio(Duration::from_millis(3), Duration::from_millis(2)), 1.5);
/// ```
pub fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64()
}

/// The lease every uncontended bench cycle asks for: long enough never to run out mid-run.
pub const LEASE: Duration = Duration::from_secs(60);

/// Elector options for an uncontended cycle: try once (no waiting) for a [`LEASE`].
pub fn try_once_options() -> LeaderElectionOptions {
    LeaderElectionOptions::default()
        .with_wait_time(Duration::ZERO)
        .with_lease_time(LEASE)
}

/// A backend request for `key` by the node `bench-node`, with a fresh owner token, for a
/// [`LEASE`] on the client's clock.
///
/// # Examples
///
/// ```
/// use leader_benches::{LEASE, request};
/// use leader_core::LockName;
///
/// let key = LockName::new("bench")?;
/// assert_eq!(request(&key).lease_time, LEASE);
/// # Ok::<(), leader_core::NameError>(())
/// ```
pub fn request(key: &LockName) -> AcquireRequest<'_> {
    AcquireRequest::new(key, OwnerToken::random(), "bench-node", LEASE)
}

/// One uncontended cycle of a server backend's blocking SPI: `try_acquire` + `release`.
///
/// # Panics
///
/// When the lock is not free or a call fails (a broken bench).
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failing bench stops
pub fn backend_cycle<B: LockBackend>(backend: &B, key: &LockName) {
    let AcquireOutcome::Acquired(lease) = LockBackend::try_acquire(backend, request(key)).unwrap()
    else {
        panic!("uncontended")
    };
    black_box(LockBackend::release(backend, ReleaseRequest::new(&lease, Duration::ZERO)).unwrap());
}

/// [`backend_cycle`] through the async SPI.
///
/// # Panics
///
/// As for [`backend_cycle`].
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failing bench stops
pub async fn backend_cycle_async<B: AsyncLockBackend>(backend: &B, key: &LockName) {
    let AcquireOutcome::Acquired(lease) = AsyncLockBackend::try_acquire(backend, request(key))
        .await
        .unwrap()
    else {
        panic!("uncontended")
    };
    black_box(
        AsyncLockBackend::release(backend, ReleaseRequest::new(&lease, Duration::ZERO))
            .await
            .unwrap(),
    );
}

/// One uncontended `LeaderElector::run_if_leader` with an empty action.
///
/// # Panics
///
/// When the elector is not elected or fails (a broken bench).
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failing bench stops
pub fn elector_cycle<B: LockBackend + 'static>(elector: &leader_blocking::LeaderElector<B>) {
    let value = elector.run_if_leader(black_box("bench-elector"), || 1u8);
    black_box(value.unwrap().expect("uncontended"));
}

/// [`elector_cycle`] on the async elector.
///
/// # Panics
///
/// As for [`elector_cycle`].
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failing bench stops
pub async fn elector_cycle_async<B: AsyncLockBackend + 'static>(
    elector: &leader_async::AsyncLeaderElector<B>,
) {
    let value = elector
        .run_if_leader(black_box("bench-elector-async"), || async { 1u8 })
        .await;
    black_box(value.unwrap().expect("uncontended"));
}

/// Whether the bench was given a name filter (`cargo bench --bench x -- <filter>`): an
/// argument that is neither an option nor the value of one of criterion's options that take
/// a value (`--measurement-time 3`). The benches run their unfiltered extras (interleaved
/// comparisons, handoffs) only without one.
pub fn name_filter_given() -> bool {
    let args: Vec<String> = std::env::args().skip(1).collect();
    names_a_filter(&args)
}

fn names_a_filter(args: &[String]) -> bool {
    const TAKES_VALUE: [&str; 15] = [
        "--save-baseline",
        "--baseline",
        "--load-baseline",
        "--color",
        "--format",
        "--output-format",
        "--plotting-backend",
        "--profile-time",
        "--warm-up-time",
        "--measurement-time",
        "--sample-size",
        "--nresamples",
        "--noise-threshold",
        "--confidence-level",
        "--significance-level",
    ];
    args.iter().enumerate().any(|(index, arg)| {
        let is_value = index > 0 && TAKES_VALUE.contains(&args[index - 1].as_str());
        !arg.starts_with('-') && !is_value
    })
}

/// Calls per command from a Redis server's `INFO commandstats` (`("evalsha", 40000)`, ...);
/// none when the server does not answer.
pub fn redis_command_stats(server: &mut redis::Connection) -> Vec<(String, u64)> {
    commandstats_field(server, "calls=")
}

/// The server's time per command from `INFO commandstats`, in microseconds since its start
/// (`("evalsha", 123456)`, ...): where the server's time goes.
pub fn redis_command_usec(server: &mut redis::Connection) -> Vec<(String, u64)> {
    commandstats_field(server, "usec=")
}

fn commandstats_field(server: &mut redis::Connection, field: &str) -> Vec<(String, u64)> {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(server)
        .unwrap_or_default();
    info.lines()
        .filter_map(|line| {
            let (name, rest) = line.strip_prefix("cmdstat_")?.split_once(':')?;
            let value = rest
                .split(',')
                .find_map(|item| item.strip_prefix(field))?
                .parse()
                .ok()?;
            Some((name.to_owned(), value))
        })
        .collect()
}

/// This process's CPU time (user + system, every thread) to the nanosecond, from
/// `CLOCK_PROCESS_CPUTIME_ID`; `None` where that clock cannot be read.
pub fn process_cpu_time() -> Option<Duration> {
    use rustix::time::{ClockId, DynamicClockId, clock_gettime_dynamic};
    let now = clock_gettime_dynamic(DynamicClockId::Known(ClockId::ProcessCPUTime)).ok()?;
    Some(Duration::new(
        u64::try_from(now.tv_sec).ok()?,
        u32::try_from(now.tv_nsec).ok()?,
    ))
}

/// The Redis server's CPU time since its start (`used_cpu_user` + `used_cpu_sys` of
/// `INFO cpu`, microsecond resolution), if it answers.
pub fn redis_cpu_time(server: &mut redis::Connection) -> Option<Duration> {
    let info: String = redis::cmd("INFO").arg("cpu").query(server).ok()?;
    let seconds = |field: &str| {
        info.lines()
            .find_map(|line| line.strip_prefix(field)?.trim().parse::<f64>().ok())
    };
    let total = seconds("used_cpu_user:")? + seconds("used_cpu_sys:")?;
    Some(Duration::from_secs_f64(total))
}

#[cfg(test)]
mod tests {
    use super::names_a_filter;

    fn args(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn option_values_are_not_filters() {
        assert!(!names_a_filter(&args(
            "--bench --measurement-time 3 --sample-size 20"
        )));
        assert!(!names_a_filter(&args("--bench --measurement-time=3")));
        assert!(names_a_filter(&args(
            "--bench --measurement-time 3 blocking"
        )));
        assert!(names_a_filter(&args("--bench async")));
    }
}
