//! A video encoder model: frame sizes that follow the controller's target with a lag, vary around
//! it (log-normal) and include periodic key frames. Follows RFC 8593 §4 (statistical video model).
//!
//! Each captured frame is sized from the target bitrate in effect `lag` before its capture (a
//! live encoder applies a new target from the next frame it encodes: the default lag is one frame
//! interval). Its nominal share of the target is b = target/fps. Every `keyframe_interval` (and
//! for the first frame) a key frame of `keyframe_ratio` times a delta frame is produced; the
//! encoder's rate control keeps the average on target over a key-frame period of N frames, so a
//! delta frame is d = N·b/(ratio + N − 1) and a key frame ratio·d (with key frames off, d = b).
//! The size is then multiplied by a log-normal factor of mean 1 and coefficient of variation
//! `frame_size_cv` (σ² = ln(1 + cv²), factor = exp(σ·Z − σ²/2)), drawn from the flow's seeded
//! stream.
//!
//! Defaults and where they come from: `frame_size_cv` 0.21 = √2 × 0.15, the standard deviation of
//! the zero-mean Laplace frame-size noise (scale 0.15 of the frame size, `SCALE_B`) in Cisco's
//! syncodecs, the reference implementation of RFC 8593's statistical model; key frames only at
//! the start (`keyframe_interval` off), as a WebRTC sender produces them on request (PLI/FIR)
//! rather than periodically; `keyframe_ratio` 4 is a modelling choice (no reference default was
//! found: RFC 8593 leaves the I-frame size to the evaluator), so set it where key frames matter.
//! Simplified (named): the target is sampled at frame captures (sample-and-hold), the encoder
//! does not skip frames of its own accord, and sizes are not correlated from frame to frame.

use std::collections::VecDeque;

use crate::rng::Rng;
use crate::time::Nanos;
use crate::ParamError;

/// Default coefficient of variation of frame sizes (√2 × syncodecs' Laplace scale 0.15).
pub const DEFAULT_FRAME_SIZE_CV: f64 = 0.21;
/// Default key frame size, in delta frames.
pub const DEFAULT_KEYFRAME_RATIO: f64 = 4.0;

/// Parameters of the encoder model.
#[derive(Clone, Debug, PartialEq)]
pub struct EncoderConfig {
    /// How long a new target takes to reach the frame sizes (`None`: one frame interval).
    pub lag: Option<Nanos>,
    /// Coefficient of variation of frame sizes, in [0, 2] (0: every frame exactly its share).
    pub frame_size_cv: f64,
    /// Time between key frames (`None`: only the first frame).
    pub keyframe_interval: Option<Nanos>,
    /// Key frame size in delta frames, in [1, 50].
    pub keyframe_ratio: f64,
}

impl Default for EncoderConfig {
    fn default() -> Self {
        EncoderConfig {
            lag: None,
            frame_size_cv: DEFAULT_FRAME_SIZE_CV,
            keyframe_interval: None,
            keyframe_ratio: DEFAULT_KEYFRAME_RATIO,
        }
    }
}

impl EncoderConfig {
    /// Check every parameter; errors name the scenario key.
    pub fn validate(&self, fps: u32) -> Result<(), ParamError> {
        if !(0.0..=2.0).contains(&self.frame_size_cv) {
            return Err(ParamError::new(
                "frame_size_cv",
                self.frame_size_cv,
                "a number in [0, 2]",
            ));
        }
        if !(1.0..=50.0).contains(&self.keyframe_ratio) {
            return Err(ParamError::new(
                "keyframe_ratio",
                self.keyframe_ratio,
                "a number in [1, 50]",
            ));
        }
        if let Some(k) = self.keyframe_interval {
            let interval = Nanos(1_000_000_000 / fps.max(1) as u64);
            if k < interval {
                return Err(ParamError::new(
                    "keyframe_interval",
                    k,
                    &format!("a duration ≥ one frame interval ({interval})"),
                ));
            }
        }
        if let Some(l) = self.lag {
            if l > Nanos::from_ms(10_000) {
                return Err(ParamError::new("encoder_lag", l, "a duration in [0, 10s]"));
            }
        }
        Ok(())
    }
}

/// One encoded frame.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct EncodedFrame {
    /// Bytes of the frame.
    pub bytes: u64,
    /// A key frame.
    pub key: bool,
    /// The target the encoder applied, bits/s.
    pub target_bps: f64,
}

/// The encoder state of one video flow.
#[derive(Clone, Debug)]
pub struct Encoder {
    cfg: EncoderConfig,
    fps: u32,
    rng: Rng,
    /// (capture time, target) of past frames, oldest first.
    targets: VecDeque<(Nanos, f64)>,
    /// Frames encoded.
    frames: u64,
    /// Frames per key-frame period (0: key frames off after the first).
    gop: u64,
}

impl Encoder {
    /// An encoder for `fps` frames per second drawing from `rng`.
    pub fn new(cfg: EncoderConfig, fps: u32, rng: Rng) -> Result<Self, ParamError> {
        cfg.validate(fps)?;
        let gop = cfg.keyframe_interval.map_or(0, |k| {
            ((k.as_secs_f64() * fps as f64).round() as u64).max(1)
        });
        Ok(Encoder {
            cfg,
            fps: fps.max(1),
            rng,
            targets: VecDeque::new(),
            frames: 0,
            gop,
        })
    }

    fn lag(&self) -> Nanos {
        self.cfg
            .lag
            .unwrap_or(Nanos(1_000_000_000 / self.fps as u64))
    }

    /// The target in effect `lag` before `at`: the newest sample at or before then (the
    /// oldest one before any is that old).
    fn lagged_target(&mut self, at: Nanos) -> f64 {
        let then = at.saturating_sub(self.lag());
        while self.targets.len() > 1 && self.targets[1].0 <= then {
            self.targets.pop_front();
        }
        self.targets.front().map_or(0.0, |t| t.1)
    }

    /// Encode the frame captured at `capture_at` while the controller's target is `target_bps`.
    pub fn encode(&mut self, capture_at: Nanos, target_bps: f64) -> EncodedFrame {
        self.targets.push_back((capture_at, target_bps));
        let target = self.lagged_target(capture_at);
        let share = target / 8.0 / self.fps as f64;
        let ratio = self.cfg.keyframe_ratio;
        let (key, delta) = if self.gop == 0 {
            (self.frames == 0, share)
        } else {
            let n = self.gop as f64;
            (
                self.frames.is_multiple_of(self.gop),
                n * share / (ratio + n - 1.0),
            )
        };
        let nominal = if key { ratio * delta } else { delta };
        self.frames += 1;
        let cv = self.cfg.frame_size_cv;
        let factor = if cv > 0.0 {
            let s2 = (1.0 + cv * cv).ln();
            (s2.sqrt() * self.rng.normal() - s2 / 2.0).exp()
        } else {
            1.0
        };
        EncodedFrame {
            bytes: (nominal * factor).round() as u64,
            key,
            target_bps: target,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(cv: f64, key: Option<Nanos>, ratio: f64) -> Encoder {
        let cfg = EncoderConfig {
            lag: None,
            frame_size_cv: cv,
            keyframe_interval: key,
            keyframe_ratio: ratio,
        };
        Encoder::new(cfg, 30, Rng::derive(7, "enc")).unwrap()
    }

    fn at(k: u64) -> Nanos {
        Nanos(k * 1_000_000_000 / 30)
    }

    /// With the default cv and a key frame every second, the mean frame over 30 000 frames
    /// (1000 key-frame periods) is the target's share within 2 %: 4 Mb/s at 30 fps = 16 667 B.
    #[test]
    fn mean_frame_tracks_target() {
        let mut e = enc(DEFAULT_FRAME_SIZE_CV, Some(Nanos::from_ms(1000)), 4.0);
        let n = 30_000u64;
        let total: u64 = (0..n).map(|k| e.encode(at(k), 4e6).bytes).sum();
        let mean = total as f64 / n as f64;
        let share = 4e6 / 8.0 / 30.0;
        assert!(
            (mean / share - 1.0).abs() < 0.02,
            "mean {mean} share {share}"
        );
    }

    /// Key frames at frames 0, 30, 60, ... for a 1 s interval at 30 fps; with cv 0 a delta frame
    /// is 30·b/(4 + 29) and a key frame 4 times that, b = 1 Mb/s / 8 / 30.
    #[test]
    fn key_frames_at_the_interval() {
        let mut e = enc(0.0, Some(Nanos::from_ms(1000)), 4.0);
        let b: f64 = 1e6 / 8.0 / 30.0;
        let d = 30.0 * b / 33.0;
        for k in 0..95 {
            let f = e.encode(at(k), 1e6);
            assert_eq!(f.key, k % 30 == 0, "frame {k}");
            let want = if f.key { 4.0 * d } else { d };
            assert_eq!(f.bytes, want.round() as u64, "frame {k}");
        }
    }

    /// A step of the target reaches the frames one frame interval later (the default lag).
    #[test]
    fn target_applies_after_the_lag() {
        let mut e = enc(0.0, None, 1.0);
        assert_eq!(e.encode(at(0), 1e6).target_bps, 1e6);
        assert_eq!(e.encode(at(1), 2e6).target_bps, 1e6);
        assert_eq!(e.encode(at(2), 2e6).target_bps, 2e6);
    }

    /// The sizes' spread is the configured cv (sample cv of 20 000 frames within 5 %).
    #[test]
    fn size_spread_is_the_configured_cv() {
        let mut e = enc(0.5, None, 1.0);
        let v: Vec<f64> = (0..20_000)
            .map(|k| e.encode(at(k), 8e6).bytes as f64)
            .collect();
        let m = v.iter().sum::<f64>() / v.len() as f64;
        let sd = (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / v.len() as f64).sqrt();
        assert!((sd / m / 0.5 - 1.0).abs() < 0.05, "cv {}", sd / m);
    }

    /// Without a key-frame interval only the first frame is a key frame (ratio × the share);
    /// the GOP is the interval in frames, rounded: 50 ms at 30 fps = 1.5 → 2 frames.
    #[test]
    fn the_first_frame_is_key_and_the_gop_rounds_to_whole_frames() {
        let b: f64 = 1e6 / 8.0 / 30.0;
        let mut e = enc(0.0, None, 4.0);
        let sizes: Vec<(bool, u64)> = (0..4)
            .map(|k| e.encode(at(k), 1e6))
            .map(|f| (f.key, f.bytes))
            .collect();
        let (key, delta) = ((4.0 * b).round() as u64, b.round() as u64);
        assert_eq!(
            sizes,
            [(true, key), (false, delta), (false, delta), (false, delta)]
        );
        let mut e = enc(0.0, Some(Nanos::from_ms(50)), 4.0);
        let keys: Vec<bool> = (0..6).map(|k| e.encode(at(k), 1e6).key).collect();
        assert_eq!(keys, [true, false, true, false, true, false]);
    }

    /// An explicit lag: a target set at 0 reaches the frames captured 100 ms later, not
    /// before; lag 0 applies it to the frame it comes with.
    #[test]
    fn an_explicit_lag_delays_the_target_by_exactly_that() {
        let lagged = |lag: Nanos| {
            let cfg = EncoderConfig {
                lag: Some(lag),
                frame_size_cv: 0.0,
                ..Default::default()
            };
            Encoder::new(cfg, 30, Rng::derive(7, "enc")).unwrap()
        };
        let mut e = lagged(Nanos::from_ms(100));
        assert_eq!(e.encode(Nanos::ZERO, 1e6).target_bps, 1e6);
        assert_eq!(e.encode(Nanos::from_ms(10), 2e6).target_bps, 1e6);
        assert_eq!(e.encode(Nanos::from_ms(109), 2e6).target_bps, 1e6);
        assert_eq!(e.encode(Nanos::from_ms(110), 2e6).target_bps, 2e6);
        let mut e = lagged(Nanos::ZERO);
        assert_eq!(e.encode(Nanos::ZERO, 1e6).target_bps, 1e6);
        assert_eq!(e.encode(Nanos::from_ms(10), 2e6).target_bps, 2e6);
    }

    /// Each range is closed: cv [0, 2], ratio [1, 50], the key-frame interval at least one
    /// frame interval (1/30 s = 33 333 333 ns), the lag at most 10 s.
    #[test]
    fn parameter_ranges_are_closed_at_both_ends() {
        let ok = |c: EncoderConfig| c.validate(30).is_ok();
        let d = EncoderConfig::default;
        let cv = |v| EncoderConfig {
            frame_size_cv: v,
            ..d()
        };
        let ratio = |v| EncoderConfig {
            keyframe_ratio: v,
            ..d()
        };
        let key = |v| EncoderConfig {
            keyframe_interval: Some(Nanos(v)),
            ..d()
        };
        let lag = |v| EncoderConfig {
            lag: Some(Nanos(v)),
            ..d()
        };
        assert!(ok(cv(0.0)) && ok(cv(2.0)) && !ok(cv(2.001)));
        assert!(ok(ratio(1.0)) && ok(ratio(50.0)) && !ok(ratio(0.999)) && !ok(ratio(50.01)));
        assert!(ok(key(33_333_333)) && !ok(key(33_333_332)));
        assert!(ok(lag(10_000_000_000)) && !ok(lag(10_000_000_001)));
    }

    #[test]
    fn bad_parameters_name_the_key() {
        let cfg = EncoderConfig {
            frame_size_cv: -0.1,
            ..Default::default()
        };
        assert!(cfg
            .validate(30)
            .unwrap_err()
            .to_string()
            .contains("frame_size_cv"));
        let cfg = EncoderConfig {
            keyframe_interval: Some(Nanos::from_ms(1)),
            ..Default::default()
        };
        assert!(cfg
            .validate(30)
            .unwrap_err()
            .to_string()
            .contains("keyframe_interval"));
    }
}
