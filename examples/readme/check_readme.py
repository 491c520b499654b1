"""Checks that README.md's code blocks are real, as a user would take them.

Run from the repository's top directory after `make` (examples/test.sh's
readme check does): it prints a PASS or FAIL line per check and ends with
"N passed, M failed".

  c, python   each block is a file under examples/ or test/: a Python block
              is the whole file, a C block an excerpt (consecutive lines). A
              README Python file is run with build/venv's Python, as the
              README says, importing the installed mstream package; every
              `print(...)  # X` line must print X.
  sh          every command runs as written, or in a shortened form:
              `cc ...` lines (the link commands, on the README's C file) and
              `build/...` lines run as written, and a `# output: X` comment
              must be their output; the benchmark commands run through
              SMOKE, the same command with fewer rounds or a shorter time
              (their numbers are not checked, only that they run through);
              the GPU benchmark, which needs a GPU, is packaged and its
              script checked by `bash -n`; `make run` and `make test` are
              what CI runs around this check. A command none of these
              covers fails the check: add it to SMOKE.
  json        the MS_SessionStats example: examples/readme/stats.py makes
              the session it describes; every field the README shows must be
              in its output with the same JSON type, and the runs, groups and
              group-count knob must be the ones the README shows.
  links       every relative link target exists, and none leaves the
              repository.
"""

import glob
import os
import re
import subprocess
import sys
import time

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


# The README's benchmark commands, shortened for CI: (extra environment,
# [(argument written, argument run)]). The command runs from the repository's
# top with the environment the README gives it, plus these.
SMOKE = {
    # No --readme: a CI run must not rewrite the README it checks.
    "bench/cpu/vs_tf.sh": ("ROUNDS=1 DUR=0.2 MODELS=mlp", [(" --readme", "")]),
    "bench/run_cpu.sh": ("RUNS=3 MM_RUNS=1 EX_ITERS=3", []),
    "bench/run_models.sh": ("DUR=0.1", []),
    "bench/ops/run.sh": ("COUNT=1 BENCHTIME=1x RUNS=1", []),
    "bench/conv/run.sh": ("COUNT=1 BENCHTIME=1x RUNS=1", []),
    "go run ./bench/models/ab": ("", [("-rounds 30", "-rounds 1"), ("-iters 5", "-iters 1")]),
    "go test -run '^$' -bench BenchmarkReplay": ("", [("-benchtime 200000x", "-benchtime 100x"), ("-count 5", "-count 1")]),
    "sh bench/gpu/package.sh": ("", []),
    "bench/data/run.sh": ("STEPS=2", []),
    "sh examples/build.sh": ("", []),
    "sh bench/gpu/training.sh": ("STEPS=3 BATCH=16 ROUNDS=1", []),
    "TF_NODE_LEVEL_MULTISTREAM=true TF_GPU_STREAM_GROUP_COUNT=4": ("", [("training.pbtxt 50 256", "training.pbtxt 3 16")]),
}


def run_sh(body, line):
    for raw in body.split("\n"):
        cmd = raw.split("  #")[0].strip()
        want = re.search(r"#\s*output:\s*(.*)$", raw)
        if not cmd or cmd.startswith("#"):
            continue
        words = [w for w in re.split(r"[\s=]+", cmd) if w]
        for w in words:
            w = w.strip("'\"`()")
            top = w.split("/")[0]
            if "/" in w and "$" not in w and top not in ("build", ".dev", "") and os.path.isdir(top):
                check("line %d: %s exists" % (line, w), os.path.exists(w))
        if words[0] == "cc" or words[0].startswith("build/"):
            rc, out, err = run(cmd, shell=True)
            ok = rc == 0 and (not want or out.strip() == "output: " + want.group(1).strip())
            check("line %d: %s" % (line, cmd), ok, (err or out).strip()[-400:] if not ok else "")
        elif cmd in ("make run", "make test"):
            pass  # CI is make test, and examples/test.sh runs make run's example
        elif ".dev/gpu/bench/bench_all.sh" in cmd:
            # Needs a GPU: the packaged script (the line before made it) parses.
            rc, out, err = run(["bash", "-n", ".dev/gpu/bench/bench_all.sh"])
            check("line %d: %s parses (bash -n; it runs on a GPU machine)" % (line, cmd), rc == 0, err.strip()[-400:])
        else:
            key = next((k for k in SMOKE if cmd.startswith(k)), None)
            if key is None:
                check("line %d: %s" % (line, cmd), False, "not run by CI: add it to SMOKE in %s" % __file__)
                continue
            env_extra, subs = SMOKE[key]
            short = cmd
            for a, b in subs:
                if a not in short:
                    check("line %d: %s" % (line, cmd), False, "SMOKE expects %r in it" % a)
                short = short.replace(a, b)
            short = (env_extra + " " + short).strip()
            t0 = time.time()
            rc, out, err = run(short, shell=True)
            check("line %d: %s (run as: %s; %.0f s)" % (line, cmd, short, time.time() - t0), rc == 0,
                  (err + out).strip()[-600:] if rc != 0 else "")


def strip_elisions(text):
    """The README's abridged JSON as JSON: its "..." elisions dropped."""
    text = re.sub(r",\s*\.\.\.", "", text)
    return re.sub(r"\.\.\.\s*,?", "", text)


def same_shape(want, got, path, bad):
    """Every field of want is in got with the same JSON type."""
    if isinstance(want, dict):
        if not isinstance(got, dict):
            bad.append("%s: not an object" % path)
            return
        for k, v in want.items():
            if k not in got:
                bad.append("%s.%s: missing" % (path, k))
            else:
                same_shape(v, got[k], path + "." + k, bad)
    elif isinstance(want, list):
        if not isinstance(got, list) or len(got) < len(want):
            bad.append("%s: not a list of at least %d" % (path, len(want)))
            return
        for i, v in enumerate(want):
            same_shape(v, got[i], "%s[%d]" % (path, i), bad)
    elif isinstance(want, bool) != isinstance(got, bool) or \
            (isinstance(want, (int, float)) and not isinstance(got, (int, float))) or \
            (isinstance(want, str) and not isinstance(got, str)):
        bad.append("%s: %r is not like %r" % (path, got, want))


def run_json(body, line):
    import json
    try:
        want = json.loads(strip_elisions(body))
    except ValueError as e:
        return check("line %d: the json block parses once its ... are dropped" % line, False, str(e))
    py = os.path.join(ROOT, "build", "venv", "bin", "python")
    rc, out, err = run([py, "examples/readme/stats.py"])
    if rc != 0:
        return check("line %d: examples/readme/stats.py runs" % line, False, err.strip()[-400:])
    got = json.loads(out)
    bad = []
    same_shape(want, got, "stats", bad)
    for key in ("mode", "runs_completed", "runs_failed"):
        if got.get(key) != want.get(key):
            bad.append("%s: %r, the README says %r" % (key, got.get(key), want.get(key)))
    if len(got.get("groups", [])) != len(want.get("groups", [])):
        bad.append("groups: %d, the README shows %d" % (len(got.get("groups", [])), len(want.get("groups", []))))
    if got.get("knobs", {}).get("TF_GPU_STREAM_GROUP_COUNT") != want["knobs"]["TF_GPU_STREAM_GROUP_COUNT"]:
        bad.append("knobs.TF_GPU_STREAM_GROUP_COUNT differs")
    check("line %d: the json block is MS_SessionStats of examples/readme/stats.py" % line, not bad, "; ".join(bad[:8]))


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
        elif lang == "json":
            run_json(body, line)
        else:
            check("line %d: a %s block" % (line, lang or "plain"), False, "no check knows this kind of block")
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
