# libmstream.so: the TensorFlow 2.15 C API over a Go graph runtime.
#   make        build build/libmstream.so, the libtensorflow.so links, build/mstream.pc
#               and the examples (build/multistream_inference, build/multistream_training)
#   make test   install what is missing, then run every test
#   make run    build and run the bundled example on the bundled model
GO      ?= go
VERSION := 0.1.0
ROOT    := $(CURDIR)
LIB     := build/libmstream.so
SRCS    := $(shell find . -name '*.go' -not -path './.dev/*' -not -path './scripts/*' -not -name '*_test.go') \
           $(wildcard capi/*.c capi/*.h kernels/cpu/*/*.c kernels/cpu/*/*.h device/*/*.c device/*/*.h) \
           $(shell find include -name '*.h' 2>/dev/null) \
           build/version.lds go.mod

.PHONY: all lib examples test test-go test-capi test-c test-python test-examples check-exports run clean setup

all: lib examples

examples: lib
	sh examples/build.sh

lib: $(LIB) build/libtensorflow.so build/libtensorflow.so.2 build/mstream.pc

$(LIB): $(SRCS)
	@echo "building $@ (go build -buildmode=c-shared: about a minute)"
	$(GO) build -buildmode=c-shared -trimpath \
	  -ldflags='-extldflags=-Wl,--version-script=$(ROOT)/build/version.lds' \
	  -o $@ ./capi
	@rm -f build/libmstream.h

build/libtensorflow.so build/libtensorflow.so.2: $(LIB)
	ln -sf libmstream.so $@

build/mstream.pc: Makefile
	@mkdir -p build
	printf 'prefix=%s\nincludedir=$${prefix}/include\nlibdir=$${prefix}/build\n\nName: mstream\nDescription: TensorFlow 2.15 C API over a Go graph runtime\nVersion: %s\nCflags: -I$${includedir}\nLibs: -L$${libdir} -lmstream\n' '$(ROOT)' '$(VERSION)' > $@

setup:
	sh scripts/setup.sh

# Every test. Suites that others own are hooked in only when their runner exists.
# scripts/test_all.sh runs each step (the later ones even when one fails) and
# ends with one "N passed, M failed, K skipped" over them all.
TEST_STEPS := setup lib check-exports test-capi test-go test-c test-python test-examples
test:
	@bash scripts/test_all.sh $(TEST_STEPS)

# scripts/gotestsum prints each package as it ends, progress while long ones
# run, the failures' output and the counts.
test-go:
	@mkdir -p build && $(GO) build -o build/gotestsum ./scripts/gotestsum
	$(GO) test -race -timeout 30m -json $$($(GO) list ./... | grep -v '/capi$$') | build/gotestsum
	# The stream sanitizer's meta-tests drop waits on purpose, which -race
	# would report as races: they run without it.
	$(GO) test -count=1 -json -run 'TestSanitizer' ./exec/ | build/gotestsum

check-exports: lib
	sh scripts/check_exports.sh

# A quick end-to-end pass over the C API (the full C suites are in test/).
test-capi: lib
	sh scripts/capi_smoke.sh

test-c: lib
	@if [ -x test/run.sh ]; then test/run.sh; else echo "test/run.sh absent: skipped"; fi

test-python: lib
	@if [ -f python/run_tests.sh ]; then sh python/run_tests.sh; else echo "python/run_tests.sh absent: skipped"; fi

test-examples: lib
	@if [ -f examples/test.sh ]; then sh examples/test.sh; else echo "examples/test.sh absent: skipped"; fi

run: lib
	@if [ -f examples/run.sh ]; then sh examples/run.sh; else echo "examples/run.sh absent: nothing to run" >&2; exit 1; fi

clean:
	rm -f build/libmstream.so build/libmstream.h build/libtensorflow.so build/libtensorflow.so.2 build/mstream.pc build/multistream_inference
