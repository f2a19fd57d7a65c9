//! TCP sender and receiver state machines: not yet implemented (see issue "Transport models").
