//! TEMPORARY (issue 15, in progress): `list` and `force_release` until this backend has them.

pub(crate) fn not_yet(key: &str) -> leader_core::Error {
    let io = std::io::Error::new(std::io::ErrorKind::Unsupported, "not implemented yet");
    leader_core::BackendError::new("pending", key, leader_core::BackendErrorKind::Permanent, io)
        .into()
}
