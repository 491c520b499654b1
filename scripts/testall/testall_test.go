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
named:
	@echo "--- FAIL: mstream/exec TestRun"; echo "    --- FAIL: TestRun/sub (indented: the test's own output)"
	@echo "FAIL mstream/exec	1.0s (3 tests)"; echo "XFAIL a: known gap"; echo "PASS b"
	@echo "c: bad_input_test: FAIL test/c/bad_input_test.c:55: p != NULL: a message"
	@echo "valgrind: valgrind: session_test exit 99: 3 passed, 0 failed"
	@echo "FAIL: test_feed (test_session.SessionTest)"; echo "ERROR: test_fetch (test_session.SessionTest)"
	@echo "not ok 4 - a TAP test"; echo "6 passed, 7 failed"; exit 1
vgfail:
	@echo "valgrind: valgrind: session_test exit 99: 3 passed, 0 failed"; echo "valgrind:   1 processes, 1 errors reported"
	@echo "valgrind: valgrind: session_test first error: Syscall param fstatat(buf) points to unaddressable byte(s)"
	@echo "valgrind: valgrind: session_test first error at: internal/runtime/syscall/linux.Syscall6 (asm_linux_amd64.s:36)"
	@echo "valgrind:     at 0x497D18E: internal/runtime/syscall/linux.Syscall6 (asm_linux_amd64.s:36)"
	@echo "valgrind: 3 passed, 1 failed"; exit 1
many:
	@for i in $$(seq 30); do echo "FAIL case$$i"; done; echo "0 passed, 30 failed"; exit 1
`

// testAll runs scripts/test_all.sh over steps of makefile and returns its
// output and exit status.
func testAll(t *testing.T, steps ...string) (out string, code int) {
	t.Helper()
	dir := t.TempDir()
	mk := filepath.Join(dir, "Makefile")
	if err := os.WriteFile(mk, []byte(makefile), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", append([]string{"../test_all.sh"}, steps...)...)
	cmd.Env = append(os.Environ(), "TEST_ALL_MAKEFILE="+mk, "TEST_ALL_LOGS="+filepath.Join(dir, "logs"))
	b, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(b), code
}

func run(t *testing.T, steps ...string) (last string, summary []string, code int) {
	t.Helper()
	out, code := testAll(t, steps...)
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "=== summary") {
			summary = lines[i+1 : len(lines)-1]
		}
	}
	for i, l := range summary {
		if strings.HasPrefix(l, "failed in ") {
			summary = summary[:i]
			break
		}
	}
	return lines[len(lines)-1], summary, code
}

// failedNames returns the lines between the step lines and the total: the
// failed steps and the failed tests named in their logs.
func failedNames(t *testing.T, steps ...string) string {
	t.Helper()
	s, _ := testAll(t, steps...)
	i := strings.Index(s, "\nfailed in ")
	if i < 0 {
		return ""
	}
	s = s[i+1:]
	return s[:strings.LastIndex(strings.TrimRight(s, "\n"), "\n")+1]
}

// TestFailedNames checks that the summary names the failed tests of each
// failed step, in every runner's words, and nothing else of the log.
func TestFailedNames(t *testing.T) {
	got := failedNames(t, "ok", "named", "bad")
	for _, want := range []string{
		"failed in named (",
		"\n  --- FAIL: mstream/exec TestRun\n",
		"\n  FAIL mstream/exec\t1.0s (3 tests)\n",
		"\n  c: bad_input_test: FAIL test/c/bad_input_test.c:55: p != NULL: a message\n",
		"\n  valgrind: valgrind: session_test exit 99: 3 passed, 0 failed\n",
		"\n  FAIL: test_feed (test_session.SessionTest)\n",
		"\n  ERROR: test_fetch (test_session.SessionTest)\n",
		"\n  not ok 4 - a TAP test\n",
		"failed in bad (",
		"\n  (no line names a failed test; the log ends:)\n  no result line\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the failures lack %q:\n%s", want, got)
		}
	}
	for _, not := range []string{"indented", "XFAIL", "PASS", "failed in ok"} {
		if strings.Contains(got, not) {
			t.Errorf("the failures show %q:\n%s", not, got)
		}
	}
	if n := strings.Count(got, "\n  "); n != 10 {
		t.Errorf("%d failure lines, want 10:\n%s", n, got)
	}
	// A failed valgrind test shows its first error's kind and innermost
	// frames, not the rest of its report.
	got = failedNames(t, "vgfail")
	want := "  valgrind: valgrind: session_test exit 99: 3 passed, 0 failed\n" +
		"  valgrind: valgrind: session_test first error: Syscall param fstatat(buf) points to unaddressable byte(s)\n" +
		"  valgrind: valgrind: session_test first error at: internal/runtime/syscall/linux.Syscall6 (asm_linux_amd64.s:36)\n"
	if !strings.HasPrefix(got, "failed in vgfail (") || got[strings.Index(got, "\n")+1:] != want {
		t.Errorf("valgrind's failure lines:\n%s\nwant after the step's line:\n%s", got, want)
	}
	// At most 8 lines a step and 20 in all, with the rest counted.
	got = failedNames(t, "many", "many", "many")
	if n := strings.Count(got, "\n  FAIL case"); n != 20 || !strings.Contains(got, "  ... 22 more in the log\n") ||
		!strings.Contains(got, "  ... 26 more in the log\n") {
		t.Errorf("%d failure lines shown, want 20 (8, 8, 4) with the rest counted:\n%s", n, got)
	}
	if got := failedNames(t, "ok", "mixed"); !strings.Contains(got, "failed in mixed") || strings.Contains(got, "failed in ok") {
		t.Errorf("only the failed step is listed:\n%s", got)
	}
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
