//! The report stage: the records and their verdicts rendered as the markdown report and the SVG
//! plot, and the files of the output directory.

pub mod markdown;
pub mod plot;
pub mod results;
