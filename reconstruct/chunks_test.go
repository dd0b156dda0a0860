package reconstruct

import "testing"

// TestChunkedGrows: the first chunk starts small and grows up to a whole
// chunk; later chunks are whole; every element stays where it was put.
func TestChunkedGrows(t *testing.T) {
	var s chunked[[2]int]
	for i := 0; i < 2*recChunkLen+3; i++ {
		if got := s.add([2]int{i, -i}); got != i {
			t.Fatalf("add %d returned %d", i, got)
		}
		if i == 3 && len(s.c[0]) != recFirstLen {
			t.Errorf("after 4 elements the first chunk holds %d", len(s.c[0]))
		}
		if i == recFirstLen && len(s.c[0]) != 4*recFirstLen {
			t.Errorf("after %d elements the first chunk holds %d", i+1, len(s.c[0]))
		}
	}
	if s.len() != 2*recChunkLen+3 || len(s.c) != 3 || len(s.c[0]) != recChunkLen || len(s.c[1]) != recChunkLen || len(s.c[2]) != recChunkLen {
		t.Fatalf("%d elements in %d chunks", s.len(), len(s.c))
	}
	for i := 0; i < s.len(); i++ {
		if v := *s.at(i); v != [2]int{i, -i} {
			t.Fatalf("element %d: %v", i, v)
		}
	}
}

// TestChunkedTrim: trimming keeps the elements and leaves no room in the
// last chunk; elements added afterwards grow it again.
func TestChunkedTrim(t *testing.T) {
	for _, n := range []int{0, 1, 5, 8, 9, recChunkLen, recChunkLen + 3} {
		var s chunked[int32]
		for i := 0; i < n+50; i++ {
			if i == n {
				s.trim()
				if k := len(s.c); k > 0 && n-(k-1)*recChunkLen != len(s.c[k-1]) {
					t.Errorf("%d elements: last chunk of %d after trim", n, len(s.c[k-1]))
				}
			}
			s.add(int32(i))
		}
		for i := 0; i < s.len(); i++ {
			if *s.at(i) != int32(i) {
				t.Fatalf("trim after %d: element %d is %d", n, i, *s.at(i))
			}
		}
	}
}
