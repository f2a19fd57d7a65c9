//! Test helpers: run the `l4s-flow` binary as server and client, and a UDP relay between them
//! that reads every datagram's ECN codepoint (IP_RECVTOS), drops and CE-marks by a seeded
//! random stream, and counts what it did.
#![allow(dead_code)]

pub mod bottleneck;

use std::io::{BufRead, BufReader};
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use l4s_core::{Ecn, Rng};
use l4s_flow::sock::{wait, EcnSocket, RecvBatch};
use l4s_flow::wire::{self, Body};

pub const BIN: &str = env!("CARGO_BIN_EXE_l4s-flow");

/// Loopback tests run at normal priority (`--no-rt`) unless they ask for `--rt`: an unbounded
/// loopback sender at real-time priority would starve the test's own relay thread.
fn rt_default(args: &[&str]) -> &'static [&'static str] {
    if args.contains(&"--rt") {
        &[]
    } else {
        &["--no-rt"]
    }
}

/// A scratch directory for one test's files.
pub fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("l4s-flow-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch dir");
    d
}

/// A running `l4s-flow -s` on an ephemeral port.
pub struct Server {
    pub child: Child,
    pub port: u16,
    pub out: Arc<Mutex<String>>,
}

impl Server {
    /// Start `l4s-flow -s -p 0 -B <bind> args...` and read its port from the first line. With
    /// `-q` the server prints nothing, so the port is chosen here (a free one the kernel gave a
    /// probe socket) and the server is ready when it answers on it.
    pub fn start(bind: &str, args: &[&str]) -> Server {
        let quiet = args.iter().any(|a| *a == "-q" || *a == "--quiet");
        let chosen = quiet.then(|| {
            let probe = std::net::UdpSocket::bind((bind, 0)).expect("probe bind");
            probe.local_addr().expect("probe addr").port()
        });
        let port_arg = chosen.unwrap_or(0).to_string();
        let mut child = Command::new(BIN)
            .args(["-s", "-p", &port_arg, "-B", bind])
            .args(args)
            .args(rt_default(args))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn server");
        let stdout = child.stdout.take().expect("stdout");
        let mut r = BufReader::new(stdout);
        let (port, first) = match chosen {
            Some(p) => {
                wait_bound(p, &mut child);
                (p, String::new())
            }
            None => {
                let mut first = String::new();
                r.read_line(&mut first).expect("server's first line");
                let port: u16 = first
                    .trim()
                    .rsplit_once(':')
                    .and_then(|(_, p)| p.split(' ').next())
                    .and_then(|p| p.parse().ok())
                    .unwrap_or_else(|| panic!("no port in server line {first:?}"));
                (port, first)
            }
        };
        let out = Arc::new(Mutex::new(first));
        let o2 = out.clone();
        std::thread::spawn(move || {
            for line in r.lines().map_while(Result::ok) {
                o2.lock().unwrap().push_str(&(line + "\n"));
            }
        });
        Server { child, port, out }
    }

    /// Wait for exit up to `limit`; None if still running (then killed).
    pub fn wait_exit(&mut self, limit: Duration) -> Option<i32> {
        let t = Instant::now();
        while t.elapsed() < limit {
            if let Some(s) = self.child.try_wait().expect("try_wait") {
                return s.code();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        None
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Wait until a UDP socket is bound to `port` (the kernel's table, /proc/net/udp and udp6;
/// binding the port ourselves to test it could take it from the server), at most 5 s.
fn wait_bound(port: u16, child: &mut Child) {
    let needle = format!(":{port:04X} ");
    let bound = || {
        ["/proc/net/udp", "/proc/net/udp6"].iter().any(|f| {
            std::fs::read_to_string(f).is_ok_and(|t| {
                t.lines().skip(1).any(|l| {
                    l.split_whitespace()
                        .nth(1)
                        .is_some_and(|a| format!("{a} ").contains(&needle))
                })
            })
        })
    };
    let t = Instant::now();
    while !bound() {
        if let Ok(Some(st)) = child.try_wait() {
            panic!("quiet server exited at start: {st}");
        }
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "quiet server did not bind {port}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Output of one client run.
pub struct ClientRun {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub json: Option<serde_json::Value>,
    pub elapsed: Duration,
}

/// The JSON document a run wrote to `path` (a client's or server's `--json`).
pub fn read_json(path: &std::path::Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: not written ({e})", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: not JSON ({e})", path.display()))
}

/// Run `l4s-flow -c host -p port args... --json <dir>/client.json` to completion.
pub fn run_client(host: &str, port: u16, args: &[&str], dir: &std::path::Path) -> ClientRun {
    static RUNS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let k = RUNS.fetch_add(1, Ordering::Relaxed);
    let json = dir.join(format!("client-{port}-{k}.json"));
    let _ = std::fs::remove_file(&json);
    let t = Instant::now();
    let out = Command::new(BIN)
        .args(["-c", host, "-p", &port.to_string(), "-q", "--json"])
        .arg(&json)
        .args(args)
        .args(rt_default(args))
        .output()
        .expect("run client");
    let parsed = std::fs::read_to_string(&json)
        .ok()
        .and_then(|s| serde_json::from_str(&s).ok());
    ClientRun {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        json: parsed,
        elapsed: t.elapsed(),
    }
}

/// What the relay does to client→server data datagrams.
#[derive(Clone, Copy, Debug, Default)]
pub struct Policy {
    /// Drop probability of each data datagram.
    pub drop: f64,
    /// CE-mark probability of each ECN-capable data datagram that is not dropped.
    pub mark: f64,
    /// Seed of the relay's random stream.
    pub seed: u64,
    /// Foreign datagrams to send to the client before relaying.
    pub junk_to_client: u32,
    /// Probability that a forwarded data datagram is held back and sent after the next one.
    pub reorder: f64,
}

/// What the relay saw and did.
#[derive(Clone, Debug, Default)]
pub struct RelayCounts {
    /// Client→server data datagrams by the codepoint they arrived with (index = ECN bits).
    pub data_in: [u64; 4],
    /// Data datagrams forwarded, by the codepoint they left with.
    pub data_out: [u64; 4],
    pub dropped: u64,
    /// CE marks the relay applied.
    pub marks: u64,
    /// Datagrams with a codepoint the relay could not read.
    pub no_ecn: u64,
    /// Kernel drops at the relay's sockets (must be 0 for exact comparisons).
    pub overflow: u64,
    pub acks: u64,
    /// Data datagrams sent after their successor.
    pub reordered: u64,
}

/// A UDP relay between one client and a server, in a thread.
pub struct Relay {
    pub port: u16,
    /// While set, the relay reads and discards everything (a silent path, no ICMP).
    pub blackhole: Arc<AtomicBool>,
    /// Server → client datagrams forwarded so far (live: the path is known to work).
    pub forwarded_to_client: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<RelayCounts>>,
}

impl Relay {
    /// Listen on `bind`:0, forward to `server`.
    pub fn start(bind: IpAddr, server: SocketAddr, policy: Policy) -> Relay {
        let front = EcnSocket::bind(SocketAddr::new(bind, 0)).expect("relay front");
        let back = EcnSocket::bind(SocketAddr::new(bind, 0)).expect("relay back");
        back.connect(server).expect("relay connect");
        let port = front.local_addr().expect("addr").port();
        let stop = Arc::new(AtomicBool::new(false));
        let st = stop.clone();
        let blackhole = Arc::new(AtomicBool::new(false));
        let bh = blackhole.clone();
        let forwarded_to_client = Arc::new(AtomicU64::new(0));
        let fwd = forwarded_to_client.clone();
        let handle = std::thread::spawn(move || relay_loop(front, back, policy, st, bh, fwd));
        Relay {
            port,
            blackhole,
            forwarded_to_client,
            stop,
            handle: Some(handle),
        }
    }

    /// Stop and return the counts.
    pub fn finish(mut self) -> RelayCounts {
        self.stop.store(true, Ordering::Relaxed);
        self.handle
            .take()
            .expect("handle")
            .join()
            .expect("relay thread")
    }
}

fn relay_loop(
    mut front: EcnSocket,
    mut back: EcnSocket,
    p: Policy,
    stop: Arc<AtomicBool>,
    blackhole: Arc<AtomicBool>,
    forwarded_to_client: Arc<AtomicU64>,
) -> RelayCounts {
    let mut rng = Rng::new(p.seed);
    let mut c = RelayCounts::default();
    let mut client: Option<SocketAddr> = None;
    let mut batch = RecvBatch::new();
    // A datagram held back to be sent after the next one (reordering).
    let mut held: Option<(Vec<u8>, Ecn)> = None;
    while !stop.load(Ordering::Relaxed) {
        let _ = wait(&[(front.fd(), false), (back.fd(), false)], Some(5_000_000));
        // Client → server.
        loop {
            let n = front.recv_batch(&mut batch).unwrap_or(0);
            for i in 0..n {
                let Some(r) = front.received(&batch, i) else {
                    continue;
                };
                if blackhole.load(Ordering::Relaxed) {
                    continue;
                }
                if client.is_none() {
                    client = Some(r.from);
                    for k in 0..p.junk_to_client {
                        let junk = format!("not an l4s-flow datagram {k}");
                        let _ = front.send(junk.as_bytes(), Ecn::NotEct, client);
                    }
                }
                let Some(ecn) = r.ecn else {
                    c.no_ecn += 1;
                    continue;
                };
                let is_data = matches!(
                    wire::decode(r.data),
                    Ok(wire::Decoded { body: Body::Segment(h, _), .. }) if h.payload_bytes > 0
                );
                let mut out = ecn;
                if is_data {
                    c.data_in[ecn.bits() as usize] += 1;
                    if rng.bernoulli(p.drop) {
                        c.dropped += 1;
                        continue;
                    }
                    if ecn.is_ecn_capable() && ecn != Ecn::Ce && rng.bernoulli(p.mark) {
                        out = Ecn::Ce;
                        c.marks += 1;
                    }
                    c.data_out[out.bits() as usize] += 1;
                    if held.is_none() && rng.bernoulli(p.reorder) {
                        held = Some((r.data.to_vec(), out));
                        continue;
                    }
                }
                let _ = back.send(r.data, out, None);
                if let Some((d, e)) = held.take() {
                    c.reordered += 1;
                    let _ = back.send(&d, e, None);
                }
            }
            if n < l4s_flow::sock::BATCH {
                break;
            }
        }
        // Server → client, unchanged.
        loop {
            let n = back.recv_batch(&mut batch).unwrap_or(0);
            for i in 0..n {
                let Some(r) = back.received(&batch, i) else {
                    continue;
                };
                if blackhole.load(Ordering::Relaxed) {
                    continue;
                }
                c.acks += 1;
                forwarded_to_client.fetch_add(1, Ordering::Relaxed);
                let _ = front.send(r.data, r.ecn.unwrap_or(Ecn::NotEct), client);
            }
            if n < l4s_flow::sock::BATCH {
                break;
            }
        }
    }
    c.overflow = front.rx_overflow + back.rx_overflow;
    c
}

/// `v[key]` as u64 or panic with the JSON.
pub fn u(v: &serde_json::Value, key: &str) -> u64 {
    v[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} missing in {v}"))
}

/// Tests that time packets on the wall clock need SCHED_FIFO (root or CAP_SYS_NICE) on a
/// shared machine. Without it they skip, unless L4SLAB_REQUIRE_ROOT_TESTS=1.
pub fn realtime_or_skip(test: &str) -> Option<std::sync::MutexGuard<'static, ()>> {
    // One at a time: the tests measure the machine's timing.
    static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let guard = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let probe = std::thread::spawn(|| l4s_flow::clock::set_realtime(1)).join();
    match probe {
        Ok(Ok(())) => Some(guard),
        Ok(Err(e)) => {
            if std::env::var("L4SLAB_REQUIRE_ROOT_TESTS").as_deref() == Ok("1") {
                panic!("{test}: needs SCHED_FIFO ({e}) and L4SLAB_REQUIRE_ROOT_TESTS=1");
            }
            eprintln!("skipped {test}: needs SCHED_FIFO (root or CAP_SYS_NICE): {e}");
            None
        }
        Err(_) => panic!("probe thread"),
    }
}
