//! What a bench saves in its output directory for later: runs.jsonl (a record a line, written
//! as the runs arrive) and plan.json (the plan and the report's notes); and both read back, for
//! `--render`.

use std::fs::{self, File};
use std::io::Write as _;
use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::bench::model::run_record::RunRecord;
use crate::bench::plan::Plan;

/// OUT/plan.json: the plan and the report's notes, for --render.
#[derive(Debug, Serialize, Deserialize)]
pub struct Saved {
    pub plan: Plan,
    pub notes: Vec<String>,
}

pub fn save_plan(out: &Path, plan: &Plan, notes: &[String]) -> Result<()> {
    let saved = Saved {
        plan: plan.clone(),
        notes: notes.to_vec(),
    };
    let p = out.join("plan.json");
    fs::write(&p, serde_json::to_string_pretty(&saved)?)
        .with_context(|| format!("failed to write {}", p.display()))
}

/// DIR/plan.json and DIR/runs.jsonl, as a bench saved them.
pub fn load(dir: &Path) -> Result<(Saved, Vec<RunRecord>)> {
    let p = dir.join("plan.json");
    let saved: Saved = serde_json::from_str(
        &fs::read_to_string(&p).with_context(|| format!("failed to read {}", p.display()))?,
    )
    .with_context(|| format!("{} is not a bench plan", p.display()))?;
    let p = dir.join("runs.jsonl");
    let text = fs::read_to_string(&p).with_context(|| format!("failed to read {}", p.display()))?;
    let records = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(i, l)| {
            serde_json::from_str::<RunRecord>(l)
                .with_context(|| format!("{}:{}: not a run record", p.display(), i + 1))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((saved, records))
}

/// runs.jsonl, one line per run as it arrives.
pub struct Jsonl(File);

impl Jsonl {
    pub fn create(out: &Path) -> Result<Jsonl> {
        fs::create_dir_all(out).with_context(|| format!("failed to create {}", out.display()))?;
        let p = out.join("runs.jsonl");
        Ok(Jsonl(File::create(&p).with_context(|| {
            format!("failed to create {}", p.display())
        })?))
    }

    pub fn push(&mut self, r: &RunRecord) -> Result<()> {
        writeln!(self.0, "{}", serde_json::to_string(r)?)?;
        self.0.flush()?;
        Ok(())
    }
}
