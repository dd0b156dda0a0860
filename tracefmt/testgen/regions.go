package testgen

import (
	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

// Region events (format version 4) are points in the thread's time, as
// loop events are: they follow the previous event at once unless Compute
// set the time before them.

// point records an event of kind k that takes no time; set fills in its
// fields, given a function that returns a string's id.
func (r *Rank) point(k spec.Kind, set func(ev *tracefmt.Event, id func(string) uint64)) *Rank {
	ev := r.begin(k, "")
	set(ev, r.st.id)
	r.emitGap(ev, 0)
	return r
}

// RegionBegin records the start of the region name.
func (r *Rank) RegionBegin(name string) *Rank {
	return r.point(spec.RegionBegin, func(ev *tracefmt.Event, id func(string) uint64) { ev.SetUint(spec.Name, id(name)) })
}

// RegionEnd records the end of the innermost open region, with the flags
// spec.EndUnwound, spec.EndUnmatched.
func (r *Rank) RegionEnd(flags uint64) *Rank {
	return r.point(spec.RegionEnd, func(ev *tracefmt.Event, _ func(string) uint64) { ev.SetUint(spec.Flags, flags) })
}

// KernelBegin records the start of a kernel or fence of type typ
// (spec.KernelFor...) on the Kokkos device dev.
func (r *Rank) KernelBegin(typ uint64, name string, dev uint64) *Rank {
	return r.point(spec.KernelBegin, func(ev *tracefmt.Event, id func(string) uint64) {
		ev.SetUint(spec.Type, typ)
		ev.SetUint(spec.Name, id(name))
		ev.SetUint(spec.Dev, dev)
	})
}

// KernelEnd records the end of the innermost open kernel or fence.
func (r *Rank) KernelEnd(flags uint64) *Rank {
	return r.point(spec.KernelEnd, func(ev *tracefmt.Event, _ func(string) uint64) { ev.SetUint(spec.Flags, flags) })
}

// Kernel records a whole kernel of type typ on device 0 (Serial) that
// runs ns.
func (r *Rank) Kernel(typ uint64, name string, ns int64) *Rank {
	return r.KernelBegin(typ, name, 0).Compute(ns).KernelEnd(0)
}

// CopyBegin records the start of a deep copy of bytes from srcName in
// srcSpace to name in space.
func (r *Rank) CopyBegin(space, name, srcSpace, srcName string, bytes uint64) *Rank {
	return r.point(spec.CopyBegin, func(ev *tracefmt.Event, id func(string) uint64) {
		ev.SetUint(spec.Space, id(space))
		ev.SetUint(spec.Name, id(name))
		ev.SetUint(spec.SrcSpace, id(srcSpace))
		ev.SetUint(spec.SrcName, id(srcName))
		ev.SetUint(spec.Bytes, bytes)
	})
}

// CopyEnd records the end of the innermost open deep copy.
func (r *Rank) CopyEnd(flags uint64) *Rank {
	return r.point(spec.CopyEnd, func(ev *tracefmt.Event, _ func(string) uint64) { ev.SetUint(spec.Flags, flags) })
}

// Alloc records an allocation of bytes in space for the View name.
func (r *Rank) Alloc(space, name string, bytes uint64) *Rank {
	return r.mem(spec.Alloc, space, name, bytes)
}

// Free records a deallocation of bytes in space of the View name.
func (r *Rank) Free(space, name string, bytes uint64) *Rank {
	return r.mem(spec.Free, space, name, bytes)
}

func (r *Rank) mem(k spec.Kind, space, name string, bytes uint64) *Rank {
	return r.point(k, func(ev *tracefmt.Event, id func(string) uint64) {
		ev.SetUint(spec.Space, id(space))
		ev.SetUint(spec.Name, id(name))
		ev.SetUint(spec.Bytes, bytes)
	})
}

// SectionBegin records the start of the profile section sec named name.
func (r *Rank) SectionBegin(sec uint64, name string) *Rank {
	return r.point(spec.SectionBegin, func(ev *tracefmt.Event, id func(string) uint64) {
		ev.SetUint(spec.Sec, sec)
		ev.SetUint(spec.Name, id(name))
	})
}

// SectionEnd records the stop of the profile section sec.
func (r *Rank) SectionEnd(sec uint64) *Rank {
	return r.point(spec.SectionEnd, func(ev *tracefmt.Event, _ func(string) uint64) { ev.SetUint(spec.Sec, sec) })
}

// Mark records the profile event name.
func (r *Rank) Mark(name string) *Rank {
	return r.point(spec.Mark, func(ev *tracefmt.Event, id func(string) uint64) { ev.SetUint(spec.Name, id(name)) })
}

// Meta records the metadata key=value.
func (r *Rank) Meta(key, value string) *Rank {
	return r.point(spec.Meta, func(ev *tracefmt.Event, id func(string) uint64) {
		ev.SetUint(spec.Name, id(key))
		ev.SetUint(spec.Value, id(value))
	})
}

// DualView records a sync or modification of the DualView name, with the
// flags spec.DualViewModify, spec.DualViewDevice.
func (r *Rank) DualView(name string, flags uint64) *Rank {
	return r.point(spec.DualView, func(ev *tracefmt.Event, id func(string) uint64) {
		ev.SetUint(spec.Name, id(name))
		ev.SetUint(spec.Flags, flags)
	})
}
