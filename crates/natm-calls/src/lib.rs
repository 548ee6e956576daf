//! The call control of one switch (issue 24).
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

extern crate alloc;

mod control;
mod types;

pub use control::CallControl;
pub use types::{
    CallStatus, Config, Counters, LegStatus, Phase, PortError, PortStatus, Route, Side,
};
