// Package tracefmt reads and writes mpitrace rank files, the on-disk format
// specified normatively in docs/format.md.
//
// # Layers
//
// The package is built in layers, each usable on its own:
//
//  1. spec (tracefmt/spec) is the event table: kinds, their fields and
//     encodings, the list shapes and the framing constants. Everything below
//     is driven by that table; no layer has per-kind code for decoding,
//     encoding or the text form.
//  2. Framing: a rank file is a magic, a version and a sequence of blocks
//     (sync marker, type, codec, sizes, CRC-32C, payload). Writer produces
//     them; the first pass of a RankReader scans them.
//  3. RankReader decodes one rank file in two passes. The first pass scans
//     the frames, checks every CRC, decodes the small header, strings and end
//     blocks, and reads only the prefix (thread, seq, count, base) of each
//     events block, building a per-thread block index. The second pass,
//     driven by Next, decodes one block per thread at a time and merges the
//     threads' streams by start time, so memory stays bounded by one block
//     per thread whatever the file size. No allocation happens per event:
//     Event returns a pointer into the reader that the next call to Next
//     overwrites.
//  4. Trace (OpenDir) is a trace directory: every rank-NNNNN.mpit file and
//     the manifest. It checks that the files belong together (one run id, one
//     world size, no duplicate rank) and decodes ranks in parallel with
//     ForEachRank.
//  5. Validate checks the cross-references of decoded events (communicators,
//     requests, function names, times). Decoding never validates
//     (docs/format.md decodes; Validate judges).
//  6. The text form (WriteText, ParseText) is a line-oriented, lossless
//     rendering of the same events, used by mpitrace dump and golden tests.
//
// # Errors and diagnostics
//
// A file that is not an mpitrace file (ErrNotMpitrace) and a file of an
// unsupported version (*VersionError) are distinct errors. Any other damage
// is tolerated: the reader skips what it cannot use and records a Diagnostic
// (severity, code, rank, file, block, offset, message) in a Diagnostics
// table, so a command can report everything that went wrong, counted by
// severity, instead of stopping at the first problem. Errors about bad input
// start with "broken trace:"; errors that indicate a bug in mpitrace start
// with "internal error:". No input makes the reader panic, and every length
// read from input is bounded before anything is allocated for it.
package tracefmt

//go:generate go run ./internal/gendoc -doc ../docs/format.md
