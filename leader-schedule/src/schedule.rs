//! [`Schedule`]: when a job's ticks are, a cron pattern in a time zone or a fixed rate.

use std::fmt;
use std::str::FromStr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use croner::Cron;

use crate::error::ScheduleError;

/// When a job's ticks are. Every node computes the same instants from it, whatever its
/// clock says now: a tick is an instant on the calendar, not "an interval after the last
/// run".
///
/// - [`Schedule::cron`]: a cron pattern of five fields (minute precision) or six (a
///   seconds field first), with the extensions of the `croner` crate (`L`, `W`, `#`,
///   `@daily`, ...), in UTC or in a time zone of the IANA database
///   ([`in_zone`](Schedule::in_zone)).
/// - [`Schedule::every`]: a fixed rate, ticks at the multiples of the period since the
///   Unix epoch (so every node agrees on them; a period of a day ticks at 00:00 UTC).
///
/// # Daylight saving time
///
/// A cron schedule in a zone with daylight saving time follows the rules of Vixie cron:
///
/// - a local time that does not exist that day (02:30 on the night clocks jump from 02:00
///   to 03:00) runs **once**, at the first instant after the gap (03:00) for a pattern
///   with fixed hours, minutes and seconds; a pattern with wildcards or steps in them
///   (`*/5 * * * *`) has no tick inside the gap;
/// - a local time that happens twice (01:30 on the night clocks fall back from 02:00 to
///   01:00) runs **once**, at its first occurrence, for a fixed-time pattern; a pattern
///   with wildcards or steps ticks on each pass, as real time goes on.
///
/// Ticks always move forward in real time, so a tick never repeats.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use leader_schedule::Schedule;
///
/// let nightly = Schedule::cron("0 0 2 * * *")?.in_zone("Europe/Berlin")?;
/// assert_eq!(nightly.to_string(), "cron 0 0 2 * * * in Europe/Berlin");
/// let every_second = Schedule::every(Duration::from_secs(1))?;
/// assert_eq!(every_second.to_string(), "every 1s");
/// assert_eq!("every 1s".parse::<Schedule>()?, every_second);
/// # Ok::<(), leader_schedule::ScheduleError>(())
/// ```
#[derive(Clone)]
pub struct Schedule {
    kind: Kind,
}

#[derive(Clone)]
enum Kind {
    Cron {
        pattern: String,
        cron: Box<Cron>,
        zone: Tz,
    },
    Every(Duration),
}

/// The shortest period of [`Schedule::every`].
pub const MIN_PERIOD: Duration = Duration::from_millis(10);

/// The longest period of [`Schedule::every`] (a year).
pub const MAX_PERIOD: Duration = Duration::from_secs(366 * 24 * 3600);

impl Schedule {
    /// A cron schedule in UTC. Five fields are minute, hour, day of month, month and day
    /// of week; six put a seconds field first.
    ///
    /// # Errors
    ///
    /// [`ScheduleError::InvalidCron`] naming the problem.
    pub fn cron(pattern: &str) -> Result<Self, ScheduleError> {
        let pattern = pattern.trim();
        let cron = Cron::from_str(pattern).map_err(|err| ScheduleError::InvalidCron {
            pattern: pattern.to_owned(),
            reason: err.to_string(),
        })?;
        Ok(Schedule {
            kind: Kind::Cron {
                pattern: pattern.to_owned(),
                cron: Box::new(cron),
                zone: Tz::UTC,
            },
        })
    }

    /// A fixed rate: a tick at each multiple of `period` since the Unix epoch.
    ///
    /// # Errors
    ///
    /// [`ScheduleError::InvalidPeriod`] for a period below [`MIN_PERIOD`], above
    /// [`MAX_PERIOD`] or not a whole number of milliseconds.
    pub fn every(period: Duration) -> Result<Self, ScheduleError> {
        if period < MIN_PERIOD
            || period > MAX_PERIOD
            || !period.subsec_nanos().is_multiple_of(1_000_000)
        {
            return Err(ScheduleError::InvalidPeriod { period });
        }
        Ok(Schedule {
            kind: Kind::Every(period),
        })
    }

    /// The same cron schedule in the time zone `zone` of the IANA database
    /// (`"Europe/Berlin"`, `"America/New_York"`, `"UTC"`).
    ///
    /// # Errors
    ///
    /// [`ScheduleError::UnknownZone`] for a name the database does not have, and
    /// [`ScheduleError::ZoneOfFixedRate`] for a fixed-rate schedule (its ticks are instants
    /// in no zone).
    pub fn in_zone(self, zone: &str) -> Result<Self, ScheduleError> {
        let parsed: Tz = zone
            .trim()
            .parse()
            .map_err(|_| ScheduleError::UnknownZone {
                zone: zone.to_owned(),
            })?;
        match self.kind {
            Kind::Cron { pattern, cron, .. } => Ok(Schedule {
                kind: Kind::Cron {
                    pattern,
                    cron,
                    zone: parsed,
                },
            }),
            Kind::Every(_) => Err(ScheduleError::ZoneOfFixedRate),
        }
    }

    /// The first tick strictly after `after`, or `None` when there is none (a cron pattern
    /// that matches no date before the year 5000).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, UNIX_EPOCH};
    /// use leader_schedule::Schedule;
    ///
    /// let every = Schedule::every(Duration::from_secs(10))?;
    /// let after = UNIX_EPOCH + Duration::from_millis(12_345);
    /// assert_eq!(every.next_after(after), Some(UNIX_EPOCH + Duration::from_secs(20)));
    /// # Ok::<(), leader_schedule::ScheduleError>(())
    /// ```
    pub fn next_after(&self, after: SystemTime) -> Option<SystemTime> {
        match &self.kind {
            Kind::Every(period) => {
                let period_ms = period.as_millis();
                let after_ms = millis_since_epoch(after)?;
                let next = (after_ms / period_ms + 1).checked_mul(period_ms)?;
                let next = u64::try_from(next).ok()?;
                UNIX_EPOCH.checked_add(Duration::from_millis(next))
            }
            Kind::Cron { cron, zone, .. } => {
                let start: DateTime<Utc> = DateTime::<Utc>::from(after);
                let next = cron
                    .find_next_occurrence(&start.with_timezone(zone), false)
                    .ok()?;
                Some(SystemTime::from(next.with_timezone(&Utc)))
            }
        }
    }

    /// The last tick at or before `at`, however long before it that is; `None` when there
    /// is none (a cron pattern that matched no earlier date).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, UNIX_EPOCH};
    /// use leader_schedule::Schedule;
    ///
    /// let weekly = Schedule::every(Duration::from_secs(7 * 24 * 3600))?;
    /// let at = UNIX_EPOCH + Duration::from_secs(9 * 24 * 3600);
    /// assert_eq!(weekly.last_at_or_before(at), Some(UNIX_EPOCH + Duration::from_secs(7 * 24 * 3600)));
    /// # Ok::<(), leader_schedule::ScheduleError>(())
    /// ```
    pub fn last_at_or_before(&self, at: SystemTime) -> Option<SystemTime> {
        match &self.kind {
            Kind::Every(period) => {
                let period_ms = period.as_millis();
                let at_ms = millis_since_epoch(at)?;
                let last = u64::try_from(at_ms / period_ms * period_ms).ok()?;
                UNIX_EPOCH.checked_add(Duration::from_millis(last))
            }
            Kind::Cron { cron, zone, .. } => {
                // croner searches backwards for a match; the ticks are what the forward
                // walk gives (the daylight-saving rules of `next_after`), so walk forward
                // from the match before that one up to `at`: a few steps.
                let zoned = |t: SystemTime| DateTime::<Utc>::from(t).with_timezone(zone);
                let found = cron.find_previous_occurrence(&zoned(at), true).ok()?;
                let from = cron
                    .find_previous_occurrence(&found, false)
                    .unwrap_or(found);
                let from = SystemTime::from(from.with_timezone(&Utc));
                let mut cursor = from.checked_sub(Duration::from_secs(1))?;
                let mut last = None;
                for _ in 0..WALK {
                    match self.next_after(cursor) {
                        Some(tick) if tick <= at => {
                            last = Some(tick);
                            cursor = tick;
                        }
                        _ => break,
                    }
                }
                last
            }
        }
    }

    /// The last tick strictly before `at`.
    pub(crate) fn last_before(&self, at: SystemTime) -> Option<SystemTime> {
        self.last_at_or_before(at.checked_sub(Duration::from_nanos(1))?)
    }

    /// How many ticks are strictly between `after` and `before`: exactly for a fixed rate;
    /// a cron schedule's are walked, and its count stops at `cap`.
    pub(crate) fn count_between(&self, after: SystemTime, before: SystemTime, cap: u64) -> u64 {
        if before <= after {
            return 0;
        }
        if let Kind::Every(period) = &self.kind {
            let period_ms = period.as_millis();
            let ticks_to = |t: SystemTime| millis_since_epoch(t).map_or(0, |ms| ms / period_ms);
            let last = self.last_before(before).map_or(0, &ticks_to);
            let counted = last.saturating_sub(ticks_to(after));
            return u64::try_from(counted).unwrap_or(u64::MAX);
        }
        let mut count = 0;
        let mut cursor = after;
        while count < cap {
            match self.next_after(cursor) {
                Some(tick) if tick < before => {
                    count += 1;
                    cursor = tick;
                }
                _ => break,
            }
        }
        count
    }
}

/// The most steps [`Schedule::last_at_or_before`] walks forward from croner's match.
const WALK: usize = 1000;

/// Milliseconds since the Unix epoch, `None` before it.
pub(crate) fn millis_since_epoch(at: SystemTime) -> Option<u128> {
    at.duration_since(UNIX_EPOCH).ok().map(|d| d.as_millis())
}

impl PartialEq for Schedule {
    fn eq(&self, other: &Self) -> bool {
        self.to_string() == other.to_string()
    }
}

impl Eq for Schedule {}

impl fmt::Debug for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Schedule({self})")
    }
}

/// `cron <pattern> in <zone>` or `every <period>` (a human duration: `1s`, `5m`,
/// `1h 30m`), the form [`FromStr`] reads back. The job's record keeps it, so an operator's
/// tool can tell the next tick.
impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            Kind::Cron { pattern, zone, .. } => write!(f, "cron {pattern} in {}", zone.name()),
            Kind::Every(period) => write!(f, "every {}", humantime::format_duration(*period)),
        }
    }
}

impl FromStr for Schedule {
    type Err = ScheduleError;

    /// Reads `cron <pattern> [in <zone>]` or `every <period>`.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let text = text.trim();
        if let Some(period) = text.strip_prefix("every ") {
            let period = humantime::parse_duration(period.trim()).map_err(|err| {
                ScheduleError::InvalidCron {
                    pattern: text.to_owned(),
                    reason: format!("not a period: {err}"),
                }
            })?;
            return Schedule::every(period);
        }
        let Some(rest) = text.strip_prefix("cron ") else {
            return Err(ScheduleError::InvalidCron {
                pattern: text.to_owned(),
                reason: "a schedule is `cron <pattern> [in <zone>]` or `every <period>`".into(),
            });
        };
        match rest.rsplit_once(" in ") {
            Some((pattern, zone)) => Schedule::cron(pattern)?.in_zone(zone),
            None => Schedule::cron(rest),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(text: &str) -> SystemTime {
        SystemTime::from(DateTime::parse_from_rfc3339(text).unwrap())
    }

    fn ticks(schedule: &Schedule, from: &str, until: &str) -> Vec<SystemTime> {
        let (mut at, until) = (utc(from), utc(until));
        let mut out = Vec::new();
        while let Some(next) = schedule.next_after(at) {
            if next > until {
                break;
            }
            out.push(next);
            at = next;
        }
        out
    }

    #[test]
    fn a_local_time_skipped_by_the_spring_gap_runs_once_right_after_it() {
        // Berlin, 2026-03-29: 02:00 CET jumps to 03:00 CEST; 02:30 does not exist.
        let s = Schedule::cron("0 30 2 * * *")
            .unwrap()
            .in_zone("Europe/Berlin")
            .unwrap();
        let got = ticks(&s, "2026-03-28T00:00:00Z", "2026-03-31T00:00:00Z");
        assert_eq!(
            got,
            vec![
                utc("2026-03-28T01:30:00Z"), // 02:30 CET
                utc("2026-03-29T01:00:00Z"), // 03:00 CEST, the first instant after the gap
                utc("2026-03-30T00:30:00Z"), // 02:30 CEST
            ]
        );
    }

    #[test]
    fn a_local_time_that_happens_twice_runs_once_at_its_first_occurrence() {
        // Berlin, 2026-10-25: 03:00 CEST falls back to 02:00 CET; 02:30 happens twice.
        let s = Schedule::cron("0 30 2 * * *")
            .unwrap()
            .in_zone("Europe/Berlin")
            .unwrap();
        let got = ticks(&s, "2026-10-24T00:00:00Z", "2026-10-27T00:00:00Z");
        assert_eq!(
            got,
            vec![
                utc("2026-10-24T00:30:00Z"), // 02:30 CEST
                utc("2026-10-25T00:30:00Z"), // the first 02:30 (CEST) only
                utc("2026-10-26T01:30:00Z"), // 02:30 CET
            ]
        );
    }

    #[test]
    fn an_interval_pattern_ticks_through_both_passes_of_a_repeated_hour() {
        let s = Schedule::cron("0 */30 * * * *")
            .unwrap()
            .in_zone("Europe/Berlin")
            .unwrap();
        let got = ticks(&s, "2026-10-24T23:59:00Z", "2026-10-25T02:01:00Z");
        // 02:00, 02:30 CEST, then 02:00, 02:30 CET, then 03:00 CET: real time, every 30 min.
        let expected: Vec<_> = (0..5)
            .map(|i| utc("2026-10-25T00:00:00Z") + Duration::from_secs(1800 * i))
            .collect();
        assert_eq!(got, expected);
        assert!(got.windows(2).all(|w| w[0] < w[1]), "ticks move forward");
    }

    #[test]
    fn fixed_rate_ticks_are_the_multiples_of_the_period() {
        let s = Schedule::every(Duration::from_millis(1500)).unwrap();
        let got = ticks(&s, "2026-01-01T00:00:00.100Z", "2026-01-01T00:00:04Z");
        assert_eq!(
            got,
            vec![utc("2026-01-01T00:00:01.500Z"), utc("2026-01-01T00:00:03Z"),]
        );
        assert_eq!(
            s.last_at_or_before(utc("2026-01-01T00:00:04Z")),
            Some(utc("2026-01-01T00:00:03Z"))
        );
    }

    #[test]
    fn bad_schedules_are_typed_errors() {
        assert!(matches!(
            Schedule::cron("61 * * * *"),
            Err(ScheduleError::InvalidCron { .. })
        ));
        assert!(matches!(
            Schedule::cron(""),
            Err(ScheduleError::InvalidCron { .. })
        ));
        assert!(matches!(
            Schedule::cron("* * * * *").unwrap().in_zone("Mars/Olympus"),
            Err(ScheduleError::UnknownZone { .. })
        ));
        assert!(matches!(
            Schedule::every(Duration::from_secs(1))
                .unwrap()
                .in_zone("UTC"),
            Err(ScheduleError::ZoneOfFixedRate)
        ));
        for period in [Duration::ZERO, Duration::from_micros(10_500), Duration::MAX] {
            assert!(matches!(
                Schedule::every(period),
                Err(ScheduleError::InvalidPeriod { .. })
            ));
        }
        assert!("hourly".parse::<Schedule>().is_err());
        assert!("every soon".parse::<Schedule>().is_err());
    }

    #[test]
    fn the_text_form_reads_back() {
        for text in [
            "cron 0 0 2 * * * in Europe/Berlin",
            "cron */5 * * * * in UTC",
            "every 1m 30s",
        ] {
            let schedule: Schedule = text.parse().unwrap();
            assert_eq!(schedule.to_string(), text);
        }
        let bare: Schedule = "cron 0 0 2 * * *".parse().unwrap();
        assert_eq!(bare.to_string(), "cron 0 0 2 * * * in UTC");
    }
    #[test]
    fn the_last_tick_is_found_however_long_ago_and_on_the_forward_walks_ticks() {
        // Weekly on Mondays at 02:00 in Berlin, asked on a Wednesday: that Monday's.
        let weekly = Schedule::cron("0 0 2 * * MON")
            .unwrap()
            .in_zone("Europe/Berlin")
            .unwrap();
        assert_eq!(
            weekly.last_at_or_before(utc("2026-06-10T12:00:00Z")),
            Some(utc("2026-06-08T00:00:00Z"))
        );
        // On the tick itself, and just before it.
        assert_eq!(
            weekly.last_at_or_before(utc("2026-06-08T00:00:00Z")),
            Some(utc("2026-06-08T00:00:00Z"))
        );
        assert_eq!(
            weekly.last_before(utc("2026-06-08T00:00:00Z")),
            Some(utc("2026-06-01T00:00:00Z"))
        );
        // Yearly: months back.
        let yearly = Schedule::cron("0 0 0 1 1 *").unwrap();
        assert_eq!(
            yearly.last_at_or_before(utc("2026-11-30T00:00:00Z")),
            Some(utc("2026-01-01T00:00:00Z"))
        );
        // The spring gap: 02:30 does not exist on 2026-03-29 in Berlin; its tick is the
        // first instant after the gap, as the forward walk says.
        let gap = Schedule::cron("0 30 2 * * *")
            .unwrap()
            .in_zone("Europe/Berlin")
            .unwrap();
        for at in ["2026-03-29T01:10:00Z", "2026-03-29T12:00:00Z"] {
            assert_eq!(
                gap.last_at_or_before(utc(at)),
                Some(utc("2026-03-29T01:00:00Z")),
                "{at}"
            );
        }
        // Every tick the forward walk gives is found as the last at or before itself.
        for tick in ticks(&gap, "2026-03-27T00:00:00Z", "2026-03-31T00:00:00Z") {
            assert_eq!(gap.last_at_or_before(tick), Some(tick));
        }
    }

    #[test]
    fn ticks_between_two_instants_are_counted() {
        let every = Schedule::every(Duration::from_secs(1)).unwrap();
        let (a, b) = (utc("2026-01-01T00:00:00Z"), utc("2026-01-08T00:00:00Z"));
        // Exactly, however many: a week of seconds, the ends excluded.
        assert_eq!(every.count_between(a, b, 10), 7 * 24 * 3600 - 1);
        assert_eq!(every.count_between(b, a, 10), 0);
        let cron = Schedule::cron("0 * * * * *").unwrap();
        assert_eq!(cron.count_between(a, utc("2026-01-01T01:00:00Z"), 1000), 59);
        assert_eq!(
            cron.count_between(a, b, 100),
            100,
            "a cron walk stops at the cap"
        );
    }
}
