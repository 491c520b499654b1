package envcfg

import (
	"flag"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the knob table of ../README.md from Knobs")

// TestREADMEKnobs keeps the README's knob table equal to MarkdownTable, so
// the documentation cannot drift from the knobs the code reads. With
// -update it rewrites the table instead.
func TestREADMEKnobs(t *testing.T) {
	const path = "../README.md"
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	begin := strings.Index(text, "<!-- knobs:begin")
	if begin < 0 {
		t.Fatal("README.md has no <!-- knobs:begin ... --> marker")
	}
	begin += strings.Index(text[begin:], "\n") + 1
	end := strings.Index(text[begin:], "<!-- knobs:end -->")
	if end < 0 {
		t.Fatal("README.md has no <!-- knobs:end --> marker after the begin marker")
	}
	end += begin
	want := MarkdownTable()
	if got := text[begin:end]; got != want {
		if *update {
			if err := os.WriteFile(path, []byte(text[:begin]+want+text[end:]), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Errorf("README.md's knob table differs from envcfg.Knobs; run go test ./envcfg -run TestREADMEKnobs -update\nREADME:\n%s\nwant:\n%s", got, want)
	}
	for _, k := range Knobs {
		if !strings.Contains(want, "| "+k.Name+" |") {
			t.Errorf("knob %s missing from the table", k.Name)
		}
	}
}
