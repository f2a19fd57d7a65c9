//! Engine speed: placeholder until the benchmark lands.
fn main() {}
