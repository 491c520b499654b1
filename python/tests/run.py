"""Runs the tests beside this file and prints "N passed, M failed, K skipped"
as the last line (make test's summary reads it); exits 1 on a failure."""

import os
import sys
import unittest

here = os.path.dirname(os.path.abspath(__file__))
suite = unittest.defaultTestLoader.discover(here, top_level_dir=here)
result = unittest.TextTestRunner(verbosity=2).run(suite)
bad = len(result.failures) + len(result.errors) + len(result.unexpectedSuccesses)
skipped = len(result.skipped)
print("%d passed, %d failed, %d skipped" % (result.testsRun - bad - skipped, bad, skipped))
sys.exit(1 if bad else 0)
