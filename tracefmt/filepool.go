package tracefmt

import (
	"container/list"
	"fmt"
	"os"
	"sync"
)

// The rank files a process reads are held open through one pool, which
// bounds how many are open at once: a replay reads every rank of a trace
// at once (16,384 ranks and more), and so may a second replay beside it.
// A file is opened when read and stays open until more files would be
// open than the pool allows; the least recently read is closed then, and
// opened again when it is read again. A file opened again must be the
// file first opened (os.SameFile, the same size): one replaced or cut
// while the trace is read is an error, not other data.

// filePool is the set of open pooled files, most recently read first.
type filePool struct {
	mu   sync.Mutex
	max  int
	lru  list.List // of *pooledFile whose file is open
	open int
	peak int // the most open at once (OpenFiles)
}

// rankFiles is the process's pool. Its size is half the files the process
// may open (the rest for everything else it opens), at least 64.
var rankFiles = &filePool{max: max(64, (openFileLimit()-256)/2)}

// pooledFile is a rank file read through the pool; it is an io.ReaderAt
// and an io.Closer.
type pooledFile struct {
	pool   *filePool
	path   string
	first  fileID
	f      *os.File
	elem   *list.Element
	inUse  int
	closed bool
}

// openPooled opens path (a regular file: openRegular) through the pool.
func (p *filePool) openPooled(path string) (*pooledFile, int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.evict()
	f, size, err := openRegular(path)
	if err != nil {
		return nil, 0, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	pf := &pooledFile{pool: p, path: path, first: idOf(st), f: f}
	pf.elem = p.lru.PushFront(pf)
	p.opened()
	return pf, size, nil
}

func (p *filePool) opened() {
	p.open++
	p.peak = max(p.peak, p.open)
}

// evict closes the least recently read files not being read until one
// more may be opened (or none is left to close: then one more is open
// than the pool allows, for as long as they are all being read).
func (p *filePool) evict() {
	for e := p.lru.Back(); e != nil && p.open >= p.max; {
		pf := e.Value.(*pooledFile)
		prev := e.Prev()
		if pf.inUse == 0 {
			pf.f.Close()
			pf.f = nil
			p.lru.Remove(e)
			pf.elem = nil
			p.open--
		}
		e = prev
	}
}

// acquire returns the open file for a read (opened again if it was
// closed), to be released after it.
func (pf *pooledFile) acquire() (*os.File, error) {
	p := pf.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	if pf.closed {
		return nil, os.ErrClosed
	}
	if pf.f == nil {
		p.evict()
		f, _, err := openRegular(pf.path)
		if err != nil {
			return nil, err
		}
		st, err := f.Stat()
		if err == nil && !idOf(st).same(pf.first) {
			err = fmt.Errorf("%s: the file was replaced or changed size while it was read", pf.path)
		}
		if err != nil {
			f.Close()
			return nil, err
		}
		pf.f = f
		pf.elem = p.lru.PushFront(pf)
		p.opened()
	} else {
		p.lru.MoveToFront(pf.elem)
	}
	pf.inUse++
	return pf.f, nil
}

func (pf *pooledFile) release() {
	pf.pool.mu.Lock()
	pf.inUse--
	pf.pool.mu.Unlock()
}

// ReadAt reads from the file, opening it again when the pool closed it.
func (pf *pooledFile) ReadAt(b []byte, off int64) (int, error) {
	f, err := pf.acquire()
	if err != nil {
		return 0, err
	}
	defer pf.release()
	return f.ReadAt(b, off)
}

// Close closes the file; it is not read again.
func (pf *pooledFile) Close() error {
	p := pf.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	if pf.closed {
		return nil
	}
	pf.closed = true
	if pf.f == nil {
		return nil
	}
	err := pf.f.Close()
	pf.f = nil
	p.lru.Remove(pf.elem)
	pf.elem = nil
	p.open--
	return err
}

// SetOpenFiles sets how many rank files the process holds open at once
// (at least 1; by default half its limit on open files, at least 64) and
// returns the previous bound. Files open beyond a lower bound are closed
// as they are read.
func SetOpenFiles(n int) int {
	p := rankFiles
	p.mu.Lock()
	defer p.mu.Unlock()
	old := p.max
	p.max = max(n, 1)
	return old
}

// OpenFiles returns how many rank files are open now, and the most that
// were open at once since the last call.
func OpenFiles() (now, peak int) {
	p := rankFiles
	p.mu.Lock()
	defer p.mu.Unlock()
	now, peak = p.open, p.peak
	p.peak = p.open
	return now, peak
}
