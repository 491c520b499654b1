// Command pbtxt2pb converts a text GraphDef to binary with the protobuf
// module's own text parser, for test/tforacle/gen.py: Python's text_format
// misreads raw non-ASCII bytes in tensor_content (examples/data's
// model_test.pbtxt parses to fewer bytes than its shape needs), so TF gets
// the binary form that the C++ and Go parsers agree on.
//
//	go run ./test/tforacle/pbtxt2pb IN.pbtxt OUT.pb
package main

import (
	"log"
	"os"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"mstream/proto/tfpb"
)

func main() {
	if len(os.Args) != 3 {
		log.Fatal("usage: pbtxt2pb IN.pbtxt OUT.pb")
	}
	text, err := os.ReadFile(os.Args[1])
	if err != nil {
		log.Fatal(err)
	}
	var gd tfpb.GraphDef
	if err := prototext.Unmarshal(text, &gd); err != nil {
		log.Fatalf("%s: %v", os.Args[1], err)
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(&gd)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(os.Args[2], b, 0o644); err != nil {
		log.Fatal(err)
	}
}
