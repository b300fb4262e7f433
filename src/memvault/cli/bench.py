"""``memvault bench ...``: the benchmarks, each printing JSON with ``--json``."""

from __future__ import annotations

import typer

app = typer.Typer(help="Measure memvault against its peers and floors.", no_args_is_help=True)
