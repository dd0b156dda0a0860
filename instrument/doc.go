// Package instrument rewrites C and C++ sources so that every loop carries
// mpitrace's loop markers (recorder/c/mpitrace.h), and drives a compiler
// with sources rewritten on the fly (`mpitrace cc`).
//
// It parses with tree-sitter and only inserts text: macros, comments,
// preprocessor blocks and strings stay as they were, and markers go on the
// lines of the code they mark, so line numbers do not move. It is the one
// package of the module that needs cgo.
//
// Without cgo the package is empty (every file but this one needs cgo),
// so that CGO_ENABLED=0 go build ./... still builds the module; mpitrace
// then says that instrument and cc need a cgo build.
package instrument
