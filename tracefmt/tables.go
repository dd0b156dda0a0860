package tracefmt

import (
	"fmt"
	"slices"

	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

// signedBit marks a field code whose field is zigzag encoded. The low bits of
// a code are the spec.Field.
const signedBit = 0x80

// kindInfo is spec.Kinds[k] flattened for the decoder's and encoder's hot
// loops. It is derived once from the spec table and never changed.
type kindInfo struct {
	ok      bool
	name    string
	fields  []spec.Field
	codes   []uint8 // field | signedBit, in on-disk order
	hasDur  bool
	list    spec.List
	minSize int // smallest encoding of an event of this kind, kind included
	since   uint16
}

var (
	// kindTab is the current version's layout of every kind.
	kindTab [spec.NumKinds]kindInfo
	// oldKindTabs are the layouts of the versions whose kinds had fewer
	// fields (spec.KindSpec.Grown), by version; the others read kindTab.
	oldKindTabs = map[uint16]*[spec.NumKinds]kindInfo{}
	// clearTab[a][b] are the fields of kind a that kind b does not have:
	// what an Event must clear when its kind changes from a to b.
	clearTab  [spec.NumKinds][spec.NumKinds][]spec.Field
	compCodes []uint8 // codes of spec.CompletionFields
	// minEventSize is the smallest encoded event of any kind.
	minEventSize int
)

func fieldCode(f spec.Field) uint8 {
	if int(f) >= signedBit || f == spec.FieldNone || f >= spec.NumFields {
		panic(fmt.Sprintf("internal error: tracefmt: field %d out of range", f))
	}
	c := uint8(f)
	if spec.Fields[f].Enc == spec.Svarint {
		c |= signedBit
	}
	return c
}

// fillKinds fills tab with every kind's layout in format version v.
func fillKinds(tab *[spec.NumKinds]kindInfo, v uint16) {
	for k := spec.Kind(1); k < spec.NumKinds; k++ {
		ks := &spec.Kinds[k]
		if ks.Name == "" {
			continue
		}
		ki := &tab[k]
		ki.ok = true
		ki.name = ks.Name
		ki.fields = ks.FieldsAt(v)
		ki.list = ks.List
		ki.since = ks.Since
		for _, f := range ki.fields {
			ki.codes = append(ki.codes, fieldCode(f))
			if f == spec.Dur {
				ki.hasDur = true
			}
		}
		ki.minSize = 1 + len(ki.fields)
		if ks.List != spec.NoList {
			ki.minSize++
		}
	}
}

// kindsOf returns the kinds' layouts in format version v.
func kindsOf(v uint16) *[spec.NumKinds]kindInfo {
	if t, ok := oldKindTabs[v]; ok {
		return t
	}
	return &kindTab
}

// versionKinds holds, per format version, its kinds' layouts by kind (nil:
// not in the version): one table for every reader of the version.
var versionKinds = map[uint16]*[spec.NumKinds]*kindInfo{}

// kindPtrsOf returns the kinds of version v, which must be supported.
func kindPtrsOf(v uint16) *[spec.NumKinds]*kindInfo { return versionKinds[v] }

func init() {
	fillKinds(&kindTab, spec.Current)
	for _, v := range spec.Versions {
		for k := range spec.Kinds {
			if len(spec.Kinds[k].FieldsAt(v)) != len(spec.Kinds[k].Fields) {
				t := new([spec.NumKinds]kindInfo)
				fillKinds(t, v)
				oldKindTabs[v] = t
				break
			}
		}
	}
	for _, v := range spec.Versions {
		tab, p := kindsOf(v), new([spec.NumKinds]*kindInfo)
		for k := range tab {
			if tab[k].ok && tab[k].since <= v {
				p[k] = &tab[k]
			}
		}
		versionKinds[v] = p
	}
	minEventSize = 1 << 30
	for _, v := range spec.Versions {
		t := kindsOf(v)
		for k := range t {
			if t[k].ok {
				minEventSize = min(minEventSize, t[k].minSize)
			}
		}
	}
	for a := range kindTab {
		for b := range kindTab {
			for _, f := range kindTab[a].fields {
				if !slices.Contains(kindTab[b].fields, f) {
					clearTab[a][b] = append(clearTab[a][b], f)
				}
			}
		}
	}
	for _, f := range spec.CompletionFields {
		switch f {
		case spec.Req, spec.Src, spec.STag, spec.SBytes, spec.Flags:
		default:
			panic(fmt.Sprintf("internal error: tracefmt: completion field %s has no Completion member", spec.Fields[f].Name))
		}
		compCodes = append(compCodes, fieldCode(f))
	}
}

// kindName returns the text-form name of k, or "kind N" for an unknown kind.
func kindName(k uint64) string {
	if k < uint64(spec.NumKinds) && kindTab[k].ok {
		return kindTab[k].name
	}
	return fmt.Sprintf("kind %d", k)
}

// listElemMin is the smallest encoding of one element of a list.
func listElemMin(l spec.List) int {
	if l == spec.ListCompletions {
		return len(compCodes)
	}
	return 1
}

// setCompletion stores the value of field f in c.
func setCompletion(c *Completion, f spec.Field, v int64) {
	switch f {
	case spec.Req:
		c.Req = uint64(v)
	case spec.Src:
		c.Src = v
	case spec.STag:
		c.Tag = v
	case spec.SBytes:
		c.Bytes = uint64(v)
	case spec.Flags:
		c.Flags = uint64(v)
	}
}

// getCompletion returns the value of field f of c.
func getCompletion(c *Completion, f spec.Field) int64 {
	switch f {
	case spec.Req:
		return int64(c.Req)
	case spec.Src:
		return c.Src
	case spec.STag:
		return c.Tag
	case spec.SBytes:
		return int64(c.Bytes)
	case spec.Flags:
		return int64(c.Flags)
	}
	return 0
}
