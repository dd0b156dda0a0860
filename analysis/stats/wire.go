package stats

import (
	"bytes"
	"encoding/gob"
	"fmt"

	"github.com/mpitrace/mpitrace/tracefmt"
)

// The profiles of ranks as bytes, for an analysis run by several
// processes (stats --mpi): each profiles its group of ranks and process 0
// merges them all, as OfTrace merges the ranks it profiled.

type wireSite struct {
	Site uint32
	Fn   string
	F    Func
}

type wireRank struct {
	Rank                Rank
	Funcs, InitFinalize []Func
	BySite              []wireSite
	Sites               *tracefmt.Sites
}

// EncodeRanks encodes the profiles of ranks.
func EncodeRanks(ranks []*Rank) ([]byte, error) {
	w := make([]wireRank, len(ranks))
	for i, r := range ranks {
		w[i].Rank = *r
		w[i].Rank.Funcs, w[i].Rank.InitFinalize = nil, nil
		for _, f := range r.Funcs {
			w[i].Funcs = append(w[i].Funcs, *f)
		}
		for _, f := range r.InitFinalize {
			w[i].InitFinalize = append(w[i].InitFinalize, *f)
		}
		for k, f := range r.bySite {
			w[i].BySite = append(w[i].BySite, wireSite{k.site, k.fn, *f})
		}
		w[i].Sites = r.sites
	}
	var b bytes.Buffer
	err := gob.NewEncoder(&b).Encode(w)
	return b.Bytes(), err
}

// DecodeRanks decodes EncodeRanks' bytes.
func DecodeRanks(b []byte) ([]*Rank, error) {
	var w []wireRank
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&w); err != nil {
		return nil, fmt.Errorf("internal error: decoding rank profiles: %w", err)
	}
	ranks := make([]*Rank, len(w))
	for i := range w {
		r := w[i].Rank
		r.byName = map[string]*Func{}
		r.bySite = map[siteKey]*Func{}
		for _, f := range w[i].Funcs {
			r.Funcs = append(r.Funcs, &f)
			r.byName[f.Name] = &f
		}
		for _, f := range w[i].InitFinalize {
			r.InitFinalize = append(r.InitFinalize, &f)
			r.byName[f.Name] = &f
		}
		for _, s := range w[i].BySite {
			r.bySite[siteKey{s.Site, s.Fn}] = &s.F
		}
		r.sites = w[i].Sites
		ranks[i] = &r
	}
	return ranks, nil
}
