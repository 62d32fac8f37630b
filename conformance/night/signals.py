"""Ctrl-C and SIGTERM as flags that the supervisor's loop reads."""

from __future__ import annotations

import signal
import threading


class StopSignals:
    """Ctrl-C (SIGINT) and SIGTERM as flags that the supervisor's loop reads, while the block runs.

    The first one stops the night: the workers finish their example (3 s at most) and the
    reports are written. The second one (someone in a hurry, or a CI runner's SIGTERM twice)
    kills the workers at once, and the reports are still written from what is on disk: each
    finding is saved as it is found, a raw one before its shrink. A third acts as usual: quit
    at once, without reports. A KeyboardInterrupt raised wherever a signal lands could leave a
    lock held or a worker just spawned untracked, so the loop reads flags instead. A SIGINT
    ignored when the block starts (a background job of a shell) stays ignored.
    """

    def __init__(self):
        self.received: str | None = None
        self.hurried = False  # a second signal: kill the workers, write the reports
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
        if self.received is None:
            self.received = signal.Signals(signum).name
            return
        self.hurried = True
        for sig, handler in self._previous.items():
            signal.signal(sig, signal.default_int_handler if sig == signal.SIGINT else handler)
