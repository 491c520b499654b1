package session

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLayering keeps the executor device-neutral: exec, groups and session
// reach what only a GPU can do through package device's interfaces, so
// none of them may depend, directly or through another package, on a
// CUDA package (device/cuda, kernels/cuda). capi links those in. Test
// files may import them (the GPU tests do).
func TestLayering(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list packages with")
	}
	pkgs := []string{"mstream/exec", "mstream/groups", "mstream/session"}
	cmd := exec.Command(goBin, append([]string{"list", "-f", "{{.ImportPath}} {{join .Imports \",\"}} {{join .Deps \",\"}}"}, pkgs...)...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	cuda := func(p string) bool {
		return strings.HasPrefix(p, "mstream/device/cuda") || strings.HasPrefix(p, "mstream/kernels/cuda")
	}
	seen := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		seen++
		var deps []string
		if len(f) > 2 {
			deps = strings.Split(f[2], ",")
		}
		for _, d := range deps {
			if cuda(d) {
				// Name the direct imports that lead there.
				var via []string
				for _, imp := range strings.Split(f[1], ",") {
					if cuda(imp) || dependsOn(t, goBin, imp, d) {
						via = append(via, imp)
					}
				}
				t.Errorf("%s depends on %s (through %v): the executor must reach devices only through package device", f[0], d, via)
			}
		}
	}
	if seen != len(pkgs) {
		t.Fatalf("go list described %d packages, want %d:\n%s", seen, len(pkgs), out)
	}
}

func dependsOn(t *testing.T, goBin, pkg, dep string) bool {
	out, err := exec.Command(goBin, "list", "-deps", pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if l == dep {
			return true
		}
	}
	return false
}
