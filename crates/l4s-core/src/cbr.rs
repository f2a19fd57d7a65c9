//! Constant-bit-rate / paced UDP source: not yet implemented (see issue "Transport models").
