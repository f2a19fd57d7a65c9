//! The emulator's reading of a scenario document: the simulator's `[link]` and `[aqm]` tables
//! (validated by the simulator's own code when each direction is built) plus an `[emulator]`
//! table for what only the emulator has: one-way delay and per-direction link overrides.
//!
//! ```toml
//! [emulator]
//! delay = "20ms"                 # one way, each direction
//! [emulator.downlink]            # server -> client; keys: rate, trace, once, delay
//! trace = "traces/ATT-LTE-driving.down"
//! ```

use crate::error::EmuError;
use l4s_core::{parse_duration, Nanos};
use serde_json::{json, Map, Value};

/// Top-level keys a scenario may hold (the simulator's; `[[flows]]`, `duration` and
/// `[ack_link]` describe simulated traffic and are ignored by the emulator).
const TOP_KEYS: &[&str] = &[
    "seed",
    "duration",
    "warmup",
    "sample_interval",
    "link",
    "ack_link",
    "aqm",
    "flows",
    "output",
    "emulator",
];
const EMULATOR_KEYS: &[&str] = &["delay", "uplink", "downlink", "access_point", "stations"];
const STATION_KEYS: &[&str] = &["port", "station"];
const DIRECTION_KEYS: &[&str] = &["rate", "trace", "once", "delay", "loss", "aqm"];

/// The link rate used when neither `link.rate` nor a trace is given: delay only, as
/// Mahimahi's mm-delay (a 1500-byte packet takes 12 ns).
pub const UNLIMITED_RATE: &str = "1000gbit";

/// What one direction is built from.
#[derive(Clone, Debug, PartialEq)]
pub struct DirectionTables {
    /// "uplink" (client -> server) or "downlink".
    pub name: &'static str,
    /// Its `[link]` table (the scenario's, with the direction's overrides).
    pub link: Value,
    /// Its `[aqm]` table.
    pub aqm: Value,
    /// One-way delay.
    pub delay: Nanos,
}

/// The emulator's view of a scenario.
#[derive(Clone, Debug, PartialEq)]
pub struct EmuScenario {
    /// Scenario seed (1 when absent, as in the simulator).
    pub seed: u64,
    /// Sampling period, if set.
    pub sample_interval: Option<Nanos>,
    /// Start of the summary window.
    pub warmup: Nanos,
    /// Record packets.parquet.
    pub per_packet: bool,
    /// Client -> server.
    pub uplink: DirectionTables,
    /// Server -> client.
    pub downlink: DirectionTables,
    /// `[link] model = "wifi"`: the side whose direction is the access point's (the other is
    /// its station). `emulator.access_point`, "server" unless set.
    pub access_point: AccessPoint,
    /// `[[emulator.stations]]`: the Wi-Fi client station of the packets with a given port.
    pub stations: crate::wifi::StationMap,
}

/// Which namespace sits behind the Wi-Fi access point (`emulator.access_point`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum AccessPoint {
    /// The server side: the downlink (server -> client) is the AP's transmit direction.
    #[default]
    Server,
    /// The client side: the uplink (client -> server) is the AP's transmit direction, as
    /// scenario mode needs (its senders run on the client side; the simulator's data goes
    /// AP -> station).
    Client,
}

fn field(path: &str, msg: impl std::fmt::Display) -> EmuError {
    EmuError::Config(format!("{path}: {msg}"))
}

fn duration_at(v: &Value, path: &str) -> Result<Nanos, EmuError> {
    let s = v.as_str().ok_or_else(|| {
        field(
            path,
            "durations are written as strings, e.g. \"20ms\", \"250us\"",
        )
    })?;
    parse_duration(s).map_err(|e| field(path, e))
}

fn check_keys(t: &Map<String, Value>, path: &str, allowed: &[&str]) -> Result<(), EmuError> {
    for k in t.keys() {
        if !allowed.contains(&k.as_str()) {
            let full = if path.is_empty() {
                k.clone()
            } else {
                format!("{path}.{k}")
            };
            return Err(field(
                &full,
                format!("unknown field; expected one of {}", allowed.join(", ")),
            ));
        }
    }
    Ok(())
}

fn table<'a>(v: &'a Value, path: &str) -> Result<&'a Map<String, Value>, EmuError> {
    v.as_object().ok_or_else(|| field(path, "must be a table"))
}

/// `[[emulator.stations]]` entries `{port, station}`: each port (1–65535, listed once) and its
/// client station (0–63; checked against `[[link.wifi.clients]]` when the medium is built).
fn station_map(v: Option<&Value>) -> Result<crate::wifi::StationMap, EmuError> {
    let mut m = crate::wifi::StationMap::default();
    let Some(v) = v else { return Ok(m) };
    let list = v
        .as_array()
        .ok_or_else(|| field("emulator.stations", "an array of tables {port, station}"))?;
    for (i, e) in list.iter().enumerate() {
        let path = format!("emulator.stations[{i}]");
        let t = table(e, &path)?;
        check_keys(t, &path, STATION_KEYS)?;
        let port = t
            .get("port")
            .and_then(Value::as_u64)
            .filter(|p| (1..=65_535).contains(p))
            .ok_or_else(|| field(&format!("{path}.port"), "an integer in [1, 65535]"))?
            as u16;
        let sta = t
            .get("station")
            .and_then(Value::as_u64)
            .filter(|s| *s < 64)
            .ok_or_else(|| field(&format!("{path}.station"), "an integer in [0, 63]"))?
            as u8;
        if m.ports.iter().any(|&(p, _)| p == port) {
            return Err(field(
                &format!("{path}.port"),
                format!("{port} is listed twice; expected each port once"),
            ));
        }
        m.ports.push((port, sta));
    }
    Ok(m)
}

/// Read the document (a scenario file with the command-line flags applied).
pub fn from_doc(doc: &Map<String, Value>) -> Result<EmuScenario, EmuError> {
    if doc.contains_key("links") {
        return Err(field(
            "links",
            "a [[links]] chain runs in the simulator only (l4slab run); the emulator has one \
             bottleneck path: give it as [link] + [aqm]",
        ));
    }
    check_keys(doc, "", TOP_KEYS)?;
    let seed = match doc.get("seed") {
        None => 1,
        Some(v) => v
            .as_u64()
            .ok_or_else(|| field("seed", "an integer in [0, 2^64)"))?,
    };
    let sample_interval = doc
        .get("sample_interval")
        .map(|v| duration_at(v, "sample_interval"))
        .transpose()?;
    let warmup = doc
        .get("warmup")
        .map(|v| duration_at(v, "warmup"))
        .transpose()?
        .unwrap_or(Nanos::ZERO);
    // The emulator writes per-flow rows at every sample; a coarser per-flow interval is the
    // simulator's alone, so it is refused rather than silently not applied.
    if doc
        .get("output")
        .and_then(|o| o.get("flow_sample_interval"))
        .is_some()
    {
        return Err(field(
            "output.flow_sample_interval",
            "not available in the emulator, which writes per-flow rows at every \
             sample_interval; remove the key to emulate this scenario",
        ));
    }
    let per_packet = match doc.get("output").and_then(|o| o.get("packets")) {
        None => false,
        Some(v) => v
            .as_bool()
            .ok_or_else(|| field("output.packets", "true or false"))?,
    };
    let link = match doc.get("link") {
        Some(v) => table(v, "link")?.clone(),
        None => Map::new(),
    };
    let aqm = doc
        .get("aqm")
        .cloned()
        .unwrap_or_else(|| json!({"kind": "fifo"}));
    let emu = match doc.get("emulator") {
        Some(v) => table(v, "emulator")?.clone(),
        None => Map::new(),
    };
    check_keys(&emu, "emulator", EMULATOR_KEYS)?;
    let access_point = match emu.get("access_point") {
        None => AccessPoint::Server,
        Some(v) => match v.as_str() {
            Some("server") => AccessPoint::Server,
            Some("client") => AccessPoint::Client,
            _ => {
                return Err(field(
                    "emulator.access_point",
                    format!("{v}: expected \"server\" or \"client\""),
                ))
            }
        },
    };
    let stations = station_map(emu.get("stations"))?;
    let delay = emu
        .get("delay")
        .map(|v| duration_at(v, "emulator.delay"))
        .transpose()?
        .unwrap_or(Nanos::ZERO);
    let direction = |name: &'static str| -> Result<DirectionTables, EmuError> {
        let path = format!("emulator.{name}");
        let over = match emu.get(name) {
            Some(v) => table(v, &path)?.clone(),
            None => Map::new(),
        };
        check_keys(&over, &path, DIRECTION_KEYS)?;
        // A Wi-Fi link's rate comes from [link.wifi]: a direction's rate or trace is named
        // here, where the user wrote it (not as the merged table's `link.rate`).
        if link.get("model").and_then(Value::as_str) == Some("wifi") {
            if let Some(k) = ["rate", "trace", "once"]
                .into_iter()
                .find(|k| over.contains_key(*k))
            {
                return Err(field(
                    &format!("{path}.{k}"),
                    "does not apply to [link] model = \"wifi\": both directions share the one \
                     medium, whose rate comes from [link.wifi] (standard, mcs, width, streams)",
                ));
            }
        }
        let mut l = link.clone();
        let mut d = delay;
        let mut a = aqm.clone();
        for (k, v) in &over {
            match k.as_str() {
                "delay" => d = duration_at(v, &format!("{path}.delay"))?,
                // This direction's own AQM: its keys over the scenario's [aqm], or afresh
                // when it names another kind (the other kind's keys would be refused).
                "aqm" => {
                    let own = table(v, &format!("{path}.aqm"))?;
                    let base_kind = a.get("kind").cloned();
                    if own
                        .get("kind")
                        .is_some_and(|k| Some(k) != base_kind.as_ref())
                    {
                        a = Value::Object(own.clone());
                    } else if let Value::Object(m) = &mut a {
                        m.extend(own.iter().map(|(k, v)| (k.clone(), v.clone())));
                    }
                }
                // A rate replaces a trace and the other way round.
                "rate" => {
                    l.remove("trace");
                    l.insert(k.clone(), v.clone());
                }
                "trace" => {
                    l.remove("rate");
                    l.insert(k.clone(), v.clone());
                }
                _ => {
                    l.insert(k.clone(), v.clone());
                }
            }
        }
        // A Wi-Fi link's rate comes from [link.wifi].
        let wifi = l.get("model").and_then(Value::as_str) == Some("wifi");
        if !l.contains_key("rate") && !l.contains_key("trace") && !wifi {
            l.insert("rate".into(), Value::String(UNLIMITED_RATE.into()));
        }
        Ok(DirectionTables {
            name,
            link: Value::Object(l),
            aqm: a,
            delay: d,
        })
    };
    Ok(EmuScenario {
        seed,
        sample_interval,
        warmup,
        per_packet,
        uplink: direction("uplink")?,
        downlink: direction("downlink")?,
        access_point,
        stations,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(toml_text: &str) -> Map<String, Value> {
        match toml::from_str::<Value>(toml_text).unwrap() {
            Value::Object(m) => m,
            _ => unreachable!(),
        }
    }

    #[test]
    fn direction_overrides_and_defaults() {
        let s = from_doc(&doc(r#"
            seed = 7
            [link]
            rate = "50mbit"
            [aqm]
            kind = "dualpi2"
            [emulator]
            delay = "20ms"
            [emulator.downlink]
            trace = "x.down"
            delay = "5ms"
        "#))
        .unwrap();
        assert_eq!(s.seed, 7);
        assert_eq!(s.uplink.link, json!({"rate": "50mbit"}));
        assert_eq!(s.uplink.delay, Nanos::from_ms(20));
        assert_eq!(s.downlink.link, json!({"trace": "x.down"}));
        assert_eq!(s.downlink.delay, Nanos::from_ms(5));
        assert_eq!(s.downlink.aqm["kind"], "dualpi2");
    }

    #[test]
    fn a_links_chain_is_refused_naming_the_key() {
        let e = from_doc(&doc(
            "[[links]]\nrate = \"10mbit\"\n[[links]]\nrate = \"5mbit\"",
        ))
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("links: a [[links]] chain runs in the simulator only"),
            "{e}"
        );
        assert_eq!(e.lines().count(), 1);
    }

    #[test]
    fn no_rate_means_delay_only() {
        let s = from_doc(&Map::new()).unwrap();
        assert_eq!(s.uplink.link, json!({"rate": UNLIMITED_RATE}));
        assert_eq!(s.uplink.aqm, json!({"kind": "fifo"}));
        assert_eq!(s.uplink.delay, Nanos::ZERO);
    }

    #[test]
    fn unknown_keys_name_their_path() {
        let e = from_doc(&doc("[emulator]\ndelya = \"1ms\"")).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("emulator.delya: unknown field; expected one of delay"),
            "{e}"
        );
        let e = from_doc(&doc("[emulator.uplink]\nrat = \"1mbit\"")).unwrap_err();
        assert!(e.to_string().starts_with("emulator.uplink.rat:"), "{e}");
        let e = from_doc(&doc("[emulator]\ndelay = 20")).unwrap_err();
        assert!(e.to_string().starts_with("emulator.delay:"), "{e}");
        let e = from_doc(&doc("bogus = 1")).unwrap_err();
        assert!(e.to_string().starts_with("bogus: unknown field"), "{e}");
    }

    #[test]
    fn a_direction_rate_on_a_wifi_link_names_its_own_key() {
        let wifi = "[link]\nmodel = \"wifi\"\n[link.wifi]\nmcs = 3\n";
        for (table, key) in [
            (
                "[emulator.downlink]\nrate = \"10mbit\"",
                "emulator.downlink.rate",
            ),
            (
                "[emulator.uplink]\ntrace = \"x.up\"",
                "emulator.uplink.trace",
            ),
        ] {
            let e = from_doc(&doc(&format!("{wifi}{table}")))
                .unwrap_err()
                .to_string();
            assert!(
                e.starts_with(&format!("{key}: does not apply to [link] model = \"wifi\"")),
                "{e}"
            );
        }
        // A delay is the direction's own.
        assert!(from_doc(&doc(&format!("{wifi}[emulator.downlink]\ndelay = \"1ms\""))).is_ok());
    }

    #[test]
    fn the_access_point_side_is_the_servers_unless_set() {
        assert_eq!(
            from_doc(&Map::new()).unwrap().access_point,
            AccessPoint::Server
        );
        let s = from_doc(&doc("[emulator]\naccess_point = \"client\"")).unwrap();
        assert_eq!(s.access_point, AccessPoint::Client);
        let e = from_doc(&doc("[emulator]\naccess_point = \"ap\"")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "emulator.access_point: \"ap\": expected \"server\" or \"client\""
        );
    }

    #[test]
    fn a_coarser_flow_sample_interval_is_refused() {
        let e = from_doc(&doc("[output]\nflow_sample_interval = \"160ms\"")).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("output.flow_sample_interval: not available in the emulator"),
            "{e}"
        );
        assert!(from_doc(&doc("[output]\npackets = true")).is_ok());
    }
}
