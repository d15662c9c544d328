//! `scx_sis ab`: two policies, A (by default the live tunables) and B, take turns on the running
//! scheduler under the machine's own load, window by window, and a verdict says, measure by
//! measure, whether B is better, worse, or no different at this noise.

pub mod marker;
pub mod order;
pub mod report;
pub mod session;
pub mod user_metric;
pub mod window;
