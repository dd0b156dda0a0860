# mpitrace — `make demo` and `make test` work on a fresh Debian machine.
#
#   make deps    install what is missing (Debian packages, Go modules)
#   make build   bin/mpitrace
#   make demo    record the bundled stencil example on 4 ranks and analyse it
#   make test    everything CI checks (.ci/run calls it)
#   make goldens rewrite the goldens of the stored traces (fixtures/traces/README.md)
#   make bench   the performance figures of docs/performance.md

GO ?= go
NP ?= 4
DEB_PACKAGES := openmpi-bin libopenmpi-dev mpich libmpich-dev libzstd-dev graphviz gfortran cmake g++ libtrilinos-kokkos-dev
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# Open MPI refuses to run as root unless told; CI machines run as root.
export OMPI_ALLOW_RUN_AS_ROOT := 1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM := 1

.PHONY: all deps build demo test lint bench clean goldens

all: build

deps:
	@command -v $(GO) >/dev/null || { echo "make: Go is not installed: install Go 1.26 from https://go.dev/dl and put it on PATH"; exit 1; }
	@missing=""; for p in $(DEB_PACKAGES); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "make: installing Debian packages:$$missing"; \
		$(SUDO) apt-get update -q && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q $$missing; \
	fi
	@$(GO) mod download

build: deps
	$(GO) build -o bin/mpitrace ./cmd/mpitrace

demo: build
	@mkdir -p demo
	mpicc.openmpi -O2 -g -o demo/stencil fixtures/programs/stencil.c -lm
	bin/mpitrace record --force -o demo/traces -- mpirun.openmpi --oversubscribe -np $(NP) demo/stencil 40 400000
	bin/mpitrace stats demo/traces --top 6
	bin/mpitrace critpath demo/traces -o demo/critPath.out --top 5
	bin/mpitrace dot demo/traces -o demo/taskgraph.dot
	dot -Tsvg -o demo/taskgraph.svg demo/taskgraph.dot
	@echo "wrote demo/critPath.out, demo/taskgraph.dot and demo/taskgraph.svg (xdot demo/taskgraph.dot to explore)"

lint: deps
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	@# Only instrument/ needs cgo: everything else builds without it, and
	@# such an mpitrace says why instrument and cc are missing.
	CGO_ENABLED=0 $(GO) build ./...
	@CGO_ENABLED=0 $(GO) run ./cmd/mpitrace instrument x.c 2>&1 | grep -q 'built without cgo' || \
		{ echo "make lint: a CGO_ENABLED=0 mpitrace does not say that instrument needs cgo"; exit 1; }

# make test runs every step below even when one fails, and ends with the
# list of the steps that failed (exit 1), so that one failure does not hide
# the others. Each step's go test has a timeout well inside CI's 90 minutes:
# a test that hangs makes go test panic naming it ("running tests: ...").
#
# The end-to-end package (cmd/mpitrace) runs about a hundred MPI jobs: 6
# minutes on an idle 2-core machine, several times that beside other MPI
# jobs (MPICH ranks cannot yield the processor: internal/mpijob). Each job
# stops at its own deadline (3 minutes, or 30 s before this one) and fails
# its test by name, so this limit only has to exceed a slow run.
E2E_TIMEOUT ?= 45m
# Every other package takes seconds; a minute at most on a loaded machine.
UNIT_TIMEOUT ?= 8m
# The packages whose code or tests run goroutines.
RACE_PACKAGES := ./tracefmt/... ./reconstruct/... ./analysis/... ./cmd/mpitrace/internal/... ./instrument/... ./internal/...

test: deps
	@failed=""; \
	step() { name=$$1; shift; echo "make test: $$name: $$*"; "$$@" || failed="$$failed $$name"; }; \
	step lint $(MAKE) --no-print-directory lint; \
	pkgs=$$($(GO) list ./... | grep -v '/cmd/mpitrace$$') || pkgs=""; \
	if [ -n "$$pkgs" ]; then step unit $(GO) test -count=1 -timeout $(UNIT_TIMEOUT) $$pkgs; \
	else echo "make test: unit: go list ./... listed no package"; failed="$$failed unit"; fi; \
	step e2e $(GO) test -count=1 -timeout $(E2E_TIMEOUT) ./cmd/mpitrace; \
	step race $(GO) test -count=1 -race -timeout $(UNIT_TIMEOUT) $(RACE_PACKAGES); \
	if [ -n "$$failed" ]; then echo "make test: FAILED:$$failed"; exit 1; fi; \
	echo "make test: every step passed (lint unit e2e race)"

# The stored traces are never regenerated; their analyses' outputs are, when
# an output changes on purpose (review the diff of fixtures/traces/golden).
goldens:
	$(GO) test -count=1 ./cmd/mpitrace/internal/cli -run '^TestStoredTraces$$' -update

bench: build
	$(GO) run ./bench/overhead -n 5000000 -rounds 7
	$(GO) run ./bench/loops -n 20000000 -rounds 7
	$(GO) run ./bench/kokkos -n 2000000 -rounds 7
	$(GO) run ./bench/tracesize
	$(GO) test -run '^$$' -bench BenchmarkReader -benchtime 3x ./tracefmt
	$(GO) test -run '^$$' -bench ReconstructCritpath -benchtime 1x -cpu 1,2 ./reconstruct
	$(GO) test -run '^$$' -bench Critpath -benchtime 1x -cpu 1,2 ./cmd/mpitrace/internal/cli
	$(GO) test -run '^$$' -bench Source100k -benchtime 5x -count 3 ./instrument

clean:
	rm -rf bin demo
