//! Fencing at the resource: how the storage a leader writes to refuses a stale leader.
//!
//! (The full guide is being written; see `LeaderRunResult::fencing_token` and
//! `LeaseContext::fencing_token` for where the token comes from.)
