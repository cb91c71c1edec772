//! The operator's calls: listing the held locks under a prefix ([`listing`]), and freeing
//! a lock whoever holds it, or only while its holder has a given fencing token
//! ([`ForceRelease`]). Like `ops`, each is data that the blocking and async paths send.

mod force_release;
pub(crate) mod listing;

pub(crate) use force_release::ForceRelease;
