//! bbr3 placeholder
use super::{CcState, CongestionControl, EcnMode};
pub struct Bbr3;
impl Bbr3 {
    pub fn new(_l4s: bool, _seed: u64) -> Self {
        Bbr3
    }
}
impl CongestionControl for Bbr3 {
    fn name(&self) -> &'static str {
        "bbr3"
    }
    fn requested_ecn(&self) -> EcnMode {
        EcnMode::None
    }
    fn ssthresh(&mut self, tp: &mut CcState) -> u32 {
        tp.snd_cwnd
    }
}
