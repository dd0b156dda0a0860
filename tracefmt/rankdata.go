package tracefmt

import (
	"io"
	"slices"
)

// Source is a stream of one rank's events with its header, strings and end
// record: what WriteText and Validate consume. *RankReader is a Source, and
// so is RankData.Source.
type Source interface {
	Header() *Header
	Strings() *Strings
	// End returns the end record, nil when there is none.
	End() *End
	// Pending returns the pending blocks (calls begun and not returned when
	// they were written), in file order.
	Pending() []Pending
	Next() bool
	// Event returns the current event, valid until the next call to Next.
	Event() *Event
	Err() error
}

// RankData is a whole rank held in memory: what ParseText produces, what a
// Writer can reproduce, and a convenient form for small tests. Large traces
// should be streamed with a RankReader instead.
type RankData struct {
	Header  Header
	Strings Strings
	Events  []Event
	Pending []Pending // pending blocks, written after the events
	End     *End      // nil: no end record
	// Lost are the places where events were lost, in event order (see
	// Loss); a Source of d reports them (LossReporter).
	Lost []LossAt
}

// ReadAll reads the rest of src into memory.
func ReadAll(src Source) (*RankData, error) {
	d := &RankData{Header: *src.Header()}
	d.Header.Meta = append([]KeyValue(nil), d.Header.Meta...)
	strs := src.Strings()
	for _, id := range strs.IDs() {
		d.Strings.Define(id, strs.Name(id))
	}
	if e := src.End(); e != nil {
		ec := *e
		d.End = &ec
	}
	d.Pending = slices.Clone(src.Pending())
	for src.Next() {
		if l := SourceLoss(src); l.Events > 0 {
			d.Lost = append(d.Lost, LossAt{Event: len(d.Events), Loss: l})
		}
		d.Events = append(d.Events, src.Event().Clone())
	}
	if l := SourceLoss(src); l.Events > 0 {
		d.Lost = append(d.Lost, LossAt{Event: len(d.Events), Loss: l})
	}
	return d, src.Err()
}

// WriteBinary writes d as a rank file.
func (d *RankData) WriteBinary(w io.Writer, opts *WriterOptions) error {
	wr, err := NewWriter(w, &d.Header, opts)
	if err != nil {
		return err
	}
	for _, id := range d.Strings.IDs() {
		if err := wr.DefineString(id, d.Strings.Name(id)); err != nil {
			return err
		}
	}
	lost := d.Lost
	skip := func(i int) error {
		for ; len(lost) > 0 && lost[0].Event <= i; lost = lost[1:] {
			if err := wr.Skip(max(lost[0].Thread, 0), lost[0].Events); err != nil {
				return err
			}
		}
		return nil
	}
	for i := range d.Events {
		if err := skip(i); err != nil {
			return err
		}
		if err := wr.WriteEvent(&d.Events[i]); err != nil {
			return err
		}
	}
	if err := skip(len(d.Events)); err != nil {
		return err
	}
	for i := range d.Pending {
		if err := wr.WritePending(&d.Pending[i]); err != nil {
			return err
		}
	}
	return wr.CloseWithEnd(d.End)
}

// Source returns an iterator over d's events. It is a LossReporter.
func (d *RankData) Source() Source { return &dataSource{d: d, i: -1} }

type dataSource struct {
	d *RankData
	i int
	l int // d.Lost[l:] are at or after event i
}

// Lost reports the losses at the current event (at the end: after the
// last), merged as a reader merges those that fall on one event.
func (s *dataSource) Lost() Loss {
	var l Loss
	for j := s.l; j < len(s.d.Lost) && s.d.Lost[j].Event <= s.i; j++ {
		if s.d.Lost[j].Event == s.i {
			l.add(s.d.Lost[j].Loss)
		}
	}
	return l
}

func (s *dataSource) Header() *Header    { return &s.d.Header }
func (s *dataSource) Strings() *Strings  { return &s.d.Strings }
func (s *dataSource) End() *End          { return s.d.End }
func (s *dataSource) Pending() []Pending { return s.d.Pending }
func (s *dataSource) Err() error         { return nil }
func (s *dataSource) Next() bool {
	if s.i < len(s.d.Events) {
		s.i++
	}
	for s.l < len(s.d.Lost) && s.d.Lost[s.l].Event < s.i {
		s.l++
	}
	return s.i < len(s.d.Events)
}
func (s *dataSource) Event() *Event {
	if s.i < 0 || s.i >= len(s.d.Events) {
		return nil
	}
	return &s.d.Events[s.i]
}
