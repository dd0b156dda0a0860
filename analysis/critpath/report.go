package critpath

import (
	"io"
	"runtime"
	"strconv"

	"github.com/mpitrace/mpitrace/reconstruct"
	"github.com/mpitrace/mpitrace/reconstruct/taskgraph"
)

// ReportOptions say what Report makes of a path besides its summary.
type ReportOptions struct {
	// Out, when not nil, receives the path in the critPath.out format,
	// computation edges in Unit.
	Out  io.Writer
	Unit Unit
	// Top is the number of heaviest items, and of heaviest groups of steps
	// by call site, the summary lists (all when < 0).
	Top int
	// Label, when not nil, names call sites: the summary then has the
	// path by call site.
	Label SiteLabel
	// Loops and Regions, when not nil, are where the loops and the
	// regions ran: the summary then has the path's share in them.
	Loops   Spans
	Regions RegionSpans
	// Fold: fold the path, for the summary's repetition.
	Fold bool
}

// Report writes critPath.out and returns the path's summary with what o
// asks for, and the fold when o.Fold. It reads the steps two or three
// times: the collective vertices, then every step for all the rest at
// once, then (to fold) the repetition's steps for their weight; the fold's
// finer levels read the steps again as far as they fold them. Its memory
// does not grow with the path but for the fold's: a byte a vertex for its
// function, and what the fold reads at its finer levels (Fold).
func (sp *StepPath) Report(o ReportOptions) (*Summary, *Folded, error) {
	sz, err := newSummarizer(sp, o.Top)
	if err != nil {
		return nil, nil, err
	}
	visits := []func(*reconstruct.ReplayStep){sz.visit}
	var out *outWriter
	if o.Out != nil {
		out = &outWriter{w: o.Out, unit: o.Unit, buf: make([]byte, 0, outFlush+256)}
		visits = append(visits, out.visit)
	}
	var sites func() *SiteSummary
	if o.Label != nil {
		var visit func(*reconstruct.ReplayStep)
		visit, sites = sp.siteVisitor(o.Top, o.Label)
		visits = append(visits, visit)
	}
	var inLoops, inRegions *attribution
	if o.Loops != nil {
		var visit func(*reconstruct.ReplayStep)
		inLoops, visit = newAttribution(o.Loops)
		visits = append(visits, visit)
	}
	if o.Regions != nil {
		var visit func(*reconstruct.ReplayStep)
		inRegions, visit = newAttribution(o.Regions)
		visits = append(visits, visit)
	}
	var steps func() (*steps, error)
	big := o.Fold && sp.NumSteps > bigFold
	if o.Fold {
		if big {
			runtime.GC() // what made the path is garbage: make room first
		}
		var visit func(*reconstruct.ReplayStep)
		visit, steps = sp.stepsVisitor()
		visits = append(visits, visit)
	}
	if err := sp.Steps(func(st *reconstruct.ReplayStep) error {
		for _, v := range visits {
			v(st)
		}
		if out != nil {
			return out.flush(false)
		}
		return nil
	}); err != nil {
		return nil, nil, err
	}
	if out != nil {
		if err := out.flush(true); err != nil {
			return nil, nil, err
		}
	}
	sum := sz.finish()
	if sites != nil {
		sum.Sites = sites()
	}
	if inLoops != nil {
		sum.Loops = inLoops.loops(sum, o.Loops)
	}
	if inRegions != nil {
		sum.Regions = inRegions.regions(sum, o.Regions)
	}
	if !o.Fold {
		return sum, nil, nil
	}
	st, err := steps()
	if err != nil {
		return nil, nil, err
	}
	f, err := st.fold(big)
	if err != nil {
		return nil, nil, err
	}
	if sum.Repetition, err = SummarizeRepetition(f); err != nil {
		return nil, nil, err
	}
	return sum, f, nil
}

// outWriter writes critPath.out as it visits the steps.
type outWriter struct {
	w     io.Writer
	unit  Unit
	buf   []byte
	first bool // a step was seen
}

func (o *outWriter) visit(st *reconstruct.ReplayStep) {
	buf := o.buf
	if o.first {
		if st.In.Kind == taskgraph.Message {
			buf = strconv.AppendInt(buf, st.In.Bytes, 10)
		} else {
			buf = strconv.AppendInt(buf, o.unit.roundInt(st.In.Weight), 10)
		}
		buf = append(buf, '\n')
	}
	o.first = true
	o.buf = vertexLine(buf, st.Name, st.Rank)
}

// flush writes what was formatted once it is outFlush bytes, or all of
// it when last.
func (o *outWriter) flush(last bool) error {
	if len(o.buf) < outFlush && !last {
		return nil
	}
	_, err := o.w.Write(o.buf)
	o.buf = o.buf[:0]
	return err
}
