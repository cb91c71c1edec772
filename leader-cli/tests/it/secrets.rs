//! The `leader` binary prints no password, however the URL writes it: arbitrary printable
//! passwords in every URL form of every backend (`leader_rig::secret_urls`), against servers that do not listen (port 1
//! on 127.0.0.1) or URLs that do not parse; neither stdout nor stderr may hold the
//! password or its percent-encoded form.

use crate::common::{leader, run};
use leader_rig::secret_urls::{encode, urls};
use proptest::prelude::*;

fn assert_hidden(url: &str, password: &str) {
    for args in [&["state", "job"][..], &["--json", "list"][..]] {
        let ran = run(leader(url, args));
        assert_ne!(ran.code, 0, "nothing listens there: {ran:#?}");
        for form in [password.to_owned(), encode(password)] {
            assert!(
                !ran.stderr.contains(&form) && !ran.stdout.contains(&form),
                "`leader --url {url}` shows the password {form:?}: {ran:#?}"
            );
        }
    }
}

fn password() -> impl Strategy<Value = String> {
    prop_oneof!["[ -~]{8,16}", "[a-zA-Z0-9]{3,6}[/?#@:%+&=' ][ -~]{3,10}",]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4, ..ProptestConfig::default() })]

    #[test]
    fn no_password_reaches_stdout_or_stderr(password in password()) {
        for url in urls(&password) {
            assert_hidden(&url, &password);
        }
    }
}

/// The example: an unencoded `/` that tokio-postgres takes into the password.
#[test]
fn the_reported_postgres_url_shows_no_password() {
    let url = "postgres://app:pa/ss@127.0.0.1:1/app";
    assert_hidden(url, "pa/ss");
    let ran = run(leader(url, &["state", "job"])).expect_code(1);
    assert!(
        ran.stderr.contains("postgres://app:***@127.0.0.1:1/app"),
        "the URL is shown as the driver read it: {ran:#?}"
    );
}
