package recorder

import (
	"slices"
	"testing"
)

// Unlisted names the entries of a function list that match nothing.
func TestUnlisted(t *testing.T) {
	l := &Library{Names: []string{"MPI_Barrier", "MPI_File_open", "MPI_File_read", "MPI_Recv", "MPI_Send"}}
	if got := l.Unlisted("MPI_Send, MPI_File_*,MPI_Bogus* MPI_recv,,MPI_*,Send"); !slices.Equal(got, []string{"MPI_Bogus*", "MPI_recv", "Send"}) {
		t.Errorf("Unlisted: %q", got)
	}
	if l.Spelled("mpi_recv") != "MPI_Recv" || l.Spelled("MPI_Bogus") != "" {
		t.Errorf("Spelled")
	}
}
