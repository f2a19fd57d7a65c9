//! Host mode (as Mahimahi's shells): the command's namespace reaches the host, and through NAT
//! the networks beyond it, over the emulated link. The host end is a TUN device in the host's
//! network namespace (gone when the emulator's descriptor closes); forwarding and the NAT and
//! FORWARD rules are undone by a guardian process that outlives the emulator: it waits for a
//! pipe from the emulator to close, which happens however the emulator ends (even SIGKILL).

use crate::error::EmuError;
use crate::tun::{self, Tun};
use std::net::Ipv4Addr;
use std::os::fd::OwnedFd;
use std::process::Command;

/// The host end of the link.
#[derive(Debug)]
pub struct HostEnd {
    /// The TUN device in the host's network namespace.
    pub tun: Tun,
    /// Its name.
    pub name: String,
    /// The host's address on it (the client's gateway).
    pub host_addr: Ipv4Addr,
    /// The client's address.
    pub client_addr: Ipv4Addr,
    /// Write end of the guardian's pipe; closing it (exit) makes the guardian clean up.
    _guardian: OwnedFd,
}

/// A /24 for this emulator: 10.(100 + pid/256 % 100).(pid % 256).0, so concurrent emulators
/// (different pids) get different subnets.
pub fn subnet_for(pid: u32) -> (Ipv4Addr, Ipv4Addr) {
    let a = 100 + ((pid >> 8) % 100) as u8;
    let b = (pid & 0xff) as u8;
    (Ipv4Addr::new(10, a, b, 1), Ipv4Addr::new(10, a, b, 2))
}

fn iptables(args: &[&str]) -> Result<(), EmuError> {
    let out = Command::new("iptables").args(args).output().map_err(|e| {
        EmuError::Privilege(format!(
            "--host: cannot run iptables ({e}); host mode needs iptables for NAT"
        ))
    })?;
    if !out.status.success() {
        return Err(EmuError::Privilege(format!(
            "--host: iptables {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(())
}

/// The rules host mode adds, as iptables arguments after -A/-I (table first).
fn rules(name: &str, subnet: &str, tag: &str) -> Vec<Vec<String>> {
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    // Forwarded traffic in (`-i`) or out (`-o`) through `name`.
    let accept = |dir: &str| {
        s(&[
            "-t",
            "filter",
            "FORWARD",
            dir,
            name,
            "-m",
            "comment",
            "--comment",
            tag,
            "-j",
            "ACCEPT",
        ])
    };
    vec![
        s(&[
            "-t",
            "nat",
            "POSTROUTING",
            "-s",
            subnet,
            "!",
            "-o",
            name,
            "-m",
            "comment",
            "--comment",
            tag,
            "-j",
            "MASQUERADE",
        ]),
        accept("-i"),
        accept("-o"),
    ]
}

/// Insert (`-I`) or delete (`-D`) one rule given as table + chain + match.
fn rule_cmd(op: &str, r: &[String]) -> Vec<String> {
    // r = ["-t", TABLE, CHAIN, rest...] -> ["-t", TABLE, op, CHAIN, rest...]
    let mut v = vec![r[0].clone(), r[1].clone(), op.to_string(), r[2].clone()];
    v.extend(r[3..].iter().cloned());
    v
}

/// Fork the guardian (`crate::guardian`): when the emulator is gone it deletes the rules and
/// restores ip_forward. Call while single-threaded.
fn spawn_guardian(
    rules: Vec<Vec<String>>,
    restore_forward: Option<String>,
) -> Result<OwnedFd, EmuError> {
    crate::guardian::spawn(move || {
        for rule in &rules {
            let _ = Command::new("iptables")
                .args(rule_cmd("-D", rule))
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status();
        }
        if let Some(v) = restore_forward {
            let _ = std::fs::write("/proc/sys/net/ipv4/ip_forward", v);
        }
    })
}

/// Set up the host end: TUN device with the host address, forwarding, NAT. Needs root.
/// `offload`: open the TUN device with TSO/checksum offloads.
pub fn setup(offload: bool) -> Result<HostEnd, EmuError> {
    // SAFETY: geteuid takes nothing.
    if unsafe { libc::geteuid() } != 0 {
        return Err(EmuError::Privilege(
            "--host: host mode changes the host's network (an interface, forwarding, NAT) and needs root; run with sudo, or use two-namespace mode (--server CMD)".into(),
        ));
    }
    let pid = std::process::id();
    let (client_addr, host_addr) = subnet_for(pid);
    let name = format!("l4s-{pid}");
    let name = name[..name.len().min(15)].to_string();
    let subnet = format!(
        "{}/24",
        Ipv4Addr::from(u32::from(client_addr) & 0xffff_ff00)
    );
    let tag = format!("l4s-emu {pid}");
    let rules = rules(&name, &subnet, &tag);
    let forward = std::fs::read_to_string("/proc/sys/net/ipv4/ip_forward")
        .unwrap_or_default()
        .trim()
        .to_string();
    let restore = (forward != "1").then_some(forward);
    // The guardian exists before the first change, so no change can outlive us.
    let guardian = spawn_guardian(rules.clone(), restore)?;
    let dev = Tun::create(&name, offload)?;
    tun::set_ipv4(&name, host_addr, 24, tun::MTU)?;
    tun::set_up(&name)?;
    tun::write_sysctl("/proc/sys/net/ipv4/ip_forward", "1")?;
    for r in &rules {
        let args = rule_cmd("-I", r);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        iptables(&args)?;
    }
    Ok(HostEnd {
        tun: dev,
        name,
        host_addr,
        client_addr,
        _guardian: guardian,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subnets_differ_by_pid_and_stay_private() {
        assert_eq!(
            subnet_for(0x1234),
            (
                Ipv4Addr::new(10, 118, 0x34, 1),
                Ipv4Addr::new(10, 118, 0x34, 2)
            )
        );
        assert_ne!(subnet_for(1000), subnet_for(1001));
        for pid in [0u32, 255, 256, 65_535, 4_194_304] {
            let (c, _) = subnet_for(pid);
            assert!(c.is_private(), "{c}");
        }
    }

    #[test]
    fn rule_commands_put_the_operation_before_the_chain() {
        let r = rules("l4s-1", "10.1.2.0/24", "tag");
        assert_eq!(
            rule_cmd("-D", &r[0])[..5],
            ["-t", "nat", "-D", "POSTROUTING", "-s"].map(String::from)
        );
    }
}
