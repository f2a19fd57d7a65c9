//! prague placeholder
use super::{CcState, CongestionControl, EcnMode};
#[derive(Default)]
pub struct Prague {
    _todo: (),
}
impl CongestionControl for Prague {
    fn name(&self) -> &'static str {
        "prague"
    }
    fn requested_ecn(&self) -> EcnMode {
        EcnMode::AccEcn
    }
    fn ssthresh(&mut self, tp: &mut CcState) -> u32 {
        tp.snd_cwnd
    }
}
