//! natm's deterministic simulator (issue 6).

pub mod app;
pub mod calib;
pub mod eventbuilder;
