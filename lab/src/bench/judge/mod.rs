//! The judge stage: what the records say. The repeats of each measurement picked out and
//! summarized, and the verdicts on them (with the library's `scx_sis::verdict`), which the
//! report renders and by which `--until-ci` decides whether another round is due.

pub mod repeats;
pub mod verdicts;
