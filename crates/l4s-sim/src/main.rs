//! `l4s-sim run SCENARIO.toml -o DIR`: run one scenario and write samples.csv, flows.csv and
//! summary.json (and packets.csv when `[output] packets = true`); `l4s-sim check SCENARIO`
//! validates only. Errors print one line and exit with status 2.

use clap::{Parser, Subcommand};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "l4s-sim", version, about = "Deterministic L4S simulator")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run a scenario file and write its results into a directory.
    Run {
        /// Scenario file (TOML, or JSON with a .json extension).
        scenario: PathBuf,
        /// Output directory (created if missing). A non-empty one must hold this very run
        /// (same scenario and seed: a rerun), unless --force.
        #[arg(short, long, default_value = "results")]
        out: PathBuf,
        /// Override the scenario's seed.
        #[arg(long)]
        seed: Option<u64>,
        /// Replace the run files of a directory holding another run (other files are kept).
        #[arg(long)]
        force: bool,
        /// Also write a pcapng trace of every packet the AQM passed, marked or dropped.
        #[arg(long, value_name = "FILE")]
        pcap: Option<PathBuf>,
    },
    /// Parse and validate a scenario file without running it.
    Check { scenario: PathBuf },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.cmd {
        // Build the whole world (trace file, AQM, flows) as `run` does, without running it,
        // so every input `run` would refuse is refused here too.
        Cmd::Check { scenario } => match l4s_sim::Scenario::load(&scenario)
            .and_then(|s| l4s_sim::world::World::new(&s).map(|_| s))
        {
            Ok(s) => {
                println!(
                    "{}: ok ({} flows, aqm {}, {} s)",
                    scenario.display(),
                    s.n_flows(),
                    s.aqm.kind(),
                    s.duration.as_secs_f64()
                );
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("l4s-sim: error: {e}");
                ExitCode::from(2)
            }
        },
        Cmd::Run {
            scenario,
            out,
            seed,
            force,
            pcap,
        } => {
            if let Some(p) = pcap.as_ref().filter(|p| p.exists()) {
                eprintln!(
                    "l4s-sim: error: --pcap {}: exists; results are never overwritten",
                    p.display()
                );
                return ExitCode::from(2);
            }
            let opts = l4s_sim::RunOptions {
                pcap: pcap.is_some(),
                ..Default::default()
            };
            let res = l4s_sim::Scenario::load(&scenario).map(|mut s| {
                if let Some(seed) = seed {
                    s.seed = seed;
                }
                s
            });
            let res = match res {
                Ok(s) => match prepare_out_dir(&out, &s, force) {
                    Ok(()) => l4s_sim::run_with(&s, &opts),
                    Err(msg) => {
                        eprintln!("l4s-sim: error: {}: {msg}", out.display());
                        return ExitCode::from(2);
                    }
                },
                Err(e) => Err(e),
            };
            match res {
                Ok((r, extras)) => {
                    if let Err(e) = l4s_sim::output::write_dir(&r, &out) {
                        eprintln!("l4s-sim: error: {}: {e}", out.display());
                        return ExitCode::from(2);
                    }
                    if let (Some(p), Some(bytes)) = (&pcap, extras.pcapng) {
                        if let Err(e) = std::fs::write(p, bytes) {
                            eprintln!("l4s-sim: error: --pcap {}: {e}", p.display());
                            return ExitCode::from(2);
                        }
                    }
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("l4s-sim: error: {e}");
                    ExitCode::from(2)
                }
            }
        }
    }
}

/// The files `l4s-sim run` writes into its output directory.
const RUN_FILES: [&str; 4] = ["samples.csv", "flows.csv", "summary.json", "packets.csv"];

/// Make `out` ready for a run of `s` before it runs: a missing or empty directory, or one
/// holding this very run (summary.json with the same scenario and seed), is fine; with
/// `force` another run's files are removed (other files stay); anything else is refused,
/// so no result is ever replaced silently.
fn prepare_out_dir(out: &Path, s: &l4s_sim::Scenario, force: bool) -> Result<(), String> {
    let entries: Vec<String> = match std::fs::read_dir(out) {
        Ok(rd) => rd
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e.to_string()),
    };
    if entries.is_empty() {
        return Ok(());
    }
    let previous: Option<serde_json::Value> = std::fs::read_to_string(out.join("summary.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok());
    let same_run = previous.as_ref().is_some_and(|v| {
        v.get("scenario") == Some(&s.raw) && v.get("seed").and_then(|x| x.as_u64()) == Some(s.seed)
    });
    let only_run_files = entries.iter().all(|e| RUN_FILES.contains(&e.as_str()));
    if (same_run && only_run_files) || force {
        for f in RUN_FILES {
            match std::fs::remove_file(out.join(f)) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e.to_string()),
                _ => {}
            }
        }
        return Ok(());
    }
    let what = if previous.is_some() {
        "another run (its summary.json has another scenario or seed)"
    } else {
        "other files"
    };
    Err(format!(
        "not empty, it holds {what}; choose another output directory, or pass --force to \
         replace its run files"
    ))
}
