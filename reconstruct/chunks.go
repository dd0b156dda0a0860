package reconstruct

// chunked is an append-only sequence stored in chunks of recChunkLen
// elements, so that growing it never copies more than its first chunk nor
// leaves more garbage behind: the matching records of a long run are a
// sizeable part of the memory reconstruction needs. The first chunk starts
// with room for recFirstLen elements and grows fourfold as it fills, up to
// recChunkLen, so that a rank of a few records costs a few hundred bytes,
// not a whole chunk (a world of thousands of short ranks).
type chunked[T any] struct {
	c [][]T
	n int
}

const (
	recChunkBits = 12
	recChunkLen  = 1 << recChunkBits
	recFirstLen  = 8
)

func (s *chunked[T]) add(v T) int {
	i := s.n
	k, j := i>>recChunkBits, i&(recChunkLen-1)
	switch {
	case j == 0 && k == 0:
		s.c = append(s.c, make([]T, recFirstLen))
	case j == 0:
		s.c = append(s.c, make([]T, recChunkLen))
	case j == len(s.c[k]):
		c := make([]T, min(4*j, recChunkLen))
		copy(c, s.c[k])
		s.c[k] = c
	}
	s.c[k][j] = v
	s.n++
	return i
}

// trim shrinks the last chunk to the elements it holds: a sequence that
// is complete keeps no room it will not fill (it grows again if more come).
func (s *chunked[T]) trim() {
	k := len(s.c) - 1
	if k < 0 {
		return
	}
	if n := s.n - k*recChunkLen; n < len(s.c[k]) {
		s.c[k] = append([]T(nil), s.c[k][:n]...)
	}
}

// at returns element i; the pointer is valid until the next add (which may
// move the first chunk).
func (s *chunked[T]) at(i int) *T { return &s.c[i>>recChunkBits][i&(recChunkLen-1)] }

func (s *chunked[T]) len() int { return s.n }
