//! DualPI2: not yet implemented (see issue "Foundation").
