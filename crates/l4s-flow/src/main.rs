//! `l4s-flow`: iperf3-like command line around the l4s-core TCP over UDP (see lib.rs).

use std::net::IpAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use l4s_core::Nanos;
use l4s_flow::client::{self, ClientOpts};
use l4s_flow::server::{self, ServerOpts};
use l4s_flow::{install_signal_handlers, reverse, wire, EmuEnv, FlowError};
use l4s_sim::scenario::FlowEcn;

/// l4slab's TCP (Prague, DCTCP, Cubic, Reno, BBR) over UDP with per-datagram ECN.
#[derive(Parser, Debug)]
#[command(name = "l4s-flow", bin_name = "l4slab flow", version, about)]
struct Cli {
    /// Run as the receiver (server).
    #[arg(short = 's', long = "server", conflicts_with = "client")]
    server: bool,
    /// Run as the sender, connecting to HOST.
    #[arg(short = 'c', long = "client", value_name = "HOST")]
    client: Option<String>,
    /// UDP port of the server.
    #[arg(short = 'p', long, default_value_t = 5201)]
    port: u16,
    /// Local address to bind.
    #[arg(short = 'B', long = "bind", value_name = "ADDR")]
    bind: Option<IpAddr>,
    /// Client: local UDP port of the first stream (stream i uses PORT + i), as iperf3's.
    #[arg(long = "cport", value_name = "PORT")]
    cport: Option<u16>,
    /// Congestion control: prague, dctcp, cubic, reno, bbr1, bbr3 (-C as in iperf3).
    #[arg(short = 'C', long, default_value = "prague")]
    cc: String,
    /// ECN mode: l4s, accecn, classic, none (default: what the CC asks for).
    #[arg(long)]
    ecn: Option<String>,
    /// Send for this long (e.g. 30s, 500ms; a bare number is seconds).
    #[arg(
        short = 't',
        long = "time",
        default_value = "10s",
        allow_hyphen_values = true
    )]
    time: String,
    /// Send exactly this many bytes per stream (K, M, G suffixes are powers of 1024).
    #[arg(short = 'n', long = "bytes")]
    bytes: Option<String>,
    /// Application rate limit in bits/s per stream (K, M, G are powers of 1000, as iperf3;
    /// 0 = none): the sender's application writes at this rate, so the flow is
    /// application-limited below it.
    #[arg(
        short = 'b',
        long = "bitrate",
        value_name = "RATE",
        default_value = "0"
    )]
    bitrate: String,
    /// Reverse (as iperf3 -R): the server sends with this command line's -C, --ecn, -t/-n,
    /// -O, --mss, --seed and -b, and this client receives (the interval lines are its own).
    #[arg(short = 'R', long = "reverse")]
    reverse: bool,
    /// Server: refuse reverse runs (-R) from clients.
    #[arg(long)]
    no_reverse: bool,
    /// Parallel streams.
    #[arg(short = 'P', long = "parallel", default_value_t = 1)]
    parallel: u32,
    /// Interval between reports (0 = none).
    #[arg(short = 'i', long = "interval", default_value = "1s")]
    interval: String,
    /// Write the result as JSON to FILE (never overwrites).
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// TCP MSS in payload bytes (default: a datagram fills a 1500-byte MTU).
    #[arg(long)]
    mss: Option<u32>,
    /// End the run when the peer sends nothing for this long.
    #[arg(long, default_value = "10s")]
    peer_timeout: String,
    /// Busy-wait this long before a send deadline instead of sleeping (pacing accuracy vs CPU).
    #[arg(long, default_value = "50us")]
    spin: String,
    /// Seed of the congestion controls' random streams (BBR).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Server: serve one connection, then exit.
    #[arg(short = '1', long = "one-off")]
    one_off: bool,
    /// Require SCHED_FIFO real-time priority (an error when not permitted). By default it is
    /// asked for and used when permitted (root or CAP_SYS_NICE), as the emulator does: pacing
    /// and timing then survive a busy host. The sender busy-waits at most --spin per send.
    #[arg(long, conflicts_with = "no_rt")]
    rt: bool,
    /// Do not ask for SCHED_FIFO.
    #[arg(long)]
    no_rt: bool,
    /// No interval lines.
    #[arg(short = 'q', long)]
    quiet: bool,
    /// Client: the JSON result on stdout instead of the text lines (as iperf3 -J).
    #[arg(short = 'J', long = "json-stdout")]
    json_stdout: bool,
    /// Client: leave out the first SECS from the result (slow start), sending them in
    /// addition to -t (as iperf3 -O).
    #[arg(short = 'O', long = "omit", value_name = "SECS", default_value = "0")]
    omit: String,
    /// Write what would go to stdout and stderr to FILE instead (a new file; never
    /// overwritten).
    #[arg(long, value_name = "FILE")]
    logfile: Option<PathBuf>,
    /// Application: bulk (TCP, default) or rt (real-time video: --cc rt-prague|rt-gcc|rt-cbr;
    /// the server needs --app rt too); the emulator's scenario mode also runs workload (the
    /// transfers of [[workloads]], to a bulk server) and probe ([[probes]], to a server with
    /// --app probe) from a --plan file.
    #[arg(long, default_value = "bulk")]
    app: String,
    /// --app workload|probe: the JSON plan the emulator's scenario mode writes.
    #[arg(long, value_name = "FILE")]
    plan: Option<PathBuf>,
    #[command(flatten)]
    rt_args: l4s_flow::rt::RtArgs,
}

/// Send stdout and stderr to a new file (`--logfile`).
fn redirect_output(path: &std::path::Path) -> Result<(), FlowError> {
    use std::os::fd::AsRawFd;
    let f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => FlowError::Exists {
                flag: "--logfile",
                path: path.display().to_string(),
            },
            _ => FlowError::io(format!("--logfile {}", path.display()), e),
        })?;
    for fd in [libc::STDOUT_FILENO, libc::STDERR_FILENO] {
        // SAFETY: dup2 of an open descriptor we own onto the standard ones.
        if unsafe { libc::dup2(f.as_raw_fd(), fd) } < 0 {
            return Err(FlowError::io(
                "--logfile dup2",
                std::io::Error::last_os_error(),
            ));
        }
    }
    Ok(())
}

fn usage(flag: &'static str, msg: impl Into<String>) -> FlowError {
    FlowError::Usage {
        flag,
        msg: msg.into(),
    }
}

/// "30s", "250ms", or a bare number of seconds (iperf3 style).
fn duration(flag: &'static str, s: &str, allow_zero: bool) -> Result<Nanos, FlowError> {
    let d = match s.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && x >= 0.0 => Nanos::from_secs_f64(x),
        Ok(_) => return Err(usage(flag, format!("\"{s}\" must be a duration ≥ 0"))),
        Err(_) => l4s_core::parse_duration(s).map_err(|e| {
            usage(
                flag,
                format!("\"{s}\": {e}; e.g. \"30s\", \"500ms\", \"10\""),
            )
        })?,
    };
    if d == Nanos::ZERO && !allow_zero {
        return Err(usage(flag, format!("\"{s}\" must be > 0")));
    }
    if d > wire::MAX_DURATION {
        return Err(usage(flag, format!("\"{s}\" is longer than a week")));
    }
    Ok(d)
}

/// "1000", "10K", "5M", "1G" (powers of 1024, as iperf3).
fn bytes(s: &str) -> Result<u64, FlowError> {
    let t = s.trim();
    let (num, mult) = match t.char_indices().last() {
        Some((i, 'K' | 'k')) => (&t[..i], 1u64 << 10),
        Some((i, 'M' | 'm')) => (&t[..i], 1 << 20),
        Some((i, 'G' | 'g')) => (&t[..i], 1 << 30),
        _ => (t, 1),
    };
    let n: u64 = num.parse().map_err(|_| {
        usage(
            "-n",
            format!("\"{s}\" is not a byte count; e.g. 1000, 10K, 5M, 1G"),
        )
    })?;
    let b = n
        .checked_mul(mult)
        .filter(|&b| b > 0 && b < wire::MAX_BYTES)
        .ok_or_else(|| usage("-n", format!("\"{s}\" must be in 1..2^50 bytes")))?;
    Ok(b)
}

/// "5M", "500K", "1G", "2.5M", a bare number of bits/s (powers of 1000, as iperf3's -b), or
/// a scenario-style rate ("50mbit"). 0 = no limit.
fn bitrate(s: &str) -> Result<Option<u64>, FlowError> {
    let (min_bps, max_bps) = (
        *wire::RATE_RANGE_BPS.start() as f64,
        *wire::RATE_RANGE_BPS.end() as f64,
    );
    let t = s.trim();
    let (num, mult) = match t.char_indices().last() {
        Some((i, 'K' | 'k')) => (&t[..i], 1e3),
        Some((i, 'M' | 'm')) => (&t[..i], 1e6),
        Some((i, 'G' | 'g')) => (&t[..i], 1e9),
        _ => (t, 1.0),
    };
    let bps = match num.parse::<f64>() {
        Ok(x) if x.is_finite() => x * mult,
        _ => l4s_core::parse_rate(t).map(|r| r.0 as f64).map_err(|_| {
            usage(
                "-b",
                format!("\"{s}\" is not a rate; e.g. 5M, 500K, 1G, 2500000 (bits/s)"),
            )
        })?,
    };
    if bps == 0.0 {
        return Ok(None);
    }
    if !(min_bps..=max_bps).contains(&bps) {
        return Err(usage(
            "-b",
            format!("\"{s}\" must be 0 (no limit) or in 1K..=1000G bits/s"),
        ));
    }
    Ok(Some(bps.round() as u64))
}

fn ecn(s: &str) -> Result<FlowEcn, FlowError> {
    match s {
        "l4s" => Ok(FlowEcn::L4s),
        "accecn" => Ok(FlowEcn::Accecn),
        "classic" => Ok(FlowEcn::Classic),
        "none" => Ok(FlowEcn::None),
        _ => Err(usage(
            "--ecn",
            format!("\"{s}\" is not an ECN mode; expected one of l4s, accecn, classic, none"),
        )),
    }
}

fn run(cli: Cli) -> Result<(), FlowError> {
    if cli.reverse && cli.server {
        return Err(usage(
            "-R",
            "is a client option (the client asks the server to send); the server takes no -R",
        ));
    }
    if cli.reverse && cli.app != "bulk" {
        return Err(usage(
            "-R",
            format!(
                "reverse mode with --app {} is not supported (bulk TCP only); run the rt \
                 sender on the other host instead",
                cli.app
            ),
        ));
    }
    if cli.no_reverse && !cli.server {
        return Err(usage("--no-reverse", "is a server option (-s)"));
    }
    let peer_timeout = duration("--peer-timeout", &cli.peer_timeout, false)?;
    let spin = duration("--spin", &cli.spin, true)?;
    if spin > Nanos::from_ms(10) {
        return Err(usage(
            "--spin",
            format!("\"{}\" must be at most 10ms", cli.spin),
        ));
    }
    let interval = duration("-i", &cli.interval, true)?;
    let omit = duration("-O", &cli.omit, true)?;
    if let Some(p) = &cli.logfile {
        redirect_output(p)?;
    }
    if !cli.no_rt {
        match l4s_flow::clock::set_realtime(10) {
            Ok(()) => l4s_flow::REALTIME.store(true, std::sync::atomic::Ordering::Relaxed),
            Err(e) if cli.rt => {
                return Err(usage(
                    "--rt",
                    format!("cannot switch to SCHED_FIFO: {e} (needs root or CAP_SYS_NICE)"),
                ))
            }
            Err(_) => {}
        }
    }
    let interval = (interval > Nanos::ZERO).then_some(interval);
    if let Some(r) = run_app(&cli, peer_timeout, spin, interval) {
        return r;
    }
    if cli.server {
        let o = ServerOpts {
            port: cli.port,
            bind: cli.bind,
            peer_timeout,
            one_off: cli.one_off,
            interval,
            json: cli.json,
            quiet: cli.quiet,
            spin,
            no_reverse: cli.no_reverse,
        };
        server::run(&o).map(|_| ())
    } else if let Some(host) = cli.client {
        if !(1..=128).contains(&cli.parallel) {
            return Err(usage("-P", format!("{} must be in 1..=128", cli.parallel)));
        }
        if let Some(p) = cli.cport {
            if p == 0 || p as u32 + cli.parallel - 1 > 65_535 {
                return Err(usage(
                    "--cport",
                    format!(
                        "{p} must be in 1..={} with -P {}",
                        65_536 - cli.parallel,
                        cli.parallel
                    ),
                ));
            }
        }
        let o = ClientOpts {
            host,
            port: cli.port,
            bind: cli.bind,
            cport: cli.cport,
            cc: cli.cc,
            ecn: cli.ecn.as_deref().map(ecn).transpose()?,
            // -O's seconds are sent in addition to -t's.
            duration: duration("-t", &cli.time, false)? + omit,
            omit,
            json_stdout: cli.json_stdout,
            bytes: cli.bytes.as_deref().map(bytes).transpose()?,
            parallel: cli.parallel,
            rate_bps: bitrate(&cli.bitrate)?,
            interval,
            json: cli.json,
            mss: cli.mss,
            peer_timeout,
            spin,
            seed: cli.seed,
            quiet: cli.quiet || cli.json_stdout,
            reverse: cli.reverse,
        };
        let emu = EmuEnv::from_env()?;
        let start = client::prepare(&o)?;
        if o.reverse {
            reverse::run(&o, &emu, &start).map(|_| ())
        } else {
            client::run(&o, &emu, &start).map(|_| ())
        }
    } else {
        Err(usage("-s/-c", "give -s (server) or -c HOST (client)"))
    }
}

/// `--app rt` (l4s_flow::rt); None for the bulk TCP of `run`.
fn run_app(
    cli: &Cli,
    peer_timeout: Nanos,
    spin: Nanos,
    interval: Option<Nanos>,
) -> Option<Result<(), FlowError>> {
    if (cli.app != "bulk" || cli.server) && cli.cport.is_some() {
        return Some(Err(usage(
            "--cport",
            "applies to the bulk client only (--app bulk, -c HOST); remove it",
        )));
    }
    match cli.app.as_str() {
        "bulk" => l4s_flow::rt::first_flag(&cli.rt_args).map(|f| {
            Err(usage(
                f,
                "applies to --app rt only (real-time video); add --app rt or remove it",
            ))
        }),
        "rt" if cli.server => Some(l4s_flow::rt::run_server(&ServerOpts {
            port: cli.port,
            bind: cli.bind,
            peer_timeout,
            one_off: cli.one_off,
            interval,
            json: cli.json.clone(),
            quiet: cli.quiet,
            spin,
            no_reverse: true,
        })),
        "rt" => Some((|| {
            let host = cli
                .client
                .clone()
                .ok_or_else(|| usage("-s/-c", "give -s (server) or -c HOST (client)"))?;
            if cli.parallel != 1 || cli.bytes.is_some() {
                return Err(usage(
                    if cli.bytes.is_some() { "-n" } else { "-P" },
                    "does not apply to --app rt (one video flow for -t seconds)",
                ));
            }
            let cc = if cli.cc == "prague" {
                "rt-prague"
            } else {
                &cli.cc
            };
            let flow = l4s_flow::rt::flow_config(
                cc,
                cli.ecn.as_deref().map(ecn).transpose()?,
                duration("-t", &cli.time, false)?,
                &cli.rt_args,
            )?;
            let o = l4s_flow::rt::RtClientOpts {
                host,
                port: cli.port,
                bind: cli.bind,
                flow,
                json: cli.json.clone(),
                peer_timeout,
                spin,
                quiet: cli.quiet,
                seed: cli.seed,
            };
            l4s_flow::rt::run_client(&o, &EmuEnv::from_env()?).map(|_| ())
        })()),
        "probe" if cli.server => Some(l4s_flow::probe::run_server(&ServerOpts {
            port: cli.port,
            bind: cli.bind,
            peer_timeout,
            one_off: false,
            interval: None,
            json: None,
            quiet: cli.quiet,
            spin,
            no_reverse: cli.no_reverse,
        })),
        "workload" | "probe" => Some((|| {
            let host = cli.client.as_deref().ok_or_else(|| {
                usage(
                    "-c",
                    format!("--app {} runs as a client: give -c HOST", cli.app),
                )
            })?;
            let plan = cli
                .plan
                .as_deref()
                .ok_or_else(|| usage("--plan", format!("--app {} needs --plan FILE", cli.app)))?;
            let emu = EmuEnv::from_env()?;
            if cli.app == "workload" {
                let p = l4s_flow::workload::read_plan(plan)?;
                l4s_flow::workload::run(host, cli.port, cli.bind, &p, spin, &emu)
            } else {
                let p = l4s_flow::workload::read_plan(plan)?;
                l4s_flow::probe::run_client(host, cli.port, cli.bind, &p, &emu)
            }
        })()),
        other => Some(Err(usage(
            "--app",
            format!("\"{other}\" is not an application; expected bulk or rt"),
        ))),
    }
}

/// A clap error as one line: its first line without clap's own "error: ", and where to look.
fn clap_line(e: &clap::Error) -> String {
    let text = e.to_string();
    let first = text.lines().next().unwrap_or("").trim();
    let first = first.strip_prefix("error: ").unwrap_or(first);
    format!("{first} (see l4slab flow --help)")
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        // --help and --version print as clap does; a usage error is one line in the
        // program's error style, "l4slab flow: error: <what>: <why>" (as `run`'s errors).
        Err(e) if !e.use_stderr() => {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("l4slab flow: error: {}", clap_line(&e));
            return ExitCode::from(2);
        }
    };
    install_signal_handlers();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("l4slab flow: error: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
