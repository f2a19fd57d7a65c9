//! prague: not yet implemented (see issue "Transport models").
