//! The backend contract suite.
