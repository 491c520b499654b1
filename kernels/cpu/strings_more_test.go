package cpu

import "math/rand"

// moreStringCases are the cases of the string ops added after the hashes.
func moreStringCases(r *rand.Rand) []tfCase { return nil }
