package reconstruct

// chunked is an append-only sequence stored in fixed-size chunks, so that
// growing it never copies what it holds nor leaves garbage behind: the
// matching records of a long run are a sizeable part of the memory
// reconstruction needs.
type chunked[T any] struct {
	c [][]T
	n int
}

const (
	recChunkBits = 12
	recChunkLen  = 1 << recChunkBits
)

func (s *chunked[T]) add(v T) int {
	i := s.n
	if i&(recChunkLen-1) == 0 {
		s.c = append(s.c, make([]T, recChunkLen))
	}
	s.c[i>>recChunkBits][i&(recChunkLen-1)] = v
	s.n++
	return i
}

func (s *chunked[T]) at(i int) *T { return &s.c[i>>recChunkBits][i&(recChunkLen-1)] }

func (s *chunked[T]) len() int { return s.n }
