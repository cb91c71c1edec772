//! [`RootCertificate`]: the CA certificate a backend's config trusts, as every backend's
//! config holds it.

use std::fmt;

/// A CA certificate (PEM) that a backend trusts instead of the platform's roots, as a
/// backend's config holds it (its `tls_root_certificate`). Not public API: the configs
/// take and give the bytes.
///
/// - `Debug` shows its size: the certificate is public, but long.
/// - A config file holds the PEM text itself (feature `serde`), not a path: a value
///   without a PEM block is refused as most likely a file path, and bytes that are not
///   UTF-8 cannot be written to a text file.
#[derive(Clone, PartialEq, Eq)]
pub struct RootCertificate(Vec<u8>);

/// What starts every PEM block.
#[cfg(feature = "serde")]
const PEM_BEGIN: &str = "-----BEGIN ";

impl RootCertificate {
    /// The certificate(s) in `pem`.
    pub fn new(pem: impl Into<Vec<u8>>) -> Self {
        RootCertificate(pem.into())
    }

    /// The PEM bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

impl fmt::Debug for RootCertificate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0.len(), f)
    }
}

#[cfg(feature = "serde")]
impl serde::Serialize for RootCertificate {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let text = std::str::from_utf8(&self.0).map_err(|_| {
            serde::ser::Error::custom("tls_root_certificate is not PEM text (not UTF-8)")
        })?;
        serializer.serialize_str(text)
    }
}

#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for RootCertificate {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let pem = String::deserialize(deserializer)?;
        if !pem.contains(PEM_BEGIN) {
            return Err(serde::de::Error::custom(
                "tls_root_certificate must hold the PEM text (-----BEGIN CERTIFICATE-----...), not a file path",
            ));
        }
        Ok(RootCertificate(pem.into_bytes()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_shows_the_size_only() {
        let pem = RootCertificate::new("-----BEGIN CERTIFICATE-----\nMIIB\n");
        assert_eq!(format!("{:?}", Some(pem)), "Some(33)");
    }
}
