package main

import (
	"bytes"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

const tfModule = "github.com/tensorflow/tensorflow@v2.15.0+incompatible"

// roots are the messages the runtime needs; their imports are followed.
var roots = []string{
	"tensorflow/core/framework/graph.proto",
	"tensorflow/core/framework/op_def.proto",
	"tensorflow/core/framework/device_attributes.proto",
	"tensorflow/core/protobuf/config.proto",
	"tensorflow/core/protobuf/tensor_bundle.proto",
	"tensorflow/core/example/example.proto",
	"tensorflow/core/protobuf/saved_model.proto",
}

// searchPath lists where imports resolve inside the TF module.
var searchPath = []string{".", "third_party/xla/third_party/tsl"}

func main() {
	log.SetFlags(0)
	tf := tfDir()
	tmp, err := os.MkdirTemp("", "tfproto")
	check(err)
	defer os.RemoveAll(tmp)

	seen := map[string]bool{}
	var files []string
	var walk func(string)
	walk = func(name string) {
		if seen[name] || strings.HasPrefix(name, "google/protobuf/") {
			// protoc's well-known types (Any in meta_graph.proto) come
			// with protoc and map to their own Go packages.
			return
		}
		seen[name] = true
		src := find(tf, name)
		text := stripComments(src)
		text = goPackage.ReplaceAll(text, nil)
		dst := filepath.Join(tmp, name)
		check(os.MkdirAll(filepath.Dir(dst), 0o755))
		check(os.WriteFile(dst, text, 0o644))
		files = append(files, name)
		for _, m := range importRe.FindAllSubmatch(text, -1) {
			walk(string(m[1]))
		}
	}
	for _, r := range roots {
		walk(r)
	}
	sort.Strings(files)

	out, err := os.MkdirTemp("", "tfgo")
	check(err)
	defer os.RemoveAll(out)
	args := []string{"-I" + tmp, "-I" + wellKnownDir(), "--go_out=" + out, "--go_opt=paths=source_relative"}
	for _, f := range files {
		args = append(args, "--go_opt=M"+f+"=mstream/proto/tfpb")
	}
	args = append(args, files...)
	cmd := exec.Command("protoc", args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	check(cmd.Run())

	dstDir := filepath.Join("proto", "tfpb")
	old, _ := filepath.Glob(filepath.Join(dstDir, "*.pb.go"))
	for _, f := range old {
		check(os.Remove(f))
	}
	for _, f := range files {
		gen := filepath.Join(out, strings.TrimSuffix(f, ".proto")+".pb.go")
		b, err := os.ReadFile(gen)
		check(err)
		base := strings.ReplaceAll(strings.TrimSuffix(f, ".proto"), "/", "_") + ".pb.go"
		check(os.WriteFile(filepath.Join(dstDir, base), b, 0o644))
	}
	fmt.Printf("generated %d files into %s\n", len(files), dstDir)
}

// wellKnownDir is the include directory that holds protoc's
// google/protobuf/*.proto (Debian's protobuf-compiler puts them in
// /usr/include).
func wellKnownDir() string {
	for _, d := range []string{"/usr/include", "/usr/local/include"} {
		if _, err := os.Stat(filepath.Join(d, "google/protobuf/any.proto")); err == nil {
			return d
		}
	}
	log.Fatal("gen: google/protobuf/any.proto not found in /usr/include or /usr/local/include (Debian: protobuf-compiler)")
	return ""
}

var (
	importRe  = regexp.MustCompile(`(?m)^import\s+(?:public\s+|weak\s+)?"([^"]+)"\s*;`)
	goPackage = regexp.MustCompile(`(?m)^option\s+go_package\s*=\s*"[^"]*"\s*;\n?`)
)

// stripComments removes // and /* */ comments outside string literals and
// drops lines left empty, so that only the schema remains.
func stripComments(src []byte) []byte {
	var b bytes.Buffer
	inStr := byte(0)
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case inStr != 0:
			b.WriteByte(c)
			if c == '\\' && i+1 < len(src) {
				i++
				b.WriteByte(src[i])
			} else if c == inStr {
				inStr = 0
			}
		case c == '"' || c == '\'':
			inStr = c
			b.WriteByte(c)
		case c == '/' && i+1 < len(src) && src[i+1] == '/':
			for i < len(src) && src[i] != '\n' {
				i++
			}
			if i < len(src) {
				b.WriteByte('\n')
			}
		case c == '/' && i+1 < len(src) && src[i+1] == '*':
			end := bytes.Index(src[i+2:], []byte("*/"))
			if end < 0 {
				log.Fatal("unterminated comment")
			}
			i += end + 3
		default:
			b.WriteByte(c)
		}
	}
	var out bytes.Buffer
	for _, line := range strings.Split(b.String(), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		out.WriteString(strings.TrimRight(line, " \t"))
		out.WriteByte('\n')
	}
	return out.Bytes()
}

func find(tf, name string) []byte {
	for _, p := range searchPath {
		b, err := os.ReadFile(filepath.Join(tf, p, name))
		if err == nil {
			return b
		}
	}
	log.Fatalf("cannot find %s in %s", name, tf)
	return nil
}

// tfDir returns the TF module's directory, downloading it when missing.
func tfDir() string {
	out, err := exec.Command("go", "mod", "download", "-json", tfModule).Output()
	if err != nil {
		log.Fatalf("go mod download %s: %v", tfModule, err)
	}
	m := regexp.MustCompile(`"Dir":\s*"([^"]+)"`).FindSubmatch(out)
	if m == nil {
		log.Fatalf("no Dir in go mod download output")
	}
	return string(m[1])
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
