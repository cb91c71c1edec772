#![doc = include_str!("fencing.md")]
