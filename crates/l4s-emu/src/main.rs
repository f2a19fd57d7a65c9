//! l4s-emu: the user-space emulator (network namespace + TUN, like Mahimahi's shells).
//! Not built yet: this binary only says so, and exits non-zero.

fn main() {
    eprintln!(
        "l4s-emu: the emulator is not implemented yet; use the simulator (`l4slab run`). \
         It will need root or CAP_NET_ADMIN for network namespaces and /dev/net/tun."
    );
    std::process::exit(2);
}
