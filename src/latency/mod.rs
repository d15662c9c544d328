//! Wakeup-latency workload (placeholder until the workload lands).

use anyhow::Result;
use clap::Args;

#[derive(Debug, Clone, Args)]
pub struct LatencyOpts {}

pub fn run(_opts: &LatencyOpts) -> Result<()> {
    anyhow::bail!("not implemented yet")
}
