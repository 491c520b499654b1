package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"mstream/proto/tfpb"
)

const module = "github.com/tensorflow/tensorflow@v2.15.0+incompatible"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run() error {
	out, err := exec.Command("go", "mod", "download", "-json", module).Output()
	if err != nil {
		return fmt.Errorf("go mod download %s: %w", module, err)
	}
	var info struct{ Dir string }
	if err := json.Unmarshal(out, &info); err != nil || info.Dir == "" {
		return fmt.Errorf("go mod download gave no module directory: %v", err)
	}
	text, err := os.ReadFile(filepath.Join(info.Dir, "tensorflow/core/ops/ops.pbtxt"))
	if err != nil {
		return err
	}
	var list tfpb.OpList
	if err := (prototext.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(text, &list); err != nil {
		return fmt.Errorf("ops.pbtxt: %w", err)
	}
	for _, op := range list.Op {
		op.Summary, op.Description = "", ""
		if op.Deprecation != nil {
			op.Deprecation.Explanation = ""
		}
		for _, a := range op.InputArg {
			a.Description = ""
		}
		for _, a := range op.OutputArg {
			a.Description = ""
		}
		for _, a := range op.Attr {
			a.Description = ""
		}
	}
	sort.Slice(list.Op, func(i, j int) bool { return list.Op[i].Name < list.Op[j].Name })
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(&list)
	if err != nil {
		return err
	}
	if err := os.WriteFile("graph/opdefs/ops.binpb", b, 0o644); err != nil {
		return err
	}
	fmt.Printf("graph/opdefs/ops.binpb: %d ops, %d bytes\n", len(list.Op), len(b))
	return nil
}
