//! TLS on rustls (ring provider), for `sslmode=require`: the server's certificate is
//! verified against the configured CA, else the platform's roots.

use std::io;
use std::sync::Arc;

use rustls::{ClientConfig, RootCertStore};
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::error::ConnectError;

/// The connector trusting `root_pem` (PEM certificates) or, without it, the platform's
/// roots (and `SSL_CERT_FILE` / `SSL_CERT_DIR`).
pub(crate) fn connector(root_pem: Option<&[u8]>) -> Result<MakeRustlsConnect, ConnectError> {
    let tls_error = |err: &dyn std::fmt::Display| {
        ConnectError::Tls(io::Error::new(io::ErrorKind::InvalidData, err.to_string()))
    };
    let mut roots = RootCertStore::empty();
    match root_pem {
        Some(pem) => {
            for cert in CertificateDer::pem_slice_iter(pem) {
                let cert = cert.map_err(|err| tls_error(&err))?;
                roots.add(cert).map_err(|err| tls_error(&err))?;
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            roots.add_parsable_certificates(found.certs);
        }
    }
    if roots.is_empty() {
        return Err(ConnectError::Tls(io::Error::new(
            io::ErrorKind::NotFound,
            "no root certificate to verify the server with",
        )));
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|err| tls_error(&err))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(MakeRustlsConnect::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pem_without_certificates_is_refused() {
        assert!(matches!(
            connector(Some(b"not a certificate")),
            Err(ConnectError::Tls(_))
        ));
    }
}
