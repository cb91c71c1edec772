//! The mongodb backend (in progress).
