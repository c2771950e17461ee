"""Spark stops a streaming query by sending SIGTERM to the reader's driver-side runner process;
the reader's stop() is never called. A reader that holds something in a broker (a group
member, acquired records) therefore closes it from a SIGTERM handler, then lets the signal do
what it did before."""
from __future__ import annotations

import logging
import os
import signal
import threading

log = logging.getLogger("roster.spark")


class StopsOnSigterm:
    """Mixin for a stream reader with `stop()`, `_stopping` and `_previous_sigterm`."""

    def _stop_name(self) -> str:
        return f"the group member of {self.settings.group_id}"

    def _install_sigterm_handler(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        try:
            self._previous_sigterm = signal.signal(signal.SIGTERM, self._on_sigterm)
        except (ValueError, OSError):
            pass

    def _on_sigterm(self, signum, frame) -> None:
        if self._stopping:
            return      # Spark may signal twice; the first call is closing
        self._stopping = True
        log.info("SIGTERM: closing %s", self._stop_name())
        previous = self._previous_sigterm
        try:
            self.stop()
        finally:
            if callable(previous):
                previous(signum, frame)
            elif previous != signal.SIG_IGN:
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                os.kill(os.getpid(), signal.SIGTERM)
