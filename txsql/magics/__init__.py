"""The IPython front end: ``%%txsql`` / ``%txsql``, rendering, sessions and progress.

Only this package imports IPython. ``%load_ext txsql`` ends up in :func:`register`.
"""

from __future__ import annotations

from typing import Any

__all__ = ["register"]


def register(ipython: Any) -> None:
    """Register the ``%%txsql`` / ``%txsql`` magics (and completions) on ``ipython``."""
    # Deferred: `import txsql.magics` stays cheap until IPython registers the magics.
    from txsql.magics.completion import register_completer
    from txsql.magics.magic import TxSqlMagics

    magics = TxSqlMagics(shell=ipython)
    ipython.register_magics(magics)
    register_completer(ipython, magics)
