package testall

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// steps are make targets that print what real suites print: the plain
// result line, its longer forms, prefixed lines that must not count, nothing.
const makefile = `
ok:
	@echo "PASS one"; echo "3 passed, 0 failed"
models:
	@echo "XFAIL a: known gap"; echo "models: 9 passed, 0 failed"; echo "5 passed, 0 failed, 0 skipped, 2 expected failures"
skip:
	@echo "skipped: no TensorFlow"; echo "0 passed, 0 failed, 1 skipped"
quiet:
	@true
bad:
	@echo "no result line"; exit 1
mixed:
	@echo "2 passed, 1 failed, 3 skipped"; echo "4 passed, 0 failed"; exit 1
silentfail:
	@echo "1 passed, 0 failed"; exit 2
`

func run(t *testing.T, steps ...string) (last string, summary []string, code int) {
	t.Helper()
	dir := t.TempDir()
	mk := filepath.Join(dir, "Makefile")
	if err := os.WriteFile(mk, []byte(makefile), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", append([]string{"../test_all.sh"}, steps...)...)
	cmd.Env = append(os.Environ(), "TEST_ALL_MAKEFILE="+mk, "TEST_ALL_LOGS="+filepath.Join(dir, "logs"))
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "=== summary") {
			summary = lines[i+1 : len(lines)-1]
		}
	}
	return lines[len(lines)-1], summary, code
}

func TestSummary(t *testing.T) {
	for _, c := range []struct {
		steps []string
		last  string
		code  int
	}{
		{[]string{"ok", "models", "skip", "quiet"}, "9 passed, 0 failed, 1 skipped, 2 expected failures", 0},
		// A failing step without a result line is one failure; a result line
		// counts as printed, and a non-zero exit with no failure counted adds one.
		{[]string{"ok", "bad", "mixed", "silentfail"}, "10 passed, 3 failed, 3 skipped, 0 expected failures", 1},
	} {
		last, summary, code := run(t, c.steps...)
		if last != c.last || code != c.code {
			t.Errorf("%v: last line %q exit %d, want %q exit %d", c.steps, last, code, c.last, c.code)
		}
		if len(summary) != len(c.steps) {
			t.Errorf("%v: summary has %d step lines, want %d: %q", c.steps, len(summary), len(c.steps), summary)
		}
		for i, l := range summary {
			if !strings.HasPrefix(l, c.steps[i]+" ") || !strings.Contains(l, " expected failures") {
				t.Errorf("%v: step line %q", c.steps, l)
			}
		}
	}
	// The models step's line shows its expected failures apart from its passes.
	if _, summary, _ := run(t, "models"); !strings.Contains(summary[0], "5 passed, 0 failed, 0 skipped, 2 expected failures") {
		t.Errorf("models step line %q", summary[0])
	}
}
