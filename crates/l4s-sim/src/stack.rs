//! `[[flows]] stack`: which implementation carries a flow's traffic in the emulator ("model",
//! "kernel", "command"); the simulator always runs the l4s-core model and only validates it.

use serde::Deserialize;

use crate::error::SimError;
use crate::scenario::FlowConfig;

/// The sender a flow uses in the emulator's scenario mode.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum FlowStack {
    /// l4slab's own TCP (`l4slab flow`, the simulator's model over UDP).
    #[default]
    Model,
    /// The kernel's TCP on ordinary sockets (TCP_CONGESTION = cc).
    Kernel,
    /// An external program started from the `command` / `server_command` templates.
    Command,
}

/// The placeholders a `command` / `server_command` template may name.
pub const PLACEHOLDERS: [&str; 3] = ["server", "port", "duration"];

/// Check a template's `{name}` placeholders (`{{`/`}}` are literal braces).
pub fn check_template(field: &str, t: &str) -> Result<(), SimError> {
    let allowed = "expected only {server}, {port}, {duration} (write {{ and }} for braces)";
    let mut rest = t;
    while let Some(i) = rest.find(['{', '}']) {
        let c = rest.as_bytes()[i];
        let tail = &rest[i + 1..];
        if tail.as_bytes().first() == Some(&c) {
            rest = &tail[1..];
            continue;
        }
        if c == b'}' {
            return Err(SimError::field(field, format!("unmatched '}}'; {allowed}")));
        }
        let Some(j) = tail.find('}') else {
            return Err(SimError::field(field, format!("unmatched '{{'; {allowed}")));
        };
        let name = &tail[..j];
        if !PLACEHOLDERS.contains(&name) {
            return Err(SimError::field(
                field,
                format!("unknown placeholder {{{name}}}; {allowed}"),
            ));
        }
        rest = &tail[j + 1..];
    }
    if t.trim().is_empty() {
        return Err(SimError::field(
            field,
            "is empty; expected a program and its arguments",
        ));
    }
    Ok(())
}

/// Check `stack`, `command` and `server_command` of `flows[i]`.
pub fn validate_stack(i: usize, fl: &FlowConfig) -> Result<(), SimError> {
    let p = |f: &str| format!("flows[{i}].{f}");
    let stack = fl.stack.unwrap_or_default();
    match stack {
        FlowStack::Command => {
            let Some(c) = &fl.command else {
                return Err(SimError::field(
                    p("command"),
                    "missing; stack = \"command\" needs a client template, e.g. \
                     \"udp_prague -c {server} -p {port} -t {duration}\"",
                ));
            };
            check_template(&p("command"), c)?;
            if let Some(s) = &fl.server_command {
                check_template(&p("server_command"), s)?;
            }
        }
        _ => {
            for (name, set) in [
                ("command", fl.command.is_some()),
                ("server_command", fl.server_command.is_some()),
            ] {
                if set {
                    return Err(SimError::field(
                        p(name),
                        "applies to stack = \"command\" only",
                    ));
                }
            }
        }
    }
    if stack != FlowStack::Model && fl.cc == "cbr" {
        return Err(SimError::field(
            p("stack"),
            "applies to TCP flows only; a cbr flow has no stack",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_accept_known_placeholders_and_escaped_braces() {
        assert!(check_template("f", "prog -c {server} -p {port} -t {duration} {{x}}").is_ok());
        let e = check_template("f", "prog {host}").unwrap_err().to_string();
        assert!(e.contains("f: unknown placeholder {host}"), "{e}");
        assert!(check_template("f", "prog {server").is_err());
        assert!(check_template("f", "prog }").is_err());
        assert!(check_template("f", "  ").is_err());
    }
}
