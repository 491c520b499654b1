"""Checks that README.md's code blocks are real, as a user would take them.

Run from the repository's top directory after `make` (examples/test.sh's
readme check does): it prints a PASS or FAIL line per check and ends with
"N passed, M failed".

  c, python   each block is a file under examples/ or test/: a Python block
              is the whole file, a C block an excerpt (consecutive lines). A
              README Python file is run with build/venv's Python, as the
              README says, importing the installed mstream package; every
              `print(...)  # X` line must print X.
  sh          `cc ...` lines are run as written (the link commands, on the
              README's C file) and `build/...` lines run the result; a
              `# output: X` comment must be its output. Other commands
              (make, benchmarks) are not run, but every repository path they
              name must exist.
  links       every relative link target exists, and none leaves the
              repository.
"""

import glob
import os
import re
import subprocess
import sys

ROOT = os.getcwd()
results = []


def check(name, ok, detail=""):
    results.append(ok)
    print("%s readme: %s%s" % ("PASS" if ok else "FAIL", name, (": " + detail) if detail else ""))


def blocks(text):
    """(lang, body, line number) of every fenced block."""
    out, lines, i = [], text.split("\n"), 0
    while i < len(lines):
        m = re.match(r"^```(\w*)\s*$", lines[i])
        if m:
            start, body = i + 1, []
            i += 1
            while i < len(lines) and not lines[i].startswith("```"):
                body.append(lines[i])
                i += 1
            out.append((m.group(1), "\n".join(body), start))
        i += 1
    return out


def sources(ext):
    files = glob.glob("examples/**/*." + ext, recursive=True) + glob.glob("test/**/*." + ext, recursive=True)
    return {f: open(f).read() for f in sorted(files)}


def find_file(lang, body):
    ext = {"c": "c", "python": "py"}[lang]
    for path, text in sources(ext).items():
        if lang == "python" and text.rstrip("\n") == body.rstrip("\n"):
            return path
        if lang == "c" and body.strip() and ("\n" + body.strip("\n") + "\n") in ("\n" + text):
            return path
    return None


def env():
    e = dict(os.environ)
    e.setdefault("MSTREAM_LIB", os.path.join(ROOT, "build", "libmstream.so"))
    e["TF_CPP_MIN_LOG_LEVEL"] = "1"
    e.pop("PYTHONPATH", None)  # the installed package, as a user has it
    return e


def run(cmd, shell=False):
    p = subprocess.run(cmd, shell=shell, capture_output=True, text=True, env=env(),
                       executable="/bin/bash" if shell else None)
    return p.returncode, p.stdout, p.stderr


def run_python(path):
    py = os.path.join(ROOT, "build", "venv", "bin", "python")
    if run([py, "-c", "import numpy"])[0] != 0:
        # As the TensorFlow suites do when the registry cannot be reached.
        print("SKIP readme: %s: build/venv has no NumPy (scripts/setup.sh could not install it)" % path)
        return
    rc, out, err = run([py, path])
    if rc != 0:
        hint = " (scripts/setup.sh installs the package into build/venv)" if "No module named" in err else ""
        return check("%s runs with build/venv/bin/python" % path, False, err.strip()[-400:] + hint)
    want = [m.group(1).strip() for m in re.finditer(r"^\s*print\(.*\)\s+#\s*(.*)$", open(path).read(), re.M)]
    got = out.strip().split("\n") if out.strip() else []
    check("%s prints what the README shows" % path, got == want, "got %r, want %r" % (got, want))


def run_sh(body, line):
    for raw in body.split("\n"):
        cmd = raw.split("  #")[0].strip()
        want = re.search(r"#\s*output:\s*(.*)$", raw)
        if not cmd or cmd.startswith("#"):
            continue
        words = [w for w in re.split(r"[\s=]+", cmd) if w]
        if words[0] == "cc" or words[0].startswith("build/"):
            rc, out, err = run(cmd, shell=True)
            ok = rc == 0 and (not want or out.strip() == "output: " + want.group(1).strip())
            check("line %d: %s" % (line, cmd), ok, (err or out).strip()[-400:] if not ok else "")
            continue
        for w in words:
            w = w.strip("'\"`()")
            top = w.split("/")[0]
            if "/" in w and "$" not in w and top not in ("build", ".dev", "") and os.path.isdir(top):
                check("line %d: %s exists" % (line, w), os.path.exists(w))


def main():
    text = open("README.md").read()
    for lang, body, line in blocks(text):
        if lang in ("c", "python"):
            path = find_file(lang, body)
            check("line %d: the %s block is %s" % (line, lang, path or "no file under examples/ or test/"),
                  path is not None)
            if path and lang == "python" and "/readme/" in path:
                run_python(path)
        elif lang == "sh":
            run_sh(body, line)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"^[a-z]+://", target) or target.startswith("#"):
            continue
        inside = os.path.realpath(target).startswith(ROOT + os.sep)
        check("link %s" % target, inside and os.path.exists(target))
    for m in re.finditer(r"(?<![\w.])\.\./[\w./-]+", text):
        check("no path outside the repository (%s)" % m.group(0), False)
    print("%d passed, %d failed" % (results.count(True), results.count(False)))
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
