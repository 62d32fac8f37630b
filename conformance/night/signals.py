"""Ctrl-C and SIGTERM as a flag that the supervisor's loop reads."""

from __future__ import annotations

import signal
import threading


class StopSignals:
    """Ctrl-C (SIGINT) and SIGTERM as a flag that the parent's loop reads, while the block runs.

    The first one stops the night: the workers are stopped and the reports written. A
    KeyboardInterrupt raised wherever the signal lands could leave a lock held (the stop
    Event's, between its acquire and the `with` block) or a worker just spawned untracked,
    and the parent running (CI at ba661bd, once; inferred). SIGTERM is what a CI runner sends a job it
    cancels or times out, a few seconds before SIGKILL. A second signal acts as usual:
    quit at once, without reports. A SIGINT ignored when the block starts (a background
    job of a shell) stays ignored.
    """

    def __init__(self):
        self.received: str | None = None
        self._previous: dict[int, object] = {}

    def __enter__(self) -> "StopSignals":
        if threading.current_thread() is threading.main_thread():  # elsewhere signals cannot be set
            for sig in (signal.SIGINT, signal.SIGTERM):
                if signal.getsignal(sig) is not signal.SIG_IGN:
                    self._previous[sig] = signal.signal(sig, self._on_signal)
        return self

    def __exit__(self, *exc) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)

    def _on_signal(self, signum, frame) -> None:
        self.received = signal.Signals(signum).name
        for sig, handler in self._previous.items():
            signal.signal(sig, signal.default_int_handler if sig == signal.SIGINT else handler)
