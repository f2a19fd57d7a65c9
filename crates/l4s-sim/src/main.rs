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
                eprintln!("l4s-sim: {e}");
                ExitCode::from(2)
            }
        },
        Cmd::Run {
            scenario,
            out,
            seed,
            pcap,
        } => {
            if let Some(p) = pcap.as_ref().filter(|p| p.exists()) {
                eprintln!(
                    "l4s-sim: --pcap {}: exists; results are never overwritten",
                    p.display()
                );
                return ExitCode::from(2);
            }
            let opts = l4s_sim::RunOptions {
                pcap: pcap.is_some(),
                ..Default::default()
            };
            let res = l4s_sim::Scenario::load(&scenario).and_then(|mut s| {
                if let Some(seed) = seed {
                    s.seed = seed;
                }
                l4s_sim::run_with(&s, &opts)
            });
            match res {
                Ok((r, extras)) => {
                    if let Err(e) = l4s_sim::output::write_dir(&r, &out) {
                        eprintln!("l4s-sim: {}: {e}", out.display());
                        return ExitCode::from(2);
                    }
                    if let (Some(p), Some(bytes)) = (&pcap, extras.pcapng) {
                        if let Err(e) = std::fs::write(p, bytes) {
                            eprintln!("l4s-sim: --pcap {}: {e}", p.display());
                            return ExitCode::from(2);
                        }
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
