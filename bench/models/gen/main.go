package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"google.golang.org/protobuf/proto"

	"mstream/bench/internal/models"
	"mstream/proto/tfpb"
)

func main() {
	out := flag.String("out", ".", "output folder")
	flag.Parse()
	if err := os.MkdirAll(*out, 0o755); err != nil {
		log.Fatal(err)
	}
	for name, g := range map[string]*tfpb.GraphDef{"cnn": models.CNN(), "transformer": models.Transformer()} {
		buf, err := proto.MarshalOptions{Deterministic: true}.Marshal(g)
		if err != nil {
			log.Fatal(err)
		}
		p := filepath.Join(*out, name+".pb")
		if err := os.WriteFile(p, buf, 0o644); err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s: %d nodes, %.1f MB\n", p, len(g.Node), float64(len(buf))/1e6)
	}
}
