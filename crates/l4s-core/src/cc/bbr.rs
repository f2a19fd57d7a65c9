//! bbr placeholder
use super::{CcState, CongestionControl, EcnMode};
#[derive(Default)]
pub struct Bbr {
    _todo: (),
}
impl CongestionControl for Bbr {
    fn name(&self) -> &'static str {
        "bbr1"
    }
    fn requested_ecn(&self) -> EcnMode {
        EcnMode::None
    }
    fn ssthresh(&mut self, tp: &mut CcState) -> u32 {
        tp.snd_cwnd
    }
}
