"""Fast fake backends for the fuzz job's tests: one that hangs, one that kills its process."""

import os
import time

from conformance.backends.faulty import _Wrapping


class Hangs(_Wrapping):
    fault = "every call sleeps"

    def call(self, fn, args, compiled):
        time.sleep(30)
        return fn(*args)


class Crashes(_Wrapping):
    fault = "every call kills the process"

    def call(self, fn, args, compiled):
        os._exit(3)


hangs = Hangs
crashes = Crashes
