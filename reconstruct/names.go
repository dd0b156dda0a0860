package reconstruct

import (
	"strings"
	"sync"

	"github.com/mpitrace/mpitrace/reconstruct/taskgraph"
)

// Name classes: what reconstruction needs to know about a function from
// its name alone (the event kind says the rest).
const (
	clsInit       = 1 << iota // MPI_Init, MPI_Init_thread
	clsFinalize               // MPI_Finalize
	clsPersistent             // MPI_Send_init, MPI_Recv_init, ... (_c too)
	clsMprobe                 // MPI_Mprobe, MPI_Improbe: a matched probe
	clsMrecv                  // MPI_Mrecv, MPI_Imrecv: receive of a matched message
	clsExpand                 // MPI_Waitall, MPI_Waitsome, MPI_Testall, MPI_Testsome
	clsCancel                 // MPI_Cancel (a ReqFree event that frees nothing)
	clsCommColl               // communicator constructors collective over the parent
	clsInitThread             // MPI_Init_thread
)

// commCollectives are the communicator constructors that every member of
// the parent communicator calls, in the same order as its other
// collectives. MPI_Comm_create_group (only the
// group's members call it) and MPI_Intercomm_create (local and peer
// communicators) are left out: they stay plain operations.
var commCollectives = map[string]bool{
	"MPI_Comm_dup": true, "MPI_Comm_dup_with_info": true, "MPI_Comm_split": true, "MPI_Comm_split_type": true,
	"MPI_Comm_create": true, "MPI_Cart_create": true, "MPI_Cart_sub": true, "MPI_Graph_create": true,
	"MPI_Dist_graph_create": true, "MPI_Dist_graph_create_adjacent": true, "MPI_Intercomm_merge": true,
}

func classify(name string) uint16 {
	var c uint16
	base := strings.TrimSuffix(name, "_c")
	switch base {
	case "MPI_Init":
		c |= clsInit
	case "MPI_Init_thread":
		c |= clsInit | clsInitThread
	case "MPI_Finalize":
		c |= clsFinalize
	case "MPI_Mprobe", "MPI_Improbe":
		c |= clsMprobe
	case "MPI_Mrecv", "MPI_Imrecv":
		c |= clsMrecv
	case "MPI_Waitall", "MPI_Waitsome", "MPI_Testall", "MPI_Testsome":
		c |= clsExpand
	case "MPI_Cancel":
		c |= clsCancel
	}
	if strings.HasSuffix(base, "_init") && base != "MPI_Init" {
		c |= clsPersistent
	}
	if commCollectives[name] {
		c |= clsCommColl
	}
	return c
}

// nameInfo is a function name's graph index and class.
type nameInfo struct {
	id  taskgraph.NameID
	cls uint16
	ok  bool // the entry is filled in
}

// nameTable registers names with the graph builder, once per name, for
// all ranks; without a builder (the streaming replay) it numbers them
// itself.
type nameTable struct {
	gb    *taskgraph.Builder
	mu    sync.Mutex
	m     map[string]nameInfo
	names []string // without gb: by id
}

// name returns the name of id (without a builder).
func (t *nameTable) name(id taskgraph.NameID) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.names[id]
}

func (t *nameTable) lookup(name string) nameInfo {
	t.mu.Lock()
	defer t.mu.Unlock()
	if ni, ok := t.m[name]; ok {
		return ni
	}
	var id taskgraph.NameID
	switch {
	case t.gb != nil:
		id = t.gb.Name(name)
	case len(t.names) >= taskgraph.MaxNames-1:
		id = taskgraph.NameID(len(t.names))
		name = taskgraph.TooManyNames
		if ni, ok := t.m[name]; ok {
			return ni
		}
		t.names = append(t.names, name)
	default:
		id = taskgraph.NameID(len(t.names))
		t.names = append(t.names, name)
	}
	ni := nameInfo{id: id, cls: classify(name), ok: true}
	t.m[name] = ni
	return ni
}

// IsInit reports whether name is MPI_Init or MPI_Init_thread, whose end
// starts a rank's timeline.
func IsInit(name string) bool { return classify(name)&clsInit != 0 }
