//! A session: the backend from the URL, an elector over it, and the tenant scope.

use std::time::Duration;

use leader::{AnyBackend, LeaderElectionOptions, LeaderElector};

use crate::error::CliError;

/// What every command starts from.
#[derive(Debug)]
pub(crate) struct Session {
    elector: LeaderElector<AnyBackend>,
    /// The URL with its password masked, for messages.
    url: String,
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
                "no backend URL: pass --url URL or set LEADER_URL (redis://, mongodb://, sqlite://, postgres://, ...)".into(),
            ));
        };
        let masked = mask(url, password(url));
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

    /// The URL, its password masked.
    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// `err` from this session's backend as a [`CliError`], the URL masked.
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

/// The password of a `scheme://user:password@host...` URL, if it has one. Text that is not
/// quite a URL (`redis:/user:pw@host`) is searched too: it ends up in error messages as well.
pub(crate) fn password(url: &str) -> Option<&str> {
    let authority = match url.split_once("://") {
        // The user info ends at the last `@` before the path (a cluster URL lists its
        // hosts after it).
        Some((_, rest)) => &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())],
        None => url,
    };
    let user_info = &authority[..authority.rfind('@')?];
    let user_info = user_info.rsplit('/').next().unwrap_or(user_info);
    let (_, password) = user_info.split_once(':')?;
    (!password.is_empty()).then_some(password)
}

/// `text` with every occurrence of `secret` replaced by `***`.
pub(crate) fn mask(text: &str, secret: Option<&str>) -> String {
    match secret {
        Some(secret) => text.replace(secret, "***"),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_found_and_masked() {
        assert_eq!(password("redis://user:secret@127.0.0.1:1/"), Some("secret"));
        assert_eq!(password("redis://:pw@a:1,b:2/0"), Some("pw"));
        assert_eq!(password("mongodb://u:p%40ss@h/db?x=1"), Some("p%40ss"));
        assert_eq!(password("redis://127.0.0.1/"), None);
        assert_eq!(password("redis://user@h/"), None);
        assert_eq!(password("sqlite:///tmp/a@b:c"), None);
        assert_eq!(password("redis:/user:pw@h/"), Some("pw"));
        assert_eq!(password("redis//user:pw@h/"), Some("pw"));
        assert_eq!(
            mask("redis://user:secret@h/", Some("secret")),
            "redis://user:***@h/"
        );
    }

    #[test]
    fn tenant_names_split() {
        assert_eq!(split_tenant("tenant:acme:sync"), Some(("acme", "sync")));
        assert_eq!(split_tenant("tenant:acme:a:b"), Some(("acme", "a:b")));
        assert_eq!(split_tenant("tenant:acme"), None);
        assert_eq!(split_tenant("billing"), None);
    }
}
