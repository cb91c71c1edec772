//! Blocking electors.
