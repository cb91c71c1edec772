//! The redis backend (in progress).
