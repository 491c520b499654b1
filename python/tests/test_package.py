"""python/ is a package pip installs the usual way: its wheel holds the
client and declares NumPy."""

import glob
import importlib.util
import os
import subprocess
import sys
import tempfile
import unittest
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from util import ROOT  # noqa: E402


class PackageTest(unittest.TestCase):
    def test_wheel(self):
        if importlib.util.find_spec("pip") is None or importlib.util.find_spec("setuptools") is None:
            self.skipTest("no pip or setuptools in %s" % sys.executable)
        with tempfile.TemporaryDirectory() as d:
            p = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps",
                                "--disable-pip-version-check", "-q", "-w", d, os.path.join(ROOT, "python")],
                               capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stderr)
            (wheel,) = glob.glob(os.path.join(d, "mstream-*.whl"))
            with zipfile.ZipFile(wheel) as z:
                names = z.namelist()
                self.assertIn("mstream/__init__.py", names)
                (meta,) = [n for n in names if n.endswith(".dist-info/METADATA")]
                requires = [l for l in z.read(meta).decode().splitlines() if l.startswith("Requires-Dist:")]
            self.assertTrue(any(r.split(":", 1)[1].strip().startswith("numpy") for r in requires), requires)


if __name__ == "__main__":
    unittest.main()
