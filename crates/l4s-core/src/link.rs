//! Link models: not yet implemented (see issue "Simulator").
