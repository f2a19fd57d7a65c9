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
    check_quotes(field, t)
}

/// The template splits into words as a POSIX shell would (Python `shlex.split`, which the
/// emulator uses): every ' and " closes, and no backslash ends it.
fn check_quotes(field: &str, t: &str) -> Result<(), SimError> {
    let mut open: Option<char> = None;
    let mut chars = t.chars();
    while let Some(c) = chars.next() {
        match (open, c) {
            // A backslash escapes the next character (outside quotes and inside "...").
            (None, '\\') | (Some('"'), '\\') if chars.next().is_none() => {
                return Err(SimError::field(
                    field,
                    "ends in a lone backslash; expected a character after it",
                ));
            }
            (None, '\'' | '"') => open = Some(c),
            (Some(q), _) if c == q => open = None,
            _ => {}
        }
    }
    match open {
        Some(q) => Err(SimError::field(
            field,
            format!("has no closing {q} quote; expected every quoted word to close"),
        )),
        None => Ok(()),
    }
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
            // No placeholder carries them to the program (docs/crosscheck.md).
            for (name, set) in [("bytes", fl.bytes.is_some()), ("mss", fl.mss.is_some())] {
                if set {
                    return Err(SimError::field(
                        p(name),
                        "stack = \"command\" cannot hand it to the program (its templates \
                         know only {server}, {port}, {duration}); put the program's own option \
                         in `command` and remove the key",
                    ));
                }
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
    if stack == FlowStack::Kernel && fl.cc.starts_with("rt-") {
        return Err(SimError::field(
            p("stack"),
            format!(
                "\"kernel\" runs the kernel's TCP; cc = \"{}\" is a real-time video model \
                 (run a real sender with stack = \"command\", or leave stack out)",
                fl.cc
            ),
        ));
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

    #[test]
    fn templates_split_as_shlex_does() {
        // shlex.split accepts these ...
        for ok in [
            r#"sh -c 'a "b" c'"#,
            r#"p "it's""#,
            r"p a\ b",
            r#"p "a\"b""#,
            "p ''",
        ] {
            assert!(check_template("f", ok).is_ok(), "{ok}");
        }
        // ... and raises "No closing quotation" / "No escaped character" on these.
        let e = check_template("f", "iperf3 -c '{server}")
            .unwrap_err()
            .to_string();
        assert!(e.contains("f: has no closing ' quote"), "{e}");
        assert!(check_template("f", r#"p "a'"#).is_err());
        assert!(check_template("f", r#"p "a\""#).is_err());
        assert!(check_template("f", r"p a\").is_err());
    }
}
