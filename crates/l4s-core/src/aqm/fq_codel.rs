//! fq_codel: not yet implemented (see issue "Foundation").
