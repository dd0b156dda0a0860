//go:build !cgo

package mpicomm

import "errors"

type library struct{}

func (library) allreduce([]int64, int) int                                   { return -1 }
func (library) allgatherInt64(_, _ []int64) int                              { return -1 }
func (library) allgatherv(_, _ []byte, _, _ []int32) int                     { return -1 }
func (library) gatherv(_, _ []byte, _, _ []int32, _ int) int                 { return -1 }
func (library) alltoallInt(_, _ []int32) int                                 { return -1 }
func (library) alltoallv(_ []byte, _, _ []int32, _ []byte, _, _ []int32) int { return -1 }
func (library) bcast([]byte, int) int                                        { return -1 }
func (library) finalize() int                                                { return -1 }
func (library) localSize(*int) int                                           { return -1 }
func (library) abort(int)                                                    {}
func (library) errorString(int) string                                       { return "" }
func (library) version() string                                              { return "" }

var errNoCgo = errors.New("--mpi: this mpitrace was built without cgo, which loading the MPI transport needs; build it with CGO_ENABLED=1")

// Available says this binary cannot load the transport.
func Available() error { return errNoCgo }

// Open fails: loading the transport needs cgo's dlopen.
func Open(path string) (*Comm, error) { return nil, errNoCgo }
