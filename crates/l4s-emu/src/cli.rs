//! Command line of `l4s-emu` (Mahimahi-style flags over an optional scenario file).
//! Flags set the same scenario keys a file would (`--rate` is `link.rate`, `--aqm-arg k=v` is
//! `aqm.k`), so both go through one validation.

use crate::error::EmuError;
use l4s_core::{parse_duration, parse_rate, Nanos};
use serde_json::{Map, Value};
use std::path::PathBuf;

/// Usage text (printed by --help and after a flag error).
pub const USAGE: &str = "\
usage: l4s-emu [SCENARIO.toml] [options] [-- COMMAND [ARGS...]]
  Runs COMMAND (default: $SHELL) in a network namespace whose only way out is an emulated
  bottleneck driven by the same l4s-core AQM and link objects as the simulator.
options:
  --rate RATE            link rate both ways, e.g. 50mbit            (link.rate)
  --trace FILE           Mahimahi trace both ways                      (link.trace)
  --uplink-trace FILE    trace for client -> server only               (emulator.uplink.trace)
  --downlink-trace FILE  trace for server -> client only               (emulator.downlink.trace)
  --delay TIME           one-way delay in each direction, e.g. 20ms    (emulator.delay)
  --loss P               i.i.d. loss probability in each direction     (link.loss)
  --aqm KIND             fifo | fifo_ecn | codel | pie | fq_codel | dualpi2   (aqm.kind)
  --aqm-arg KEY=VALUE    an [aqm] key, repeatable, e.g. step_thresh=5ms
  --uplink-rate RATE, --downlink-rate RATE      one direction's rate (emulator.DIR.rate)
  --uplink-delay TIME, --downlink-delay TIME    one direction's one-way delay
  --uplink-loss P, --downlink-loss P            one direction's loss probability
  --uplink-aqm KIND, --downlink-aqm KIND        one direction's AQM (emulator.DIR.aqm)
  --uplink-aqm-arg K=V, --downlink-aqm-arg K=V  a key of one direction's AQM, repeatable
  --once                 do not loop the traces (as mm-link --once)
  --uplink-log FILE      Mahimahi mm-link log of the uplink (a new file; never overwritten)
  --downlink-log FILE    Mahimahi mm-link log of the downlink (a new file; never overwritten)
  --pcap FILE            pcapng trace (Wireshark, tshark) of every packet the AQMs passed,
                         marked or dropped, both directions; verdict and queue as comments
                         (a new file; never overwritten)
  --no-offload           no TSO/checksum offload on the TUN devices (default: offloads on)
  --server CMD           run CMD (through sh -c) on the server side (two-namespace mode)
  --host                 host mode: COMMAND reaches the host and beyond through the link
  --seed N               random seed (seed)
  -o, --output DIR       write results here (must not exist or be empty)
  --quiet                no live view
  --no-realtime          do not ask for SCHED_FIFO (default: asked for, used when permitted;
                         the emulator runs at SCHED_FIFO 99, above the programs it hosts)
  --rt-priority N        run --server and COMMAND under SCHED_FIFO N (1..98, below the
                         emulator's 99); for senders that must not lose the CPU on a busy host
  --tcp-cc NAME          the namespaces' net.ipv4.tcp_congestion_control (default: cubic, the
                         kernel's own default; one of net.ipv4.tcp_available_congestion_control)
  --spin TIME            spin this long before each deadline instead of sleeping (default 80us)
  -h, --help             this text";

/// Parsed command line.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// The scenario file, if one was given.
    pub scenario: Option<PathBuf>,
    /// Scenario document (file contents with the flags applied): link, aqm, emulator, seed.
    pub doc: Map<String, Value>,
    /// Server-side command (run through `sh -c`).
    pub server: Option<String>,
    /// Host mode instead of two-namespace mode.
    pub host: bool,
    /// Client command argv.
    pub command: Vec<String>,
    /// Output directory.
    pub output: Option<PathBuf>,
    /// No live view.
    pub quiet: bool,
    /// Spin window before deadlines.
    pub spin: Option<Nanos>,
    /// Do not ask for real-time scheduling.
    pub no_realtime: bool,
    /// Run the server command and COMMAND under SCHED_FIFO at this priority (`--rt-priority`).
    pub rt_priority: Option<i32>,
    /// The namespaces' default TCP congestion control (`--tcp-cc`; None: cubic).
    pub tcp_cc: Option<String>,
    /// Write one JSON line of live statistics per tick to this descriptor (the dashboard).
    pub stats_fd: Option<i32>,
    /// Mahimahi-format log of the uplink (`--uplink-log`).
    pub uplink_log: Option<PathBuf>,
    /// Mahimahi-format log of the downlink (`--downlink-log`).
    pub downlink_log: Option<PathBuf>,
    /// pcapng trace of both directions' AQM verdicts (`--pcap`).
    pub pcap: Option<PathBuf>,
    /// Open the TUN devices without IFF_VNET_HDR/TUNSETOFFLOAD (`--no-offload`).
    pub no_offload: bool,
    /// --help was given.
    pub help: bool,
}

fn bad(flag: &str, msg: impl std::fmt::Display) -> EmuError {
    EmuError::Config(format!("{flag}: {msg}"))
}

fn table<'a>(doc: &'a mut Map<String, Value>, key: &str) -> &'a mut Map<String, Value> {
    let v = doc
        .entry(key.to_string())
        .or_insert_with(|| Value::Object(Map::new()));
    if !v.is_object() {
        *v = Value::Object(Map::new());
    }
    match v {
        Value::Object(m) => m,
        _ => unreachable!("replaced by an object above"),
    }
}

/// Read a TOML (or JSON) scenario file into a JSON object.
pub fn read_scenario(path: &std::path::Path) -> Result<Map<String, Value>, EmuError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| EmuError::Config(format!("scenario {}: {e}", path.display())))?;
    let v: Value = if path.extension().is_some_and(|e| e == "json") {
        serde_json::from_str(&text)
            .map_err(|e| EmuError::Config(format!("scenario {}: {e}", path.display())))?
    } else {
        toml::from_str(&text)
            .map_err(|e| EmuError::Config(format!("scenario {}: {e}", path.display())))?
    };
    match v {
        Value::Object(m) => Ok(m),
        _ => Err(EmuError::Config(format!(
            "scenario {}: a scenario is a table",
            path.display()
        ))),
    }
}

/// Parse argv (without the program name).
pub fn parse(args: &[String]) -> Result<Options, EmuError> {
    let mut o = Options::default();
    let mut flags: Vec<(String, String)> = Vec::new();
    let mut once_seen: Vec<String> = Vec::new();
    let mut i = 0;
    let need = |i: usize, flag: &str| -> Result<String, EmuError> {
        args.get(i + 1)
            .cloned()
            .ok_or_else(|| bad(flag, "needs a value"))
    };
    while i < args.len() {
        let a = args[i].as_str();
        // `--flag=value` is the same as `--flag value`.
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (a, None),
        };
        let takes_value = matches!(
            flag,
            "--rate"
                | "--trace"
                | "--uplink-trace"
                | "--downlink-trace"
                | "--delay"
                | "--loss"
                | "--aqm"
                | "--aqm-arg"
                | "--uplink-log"
                | "--downlink-log"
                | "--pcap"
                | "--server"
                | "--seed"
                | "-o"
                | "--output"
                | "--spin"
                | "--rt-priority"
                | "--tcp-cc"
                | "--stats-fd"
                | "--uplink-rate"
                | "--downlink-rate"
                | "--uplink-delay"
                | "--downlink-delay"
                | "--uplink-loss"
                | "--downlink-loss"
                | "--uplink-aqm"
                | "--downlink-aqm"
                | "--uplink-aqm-arg"
                | "--downlink-aqm-arg"
        );
        let value = if takes_value {
            match inline {
                Some(v) => Some(v),
                None => {
                    let v = need(i, flag)?;
                    i += 1;
                    Some(v)
                }
            }
        } else {
            None
        };
        if flag == "--" {
            o.command = args[i + 1..].to_vec();
            break;
        }
        // A flag that sets one value, given twice, is refused (the last would win silently).
        if flag.starts_with('-') && !REPEATABLE.contains(&flag) {
            if once_seen.iter().any(|f| f == flag) {
                return Err(bad(flag, "given twice; give it once"));
            }
            once_seen.push(flag.to_string());
        }
        match flag {
            "-h" | "--help" => o.help = true,
            "--quiet" | "-q" => o.quiet = true,
            "--host" => o.host = true,
            "--no-realtime" => o.no_realtime = true,
            "--server" => o.server = value,
            "-o" | "--output" => o.output = value.map(PathBuf::from),
            "--no-offload" => o.no_offload = true,
            "--once" => flags.push(("--once".into(), String::new())),
            "--uplink-log" | "--downlink-log" | "--pcap" => {
                let p = PathBuf::from(value.unwrap_or_default());
                if p.as_os_str().is_empty() {
                    return Err(bad(flag, "needs a file name"));
                }
                // Mahimahi truncates an existing log; results are never overwritten here.
                if p.exists() {
                    return Err(bad(
                        flag,
                        format!(
                            "{}: exists; choose a new file (results are never overwritten)",
                            p.display()
                        ),
                    ));
                }
                if flag == "--uplink-log" {
                    o.uplink_log = Some(p);
                } else if flag == "--pcap" {
                    o.pcap = Some(p);
                } else {
                    o.downlink_log = Some(p);
                }
            }
            "--stats-fd" => {
                let v = value.unwrap_or_default();
                let fd: i32 =
                    v.parse().ok().filter(|&fd| fd > 2).ok_or_else(|| {
                        bad("--stats-fd", format!("{v:?}: an open descriptor > 2"))
                    })?;
                o.stats_fd = Some(fd);
            }
            "--rt-priority" => {
                let v = value.unwrap_or_default();
                match v.parse::<i32>() {
                    Ok(p) if (1..=crate::clock::EMULATOR_PRIORITY - 1).contains(&p) => {
                        o.rt_priority = Some(p)
                    }
                    _ => {
                        return Err(bad(
                            "--rt-priority",
                            format!(
                                "{v}: allowed 1..{} (an integer below the emulator's own \
                                 SCHED_FIFO {})",
                                crate::clock::EMULATOR_PRIORITY - 1,
                                crate::clock::EMULATOR_PRIORITY
                            ),
                        ))
                    }
                }
            }
            "--tcp-cc" => {
                let v = value.unwrap_or_default();
                if v.is_empty() || !v.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
                    return Err(bad(
                        "--tcp-cc",
                        format!("{v:?}: a congestion control name, e.g. cubic, reno, bbr"),
                    ));
                }
                o.tcp_cc = Some(v);
            }
            "--spin" => {
                let v = value.unwrap_or_default();
                let d = parse_duration(&v).map_err(|e| bad("--spin", e))?;
                if d > Nanos::from_ms(10) {
                    return Err(bad("--spin", format!("{v}: allowed 0..10ms")));
                }
                o.spin = Some(d);
            }
            f if takes_value => flags.push((f.to_string(), value.unwrap_or_default())),
            f if f.starts_with('-') => {
                return Err(bad(f, "unknown option (see l4s-emu --help)"));
            }
            f => {
                if o.scenario.is_some() {
                    return Err(bad(f, "a second scenario file; put the command after `--`"));
                }
                o.scenario = Some(PathBuf::from(f));
            }
        }
        i += 1;
    }
    refuse_conflicts(&flags, &once_seen)?;
    if let Some(p) = &o.scenario {
        o.doc = read_scenario(p)?;
    }
    for (flag, v) in flags {
        apply_flag(&mut o.doc, &flag, &v)?;
    }
    Ok(o)
}

/// Flags that may be given more than once (each adds one `[aqm]` key).
const REPEATABLE: &[&str] = &["--aqm-arg", "--uplink-aqm-arg", "--downlink-aqm-arg"];

/// Pairs of flags that set the same thing in two ways (the last would win silently).
const EXCLUSIVE: &[(&str, &str)] = &[
    ("--rate", "--trace"),
    ("--trace", "--uplink-trace"),
    ("--trace", "--downlink-trace"),
    ("--uplink-rate", "--uplink-trace"),
    ("--downlink-rate", "--downlink-trace"),
];

/// Refuse two flags that set the same thing, and an `--aqm-arg` key given twice.
fn refuse_conflicts(flags: &[(String, String)], given: &[String]) -> Result<(), EmuError> {
    let has = |f: &str| given.iter().any(|g| g == f);
    for (a, b) in EXCLUSIVE {
        if has(a) && has(b) {
            return Err(bad(b, format!("conflicts with {a}; give one of them")));
        }
    }
    let mut keys: Vec<(&str, &str)> = Vec::new();
    for (f, v) in flags
        .iter()
        .filter(|(f, _)| REPEATABLE.contains(&f.as_str()))
    {
        let k = v.split_once('=').map_or(v.as_str(), |(k, _)| k.trim());
        if keys.contains(&(f.as_str(), k)) {
            return Err(bad(f, format!("{k}: given twice; give each key once")));
        }
        keys.push((f.as_str(), k));
    }
    Ok(())
}

/// Set the scenario key a flag stands for, checking the value's syntax here so the message
/// names the flag.
fn apply_flag(doc: &mut Map<String, Value>, flag: &str, v: &str) -> Result<(), EmuError> {
    match flag {
        "--rate" => {
            parse_rate(v).map_err(|e| bad(flag, e))?;
            let link = table(doc, "link");
            link.remove("trace");
            link.insert("rate".into(), Value::String(v.into()));
        }
        "--trace" => {
            let link = table(doc, "link");
            link.remove("rate");
            link.insert("trace".into(), Value::String(abs(v)));
        }
        "--uplink-trace" | "--downlink-trace" => {
            let dir = if flag == "--uplink-trace" {
                "uplink"
            } else {
                "downlink"
            };
            let t = table(table(doc, "emulator"), dir);
            t.insert("trace".into(), Value::String(abs(v)));
        }
        "--delay" => {
            parse_duration(v).map_err(|e| bad(flag, e))?;
            table(doc, "emulator").insert("delay".into(), Value::String(v.into()));
        }
        "--loss" => {
            let p = probability(flag, v)?;
            table(doc, "link").insert("loss".into(), Value::from(p));
        }
        "--aqm" => {
            let aqm = table(doc, "aqm");
            if aqm.get("kind").and_then(Value::as_str) != Some(v) {
                // Keys of another AQM kind would be rejected as unknown: start afresh.
                aqm.clear();
            }
            aqm.insert("kind".into(), Value::String(v.into()));
        }
        "--aqm-arg" => {
            let (k, val) = v
                .split_once('=')
                .ok_or_else(|| bad(flag, format!("{v:?}: expected KEY=VALUE")))?;
            table(doc, "aqm").insert(k.trim().into(), scalar(val.trim()));
        }
        "--once" => {
            // As mm-link --once: the traces are not looped (each direction's).
            for dir in ["uplink", "downlink"] {
                table(table(doc, "emulator"), dir).insert("once".into(), Value::Bool(true));
            }
        }
        f if f.starts_with("--uplink-") || f.starts_with("--downlink-") => {
            let (dir, what) = f
                .trim_start_matches("--")
                .split_once('-')
                .ok_or_else(|| bad(f, "unknown option"))?;
            let t = table(table(doc, "emulator"), dir);
            match what {
                "rate" => {
                    parse_rate(v).map_err(|e| bad(f, e))?;
                    t.insert("rate".into(), Value::String(v.into()));
                }
                "delay" => {
                    parse_duration(v).map_err(|e| bad(f, e))?;
                    t.insert("delay".into(), Value::String(v.into()));
                }
                "loss" => {
                    t.insert("loss".into(), Value::from(probability(f, v)?));
                }
                "aqm" => {
                    let a = table(t, "aqm");
                    if a.get("kind").and_then(Value::as_str) != Some(v) {
                        a.clear();
                    }
                    a.insert("kind".into(), Value::String(v.into()));
                }
                "aqm-arg" => {
                    let (k, val) = v
                        .split_once('=')
                        .ok_or_else(|| bad(f, format!("{v:?}: expected KEY=VALUE")))?;
                    table(t, "aqm").insert(k.trim().into(), scalar(val.trim()));
                }
                _ => return Err(bad(f, "unknown option")),
            }
        }
        "--seed" => {
            let s: u64 = v
                .parse()
                .map_err(|_| bad(flag, format!("{v:?}: an integer in [0, 2^64)")))?;
            doc.insert("seed".into(), Value::from(s));
        }
        _ => return Err(bad(flag, "unknown option")),
    }
    Ok(())
}

/// A loss probability in [0, 1].
fn probability(flag: &str, v: &str) -> Result<f64, EmuError> {
    let p: f64 = v
        .parse()
        .map_err(|_| bad(flag, format!("{v:?}: a probability in [0, 1]")))?;
    if !(0.0..=1.0).contains(&p) {
        return Err(bad(flag, format!("{v}: allowed range [0, 1]")));
    }
    Ok(p)
}

/// A command-line value as the TOML scalar it would be in a file: number, bool, else string.
fn scalar(v: &str) -> Value {
    if let Ok(i) = v.parse::<i64>() {
        return Value::from(i);
    }
    if let Ok(f) = v.parse::<f64>() {
        if f.is_finite() {
            return Value::from(f);
        }
    }
    match v {
        "true" => Value::Bool(true),
        "false" => Value::Bool(false),
        _ => Value::String(v.to_string()),
    }
}

/// Flag paths are relative to the working directory, file paths to the file: make flags absolute.
fn abs(p: &str) -> String {
    std::path::absolute(p)
        .map(|a| a.display().to_string())
        .unwrap_or_else(|_| p.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn argv(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn flags_become_scenario_keys() {
        let o = parse(&argv(
            "--rate 50mbit --delay 20ms --aqm dualpi2 --aqm-arg step_thresh=5ms --aqm-arg k=2 -- iperf3 -c x",
        ))
        .unwrap();
        assert_eq!(o.doc["link"]["rate"], "50mbit");
        assert_eq!(o.doc["emulator"]["delay"], "20ms");
        assert_eq!(o.doc["aqm"]["kind"], "dualpi2");
        assert_eq!(o.doc["aqm"]["step_thresh"], "5ms");
        assert_eq!(o.doc["aqm"]["k"], 2);
        assert_eq!(o.command, argv("iperf3 -c x"));
    }

    #[test]
    fn bad_values_name_the_flag() {
        let e = parse(&argv("--rate fast")).unwrap_err().to_string();
        assert!(e.starts_with("--rate:"), "{e}");
        let e = parse(&argv("--loss 2")).unwrap_err().to_string();
        assert!(e.contains("--loss") && e.contains("[0, 1]"), "{e}");
        let e = parse(&argv("--frobnicate")).unwrap_err().to_string();
        assert!(e.contains("--frobnicate: unknown option"), "{e}");
        let e = parse(&argv("--delay")).unwrap_err().to_string();
        assert_eq!(e, "--delay: needs a value");
    }

    #[test]
    fn rt_priority_lies_below_the_emulators_own() {
        let o = parse(&argv("--rt-priority 98 --tcp-cc reno -- true")).unwrap();
        assert_eq!(o.rt_priority, Some(98));
        assert_eq!(o.tcp_cc.as_deref(), Some("reno"));
        assert_eq!(
            parse(&argv("--rt-priority=1 -- true")).unwrap().rt_priority,
            Some(1)
        );
        for v in ["0", "99", "-3", "high"] {
            let e = parse(&argv(&format!("--rt-priority {v} -- true")))
                .unwrap_err()
                .to_string();
            assert_eq!(
                e,
                format!(
                    "--rt-priority: {v}: allowed 1..98 (an integer below the emulator's own \
                     SCHED_FIFO 99)"
                )
            );
        }
        let e = parse(&argv("--tcp-cc a/b -- true"))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("--tcp-cc: \"a/b\": a congestion control name"),
            "{e}"
        );
    }

    #[test]
    fn mahimahi_log_flags_take_new_files_only() {
        let o = parse(&argv("--uplink-log up.log --downlink-log=down.log -- true")).unwrap();
        assert_eq!(o.uplink_log, Some(PathBuf::from("up.log")));
        assert_eq!(o.downlink_log, Some(PathBuf::from("down.log")));
        // An existing file (this crate's manifest) is refused, never truncated.
        let existing = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
        let e = parse(&[
            "--downlink-log".to_string(),
            existing.to_string(),
            "--".to_string(),
            "true".to_string(),
        ])
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("--downlink-log: ") && e.contains("exists"),
            "{e}"
        );
        let e = parse(&argv("--uplink-log=")).unwrap_err().to_string();
        assert_eq!(e, "--uplink-log: needs a file name");
    }

    #[test]
    fn conflicting_and_repeated_flags_are_refused() {
        for (args, want) in [
            (
                "--rate 10mbit --trace t.trace -- true",
                "--trace: conflicts with --rate",
            ),
            ("--rate 10mbit --rate 20mbit -- true", "--rate: given twice"),
            ("--aqm codel --aqm pie -- true", "--aqm: given twice"),
            ("--delay 5ms --delay=9ms -- true", "--delay: given twice"),
            (
                "--aqm-arg target=5ms --aqm-arg target=9ms -- true",
                "--aqm-arg: target: given twice",
            ),
            ("--quiet --quiet -- true", "--quiet: given twice"),
        ] {
            let e = parse(&argv(args)).unwrap_err().to_string();
            assert!(e.starts_with(want), "{args}: {e}");
        }
        // Different keys, and the command's own flags, are not repeats.
        parse(&argv(
            "--aqm-arg target=5ms --aqm-arg k=2 -- x --rate 1 --rate 2",
        ))
        .unwrap();
    }

    #[test]
    fn per_direction_flags_set_the_directions_keys() {
        let o = parse(&argv(
            "--rate 50mbit --uplink-rate 10mbit --downlink-delay 30ms --uplink-delay 5ms \
             --uplink-loss 0.01 --downlink-aqm codel --downlink-aqm-arg target=3ms \
             --uplink-aqm-arg step_thresh=2ms --aqm dualpi2 --once -- true",
        ))
        .unwrap();
        let e = &o.doc["emulator"];
        assert_eq!(e["uplink"]["rate"], "10mbit");
        assert_eq!(e["uplink"]["delay"], "5ms");
        assert_eq!(e["downlink"]["delay"], "30ms");
        assert_eq!(e["uplink"]["loss"], 0.01);
        assert_eq!(
            e["downlink"]["aqm"],
            json!({"kind": "codel", "target": "3ms"})
        );
        assert_eq!(e["uplink"]["aqm"], json!({"step_thresh": "2ms"}));
        assert_eq!(e["uplink"]["once"], true);
        assert_eq!(e["downlink"]["once"], true);
        let s = crate::scenario::from_doc(&o.doc).unwrap();
        assert_eq!(
            s.uplink.aqm,
            json!({"kind": "dualpi2", "step_thresh": "2ms"})
        );
        assert_eq!(s.downlink.aqm, json!({"kind": "codel", "target": "3ms"}));
        assert_eq!(s.uplink.link["rate"], "10mbit");
        assert_eq!(s.downlink.link["rate"], "50mbit");
        assert_eq!(s.uplink.link["loss"], 0.01);
        assert_eq!(s.uplink.delay, Nanos::from_ms(5));
        assert_eq!(s.downlink.delay, Nanos::from_ms(30));
        let e = parse(&argv("--uplink-rate 1mbit --uplink-trace t -- true")).unwrap_err();
        assert!(e
            .to_string()
            .starts_with("--uplink-trace: conflicts with --uplink-rate"));
        let e = parse(&argv("--downlink-loss 2 -- true")).unwrap_err();
        assert!(e
            .to_string()
            .contains("--downlink-loss: 2: allowed range [0, 1]"));
    }

    #[test]
    fn no_offload_is_a_switch() {
        assert!(!parse(&argv("-- true")).unwrap().no_offload);
        assert!(parse(&argv("--no-offload -- true")).unwrap().no_offload);
    }

    #[test]
    fn command_after_double_dash_keeps_its_flags() {
        let o = parse(&argv("--quiet -- sh -c --rate")).unwrap();
        assert!(o.quiet);
        assert_eq!(o.command, argv("sh -c --rate"));
        assert!(o.doc.is_empty());
    }
}
