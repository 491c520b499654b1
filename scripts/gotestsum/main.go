// Command gotestsum reads `go test -json` on stdin and prints what a person
// watching `make test` needs: one line per package as it finishes, a line for
// every failed test with its output, a progress line every 15 s while
// packages run (some kernel packages print nothing for a minute otherwise),
// and last "N passed, M failed, K skipped" over the top-level tests (a
// package that fails to build, or fails outside any test, counts as one
// failure). It exits 1 when anything failed.
//
//	go test -json ./... | go run ./scripts/gotestsum
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
)

type event struct {
	Action  string
	Package string
	Test    string
	Output  string
	Elapsed float64
}

type pkgState struct {
	start  time.Time
	tests  int // top-level tests finished
	failed bool
	pkgOut strings.Builder             // output outside any test
	output map[string]*strings.Builder // per test, kept until it passes
}

func main() {
	var mu sync.Mutex
	pkgs := map[string]*pkgState{}
	var pass, fail, skip int
	get := func(p string) *pkgState {
		s := pkgs[p]
		if s == nil {
			s = &pkgState{start: time.Now(), output: map[string]*strings.Builder{}}
			pkgs[p] = s
		}
		return s
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(15 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				mu.Lock()
				var running []string
				for p, s := range pkgs {
					running = append(running, fmt.Sprintf("%s (%d tests, %.0f s)", p, s.tests, time.Since(s.start).Seconds()))
				}
				sort.Strings(running)
				if len(running) > 0 {
					fmt.Printf("  ... running: %s\n", strings.Join(running, ", "))
				}
				mu.Unlock()
			}
		}
	}()
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 64<<20)
	for in.Scan() {
		line := in.Bytes()
		var e event
		if json.Unmarshal(line, &e) != nil || e.Action == "" {
			fmt.Println(string(line)) // build errors and other plain text
			continue
		}
		mu.Lock()
		top := e.Test != "" && !strings.Contains(e.Test, "/")
		switch e.Action {
		case "start":
			get(e.Package)
		case "build-output":
			fmt.Print(e.Output)
		case "output":
			if e.Test == "" {
				get(e.Package).pkgOut.WriteString(e.Output)
				break
			}
			s := get(e.Package)
			root := strings.SplitN(e.Test, "/", 2)[0]
			b := s.output[root]
			if b == nil {
				b = &strings.Builder{}
				s.output[root] = b
			}
			b.WriteString(e.Output)
		case "pass", "skip", "fail":
			if e.Test == "" {
				s := get(e.Package)
				failed := e.Action == "fail"
				if failed && !s.failed {
					fail++ // failed outside any test: build, TestMain, a crash
					fmt.Print(indent(s.pkgOut.String()))
				}
				word := map[string]string{"pass": "ok  ", "skip": "?   ", "fail": "FAIL"}[e.Action]
				fmt.Printf("%s %s\t%.1fs (%d tests)\n", word, e.Package, e.Elapsed, s.tests)
				delete(pkgs, e.Package)
				break
			}
			if !top {
				break
			}
			s := get(e.Package)
			s.tests++
			switch e.Action {
			case "pass":
				pass++
			case "skip":
				skip++
			case "fail":
				fail++
				s.failed = true
				fmt.Printf("--- FAIL: %s %s\n", e.Package, e.Test)
				if b := s.output[e.Test]; b != nil {
					fmt.Print(indent(b.String()))
				}
			}
			delete(s.output, e.Test)
		}
		mu.Unlock()
	}
	close(done)
	mu.Lock()
	defer mu.Unlock()
	for p := range pkgs { // the stream ended with packages unfinished
		fmt.Printf("FAIL %s: no result (killed?)\n", p)
		fail++
	}
	fmt.Printf("%d passed, %d failed, %d skipped\n", pass, fail, skip)
	if fail > 0 {
		os.Exit(1)
	}
}

func indent(s string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		if l != "" {
			b.WriteString("    " + l)
		}
	}
	return b.String()
}
