// Package textout holds what the analyses' text outputs share.
package textout

import "io"

// ErrWriter writes to W until a write fails, then keeps the error (Err)
// and writes nothing more: a text output checks once, at its end.
type ErrWriter struct {
	W   io.Writer
	Err error
}

func (e *ErrWriter) Write(p []byte) (int, error) {
	if e.Err != nil {
		return 0, e.Err
	}
	n, err := e.W.Write(p)
	e.Err = err
	return n, err
}
