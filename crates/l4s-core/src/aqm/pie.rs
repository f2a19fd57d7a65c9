//! pie: not yet implemented (see issue "Foundation").
