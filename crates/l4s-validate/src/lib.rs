//! l4s-validate: normalised DTW and the exceedance test (see issue "Statistical validation toolkit").
