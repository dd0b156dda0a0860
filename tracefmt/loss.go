package tracefmt

// Loss is a place in a rank's stream of events where events were lost:
// blocks skipped as damaged (a wrong checksum, an impossible frame, a
// payload that does not decompress, a block over the budget), or the rest
// of a block whose events stopped decoding. The reader knows how many
// events each thread lost from the blocks' sequence numbers (docs/format.md,
// events block), and where: a thread's events lost between two of its
// events that it read happened between them.
//
// A RankReader reports a loss with the first event it delivers after the
// last event read before the lost ones (see RankReader.Lost). Every event
// delivered before that mark started no later than any lost event, since a
// thread's events are in order and the reader merges threads by start time;
// and every event delivered from the thread's first event after the lost
// ones on (included) started after all of them. Between the two, events of
// other threads may have started before or after the lost ones. For a rank
// of one thread the two places are the same event.
type Loss struct {
	// Events is the number of events lost; 0 when nothing was lost.
	Events uint64
	// Thread is the recorder thread that lost them; -1 when several
	// threads' losses fall on one place, or the thread is not known (events
	// an end record counts that no block accounts for): then no later event
	// is known to follow all the lost ones.
	Thread int
	// Block is the index in the file of the first block of the thread read
	// after the lost events; when none was (they are at the end of the
	// thread's stream), of the last one read before them; -1 when neither
	// was, or in the text form when not given.
	Block int
}

// add merges o into l: the counts add up, the first loss names the block.
func (l *Loss) add(o Loss) {
	if o.Events == 0 {
		return
	}
	if l.Events == 0 {
		*l = o
		return
	}
	l.Events += o.Events
	if l.Thread != o.Thread {
		l.Thread = -1
	}
	if l.Block < 0 {
		l.Block = o.Block
	}
}

// LossReporter is implemented by the Sources that know where their events
// were lost: *RankReader and RankData's source.
type LossReporter interface {
	// Lost returns the events lost just before the current event (the one
	// Event returns); after Next returned false, those lost after the last
	// event.
	Lost() Loss
}

// SourceLoss returns src's Lost when src is a LossReporter, else no loss.
func SourceLoss(src Source) Loss {
	if lr, ok := src.(LossReporter); ok {
		return lr.Lost()
	}
	return Loss{}
}

// LossAt is a loss in a RankData: before its event Event (len(Events): after
// the last).
type LossAt struct {
	Event int
	Loss
}
