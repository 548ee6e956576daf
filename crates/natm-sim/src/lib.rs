//! natm's deterministic simulator (issue 6).

pub mod app;
pub mod eventbuilder;
