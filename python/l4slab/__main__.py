"""`python -m l4slab`: the `l4slab` command line (`l4slab.cli.entry`)."""

from l4slab.cli import entry

entry()
