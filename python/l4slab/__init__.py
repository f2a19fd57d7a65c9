"""l4slab: an L4S lab — a deterministic simulator, a user-space emulator and a statistical
validation toolkit sharing one Rust core (DualPI2, CoDel, PIE, FQ-CoDel, Prague, DCTCP, ...)."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("l4slab")
except PackageNotFoundError:  # running from a source tree without an install
    __version__ = "0.1.0"

__all__ = ["__version__"]
