//! `l4s-emu`: run a command behind an emulated L4S bottleneck; exits with the command's status.

use l4s_emu::{cli, emulate};

/// Exit status for bad input or a refused set-up (as `l4slab`).
const EXIT_BAD_INPUT: i32 = 2;
/// Exit status when COMMAND's program does not exist (a shell's "command not found").
const EXIT_NOT_FOUND: i32 = 127;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let opts = match cli::parse(&args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("l4s-emu: error: {e}");
            std::process::exit(EXIT_BAD_INPUT);
        }
    };
    if opts.help {
        println!("{}", cli::USAGE);
        return;
    }
    if let Some(out) = &opts.output {
        if out.exists() && std::fs::read_dir(out).map_or(true, |mut d| d.next().is_some()) {
            eprintln!(
                "l4s-emu: error: -o {}: exists and is not empty; choose a new directory (results are never overwritten)",
                out.display()
            );
            std::process::exit(EXIT_BAD_INPUT);
        }
    }
    let existed = opts.output.as_ref().is_some_and(|o| o.exists());
    let outcome = match emulate::run(&opts) {
        Ok(o) => o,
        Err(e) => {
            // Nothing ran: leave no empty run directory (remove_dir removes only empty ones,
            // so nothing a command wrote is lost).
            if let Some(out) = &opts.output {
                let _ = std::fs::remove_dir(out.join("flows"));
                if !existed {
                    let _ = std::fs::remove_dir(out);
                }
            }
            eprintln!("l4s-emu: error: {e}");
            let code = match e {
                emulate::EmuError::NotFound(_) => EXIT_NOT_FOUND,
                _ => EXIT_BAD_INPUT,
            };
            std::process::exit(code);
        }
    };
    if let Some(out) = &opts.output {
        let doc = serde_json::Value::Object(opts.doc.clone());
        match emulate::write_outputs(out, &outcome, &doc) {
            Ok(()) if !opts.quiet => eprintln!("l4s-emu: results in {}", out.display()),
            Ok(()) => {}
            Err(e) => eprintln!("l4s-emu: error: {e}"),
        }
    }
    std::process::exit(outcome.exit);
}
