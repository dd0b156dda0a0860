//go:build !cgo

package cli

import (
	"context"
	"errors"
)

// errNoCgo: the instrumenter parses with tree-sitter, a C library.
var errNoCgo = errors.New("this mpitrace was built without cgo (CGO_ENABLED=0), and the instrumenter needs it: rebuild with CGO_ENABLED=1 and a C compiler (go build ./cmd/mpitrace)")

func runInstrument(context.Context, *instrumentOptions, *Streams) error { return errNoCgo }

func runCC(context.Context, *ccOptions, *Streams) error { return errNoCgo }

// cgoBuilt is false: instrument and cc only say why they cannot run.
const cgoBuilt = false
