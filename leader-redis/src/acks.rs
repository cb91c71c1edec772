//! Replica acknowledgement: the setting ([`ReplicaAcks`]), its URL query parameters, and
//! the `WAIT` command sent after each acquire and renewal script.

use std::time::Duration;

use redis::Cmd;

use crate::error::ConnectError;

/// The longest `WAIT` timeout accepted: a grant waiting longer than this for replicas is
/// a misconfiguration (the lease itself is usually shorter).
pub(crate) const MAX_ACK_TIMEOUT: Duration = Duration::from_secs(60);

/// The URL query parameter with the number of replicas.
const REPLICAS_PARAM: &str = "replica_acks";
/// The URL query parameter with the `WAIT` timeout (`50ms`, `1s`, or milliseconds).
const TIMEOUT_PARAM: &str = "replica_ack_timeout";
/// The timeout used when a URL names replicas but no timeout.
const DEFAULT_TIMEOUT: Duration = Duration::from_millis(100);

/// Wait for this many replicas, this long, after each acquire and renewal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ReplicaAcks {
    pub(crate) replicas: u32,
    pub(crate) timeout: Duration,
}

impl ReplicaAcks {
    /// `WAIT <replicas> <timeout ms>`.
    pub(crate) fn command(&self) -> Cmd {
        let millis = u64::try_from(self.timeout.as_millis()).unwrap_or(u64::MAX);
        let mut cmd = redis::cmd("WAIT");
        cmd.arg(self.replicas).arg(millis.max(1));
        cmd
    }

    /// Checks the setting against the response timeout: the `WAIT` must end before the
    /// driver gives up on the answer.
    pub(crate) fn validate(&self, response_timeout: Duration) -> Result<(), ConnectError> {
        let reason = if self.timeout.is_zero() {
            Some("the timeout must be longer than zero (zero would make WAIT block forever)")
        } else if self.timeout < Duration::from_millis(1) {
            Some("the timeout must be at least one millisecond (WAIT counts milliseconds)")
        } else if self.timeout > MAX_ACK_TIMEOUT {
            Some("the timeout must be at most 60 s")
        } else if self.timeout >= response_timeout {
            Some("the timeout must be shorter than response_timeout, or the answer is lost")
        } else {
            None
        };
        match reason {
            Some(reason) => Err(ConnectError::InvalidReplicaAcks {
                replicas: self.replicas,
                timeout: self.timeout,
                reason,
            }),
            None => Ok(()),
        }
    }
}

/// What a URL's query says about replica acknowledgement.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct UrlAcks {
    pub(crate) replicas: Option<u32>,
    pub(crate) timeout: Option<Duration>,
}

impl UrlAcks {
    /// The setting the URL asks for, if it names replicas (zero replicas: off).
    pub(crate) fn acks(&self) -> Option<ReplicaAcks> {
        match self.replicas {
            Some(0) | None => None,
            Some(replicas) => Some(ReplicaAcks {
                replicas,
                timeout: self.timeout.unwrap_or(DEFAULT_TIMEOUT),
            }),
        }
    }
}

/// Takes this crate's query parameters (`replica_acks`, `replica_ack_timeout`) out of
/// `url` and parses them; every other parameter stays, in order, for the driver.
pub(crate) fn split_url(url: &str) -> Result<(String, UrlAcks), ConnectError> {
    let (before_fragment, fragment) = match url.find('#') {
        Some(at) => url.split_at(at),
        None => (url, ""),
    };
    let Some((base, query)) = before_fragment.split_once('?') else {
        return Ok((url.to_owned(), UrlAcks::default()));
    };
    let mut acks = UrlAcks::default();
    let mut kept = Vec::new();
    for pair in query.split('&') {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        match name {
            REPLICAS_PARAM => {
                let replicas = value
                    .parse::<u32>()
                    .map_err(|_| bad_param(REPLICAS_PARAM, value))?;
                acks.replicas = Some(replicas);
            }
            TIMEOUT_PARAM => {
                acks.timeout =
                    Some(parse_duration(value).ok_or_else(|| bad_param(TIMEOUT_PARAM, value))?);
            }
            _ => kept.push(pair),
        }
    }
    if acks.timeout.is_some() && acks.replicas.is_none() {
        return Err(ConnectError::InvalidUrlParameter {
            name: TIMEOUT_PARAM,
            value: acks.timeout.map(|t| format!("{t:?}")).unwrap_or_default(),
            reason: "it needs replica_acks too",
        });
    }
    let mut rebuilt = base.to_owned();
    if !kept.is_empty() {
        rebuilt.push('?');
        rebuilt.push_str(&kept.join("&"));
    }
    rebuilt.push_str(fragment);
    Ok((rebuilt, acks))
}

fn bad_param(name: &'static str, value: &str) -> ConnectError {
    ConnectError::InvalidUrlParameter {
        name,
        value: value.chars().take(32).collect(),
        reason: if name == REPLICAS_PARAM {
            "expected a number of replicas (0 turns acknowledgement off)"
        } else {
            "expected a duration such as 50ms or 1s (a bare number is milliseconds)"
        },
    }
}

/// `50ms`, `2s`, or a bare number of milliseconds.
fn parse_duration(value: &str) -> Option<Duration> {
    let number = |digits: &str| digits.parse::<u64>().ok();
    if let Some(ms) = value.strip_suffix("ms") {
        number(ms).map(Duration::from_millis)
    } else if let Some(s) = value.strip_suffix('s') {
        number(s).map(Duration::from_secs)
    } else {
        number(value).map(Duration::from_millis)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_parameters_are_taken_out_and_the_others_kept() {
        let (url, acks) =
            split_url("redis://:pw@h:1/0?protocol=resp3&replica_acks=2&replica_ack_timeout=50ms")
                .unwrap();
        assert_eq!(url, "redis://:pw@h:1/0?protocol=resp3");
        assert_eq!(
            acks.acks(),
            Some(ReplicaAcks {
                replicas: 2,
                timeout: Duration::from_millis(50)
            })
        );
        let (url, acks) = split_url("redis://h/?replica_acks=1").unwrap();
        assert_eq!(url, "redis://h/");
        assert_eq!(acks.acks().unwrap().timeout, DEFAULT_TIMEOUT);
        let (url, acks) = split_url("redis://h/?replica_acks=0&replica_ack_timeout=2s").unwrap();
        assert_eq!((url.as_str(), acks.acks()), ("redis://h/", None));
        assert_eq!(acks.timeout, Some(Duration::from_secs(2)));
        let (url, acks) = split_url("redis://h/?x=1").unwrap();
        assert_eq!((url.as_str(), acks), ("redis://h/?x=1", UrlAcks::default()));
        assert_eq!(split_url("redis://h/").unwrap().0, "redis://h/");
        assert_eq!(
            split_url("redis://h/?replica_ack_timeout=7")
                .unwrap_err()
                .to_string(),
            "invalid URL parameter replica_ack_timeout=\"7ms\": it needs replica_acks too"
        );
    }

    #[test]
    fn bad_values_are_typed_errors() {
        for url in [
            "redis://h/?replica_acks=-1",
            "redis://h/?replica_acks=two",
            "redis://h/?replica_acks=",
            "redis://h/?replica_acks=1&replica_ack_timeout=soon",
            "redis://h/?replica_acks=1&replica_ack_timeout=1.5s",
        ] {
            assert!(
                matches!(
                    split_url(url),
                    Err(ConnectError::InvalidUrlParameter { .. })
                ),
                "{url}"
            );
        }
    }

    #[test]
    fn timeouts_are_checked() {
        let acks = |ms| ReplicaAcks {
            replicas: 1,
            timeout: Duration::from_millis(ms),
        };
        let response = Duration::from_secs(2);
        assert!(acks(50).validate(response).is_ok());
        for bad in [0, 2000, 5000, 61_000] {
            assert!(
                matches!(
                    acks(bad).validate(response),
                    Err(ConnectError::InvalidReplicaAcks { .. })
                ),
                "{bad}"
            );
        }
        let nanos = ReplicaAcks {
            replicas: 1,
            timeout: Duration::from_nanos(10),
        };
        assert!(nanos.validate(response).is_err());
        assert_eq!(
            format!("{:?}", acks(50).command().get_packed_command()),
            format!(
                "{:?}",
                redis::cmd("WAIT").arg(1).arg(50).get_packed_command()
            )
        );
    }
}
