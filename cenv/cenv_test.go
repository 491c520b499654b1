package cenv

import (
	"os"
	"testing"
)

// TestGetenv: a variable set and unset through os (which, in a program
// with cgo, also sets the C environment) is seen and then not; one that
// was never set is not.
func TestGetenv(t *testing.T) {
	const name = "MSTREAM_CENV_TEST"
	if v, ok := Getenv(name); ok {
		t.Fatalf("%s set before the test: %q", name, v)
	}
	t.Setenv(name, "a=b c")
	if v, ok := Getenv(name); !ok || v != "a=b c" {
		t.Fatalf("Getenv(%s) = %q, %v; want %q, true", name, v, ok, "a=b c")
	}
	os.Unsetenv(name)
	if v, ok := Getenv(name); ok {
		t.Fatalf("Getenv(%s) after unset = %q, true", name, v)
	}
	if _, ok := Getenv(""); ok {
		t.Fatal("Getenv of the empty name is set")
	}
}
