"""Signal handling shared by the backends: a teardown that a Ctrl-C or SIGTERM cannot cut short.

Both backends (native.py, compose.py) wrap their teardown in :func:`signals_deferred`; it lives
here, in a module of its own, so neither backend imports the other.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator


def on_main_thread() -> bool:
    """Python delivers signals to the main thread only: elsewhere handlers cannot be installed."""
    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """A Ctrl-C or SIGTERM during teardown waits until the teardown is done, then takes effect."""
    if not on_main_thread():
        yield
        return
    received: list[int] = []
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    if any(handler is None for handler in previous.values()):
        yield   # a handler installed outside Python could not be restored: leave them alone
        return
    for sig in previous:
        signal.signal(sig, lambda signum, frame: received.append(signum))
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if signal.SIGINT in received:
            raise KeyboardInterrupt
        if signal.SIGTERM in received:
            signal.raise_signal(signal.SIGTERM)   # whatever handled SIGTERM before handles it now
