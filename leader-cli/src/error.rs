//! [`CliError`]: every way a command fails, and its exit code.

use std::io;

use leader::{ConnectError, NameError, OptionsError, TenantIdError};

/// Exit code of a command that failed (backend, lock held elsewhere, lease lost).
pub(crate) const FAILURE: u8 = 1;
/// Exit code of a usage error (arguments, URL, name, tenant).
pub(crate) const USAGE: u8 = 2;

/// Why a command failed. Messages carry the URL with its password masked.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CliError {
    /// Arguments that clap cannot check (a missing `--url`, `--force`, `--yes`).
    #[error("{0}")]
    Usage(String),
    /// A URL `leader::connect` refused, or a backend it could not set up.
    #[error(transparent)]
    Connect(#[from] ConnectError),
    /// A lock name the library refuses.
    #[error("bad lock name: {0}")]
    BadName(#[source] NameError),
    /// A tenant id the library refuses.
    #[error("bad tenant: {0}")]
    BadTenant(#[source] TenantIdError),
    /// Options the library refuses (a node id, a lease).
    #[error("bad option: {0}")]
    BadOptions(#[source] OptionsError),
    /// The backend did not answer in time or could not be reached.
    #[error("the backend at `{url}` is unreachable or did not answer: {source}")]
    Unreachable {
        url: String,
        #[source]
        source: leader::Error,
    },
    /// The backend answered with a failure, or the library refused something else.
    #[error("the backend at `{url}` failed: {source}")]
    Backend {
        url: String,
        #[source]
        source: leader::Error,
    },
    /// `list`: the backend handed back the cursor it was given, so paging would not end.
    #[error("the backend at `{url}` returned the list cursor it was given; stopped paging")]
    CursorStuck { url: String },
    /// `acquire`: another node held the lock for all of `--wait`.
    #[error("{0}")]
    HeldElsewhere(#[source] leader::Error),
    /// `acquire`: the lease was lost while holding the lock.
    #[error(
        "lost the lock `{name}` while holding it (force-released, expired, or lost by the backend)"
    )]
    LeaseLost { name: String },
    /// `release`: another acquisition took the lock after its holder was shown.
    #[error(
        "not released: lock `{name}` changed holders since it was shown: it was held by {seen}, now by {now}"
    )]
    HolderChanged {
        name: String,
        seen: String,
        now: String,
    },
    /// `release`: the question was not answered yes.
    #[error("not confirmed: lock `{name}` was not released")]
    Declined { name: String },
    /// The Ctrl-C handler could not be installed.
    #[error("cannot handle Ctrl-C: {0}")]
    Signal(#[from] ctrlc::Error),
    /// Reading the answer or writing the output failed.
    #[error("{what}: {source}")]
    Io {
        what: &'static str,
        #[source]
        source: io::Error,
    },
}

impl CliError {
    /// The process exit code: [`USAGE`] for what the user can fix in the command line,
    /// [`FAILURE`] otherwise.
    pub(crate) fn exit_code(&self) -> u8 {
        match self {
            CliError::Usage(_)
            | CliError::BadName(_)
            | CliError::BadTenant(_)
            | CliError::BadOptions(_) => USAGE,
            CliError::Connect(err) => connect_exit_code(err),
            CliError::Io { source, .. } if source.kind() == io::ErrorKind::BrokenPipe => 0,
            CliError::Unreachable { .. }
            | CliError::Backend { .. }
            | CliError::CursorStuck { .. }
            | CliError::HeldElsewhere(_)
            | CliError::LeaseLost { .. }
            | CliError::Declined { .. }
            | CliError::HolderChanged { .. }
            | CliError::Signal(_)
            | CliError::Io { .. } => FAILURE,
        }
    }

    /// `true` when stdout was closed by its reader (`leader list | head`): nothing to say.
    pub(crate) fn is_broken_pipe(&self) -> bool {
        matches!(self, CliError::Io { source, .. } if source.kind() == io::ErrorKind::BrokenPipe)
    }

    /// The message and its causes on one line, each cause once (a driver's multi-line
    /// message is joined into the line), `secrets` masked: the library's
    /// [`RedactedError`](leader::RedactedError), on one line.
    pub(crate) fn render(&self, secrets: &leader::UrlSecrets) -> String {
        one_line(&leader::RedactedError::new(self, secrets).to_string())
    }

    /// The error for `err` from a call to the backend at `url` (masked).
    pub(crate) fn from_leader(err: leader::Error, url: &str) -> Self {
        match err {
            leader::Error::InvalidName(err @ NameError::Reserved { .. }) => {
                CliError::Usage(format!(
                    "bad lock name: {err} (here: pass --tenant ID, or write `tenant:<id>:<name>`)"
                ))
            }
            leader::Error::InvalidName(err) => CliError::BadName(err),
            leader::Error::InvalidTenant(err) => CliError::BadTenant(err),
            leader::Error::InvalidOptions(err) => CliError::BadOptions(err),
            leader::Error::AlreadyScoped { .. } => CliError::Usage(err.to_string()),
            err @ leader::Error::NotAcquired { .. } => CliError::HeldElsewhere(err),
            leader::Error::LeaseLost { key } => CliError::LeaseLost { name: key },
            err @ leader::Error::Backend(_) if err.is_transient() => CliError::Unreachable {
                url: url.to_owned(),
                source: err,
            },
            err => CliError::Backend {
                url: url.to_owned(),
                source: err,
            },
        }
    }

    /// An I/O error while doing `what`.
    pub(crate) fn io(what: &'static str) -> impl FnOnce(io::Error) -> Self {
        move |source| CliError::Io { what, source }
    }
}

/// `text` with its line breaks (and the blanks around them) turned into single spaces.
fn one_line(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// A URL that does not parse or names no backend is a usage error; a backend that could
/// not be set up (a file that will not open, a name that does not resolve) is a failure.
fn connect_exit_code(err: &ConnectError) -> u8 {
    use leader::{etcd, mongodb, postgres};
    match err {
        ConnectError::NotAUrl
        | ConnectError::UnknownScheme { .. }
        | ConnectError::FeatureDisabled { .. }
        | ConnectError::InvalidUrl { .. }
        | ConnectError::Redis(_) => USAGE,
        ConnectError::Mongo {
            source: mongodb::ConnectError::InvalidUri(_),
            ..
        } => USAGE,
        ConnectError::Postgres {
            source:
                postgres::ConnectError::InvalidUrl(_)
                | postgres::ConnectError::InvalidTable { .. }
                | postgres::ConnectError::InvalidConfig(_)
                | postgres::ConnectError::TlsNotBuilt,
            ..
        } => USAGE,
        ConnectError::Etcd {
            source:
                etcd::ConnectError::InvalidUrl(_)
                | etcd::ConnectError::InvalidConfig(_)
                | etcd::ConnectError::TlsNotBuilt,
            ..
        } => USAGE,
        _ => FAILURE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn causes_already_in_the_message_are_not_repeated() {
        let err = CliError::Io {
            what: "cannot read the answer",
            source: io::Error::other("closed"),
        };
        assert_eq!(
            err.render(&leader::UrlSecrets::default()),
            "cannot read the answer: closed"
        );
        let err = CliError::Io {
            what: "cannot parse",
            source: io::Error::other("Parse error at 1\nUnexpected `84`\n\n"),
        };
        assert_eq!(
            err.render(&leader::UrlSecrets::default()),
            "cannot parse: Parse error at 1 Unexpected `84`"
        );
        assert_eq!(err.exit_code(), FAILURE);
    }

    #[test]
    fn bad_urls_are_usage_errors() {
        let Err(err) = leader::connect("mysql://u:hunter2@db/") else {
            panic!("mysql is not a backend")
        };
        let err = CliError::from(err);
        assert_eq!(err.exit_code(), USAGE);
        assert!(
            !err.render(&leader::UrlSecrets::default())
                .contains("hunter2"),
            "{}",
            err.render(&leader::UrlSecrets::default())
        );
    }
}
