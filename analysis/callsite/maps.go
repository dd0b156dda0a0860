package callsite

import (
	"bufio"
	"debug/elf"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// ParseProcMaps reads /proc/<pid>/maps text and returns its file-backed
// executable mappings, without build ids.
func ParseProcMaps(r io.Reader) ([]Mapping, error) {
	var out []Mapping
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		// start-end perms offset dev inode path
		f := strings.Fields(sc.Text())
		if len(f) < 6 || len(f[1]) < 3 || f[1][2] != 'x' || !strings.HasPrefix(f[5], "/") {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		if !ok {
			return nil, fmt.Errorf("maps: bad address range %q", f[0])
		}
		var m Mapping
		var err error
		if m.Start, err = strconv.ParseUint(lo, 16, 64); err == nil {
			if m.End, err = strconv.ParseUint(hi, 16, 64); err == nil {
				m.Offset, err = strconv.ParseUint(f[2], 16, 64)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("maps: %q: %v", sc.Text(), err)
		}
		m.Path = strings.Join(f[5:], " ")
		out = append(out, m)
	}
	return out, sc.Err()
}

// BuildID returns the GNU build id of the ELF file at path, in hex ("" if
// it has none).
func BuildID(path string) (id string, err error) {
	defer func() {
		if e := recover(); e != nil {
			err = fmt.Errorf("%s: not a readable ELF file (%v)", path, e)
		}
	}()
	f, err := elf.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	return buildIDOf(f), nil
}
