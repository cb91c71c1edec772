//! A session: the backend from the URL, an elector over it, and the tenant scope.

use std::time::Duration;

use leader::{AnyBackend, LeaderElectionOptions, LeaderElector};

use crate::error::CliError;

/// What every command starts from.
#[derive(Debug)]
pub(crate) struct Session {
    elector: LeaderElector<AnyBackend>,
    /// The URL as the library shows it (no password), for messages.
    url: String,
    /// The URL's secret parts, masked in the messages printed while the command runs.
    secrets: leader::UrlSecrets,
}

impl Session {
    /// Connects to `url` (no I/O for most backends: connections open on first use) with
    /// `options`, scoped to `tenant` when given.
    pub(crate) fn open(
        url: Option<&str>,
        tenant: Option<&str>,
        options: LeaderElectionOptions,
    ) -> Result<Self, CliError> {
        let Some(url) = url.filter(|url| !url.trim().is_empty()) else {
            return Err(CliError::Usage(
                "no backend URL: pass --url URL or set LEADER_URL (redis://, mongodb://, sqlite://, postgres://, etcd://, ...)".into(),
            ));
        };
        let masked = leader::redacted_url(url);
        let backend = leader::connect(url)?;
        let elector = LeaderElector::new(backend, options)
            .map_err(|err| CliError::from_leader(err, &masked))?;
        let elector = match tenant {
            Some(tenant) => elector
                .for_tenant(tenant)
                .map_err(|err| CliError::from_leader(err, &masked))?,
            None => elector,
        };
        Ok(Session {
            elector,
            url: masked,
            secrets: leader::UrlSecrets::from_url(url),
        })
    }

    /// The elector for `name`, and the name to give it. Without `--tenant`, a name of the
    /// form `tenant:<id>:<rest>` (as `list` shows tenant locks) is looked up as `<rest>` in
    /// the scope of tenant `<id>`.
    pub(crate) fn lock<'n>(
        &self,
        name: &'n str,
    ) -> Result<(LeaderElector<AnyBackend>, &'n str), CliError> {
        let scoped = match (self.elector.tenant(), split_tenant(name)) {
            (None, Some((tenant, rest))) => (
                self.elector
                    .for_tenant(tenant)
                    .map_err(|err| self.error(err))?,
                rest,
            ),
            _ => (self.elector.clone(), name),
        };
        // Check the name now, so that a bad one is a usage error before any I/O. Slots of
        // a group and ranked candidates' records (`job#2`) are locks an operator may look
        // at and free too.
        scoped
            .0
            .observed_key(scoped.1)
            .map_err(|err| self.error(err))?;
        Ok(scoped)
    }

    /// The (possibly tenant-scoped) elector.
    pub(crate) fn elector(&self) -> &LeaderElector<AnyBackend> {
        &self.elector
    }

    /// The URL as the library shows it: no password.
    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// `err` as one line for stderr, the URL's secret parts masked.
    pub(crate) fn render(&self, err: &CliError) -> String {
        err.render(&self.secrets)
    }

    /// `err` from this session's backend as a [`CliError`], naming the URL as shown.
    pub(crate) fn error(&self, err: leader::Error) -> CliError {
        CliError::from_leader(err, &self.url)
    }
}

/// Default options for the read commands: a lease is never taken.
pub(crate) fn read_options() -> LeaderElectionOptions {
    LeaderElectionOptions::default().with_wait_time(Duration::ZERO)
}

/// `tenant:<id>:<rest>` → `(id, rest)`.
fn split_tenant(name: &str) -> Option<(&str, &str)> {
    let scoped = name.strip_prefix(leader::LockName::TENANT_NAMESPACE)?;
    let (tenant, rest) = scoped.split_once(':')?;
    (!tenant.is_empty() && !rest.is_empty()).then_some((tenant, rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenant_names_split() {
        assert_eq!(split_tenant("tenant:acme:sync"), Some(("acme", "sync")));
        assert_eq!(split_tenant("tenant:acme:a:b"), Some(("acme", "a:b")));
        assert_eq!(split_tenant("tenant:acme"), None);
        assert_eq!(split_tenant("billing"), None);
    }
}
