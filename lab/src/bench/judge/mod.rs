//! The judge stage: what the records say. The repeats of each measurement summarized.

pub mod repeats;
