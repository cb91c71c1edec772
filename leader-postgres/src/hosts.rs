//! [`one_per_host`]: a multi-host configuration as one configuration per host, so that
//! each host's whole handshake can be bounded on its own.
//!
//! tokio-postgres tries the hosts of one configuration in order, but bounds only each TCP
//! connect: a host that accepts the connection and then never answers (a paused or
//! overloaded server, a primary frozen while its standby was promoted) holds the attempt
//! there for good, and the hosts after it are never tried.

use tokio_postgres::Config;
use tokio_postgres::config::Host;

/// `config` once per host (with its `hostaddr` and port), every other setting kept: the
/// driver's rule for ports (one per host, or one for all, or 5432) applied.
pub(crate) fn one_per_host(config: &Config) -> Vec<Config> {
    let hosts = config.get_hosts();
    let addrs = config.get_hostaddrs();
    let ports = config.get_ports();
    let count = hosts.len().max(addrs.len());
    if count <= 1 {
        return vec![config.clone()];
    }
    (0..count)
        .map(|index| {
            let mut one = settings_of(config);
            match hosts.get(index) {
                Some(Host::Tcp(name)) => {
                    one.host(name);
                }
                #[cfg(unix)]
                Some(Host::Unix(path)) => {
                    one.host_path(path);
                }
                None => {}
            }
            if let Some(addr) = addrs.get(index) {
                one.hostaddr(*addr);
            }
            if let Some(port) = ports.get(index).or_else(|| ports.first()) {
                one.port(*port);
            }
            one
        })
        .collect()
}

/// A configuration with every setting of `config` but its hosts, addresses and ports.
fn settings_of(config: &Config) -> Config {
    let mut one = Config::new();
    if let Some(user) = config.get_user() {
        one.user(user);
    }
    if let Some(password) = config.get_password() {
        one.password(password);
    }
    if let Some(dbname) = config.get_dbname() {
        one.dbname(dbname);
    }
    if let Some(options) = config.get_options() {
        one.options(options);
    }
    if let Some(name) = config.get_application_name() {
        one.application_name(name);
    }
    one.ssl_mode(config.get_ssl_mode())
        .ssl_negotiation(config.get_ssl_negotiation())
        .keepalives(config.get_keepalives())
        .keepalives_idle(config.get_keepalives_idle())
        .target_session_attrs(config.get_target_session_attrs())
        .channel_binding(config.get_channel_binding())
        .load_balance_hosts(config.get_load_balance_hosts());
    if let Some(timeout) = config.get_connect_timeout() {
        one.connect_timeout(*timeout);
    }
    if let Some(timeout) = config.get_tcp_user_timeout() {
        one.tcp_user_timeout(*timeout);
    }
    if let Some(interval) = config.get_keepalives_interval() {
        one.keepalives_interval(interval);
    }
    if let Some(retries) = config.get_keepalives_retries() {
        one.keepalives_retries(retries);
    }
    one
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(url: &str) -> Config {
        url.parse().unwrap()
    }

    #[test]
    fn a_single_host_is_kept_as_it_is() {
        let url = "postgres://app:pw@db:6000/app?application_name=x&connect_timeout=3";
        assert_eq!(one_per_host(&parse(url)), vec![parse(url)]);
    }

    #[test]
    fn each_host_keeps_every_other_setting() {
        let query = "sslmode=disable&application_name=x&connect_timeout=3&keepalives_idle=7\
            &target_session_attrs=read-write&options=-c%20a%3Db&tcp_user_timeout=5\
            &keepalives_interval=2&keepalives_retries=4&channel_binding=disable";
        let split = one_per_host(&parse(&format!(
            "postgres://app:pw@h1:1,h2:2,[::1]:3/db?{query}"
        )));
        let each = [
            format!("postgres://app:pw@h1:1/db?{query}"),
            format!("postgres://app:pw@h2:2/db?{query}"),
            format!("postgres://app:pw@[::1]:3/db?{query}"),
        ];
        assert_eq!(split, each.iter().map(|url| parse(url)).collect::<Vec<_>>());
    }

    #[test]
    fn one_port_serves_every_host_and_none_means_the_default() {
        let split = one_per_host(&parse("host=h1,h2 port=7 hostaddr=10.0.0.1,10.0.0.2"));
        assert_eq!(
            split,
            vec![
                parse("host=h1 port=7 hostaddr=10.0.0.1"),
                parse("host=h2 port=7 hostaddr=10.0.0.2"),
            ]
        );
        let split = one_per_host(&parse("postgres://h1,h2/db"));
        assert_eq!(
            split,
            vec![parse("postgres://h1/db"), parse("postgres://h2/db")]
        );
    }
}
