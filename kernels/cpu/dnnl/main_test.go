package dnnl_test

import (
	"testing"

	"mstream/kernels/cpu/dnnl/dnnltest"
)

func TestMain(m *testing.M) { dnnltest.Main(m, "../../..", "dnnl") }
