"""Reference array kernels, written once against an array-API namespace ``xp``."""
