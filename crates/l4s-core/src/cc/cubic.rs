//! cubic: not yet implemented (see issue "Transport models").
