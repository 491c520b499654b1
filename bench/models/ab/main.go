// Command ab times the benchmark models (bench/internal/models) with
// plan-time fusion on and off in one process: two sessions over one graph,
// one with MSTREAM_FUSION=0, run in alternating rounds (ROUNDS rounds of
// ITERS runs each, A then B, then B then A) so that load from other work on
// a shared machine falls on both alike. It prints one Markdown row per
// (model, batch): median latency of each side over all its runs, QPS of
// one client (1 / mean latency), and the speed-up as the median over rounds
// of (unfused median / fused median) within the round, with its range.
//
//	go run ./bench/models/ab [-rounds 10] [-iters 10] [-batches 1,16]
package main

import (
	"flag"
	"fmt"
	"log"
	"math/rand"
	"sort"
	"strconv"
	"strings"
	"time"

	"mstream/bench/internal/models"
	"mstream/graph"
	_ "mstream/kernels/cpu"
	"mstream/proto/tfpb"
	"mstream/session"
	"mstream/tensor"

	// GPUs and GPU kernels, as the library links them.
	_ "mstream/kernels/cuda"
)

func med(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}

func main() {
	rounds := flag.Int("rounds", 10, "alternating rounds")
	iters := flag.Int("iters", 10, "runs per side per round")
	batches := flag.String("batches", "1,16", "batch sizes")
	flag.Parse()
	fmt.Println("| model | batch | fused: median ms | unfused: median ms | fused QPS (1 client) | unfused QPS | unfused / fused, paired by round (min-max) |")
	fmt.Println("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, m := range []struct {
		name, input string
		gd          *tfpb.GraphDef
		dims        []int64
	}{
		{"cnn", "image", models.CNN(), []int64{32, 32, 3}},
		{"transformer", "x", models.Transformer(), []int64{models.SeqLen, models.Model}},
	} {
		g := graph.New()
		if _, err := g.Import(m.gd, nil); err != nil {
			log.Fatal(err)
		}
		var sess [2]*session.Session
		for i, fusion := range []string{"1", "0"} {
			s, err := session.New(g, &session.Options{Config: &tfpb.ConfigProto{}, Env: map[string]string{"MSTREAM_FUSION": fusion, "MSTREAM_DEVICE": "cpu"}})
			if err != nil {
				log.Fatal(err)
			}
			sess[i] = s
		}
		for _, bs := range strings.Split(*batches, ",") {
			b, err := strconv.Atoi(bs)
			if err != nil {
				log.Fatal(err)
			}
			x := tensor.New(tensor.Float, append([]int64{int64(b)}, m.dims...))
			r := rand.New(rand.NewSource(1))
			for i := range x.F32() {
				x.F32()[i] = float32(2*r.Float64() - 1)
			}
			feeds := []session.Feed{{Output: g.Lookup(m.input).Output(0), Tensor: x}}
			fetch := []graph.Output{g.Lookup("output").Output(0)}
			var lat [2][]float64
			var ratios []float64
			run := func(side int, record bool) {
				t0 := time.Now()
				if _, _, err := sess[side].Run(nil, feeds, fetch, nil); err != nil {
					log.Fatal(err)
				}
				if record {
					lat[side] = append(lat[side], time.Since(t0).Seconds()*1e3)
				}
			}
			for i := 0; i < 3; i++ { // warm-up: plans, constants, allocators
				run(0, false)
				run(1, false)
			}
			for k := 0; k < *rounds; k++ {
				order := []int{0, 1}
				if k%2 == 1 {
					order = []int{1, 0}
				}
				for _, side := range order {
					for i := 0; i < *iters; i++ {
						run(side, true)
					}
				}
				n := len(lat[0])
				ratios = append(ratios, med(lat[1][n-*iters:])/med(lat[0][n-*iters:]))
			}
			mean := func(v []float64) float64 {
				t := 0.0
				for _, x := range v {
					t += x
				}
				return t / float64(len(v))
			}
			sort.Float64s(ratios)
			fmt.Printf("| %s | %d | %.2f | %.2f | %.0f | %.0f | %.2f (%.2f-%.2f) |\n", m.name, b, med(lat[0]), med(lat[1]),
				1e3/mean(lat[0]), 1e3/mean(lat[1]), med(ratios), ratios[0], ratios[len(ratios)-1])
		}
		for _, s := range sess {
			s.Close()
		}
	}
}
