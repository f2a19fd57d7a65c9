//! `l4s-sim run SCENARIO.toml -o DIR`: run one scenario and write samples.csv, flows.csv and
//! summary.json (and packets.csv when `[output] packets = true`); `l4s-sim check SCENARIO`
//! validates only. Errors print one line and exit with status 2.

use clap::{Parser, Subcommand};
use std::path::PathBuf;
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
        /// Output directory (created if missing).
        #[arg(short, long, default_value = "results")]
        out: PathBuf,
        /// Override the scenario's seed.
        #[arg(long)]
        seed: Option<u64>,
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
                eprintln!("l4s-sim: {e}");
                ExitCode::from(2)
            }
        },
        Cmd::Run {
            scenario,
            out,
            seed,
        } => {
            let res = l4s_sim::Scenario::load(&scenario).and_then(|mut s| {
                if let Some(seed) = seed {
                    s.seed = seed;
                }
                l4s_sim::run(&s)
            });
            match res {
                Ok(r) => {
                    if let Err(e) = l4s_sim::output::write_dir(&r, &out) {
                        eprintln!("l4s-sim: {}: {e}", out.display());
                        return ExitCode::from(2);
                    }
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("l4s-sim: {e}");
                    ExitCode::from(2)
                }
            }
        }
    }
}
