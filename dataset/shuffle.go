package dataset

import (
	crand "crypto/rand"
	"encoding/binary"
	"math/bits"
	"sync"

	"mstream/hostmem"
	"mstream/tensor"
)

// shuffleDS is ShuffleDataset (V1, V3): TF's shuffle buffer, drawing from
// the same Philox4x32-10 stream TF draws from, so a graph whose seeds are
// set yields TF's order. The seed generator belongs to the dataset (TF
// makes one per dataset op call): with reshuffle_each_iteration each new
// iterator (each epoch under a repeat) takes the next pair of seeds from
// it, otherwise every iterator starts from (seed, seed2).
type shuffleDS struct {
	in        Dataset
	size      int64
	reshuffle bool
	lim       hostmem.Limit

	mu  sync.Mutex
	gen philox // the seed generator (reshuffle only)
}

func newShuffleDS(in Dataset, size, seed, seed2 int64, reshuffle bool, lim hostmem.Limit) *shuffleDS {
	if seed == 0 && seed2 == 0 {
		seed, seed2 = randomSeed(), randomSeed()
	}
	d := &shuffleDS{in: in, size: size, reshuffle: reshuffle, lim: lim}
	d.gen = newPhilox(seed, seed2)
	return d
}

// seeds is TF's SeedGenerator::GenerateSeeds.
func (d *shuffleDS) seeds() (int64, int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.reshuffle {
		g := d.gen
		return g.seed, g.seed2
	}
	a := int64(d.gen.next())
	b := int64(d.gen.next())
	return a, b
}

func (d *shuffleDS) Iterate() (Iterator, error) {
	in, err := d.in.Iterate()
	if err != nil {
		return nil, err
	}
	s, s2 := d.seeds()
	return &shuffleIt{d: d, in: in, rng: newPhilox(s, s2), held: budget{lim: d.lim, what: "shuffle buffer"}}, nil
}

// shuffleIt keeps TF's ring buffer: elements enter at the ring's end and
// the one handed out is drawn uniformly from the buffer, its slot then
// taking the element at the ring's start.
type shuffleIt struct {
	d          *shuffleDS
	in         Iterator
	rng        philox
	buf        [][]*tensor.Tensor
	start, end int64 // ring positions: buf[pos % size]
	inputDone  bool
	held       budget
}

func (it *shuffleIt) Next() ([]*tensor.Tensor, bool, error) {
	for !it.inputDone && it.end-it.start < it.d.size {
		e, end, err := it.in.Next()
		if err != nil {
			return nil, false, err
		}
		if end {
			it.inputDone = true
			break
		}
		if err := it.held.take(e); err != nil {
			return nil, false, err
		}
		*it.slot(it.end) = e
		it.end++
	}
	if it.end == it.start {
		return nil, true, nil
	}
	off := int64(uint64(it.rng.next()) % uint64(it.end-it.start))
	a, b := it.slot(it.start+off), it.slot(it.start)
	out := *a
	it.held.give(out)
	*a, *b = *b, nil
	it.start++
	return out, false, nil
}

// slot is the ring's slot of position pos: TF's buffer index pos %
// buffer_size. The slice grows as elements arrive, never past the
// elements the buffer holds at once.
func (it *shuffleIt) slot(pos int64) *[]*tensor.Tensor {
	i := pos % it.d.size
	for int64(len(it.buf)) <= i {
		it.buf = append(it.buf, nil)
	}
	return &it.buf[i]
}

func (it *shuffleIt) Close() { it.in.Close() }

// philox is TF's SingleSampleAdapter<PhiloxRandom>: Philox4x32-10 keyed by
// seed with seed2 in the high counter words, handing out one 32-bit
// sample at a time.
type philox struct {
	seed, seed2 int64
	key         [2]uint32
	ctr         [4]uint32
	block       [4]uint32
	used        int
}

func newPhilox(seed, seed2 int64) philox {
	return philox{seed: seed, seed2: seed2,
		key: [2]uint32{uint32(seed), uint32(uint64(seed) >> 32)},
		ctr: [4]uint32{0, 0, uint32(seed2), uint32(uint64(seed2) >> 32)}, used: 4}
}

func (p *philox) next() uint32 {
	if p.used == 4 {
		c, key := p.ctr, p.key
		for r := 0; r < 10; r++ {
			h0, l0 := bits.Mul32(0xD2511F53, c[0])
			h1, l1 := bits.Mul32(0xCD9E8D57, c[2])
			c = [4]uint32{h1 ^ c[1] ^ key[0], l1, h0 ^ c[3] ^ key[1], l0}
			key[0] += 0x9E3779B9
			key[1] += 0xBB67AE85
		}
		p.block, p.used = c, 0
		for i := range p.ctr { // 128-bit increment
			p.ctr[i]++
			if p.ctr[i] != 0 {
				break
			}
		}
	}
	v := p.block[p.used]
	p.used++
	return v
}

// randomSeed is TF's random::New64 for a shuffle whose seeds are both 0.
func randomSeed() int64 {
	var b [8]byte
	crand.Read(b[:])
	return int64(binary.LittleEndian.Uint64(b[:]))
}
